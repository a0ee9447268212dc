package sshsource

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/fleetaudit/fleetaudit/internal/sshdtest"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

type testSSHD struct {
	*sshdtest.Server
	// timeout bounds a connection and a host's collection: behaviour is
	// asserted, not speed (see sshdtest.Timeout).
	timeout time.Duration
}

func startSSHD(t testing.TB) *testSSHD {
	return &testSSHD{Server: sshdtest.Start(t), timeout: sshdtest.Timeout(t)}
}

func writeKey(t testing.TB, file string) ssh.PublicKey { return sshdtest.WriteKey(t, file) }

func (s *testSSHD) host(name, root string) Host {
	return Host{Name: name, Address: "127.0.0.1", Port: s.Port, User: s.User, Root: root}
}

func (s *testSSHD) options() Options {
	return Options{KnownHosts: []string{s.KnownHosts}, IdentityFiles: []string{s.ClientKey}, Home: s.Dir, Version: "test", ConnectTimeout: s.timeout}
}

func fixture(t testing.TB, name string) string {
	root, err := filepath.Abs(filepath.Join("..", "testdata", "hosts", name))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// sameAsLocal checks an SSH snapshot against the local one of the same
// root: every fact and its provenance, errors included; only the origin
// (kind, address) says how it was read.
func sameAsLocal(t *testing.T, got *snapshot.Snapshot, root, host string) {
	t.Helper()
	want := collectLocal(t, root)
	want.Host = host
	if got.Source.Kind != "ssh" || got.Source.Root != root {
		t.Errorf("origin = %+v, want kind ssh, root %s", got.Source, root)
	}
	got.Source, want.Source = snapshot.Origin{}, snapshot.Origin{}
	got.CollectedAt = want.CollectedAt
	if d := cmp.Diff(encode(t, want), encode(t, got)); d != "" {
		t.Errorf("%s over SSH differs from the local collection (-local +ssh):\n%s", host, d)
	}
}

func TestSSHGoodHost(t *testing.T) {
	s := startSSHD(t)
	d := NewDialer(s.options())
	defer d.Close()
	for _, h := range fixtureHosts {
		r := d.Collect(context.Background(), s.host("h-"+h, fixture(t, h)))
		if r.Err != nil {
			t.Fatalf("%s: %v", h, r.Err)
		}
		sameAsLocal(t, r.Snapshot, fixture(t, h), "h-"+h)
	}
}

func TestSSHHostKeys(t *testing.T) {
	s := startSSHD(t)
	// Unknown: an empty known_hosts.
	empty := filepath.Join(t.TempDir(), "known_hosts")
	opts := s.options()
	opts.KnownHosts = []string{empty}
	r := NewDialer(opts).Collect(context.Background(), s.host("unknown", fixture(t, "web-node")))
	if r.Err == nil || r.Err.Class != ClassUnknownKey || !strings.Contains(r.Err.Error(), "--accept-new-host-keys") {
		t.Fatalf("unknown key: err = %v, want %s naming --accept-new-host-keys", r.Err, ClassUnknownKey)
	}
	if src := r.Snapshot.Errors; len(src) != 1 || src[0].Collector != snapshot.CollectorSource {
		t.Errorf("unknown key: snapshot errors = %+v, want one source error", src)
	}
	// Accepted as new: recorded, then known.
	opts.AcceptNew = true
	same := []Host{s.host("accept-1", fixture(t, "web-node")), s.host("accept-2", fixture(t, "web-node")), s.host("accept-3", fixture(t, "web-node"))}
	for _, r := range NewDialer(opts).CollectAll(context.Background(), same, 3, s.timeout, nil) {
		if r.Err != nil {
			t.Fatalf("accept-new: %v", r.Err)
		}
	}
	opts.AcceptNew = false
	if r := NewDialer(opts).Collect(context.Background(), s.host("accepted", fixture(t, "web-node"))); r.Err != nil {
		t.Fatalf("after accept-new: %v", r.Err)
	}
	if data, _ := os.ReadFile(empty); strings.Count(string(data), "\n") != 1 {
		t.Errorf("known_hosts after accept-new:\n%s\nwant the one key, once", data)
	}
	// Changed: known_hosts holds another key for the address; accept-new
	// does not help.
	other := writeKey(t, filepath.Join(t.TempDir(), "other"))
	wrong := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(wrong, []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, other)+"\n"), 0o600)
	opts.KnownHosts, opts.AcceptNew = []string{wrong}, true
	r = NewDialer(opts).Collect(context.Background(), s.host("changed", fixture(t, "web-node")))
	if r.Err == nil || r.Err.Class != ClassHostKey {
		t.Fatalf("changed key: err = %v, want %s", r.Err, ClassHostKey)
	}
}

func TestSSHAuthFailed(t *testing.T) {
	s := startSSHD(t)
	opts := s.options()
	stranger := filepath.Join(t.TempDir(), "stranger")
	writeKey(t, stranger)
	opts.IdentityFiles = []string{stranger}
	r := NewDialer(opts).Collect(context.Background(), s.host("auth", fixture(t, "web-node")))
	if r.Err == nil || r.Err.Class != ClassAuth {
		t.Fatalf("err = %v, want %s", r.Err, ClassAuth)
	}
}

func TestSSHTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accept and never answer
		var held []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	var p int
	fmt.Sscan(port, &p)
	d := NewDialer(Options{ConnectTimeout: 300 * time.Millisecond, KnownHosts: []string{filepath.Join(t.TempDir(), "kh")}})
	r := d.Collect(context.Background(), Host{Name: "silent", Address: "127.0.0.1", Port: p, User: "x"})
	if r.Err == nil || r.Err.Class != ClassTimeout {
		t.Fatalf("err = %v, want %s", r.Err, ClassTimeout)
	}
}

func TestSSHRootLacksFiles(t *testing.T) {
	s := startSSHD(t)
	d := NewDialer(s.options())
	// An empty root: collected, and every fact is as missing as locally.
	empty := t.TempDir()
	r := d.Collect(context.Background(), s.host("empty", empty))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	sameAsLocal(t, r.Snapshot, empty, "empty")
	// A root that is not there: the host is not read at all.
	r = d.Collect(context.Background(), s.host("gone", filepath.Join(empty, "gone")))
	if r.Err == nil || !strings.Contains(r.Err.Error(), "gone") {
		t.Fatalf("err = %v, want one naming the root", r.Err)
	}
}

func TestSSHFleet(t *testing.T) {
	s := startSSHD(t)
	d := NewDialer(s.options())
	var hosts []Host
	for i := range 24 {
		hosts = append(hosts, s.host(fmt.Sprintf("node-%02d", i), fixture(t, fixtureHosts[i%len(fixtureHosts)])))
	}
	calls := 0
	// More hosts than slots, so hosts queue; few slots, so each host's
	// time under a loaded machine stays within its timeout.
	res := d.CollectAll(context.Background(), hosts, 4, s.timeout, func(Result, Progress) { calls++ })
	if calls != len(hosts) {
		t.Errorf("progress called %d times, want %d", calls, len(hosts))
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Host.Name, r.Err)
		}
		sameAsLocal(t, r.Snapshot, fixture(t, fixtureHosts[i%len(fixtureHosts)]), r.Host.Name)
	}
}

// TestSSHSecretsNeverInOutput: an encrypted key's passphrase and the key
// itself appear in no snapshot and no error, whether the key is refused or
// accepted.
func TestSSHSecretsNeverInOutput(t *testing.T) {
	s := startSSHD(t)
	const passphrase = "correct-horse-battery-staple-4711"
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "enc")
	keyPEM := pem.EncodeToMemory(block)
	os.WriteFile(keyFile, keyPEM, 0o600)
	clientPEM, _ := os.ReadFile(s.ClientKey)
	// No way to ask: the failure names the key file and what to do, and
	// holds nothing of the key.
	opts := s.options()
	opts.IdentityFiles = []string{keyFile}
	r := NewDialer(opts).Collect(context.Background(), s.host("secret", fixture(t, "web-node")))
	if r.Err == nil || r.Err.Class != ClassAuth || !strings.Contains(r.Err.Error(), keyFile+": encrypted") {
		t.Errorf("encrypted key, no passphrase: err = %v, want auth failed naming %s", r.Err, keyFile)
	}
	if strings.Contains(encode(t, r.Snapshot)+r.Err.Error(), string(keyPEM[40:80])) {
		t.Error("the error holds the key")
	}
	for _, accepted := range []bool{false, true} {
		opts := s.options()
		opts.IdentityFiles = []string{keyFile}
		if accepted {
			opts.IdentityFiles = append(opts.IdentityFiles, s.ClientKey)
		}
		asked := 0
		opts.Passphrase = func(string) ([]byte, error) { asked++; return []byte(passphrase), nil }
		r := NewDialer(opts).Collect(context.Background(), s.host("secret", fixture(t, "web-node")))
		if (r.Err == nil) != accepted {
			t.Fatalf("accepted=%v: err = %v", accepted, r.Err)
		}
		if asked != 1 {
			t.Errorf("passphrase asked %d times, want 1", asked)
		}
		text := encode(t, r.Snapshot) + fmt.Sprint(r.Err)
		for _, secret := range []string{passphrase, string(keyPEM[40:80]), string(clientPEM[40:80])} {
			if strings.Contains(text, secret) {
				t.Errorf("accepted=%v: output holds a secret %q", accepted, secret)
			}
		}
	}
}
