// Package sshdtest starts a real OpenSSH sshd on a loopback port for tests
// and benchmarks, with its own host key, a client key in authorized_keys
// and a known_hosts file that trusts it. Under CI=true a missing sshd fails
// the caller instead of skipping it.
package sshdtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"github.com/fleetaudit/fleetaudit/internal/testpeer"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// TB is the part of testing.TB the server needs.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	TempDir() string
	Cleanup(func())
}

// Server is a running sshd.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int
	User string // the user running the test, whom sshd lets in
	// HostKey is the server's key; ClientKey a private key file it
	// accepts; KnownHosts a known_hosts file holding HostKey for Addr.
	HostKey    ssh.PublicKey
	ClientKey  string
	KnownHosts string
	Dir        string
	// Home is the HOME sshd gives the user's shell; its .bashrc counts
	// every command sshd runs (see Execs).
	Home string
	// CountsExecs says whether Execs counts: the user's login shell is
	// bash, which reads ~/.bashrc for every command sshd runs.
	CountsExecs bool
}

// Config tunes the server.
type Config struct {
	// LoginRC is shell text run before every command, as a login shell's
	// rc file (conda or pyenv init) runs on a GPU node: "sleep 1" makes
	// every exec a second slower. It runs only when CountsExecs.
	LoginRC string
	// Extra are further sshd_config lines (ForceCommand, for a host that
	// plays an attack).
	Extra []string
}

// Execs is how many commands sshd has run (sessions through the login
// shell) since the server started; 0 unless CountsExecs.
func (s *Server) Execs() int {
	data, _ := os.ReadFile(filepath.Join(s.Dir, "execs"))
	return strings.Count(string(data), "\n")
}

// Path finds sshd: absent, it fails t under CI=true and skips it elsewhere.
func Path(t TB) string {
	t.Helper()
	return testpeer.Find(t, "sshd not installed (apt-get install openssh-server); .ci/run installs it",
		"/usr/sbin/sshd", "/usr/local/sbin/sshd")
}

// WriteKey writes a new unencrypted ed25519 private key to file.
func WriteKey(t TB, file string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// Start runs sshd until t's cleanup; extra are further sshd_config lines
// (ForceCommand, for a host that plays an attack).
func Start(t TB, extra ...string) *Server {
	t.Helper()
	return StartWith(t, Config{Extra: extra})
}

// StartWith runs sshd with c until t's cleanup.
func StartWith(t TB, c Config) *Server {
	t.Helper()
	bin := Path(t)
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &Server{User: u.Username, Dir: dir, ClientKey: filepath.Join(dir, "client_key")}
	s.HostKey = WriteKey(t, filepath.Join(dir, "host_key"))
	clientPub := WriteKey(t, s.ClientKey)
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd sets HOME from SetEnv after the user's own, and bash reads
	// $HOME/.bashrc for a command sshd runs.
	s.Home = filepath.Join(dir, "home")
	rc := "echo x >> " + filepath.Join(dir, "execs") + "\n" + c.LoginRC + "\n"
	if err := os.MkdirAll(s.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Home, ".bashrc"), []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	s.CountsExecs = loginShell(u.Uid) == "bash"
	_ = os.MkdirAll("/run/sshd", 0o755) // privilege separation directory
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = l.Addr().String()
	s.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := strings.Join([]string{
		"ListenAddress " + s.Addr,
		"HostKey " + filepath.Join(dir, "host_key"),
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"StrictModes no", "UsePAM no", "PermitRootLogin prohibit-password",
		"PasswordAuthentication no", "KbdInteractiveAuthentication no",
		// A fleet's worth of connections at once, as many hosts would take.
		"MaxStartups 1000", "MaxSessions 100", "LogLevel ERROR",
		"SetEnv HOME=" + s.Home,
	}, "\n") + "\n"
	for _, line := range c.Extra {
		cfg += line + "\n"
	}
	cfgFile := filepath.Join(dir, "sshd_config")
	// OpenSSH 9.8+ penalises a source address after failed logins; every
	// test host is 127.0.0.1. Older sshd refuses the keyword.
	for _, extra := range []string{"PerSourcePenalties no\n", ""} {
		if err := os.WriteFile(cfgFile, []byte(cfg+extra), 0o600); err != nil {
			t.Fatal(err)
		}
		var out []byte
		if out, err = exec.Command(bin, "-t", "-f", cfgFile).CombinedOutput(); err == nil {
			break
		} else if extra == "" {
			t.Fatalf("sshd -t -f %s: %v: %s", cfgFile, err, out)
		}
	}
	cmd := exec.Command(bin, "-D", "-e", "-f", cfgFile)
	logf, err := os.Create(filepath.Join(dir, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })
	for wait := time.Now().Add(Timeout(t)); ; {
		c, err := net.Dial("tcp", s.Addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(wait) {
			data, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			t.Fatalf("sshd did not listen on %s: %s", s.Addr, data)
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.KnownHosts = filepath.Join(dir, "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey)
	if err := os.WriteFile(s.KnownHosts, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// Timeout bounds one step of a test against the sshd (its start, a
// connection, a host's collection): generous, as a loaded 2-core CI machine
// can take tens of seconds for what takes a second alone, yet at most half
// the time left before the test binary's deadline, so a hang fails as the
// test's own error, naming the host, not as go test's panic.
func Timeout(t any) time.Duration {
	const generous = 5 * time.Minute
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := d.Deadline(); ok {
			return min(generous, max(time.Until(end)/2, time.Second))
		}
	}
	return generous
}

// HostileScript is the ForceCommand of StartHostile: a host whose root is
// /attack-NAME plays that attack; any other runs the command it was sent.
const HostileScript = `#!/bin/sh
start=fleetaudit-stream-start
header() { printf '%s\0- f 0644 9 ./etc/os-release\0\0fleetaudit-meta-end\0==> ./etc/os-release <==\n' $start; }
case $SSH_ORIGINAL_COMMAND in
*/attack-flood-file*) header; exec cat /dev/zero;;
*/attack-nuls*) exec cat /dev/zero;;
*/attack-stderr*) printf '%s\0' $start; exec cat /dev/zero >&2;;
*/attack-listing*) printf '%s\0' $start
  seq -f '- f 0644 1 ./f%.0f' 1 3000000 | sed 's/$/\n/' | tr '\n' '\0'
  printf 'fleetaudit-meta-end\0==> fleetaudit-contents-end <==\n';;
*/attack-many-files*) printf '%s\0' $start
  for i in $(seq 100); do printf -- '- f 0644 1048576 ./etc/profile.d/f%d\0\0' $i; done
  printf 'fleetaudit-meta-end\0'
  for i in $(seq 100); do printf '==> ./etc/profile.d/f%d <==\n' $i; head -c 1048576 /dev/zero; echo; done
  printf '==> fleetaudit-contents-end <==\n';;
*/attack-headers*) printf '%s\0' $start
  for i in $(seq 20); do printf -- '- f 0644 1 ./etc/profile.d/h%d\0\0' $i; done
  printf 'fleetaudit-meta-end\0'
  for i in $(seq 20); do printf '==> ./etc/profile.d/h%d <==\n' $i; yes '==> ' | head -n 200000; done;;
*/attack-hang*) exec sleep 3600;;
*/attack-close*) printf '%s\0- f 0644 9 ./et' $start;;
*/attack-linger*) exec /bin/sh -c "$(printf '%s' "$SSH_ORIGINAL_COMMAND" | sed 's/cd -- /sleep 3600.25; cd -- /')";;
*) exec /bin/sh -c "$SSH_ORIGINAL_COMMAND";;
esac
`

// LingerMark is in the command line of what the linger attack leaves
// running (a sleep before the real script).
const LingerMark = "3600.25"

// StartHostile runs an sshd whose every command goes through HostileScript.
func StartHostile(t TB) *Server {
	t.Helper()
	script := filepath.Join(t.TempDir(), "hostile.sh")
	if err := os.WriteFile(script, []byte(HostileScript), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Start(t, "ForceCommand "+script)
	// What an attack leaves running on the "host" (a hang is the
	// attacker's own process, which no client can end) ends with the test.
	t.Cleanup(func() { s.killSessions() })
	return s
}

// killSessions kills what the server's sessions run: the processes whose
// SSH_CONNECTION ends at its port.
func (s *Server) killSessions() {
	suffix := []byte(" " + strconv.Itoa(s.Port) + "\x00")
	files, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, f := range files {
		env, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, kv := range bytes.SplitAfter(env, []byte{0}) {
			if bytes.HasPrefix(kv, []byte("SSH_CONNECTION=")) && bytes.HasSuffix(kv, suffix) {
				if pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f, "/proc/"), "/environ")); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
}

// loginShell is the base name of uid's shell in /etc/passwd ("" if unknown).
func loginShell(uid string) string {
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) == 7 && f[2] == uid {
			return filepath.Base(f[6])
		}
	}
	return ""
}
