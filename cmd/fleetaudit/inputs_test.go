package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// inputsHangGuard bounds a command that must not block; it is no timing
// assertion.
const inputsHangGuard = 2 * time.Minute

// runInputs runs the CLI with ctx and stderr, failing the test if it does
// not return: a blocked open ignores the context, so the context timeout
// alone would not end the test.
func runInputs(t *testing.T, ctx context.Context, stderr io.Writer, args ...string) (code int, stdout string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, inputsHangGuard)
	defer cancel()
	type done struct {
		code int
		out  string
	}
	ch := make(chan done, 1)
	go func() {
		var out bytes.Buffer
		code := run(ctx, args, streams{in: strings.NewReader(""), out: &out, err: stderr}, func(string) string { return "" })
		ch <- done{code, out.String()}
	}()
	select {
	case d := <-ch:
		return d.code, d.out
	case <-time.After(inputsHangGuard + 30*time.Second):
		t.Fatalf("fleetaudit %s did not return", strings.Join(args, " "))
		return 0, ""
	}
}

// fifoRoot is a host root whose /proc/cmdline is a FIFO.
func fifoRoot(t *testing.T, host string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), host)
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/hostname"), []byte(host+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A live host's /proc has modules: without it that is a second error.
	if err := os.WriteFile(filepath.Join(root, "proc/modules"), []byte("xfs 2174976 2 - Live 0x0000000000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "proc/cmdline"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return root
}

// TestAuditRootWithFIFO: `mkfifo ROOT/proc/cmdline` blocked collect and
// audit in open forever; now the host is collected and reported, with a
// collection-error naming /proc/cmdline.
func TestAuditRootWithFIFO(t *testing.T) {
	root := fifoRoot(t, "fifo-host")
	var stderr bytes.Buffer
	code, out := runInputs(t, context.Background(), &stderr, "audit", "--root", root, "--format", "json", "--fail-on", "none")
	if code != exitOK {
		t.Fatalf("audit exit %d, stderr:\n%s", code, stderr.String())
	}
	doc := decodeFindings(t, out)
	found := false
	for _, f := range doc.Findings {
		if f.Host == "fifo-host" && f.Rule == "collection-error" && strings.Contains(f.Message, "/proc/cmdline") && strings.Contains(f.Message, "not a regular file (FIFO)") {
			found = true
		}
	}
	if !found {
		t.Errorf("no collection-error naming /proc/cmdline for fifo-host:\n%s", out)
	}

	stderr.Reset()
	code, out = runInputs(t, context.Background(), &stderr, "collect", "--root", root)
	if code != exitOK {
		t.Fatalf("collect exit %d, stderr:\n%s", code, stderr.String())
	}
	snap, err := snapshot.DecodeBytes([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := snapshot.CollectionError{Collector: "boot", Path: "/proc/cmdline", Reason: "open: not a regular file (FIFO)"}
	if snap.Host != "fifo-host" || len(snap.Errors) != 1 || snap.Errors[0] != want {
		t.Errorf("snapshot of %q has errors %+v, want only %+v", snap.Host, snap.Errors, want)
	}
}

// TestInputFIFOsRefused: a FIFO given as --inventory, --pods or --policies
// blocked the command in open; now each is refused (or recorded) naming
// the file.
func TestInputFIFOsRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return p
	}
	inv, pods, rego := fifo("hosts.ini"), fifo("pods.json"), fifo("rules.rego")
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string // in stderr
	}{
		{"--inventory", []string{"audit", "--inventory", inv}, exitError, inv + ": not a regular file (FIFO)"},
		{"--pods", []string{"collect", "--root", gpuRoot, "--pods", pods, "-o", filepath.Join(dir, "snap.json")}, exitOK, `path=` + pods + ` reason="open: not a regular file (FIFO)"`},
		{"--policies", []string{"policies", "list", "--policies", rego}, exitError, rego + ": not a regular file (FIFO)"},
		{"audit --policies", []string{"audit", "--root", gpuRoot, "--policies", rego}, exitError, rego + ": not a regular file (FIFO)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code, _ := runInputs(t, context.Background(), &stderr, tc.args...)
			if code != tc.code || !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("exit %d, want %d, with %q in stderr:\n%s", code, tc.code, tc.says, stderr.String())
			}
		})
	}
}

// cancelOnWrite cancels a context the first time a line holding marker is
// written: a cancellation at a known point of the run, not after a delay.
type cancelOnWrite struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte(w.marker)) {
		w.cancel()
	}
	return w.buf.Write(p)
}

func (w *cancelOnWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestAuditCancelledStopsCollection: a context cancelled once the first
// host is collected (SIGINT through signal.NotifyContext in main) ends the
// audit with an error and no report, and the temp dir the audit made is
// removed. (collectors.TestCollectCancelled shows a collection stops at the
// next fact family.)
func TestAuditCancelledStopsCollection(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	args := []string{"--log-level", "debug", "audit", "--format", "json"}
	for range 12 {
		args = append(args, "--root", gpuRoot)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOnWrite{marker: "msg=collected", cancel: cancel}
	code, out := runInputs(t, ctx, stderr, args...)
	if code != exitError || !strings.Contains(stderr.String(), "context canceled") {
		t.Errorf("exit %d, want %d with context canceled; stderr:\n%s", code, exitError, stderr.String())
	}
	if out != "" {
		t.Errorf("a report was written after the cancel:\n%.300s", out)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "fleetaudit-") {
			t.Errorf("temp dir %s left behind after the cancel", e.Name())
		}
	}
}

// unprivilegedArgs, in the environment, makes TestUnprivilegedChild run
// the CLI with these arguments (JSON) and print the result.
const unprivilegedArgs = "FLEETAUDIT_TEST_UNPRIVILEGED_ARGS"

type childResult struct {
	Code   int    `json:"code"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

const childMarker = "CHILD-RESULT "

// TestUnprivilegedChild is run by runUnprivileged in a child process as
// uid 65534; on its own it does nothing.
func TestUnprivilegedChild(t *testing.T) {
	raw := os.Getenv(unprivilegedArgs)
	if raw == "" {
		t.Skip("runs only as a child of runUnprivileged")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, args...)
	data, err := json.Marshal(childResult{r.code, r.stdout, r.stderr})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.Write([]byte("\n" + childMarker + string(data) + "\n"))
}

// runUnprivileged runs the CLI as uid/gid 65534 in a copy of the test
// binary; permission bits mean nothing to root, which the tests run as.
func runUnprivileged(t *testing.T, args ...string) result {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to uid 65534")
	}
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	// The go build cache holding the binary is not open to other users.
	exe := filepath.Join(traversableTempDir(t), "fleetaudit.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestUnprivilegedChild$")
	cmd.Dir = filepath.Dir(exe)
	cmd.Env = append(os.Environ(), unprivilegedArgs+"="+string(raw))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	_, line, found := strings.Cut(string(out), "\n"+childMarker)
	if !found {
		if err != nil {
			t.Skipf("cannot run as uid 65534: %v\n%s%s", err, out, stderr.String())
		}
		t.Fatalf("child printed no result:\n%s%s", out, stderr.String())
	}
	line, _, _ = strings.Cut(line, "\n")
	var r childResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatal(err)
	}
	return result{r.Code, r.Stdout, r.Stderr}
}

// traversableTempDir is t.TempDir() that another user can reach: the
// directories TempDir makes are 0700.
func traversableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	base := filepath.Clean(os.TempDir())
	if !strings.HasPrefix(dir, base+string(filepath.Separator)) {
		t.Skipf("%s is not under %s", dir, base)
	}
	// Only the components TempDir made, never the system's own.
	for p := dir; p != base; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestUnreadableRootUnprivileged: a root of mode 000 collected by a user
// who cannot read it said "no host name ... pass --hostname"; collect now
// says the root cannot be read, and audit reports it as the host's
// collection-error and nothing else.
func TestUnreadableRootUnprivileged(t *testing.T) {
	root := filepath.Join(traversableTempDir(t), "locked")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/hostname"), []byte("locked-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(root, 0o755) })

	r := runUnprivileged(t, "collect", "--root", root)
	if want := "--root " + root + ": cannot read the root: permission denied"; r.code != exitError || !strings.Contains(r.stderr, want) || r.stdout != "" {
		t.Errorf("collect: exit %d, stdout %q, want exit %d and %q in stderr:\n%s", r.code, r.stdout, exitError, want, r.stderr)
	}
	if strings.Contains(r.stderr, "pass --hostname") {
		t.Errorf("collect blames the host name for an unreadable root:\n%s", r.stderr)
	}

	r = runUnprivileged(t, "audit", "--root", root, "--format", "json", "--fail-on", "none")
	if r.stdout == "" {
		t.Fatalf("audit: exit %d, no report:\n%s", r.code, r.stderr)
	}
	doc := decodeFindings(t, r.stdout)
	var rules []string
	for _, f := range doc.Findings {
		rules = append(rules, f.Rule)
		if f.Rule == "collection-error" && !(strings.Contains(f.Message, root) && strings.Contains(f.Message, "permission denied")) {
			t.Errorf("collection-error %q does not name the root and permission denied", f.Message)
		}
	}
	if len(rules) != 1 || rules[0] != "collection-error" {
		t.Errorf("audit findings = %v, want only the collection-error:\n%s", rules, r.stdout)
	}
}
