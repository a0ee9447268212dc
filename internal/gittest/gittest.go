// Package gittest builds real git repositories in temporary directories for
// tests: the gate and remediation read refs with git itself, so their tests
// use git itself too.
package gittest

import (
	"fmt"
	"github.com/fleetaudit/fleetaudit/internal/testpeer"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Require skips tb on a machine without git, unless FLEETAUDIT_REQUIRE_GIT
// is set (CI sets it, so there a missing git fails instead).
func Require(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testpeer.Missing(tb, fmt.Sprintf("git is not installed (%v); this test builds real git repositories", err), "FLEETAUDIT_REQUIRE_GIT")
	}
}

// Repo is a git repository in a temporary directory.
type Repo struct {
	T   testing.TB
	Dir string
}

// New initialises an empty repository whose branch is main.
func New(tb testing.TB) *Repo {
	tb.Helper()
	Require(tb)
	r := &Repo{T: tb, Dir: tb.TempDir()}
	r.Git("init", "-q", "-b", "main")
	return r
}

// Git runs git in the repository with a fixed identity and returns its
// trimmed output; a failure fails the test.
func (r *Repo) Git(args ...string) string {
	r.T.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.Dir, "-c", "user.name=fleetaudit", "-c", "user.email=ci@fleetaudit.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.T.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write writes a file of the work tree (a slash-separated path), creating
// its directories.
func (r *Repo) Write(path, content string) {
	r.T.Helper()
	p := filepath.Join(r.Dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.T.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.T.Fatal(err)
	}
}

// Read returns a file of the work tree.
func (r *Repo) Read(path string) string {
	r.T.Helper()
	data, err := os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(path)))
	if err != nil {
		r.T.Fatal(err)
	}
	return string(data)
}

// Commit commits everything in the work tree and returns the commit's hash.
func (r *Repo) Commit(msg string) string {
	r.T.Helper()
	r.Git("add", "-A")
	r.Git("commit", "-q", "--allow-empty", "-m", msg)
	return r.Git("rev-parse", "HEAD")
}
