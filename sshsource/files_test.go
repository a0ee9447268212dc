package sshsource

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func mkfifo(t *testing.T, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// collectBounded collects h and fails t when that takes longer than the
// host's timeout and a margin: a FIFO or a device must never hold a host,
// and the context cannot unblock an open(2) that waits for a writer.
func collectBounded(t *testing.T, d *Dialer, h Host, timeout time.Duration) Result {
	t.Helper()
	done := make(chan Result, 1)
	go func() { done <- d.CollectTimeout(context.Background(), h, timeout) }()
	select {
	case r := <-done:
		return r
	case <-time.After(timeout + 10*time.Second):
		t.Fatalf("host %s: still collecting after its %s timeout", h.Name, timeout)
		return Result{}
	}
}

// Every local file the SSH path reads (an inventory identity, known_hosts)
// goes through safeio: a FIFO fails at once, naming the file and what it is,
// and a device is not read. Before, a FIFO blocked open(2) past any
// timeout, and /dev/zero was read into memory without end.
func TestSSHInputFilesNeverBlock(t *testing.T) {
	s := startSSHD(t)
	dir := t.TempDir()
	fifo := mkfifo(t, filepath.Join(dir, "fifo"))
	for _, tc := range []struct {
		name, file, kind string
		identity, known  bool
	}{
		{name: "identity FIFO", file: fifo, kind: "FIFO", identity: true},
		{name: "identity device", file: "/dev/zero", kind: "character device", identity: true},
		{name: "known_hosts FIFO", file: fifo, kind: "FIFO", known: true},
		{name: "known_hosts device", file: "/dev/zero", kind: "character device", known: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := s.options()
			h := s.host("h", fixture(t, "web-node"))
			if tc.identity {
				opts.IdentityFiles = nil
				h.IdentityFiles = []string{tc.file}
			}
			if tc.known {
				opts.KnownHosts = []string{tc.file}
			}
			d := NewDialer(opts)
			defer d.Close()
			r := collectBounded(t, d, h, s.timeout)
			t.Log(r.Err)
			if r.Err == nil || !strings.Contains(r.Err.Error(), tc.file) || !strings.Contains(r.Err.Error(), tc.kind) {
				t.Fatalf("err = %v, want one naming %s and %q", r.Err, tc.file, tc.kind)
			}
			want := ClassAuth // the key is not offered; the host refuses the rest
			if tc.known {
				want = ClassLocalFile
			}
			if r.Err.Class != want {
				t.Errorf("class %q, want %q: %v", r.Err.Class, want, r.Err)
			}
			if tc.known {
				if err := d.CheckFiles(); err == nil || !strings.Contains(err.Error(), tc.file) || !strings.Contains(err.Error(), tc.kind) {
					t.Errorf("CheckFiles = %v, want an error naming %s and %q", err, tc.file, tc.kind)
				}
			}
		})
	}
}

func TestReadConfigNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	fifo := mkfifo(t, filepath.Join(dir, "fifo"))
	including := filepath.Join(dir, "config")
	os.WriteFile(including, []byte("Host a\n  HostName 10.0.0.1\nInclude "+filepath.Join(dir, "f*")+"\n"), 0o600)
	nested := filepath.Join(dir, "nested")
	os.WriteFile(nested, []byte("Include = "+including+" # the one above\n"), 0o600)
	ok := filepath.Join(dir, "ok")
	os.WriteFile(ok, []byte("Host b\n  User audit\n"), 0o600)
	for _, tc := range []struct{ file, want string }{
		{fifo, fifo + ": not a regular file (FIFO)"},
		{"/dev/zero", "/dev/zero: not a regular file (character device)"},
		{including, "Include: file " + fifo + ": not a regular file (FIFO)"},
		{nested, "Include: file " + fifo + ": not a regular file (FIFO)"},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadConfig(tc.file); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadConfig(%s) = %v, want %q", tc.file, err, tc.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("ReadConfig(%s) still reading after 30s", tc.file)
		}
	}
	cfg, err := ReadConfig(ok)
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := cfg.Get("b", "User"); u != "audit" {
		t.Errorf("User of b = %q, want audit", u)
	}
}

// A host's authentication failure lists the key files that host offered
// and why each was not used (an encrypted one, a named one that does not
// exist), never another host's.
func TestSSHKeyProblemsArePerHost(t *testing.T) {
	s := startSSHD(t)
	dir := t.TempDir()
	encrypted := filepath.Join(dir, "encrypted_key")
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(encrypted, pem.EncodeToMemory(block), 0o600)
	missing := filepath.Join(dir, "no_such_key")
	opts := s.options()
	opts.IdentityFiles = nil
	d := NewDialer(opts)
	defer d.Close()
	a, b := s.host("a", fixture(t, "web-node")), s.host("b", fixture(t, "web-node"))
	a.IdentityFiles, b.IdentityFiles = []string{encrypted}, []string{missing}
	ra := collectBounded(t, d, a, s.timeout)
	rb := collectBounded(t, d, b, s.timeout)
	t.Log(ra.Err, "\n", rb.Err)
	if ra.Err == nil || ra.Err.Class != ClassAuth || !strings.Contains(ra.Err.Error(), encrypted+": encrypted") || strings.Contains(ra.Err.Error(), missing) {
		t.Errorf("a: %v\nwant auth failed naming %s only", ra.Err, encrypted)
	}
	if rb.Err == nil || rb.Err.Class != ClassAuth || !strings.Contains(rb.Err.Error(), missing+": no such file") || strings.Contains(rb.Err.Error(), encrypted) {
		t.Errorf("b: %v\nwant auth failed naming the missing %s only", rb.Err, missing)
	}
}

// known_hosts reaches knownhosts through pipes, never a copy on disk; what
// it reports still names the files and lines the user has.
func TestKnownHostsNamesTheRealFiles(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, filepath.Join(dir, "key"))
	other := writeKey(t, filepath.Join(dir, "other"))
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	// Larger than a pipe's buffer, so both writers wait on the reader.
	pad := strings.Repeat("# comment\n", 50000)
	os.WriteFile(first, []byte(pad+knownhosts.Line([]string{"a.example"}, key)+"\n"), 0o600)
	os.WriteFile(second, []byte(pad+"\n\n"+knownhosts.Line([]string{"b.example"}, key)+"\n"), 0o600)
	check, err := knownHosts([]string{filepath.Join(dir, "missing"), first, second})
	if err != nil {
		t.Fatal(err)
	}
	addr := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 22}
	if err := check("a.example:22", addr, key); err != nil {
		t.Errorf("known key: %v", err)
	}
	var ke *knownhosts.KeyError
	if err := check("b.example:22", addr, other); !errors.As(err, &ke) || len(ke.Want) != 1 || ke.Want[0].Filename != second || ke.Want[0].Line != 50003 {
		t.Errorf("changed key: %v, want the line of %s:50003", err, second)
	}
	os.WriteFile(second, []byte("b.example ssh-ed25519 not-base64\n"), 0o600)
	if _, err := knownHosts([]string{first, second}); err == nil || !strings.Contains(err.Error(), second+":1:") {
		t.Errorf("bad line: %v, want it to name %s:1", err, second)
	}
	if check, err := knownHosts([]string{filepath.Join(dir, "missing")}); check != nil || err != nil {
		t.Errorf("no file: %v, %v; want neither a check nor an error", check != nil, err)
	}
}

// accept-new appends only to a regular file: a FIFO or a device put in
// known_hosts' place fails the host at once instead of waiting for a reader.
func TestRecordKeyOnlyToARegularFile(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, filepath.Join(dir, "key"))
	for _, tc := range []struct{ file, want string }{
		{mkfifo(t, filepath.Join(dir, "fifo")), "no such device or address"},
		{"/dev/null", "not a regular file (character device)"},
	} {
		d := NewDialer(Options{KnownHosts: []string{tc.file}, AcceptNew: true, Home: dir})
		done := make(chan error, 1)
		go func() { done <- d.recordKey("h.example:22", key) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.file) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("recordKey into %s = %v, want an error naming it and %q", tc.file, err, tc.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("recordKey into %s still waiting after 30s", tc.file)
		}
	}
}
