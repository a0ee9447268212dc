// Package giteatest starts a real Gitea on loopback for end-to-end tests:
// a throwaway server (sqlite, temporary work directory) with one admin user
// and an access token, from the binary scripts/gitea/build.sh puts in
// $HOME/.cache/fleetaudit/gitea (FLEETAUDIT_GITEA overrides the directory).
package giteatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/fleetaudit/fleetaudit/internal/testpeer"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/gittest"
)

// Version is the Gitea the build script builds; a cache holding another is
// rebuilt by it.
const Version = "v1.27.3"

// Server is a running Gitea.
type Server struct {
	// URL is the server's root, "http://127.0.0.1:PORT/".
	URL string
	// User is the admin user; Token its access token (all scopes).
	User, Token string
	// Log is Gitea's own log file, for a failing test to point at.
	Log string
}

// Dir is where the Gitea build lives.
func Dir() string {
	if d := os.Getenv("FLEETAUDIT_GITEA"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/root"
	}
	return filepath.Join(home, ".cache", "fleetaudit", "gitea")
}

// Start starts Gitea for tb and stops it when tb ends. Without a build it
// skips tb, or fails it under CI=true or FLEETAUDIT_REQUIRE_GITEA (.ci/run
// starts the build in the background and sets that), after waiting for a
// build in progress.
func Start(tb testing.TB) *Server {
	tb.Helper()
	gittest.Require(tb)
	dir := Dir()
	// CI starts the build in the background: wait for it here.
	if testpeer.Required("FLEETAUDIT_REQUIRE_GITEA") {
		if err := testpeer.WaitForBuild(filepath.Join(dir, ".build.lock"), testpeer.BuildDeadline(tb, 40*time.Minute)); err != nil {
			tb.Fatal(err)
		}
	}
	bin, share := filepath.Join(dir, "bin", "gitea"), filepath.Join(dir, "share")
	ver, _ := os.ReadFile(filepath.Join(dir, "VERSION"))
	if _, err := os.Stat(bin); err != nil || strings.TrimSpace(string(ver)) != Version {
		msg := fmt.Sprintf("no Gitea %s build in %s (run scripts/gitea/build.sh; it takes a while)", Version, dir)
		testpeer.Missing(tb, msg, "FLEETAUDIT_REQUIRE_GITEA")
	}
	work := tb.TempDir()
	port := freePort(tb)
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d/", port), User: "fleetaudit-admin", Log: filepath.Join(work, "gitea.log")}
	ini := filepath.Join(work, "app.ini")
	runUser := "root"
	if u, err := user.Current(); err == nil {
		runUser = u.Username
	}
	conf := fmt.Sprintf(`APP_NAME = fleetaudit e2e
RUN_USER = %[1]s
RUN_MODE = prod
WORK_PATH = %[2]s
; a throwaway server on loopback; CI runs as root
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[3]d
ROOT_URL = %[4]s
LOCAL_ROOT_URL = %[4]s
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = %[5]s
APP_DATA_PATH = %[2]s/data

[database]
DB_TYPE = sqlite3
PATH = %[2]s/data/gitea.db

[repository]
ROOT = %[2]s/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = %[6]s

[service]
DISABLE_REGISTRATION = true

[mailer]
ENABLED = false

[cron]
ENABLED = false

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = %[2]s/log
`, runUser, work, port, s.URL, share, randHex(tb, 32))
	if err := os.WriteFile(ini, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	env := append(os.Environ(), "GITEA_WORK_DIR="+work, "HOME="+work, "GIT_CONFIG_NOSYSTEM=1")
	gitea := func(args ...string) string {
		tb.Helper()
		cmd := exec.Command(bin, append(args, "--config", ini)...)
		cmd.Env, cmd.Dir = env, work
		out, err := cmd.CombinedOutput()
		if err != nil {
			tb.Fatalf("gitea %s: %v\n%s", args[0], err, redact(out))
		}
		return string(out)
	}
	gitea("migrate")
	out := gitea("admin", "user", "create", "--admin", "--username", s.User, "--email", s.User+"@example.com",
		"--password", randHex(tb, 16), "--must-change-password=false", "--access-token", "--access-token-scopes", "all")
	m := regexp.MustCompile(`Access token was successfully created\.\.\. ([0-9a-f]{40})`).FindStringSubmatch(out)
	if m == nil {
		tb.Fatalf("gitea admin user create printed no access token:\n%s", redact([]byte(out)))
	}
	s.Token = m[1]

	logf, err := os.Create(s.Log)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "web", "--config", ini)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, work, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its hooks and git children go with it
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logf.Close()
	})
	// Ready when the API answers; a start that fails ends the process.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		var v struct{ Version string }
		if code, err := s.API(ctx, "GET", "version", nil, &v); err == nil && code == 200 {
			break
		}
		select {
		case err := <-exited:
			exited <- err
			tb.Fatalf("gitea web exited: %v; its log %s:\n%s", err, s.Log, tail(s.Log))
		case <-ctx.Done():
			tb.Fatalf("gitea web did not answer on %s; its log %s:\n%s", s.URL, s.Log, tail(s.Log))
		case <-time.After(100 * time.Millisecond):
		}
	}
	return s
}

// API calls Gitea's REST API (path relative to /api/v1/) with the admin
// token, sending in as JSON and decoding the answer into out (when not
// nil); it returns the status.
func (s *Server) API(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+"api/v1/"+strings.TrimPrefix(path, "/"), body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "token "+s.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// GitEnv is the environment for git to push to and fetch from the server
// as the admin, the token sent as Basic auth (not in any argument).
func (s *Server) GitEnv() []string {
	basic := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(s.User+":"+s.Token))
	return append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http."+s.URL+".extraHeader", "GIT_CONFIG_VALUE_0="+basic)
}

func freePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randHex(tb testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// redact hides tokens (40 hex digits) in output a test prints.
func redact(b []byte) string {
	return regexp.MustCompile(`[0-9a-f]{40}`).ReplaceAllString(string(b), "<token>")
}

func tail(path string) string {
	data, _ := os.ReadFile(path)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return redact(data)
}

// LogTail is the end of Gitea's log, tokens hidden, for a failing test.
func (s *Server) LogTail() string { return tail(s.Log) }

// WaitFor polls cond until it holds, for what Gitea does after a push in
// its queues (a repository stops being empty, a pull request's head
// moves); past a minute it fails tb, saying what did not happen.
func (s *Server) WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("gitea: %s did not happen within a minute; its log %s:\n%s", what, s.Log, s.LogTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
