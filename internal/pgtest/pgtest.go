// Package pgtest runs a real PostgreSQL server for tests: Debian's
// postgresql (initdb, pg_ctl), started in a temporary directory with its
// socket there and no TCP, one per test binary, and a fresh database per
// test.
//
//	var postgres pgtest.Server
//	func TestMain(m *testing.M) { os.Exit(postgres.Main(m)) }
//
//	url := postgres.DB(t) // postgres://fleetaudit@/db?host=/tmp/...
//
// PostgreSQL refuses to run as root: as root, the server runs as the
// postgres user (its temporary directory owned by it). Without the
// binaries a test is skipped, or fails under CI=true.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the role the tests connect as (trust on the socket).
const Superuser = "fleetaudit"

// Server is a test binary's PostgreSQL server, started on first use; the
// zero value is ready. Keep one in a package variable:
//
//	var postgres pgtest.Server
//	func TestMain(m *testing.M) { os.Exit(postgres.Main(m)) }
type Server struct {
	once sync.Once
	err  error
	inst *Instance
}

// Main runs the tests and stops the server if one was started.
func (s *Server) Main(m *testing.M) int {
	code := m.Run()
	s.Stop()
	return code
}

// Stop stops the server if one was started (for a TestMain that runs the
// tests through another Main).
func (s *Server) Stop() {
	if s.inst != nil {
		if err := s.inst.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
}

// Get is the running server, started on first use; it skips the test
// when PostgreSQL is not installed (fails under CI=true).
func (s *Server) Get(t testing.TB) *Instance {
	t.Helper()
	s.once.Do(func() { s.inst, s.err = Start() })
	if s.err != nil {
		if os.Getenv("CI") == "true" || !errors.Is(s.err, ErrNotInstalled) {
			t.Fatalf("pgtest: %v", s.err)
		}
		t.Skipf("pgtest: %v", s.err)
	}
	return s.inst
}

// DB creates a fresh database for the test and returns its URL.
func (s *Server) DB(t testing.TB) string {
	t.Helper()
	u, err := s.Get(t).CreateDB(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Instance is a running PostgreSQL server.
type Instance struct {
	dir, data, sock string
	cred            *syscall.Credential
	bin             string
	mu              sync.Mutex
	n               int
	// wd stops the server when watchdog, its stdin, closes.
	wd       *exec.Cmd
	watchdog io.WriteCloser
}

// ErrNotInstalled: no initdb and pg_ctl were found.
var ErrNotInstalled = errors.New("PostgreSQL is not installed (Debian: apt-get install postgresql)")

// binDir finds initdb and pg_ctl: Debian's /usr/lib/postgresql/N/bin
// (newest), else PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", ErrNotInstalled
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// Start initialises and starts a server in a new temporary directory.
func Start() (*Instance, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	base := ""
	if os.Geteuid() == 0 {
		// The server's user must reach its directory: $TMPDIR may be
		// under root's home. The socket's path must also stay short.
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "pgtest")
	if err != nil {
		return nil, err
	}
	s := &Instance{dir: dir, data: filepath.Join(dir, "data"), sock: filepath.Join(dir, "sock"), bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, PostgreSQL needs another user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.mkdir(s.sock); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if out, err := s.run("initdb", "-D", s.data, "-U", Superuser, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// Tests that need a password connect as a role of their own: its
	// line comes before trust.
	hba := "local all pwtest scram-sha-256\nlocal all all trust\n"
	if err := os.WriteFile(filepath.Join(s.data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if s.cred != nil {
		_ = os.Chown(filepath.Join(s.data, "pg_hba.conf"), int(s.cred.Uid), int(s.cred.Gid))
	}
	// fsync off: a test server's data need not survive a power loss.
	opts := fmt.Sprintf("-c listen_addresses='' -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", s.sock)
	if out, err := s.run("pg_ctl", "start", "-w", "-t", "60", "-D", s.data, "-l", filepath.Join(dir, "server.log"), "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	// A test binary that dies (killed, a test timeout) runs no TestMain
	// cleanup: a process of its own stops the server once the binary's
	// end of its stdin closes, however the binary ended.
	wd := exec.Command("/bin/sh", "-c", `read _; "$0" stop -w -m immediate -D "$1" >/dev/null 2>&1; rm -rf "$2"`,
		filepath.Join(bin, "pg_ctl"), s.data, dir)
	wd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	if s.watchdog, err = wd.StdinPipe(); err == nil {
		err = wd.Start()
	}
	if err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("starting the server's watchdog: %w", err)
	}
	s.wd = wd
	return s, nil
}

func (s *Instance) mkdir(p string) error {
	if err := os.Mkdir(p, 0o700); err != nil {
		return err
	}
	if s.cred != nil {
		return os.Chown(p, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

func (s *Instance) run(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}

// Stop stops the server and removes its directory.
func (s *Instance) Stop() error {
	out, err := s.run("pg_ctl", "stop", "-w", "-m", "immediate", "-D", s.data)
	rmErr := os.RemoveAll(s.dir)
	if s.wd != nil {
		s.watchdog.Close()
		_ = s.wd.Wait()
	}
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return rmErr
}

// Socket is the directory of the server's socket.
func (s *Instance) Socket() string { return s.sock }

// URL is a database's URL for role (Superuser when "").
func (s *Instance) URL(db, role string) string {
	if role == "" {
		role = Superuser
	}
	q := url.Values{"host": {s.sock}, "sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: url.User(role), Path: "/" + db, RawQuery: q.Encode()}).String()
}

var notIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// CreateDB creates a database named after hint and returns its URL.
func (s *Instance) CreateDB(hint string) (string, error) {
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("t%d_%s", s.n, notIdent.ReplaceAllString(strings.ToLower(hint), "_"))
	s.mu.Unlock()
	if len(name) > 60 {
		name = name[:60]
	}
	if err := s.Exec("postgres", `CREATE DATABASE "`+name+`"`); err != nil {
		return "", err
	}
	return s.URL(name, ""), nil
}

// Exec runs statements in database db as the superuser.
func (s *Instance) Exec(db string, stmts ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL(db, ""))
	if err != nil {
		return fmt.Errorf("pgtest: connecting to %s: %w", db, err)
	}
	defer conn.Close(context.Background())
	for _, st := range stmts {
		if _, err := conn.Exec(ctx, st); err != nil {
			return fmt.Errorf("pgtest: %s: %w", st, err)
		}
	}
	return nil
}
