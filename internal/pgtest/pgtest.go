// Package pgtest runs a real PostgreSQL server for tests: Debian's
// postgresql (initdb, pg_ctl), started in a temporary directory with its
// socket there and no TCP, one per test binary, and a fresh database per
// test.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	url := pgtest.DB(t) // postgres:///db?host=/tmp/...
//
// PostgreSQL refuses to run as root: as root, the server runs as the
// postgres user (its temporary directory owned by it). Without the
// binaries a test is skipped, or fails under CI=true.
package pgtest

import (
	"context"
	"errors"
	"fmt"
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

// Server is a running PostgreSQL server.
type Server struct {
	dir, data, sock string
	cred            *syscall.Credential
	bin             string
	n               int
	mu              sync.Mutex
}

var (
	once    sync.Once
	shared  *Server
	sharedE error
)

// Main runs the tests and stops the server if one was started.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// Get is the test binary's server, started on first use; it skips the
// test when PostgreSQL is not installed (fails under CI=true).
func Get(t testing.TB) *Server {
	t.Helper()
	once.Do(func() { shared, sharedE = Start() })
	if sharedE != nil {
		if os.Getenv("CI") == "true" || !errors.Is(sharedE, ErrNotInstalled) {
			t.Fatalf("pgtest: %v", sharedE)
		}
		t.Skipf("pgtest: %v", sharedE)
	}
	return shared
}

// DB creates a fresh database on the binary's server and returns its URL.
func DB(t testing.TB) string {
	t.Helper()
	s := Get(t)
	u, err := s.CreateDB(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return u
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
func Start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, data: filepath.Join(dir, "data"), sock: filepath.Join(dir, "sock"), bin: bin}
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
	return s, nil
}

func (s *Server) mkdir(p string) error {
	if err := os.Mkdir(p, 0o700); err != nil {
		return err
	}
	if s.cred != nil {
		return os.Chown(p, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
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
func (s *Server) Stop() error {
	out, err := s.run("pg_ctl", "stop", "-w", "-m", "immediate", "-D", s.data)
	rmErr := os.RemoveAll(s.dir)
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return rmErr
}

// Socket is the directory of the server's socket.
func (s *Server) Socket() string { return s.sock }

// URL is a database's URL for role (Superuser when "").
func (s *Server) URL(db, role string) string {
	if role == "" {
		role = Superuser
	}
	q := url.Values{"host": {s.sock}, "sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: url.User(role), Path: "/" + db, RawQuery: q.Encode()}).String()
}

var notIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// CreateDB creates a database named after hint and returns its URL.
func (s *Server) CreateDB(hint string) (string, error) {
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
func (s *Server) Exec(db string, stmts ...string) error {
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
