package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// hangGuard bounds a command that must not block; it is no timing assertion.
const hangGuard = 60 * time.Second

func runCLIGuarded(t *testing.T, args ...string) result {
	t.Helper()
	return runCLIWithin(t, nil, args...)
}

func mustSnapshot(t *testing.T, data []byte) {
	t.Helper()
	if _, err := snapshot.DecodeBytes(data); err != nil {
		t.Errorf("output is not a snapshot (%v):\n%.200s", err, data)
	}
}

// TestOutputKeepsCharDevices: `-o /dev/null` as root replaced the device
// with a regular file. A device node made here stands in for /dev/null.
func TestOutputKeepsCharDevices(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a device node needs root")
	}
	dev := filepath.Join(t.TempDir(), "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod: %v", err)
	}
	r := runCLI(t, nil, "collect", "--root", gpuRoot, "-o", dev)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	info, err := os.Lstat(dev)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("%s is %v after -o, want the character device it was", dev, info.Mode())
	}
}

func TestOutputThroughSymlinkKeepsTheLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "reports", "snap.json")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(real, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "latest.json")
	if err := os.Symlink("reports/snap.json", link); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "collect", "--root", gpuRoot, "-o", link)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if dest, err := os.Readlink(link); err != nil || dest != "reports/snap.json" {
		t.Errorf("link after -o: %q, %v; want it still pointing at reports/snap.json", dest, err)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	mustSnapshot(t, data)
	if info, _ := os.Stat(real); info.Mode().Perm() != 0o640 {
		t.Errorf("target mode %v, want 0640 kept", info.Mode().Perm())
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*", ".*"))
	if hidden, _ := filepath.Glob(filepath.Join(dir, ".*")); len(leftovers)+len(hidden) > 0 {
		t.Errorf("temp files left behind: %v %v", leftovers, hidden)
	}
}

func TestOutputKeepsTheFileMode(t *testing.T) {
	for _, perm := range []fs.FileMode{0o600, 0o640, 0o664} {
		t.Run(perm.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "snap.json")
			if err := os.WriteFile(out, []byte("old"), perm); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(out, perm); err != nil { // past the umask
				t.Fatal(err)
			}
			if r := runCLI(t, nil, "collect", "--root", gpuRoot, "-o", out); r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			info, err := os.Lstat(out)
			if err != nil {
				t.Fatal(err)
			}
			if !info.Mode().IsRegular() || info.Mode().Perm() != perm {
				t.Errorf("mode after -o: %v, want %v kept", info.Mode(), perm)
			}
			data, _ := os.ReadFile(out)
			mustSnapshot(t, data)
		})
	}
}

// TestNewOutputFollowsTheUmask: a new file is 0644 less the umask, as any
// new file is (the writer chmodded it to 0644 whatever the umask).
func TestNewOutputFollowsTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	out := filepath.Join(t.TempDir(), "snap.json")
	if r := runCLI(t, nil, "collect", "--root", gpuRoot, "-o", out); r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if info, err := os.Stat(out); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("new file under umask 077: %v, %v; want -rw-------", info.Mode(), err)
	}
}

func TestOutputToAFIFOWithAReader(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A reader that holds the FIFO open, so the writer's open succeeds
	// whenever it comes; the goroutine reads everything written.
	holder, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(fifo) // returns once the writer has opened
		if err != nil {
			got <- nil
			return
		}
		defer f.Close()
		data, _ := io.ReadAll(f)
		got <- data
	}()
	r := runCLIGuarded(t, "collect", "--root", gpuRoot, "-o", fifo)
	if r.code != exitOK {
		// Let the reader's open return, so the goroutine ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	select {
	case data := <-got:
		mustSnapshot(t, data)
	case <-time.After(hangGuard):
		t.Fatal("the reader got no end of file")
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("%s after -o: %v, %v; want the FIFO kept", fifo, info.Mode(), err)
	}
}

func TestOutputToAFIFOWithoutAReaderFails(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLIGuarded(t, "collect", "--root", gpuRoot, "-o", fifo)
	if r.code != exitError || !strings.Contains(r.stderr, "no process is reading") {
		t.Errorf("exit %d, want %d saying no process reads the FIFO:\n%s", r.code, exitError, r.stderr)
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("%s after -o: %v, %v; want the FIFO kept", fifo, info.Mode(), err)
	}
}

// TestOutputToAStalledFIFOIsCancelled: a reader that never reads must not
// hold the command past SIGINT/SIGTERM (the signal cancels the context).
func TestOutputToAStalledFIFOIsCancelled(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	stalled, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() {
		a := &app{streams: streams{out: io.Discard}}
		done <- writeOutput(ctx, a, fifo, make([]byte, 4<<20)) // more than a pipe holds
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("writing to a FIFO nobody reads ignored cancellation")
	}
}

// TestOutputThroughProcFD: /dev/stdout is a link to /proc/self/fd/1; the
// file behind the descriptor gets the bytes, and the link stays.
func TestOutputThroughProcFD(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "redirected.json")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	link := filepath.Join(dir, "stdout")
	if err := os.Symlink("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), link); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, nil, "collect", "--root", gpuRoot, "-o", link); r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s after -o: %v, %v; want the link kept", link, info.Mode(), err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	mustSnapshot(t, data)
}

func TestOutputRefusesWhatCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "missing", "x.json"), dangling); err != nil {
		t.Fatal(err)
	}
	// Not a git repo: the gate would fail on that if it ran before the check.
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"directory", []string{"collect", "--root", gpuRoot, "-o", dir}, "a directory"},
		{"dangling symlink", []string{"collect", "--root", gpuRoot, "-o", dangling}, "which does not exist"},
		{"directory, before the gate runs", []string{"gate", "--repo", repo, "--base", "HEAD", "-o", dir}, "a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, tt.args...)
			if r.code != exitError || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want %d and %q:\n%s", r.code, exitError, tt.want, r.stderr)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(dir, "missing")); err == nil {
		t.Error("writing through a dangling symlink created its directory")
	}
}

// TestOutputNamingAnInputIsRefused: -o over an input destroys it before the
// next run can read it; refuse before anything runs.
func TestOutputNamingAnInputIsRefused(t *testing.T) {
	dir := t.TempDir()
	snaps := filepath.Join(dir, "snaps")
	if err := os.MkdirAll(snaps, 0o755); err != nil {
		t.Fatal(err)
	}
	snapFile := filepath.Join(snaps, "gpu-a-001.json")
	if r := runCLI(t, nil, "collect", "--root", gpuRoot, "-o", snapFile); r.code != exitOK {
		t.Fatalf("collect: exit %d\n%s", r.code, r.stderr)
	}
	policyDir := filepath.Join(dir, "policies")
	if err := os.MkdirAll(filepath.Join(policyDir, "site"), 0o755); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(policyDir, "site", "data.json")
	pods := filepath.Join(dir, "pods.json")
	link := filepath.Join(dir, "link.json")
	for _, f := range []string{policy, pods} {
		if err := os.WriteFile(f, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(snapFile, link); err != nil {
		t.Fatal(err)
	}
	// Copies: a regression overwrites these, not the examples.
	inventory := filepath.Join(dir, "inventory.yaml")
	repo := filepath.Join(dir, "repo")
	manifest := filepath.Join(repo, "fleetaudit.yaml")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	baseline := filepath.Join(repo, "baselines", "gpu-training.json")
	if err := os.MkdirAll(filepath.Dir(baseline), 0o755); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{exampleInventory: inventory, "../../examples/config-repo/fleetaudit.yaml": manifest, snapFile: baseline} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
		file string
	}{
		{"snapshot file", []string{"audit", "--snapshots", snapFile, "-o", snapFile}, snapFile},
		{"snapshot through a link", []string{"audit", "--snapshots", snapFile, "-o", link}, snapFile},
		{"file in a snapshots dir", []string{"audit", "--snapshots", snaps, "-o", snapFile}, snapFile},
		{"inventory", []string{"audit", "--inventory", inventory, "--snapshots", snaps, "-o", inventory}, inventory},
		{"file deep in a policies dir", []string{"audit", "--snapshots", snaps, "--policies", policyDir, "-o", policy}, policy},
		{"pods manifest", []string{"collect", "--root", gpuRoot, "--pods", pods, "-o", pods}, pods},
		{"gate manifest", []string{"gate", "--repo", repo, "--base", "HEAD", "-o", manifest}, manifest},
		{"gate baseline", []string{"gate", "--repo", repo, "--base", "HEAD", "-o", baseline}, baseline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, nil, tt.args...)
			if r.code != exitError || !strings.Contains(r.stderr, "refusing to overwrite an input") {
				t.Errorf("exit %d, want %d refusing to overwrite an input:\n%s", r.code, exitError, r.stderr)
			}
			if after, _ := os.ReadFile(tt.file); string(after) != string(before) {
				t.Errorf("%s changed", tt.file)
			}
		})
	}
	// Beside the inputs is fine.
	out := filepath.Join(dir, "report.txt")
	if r := runCLI(t, nil, "audit", "--snapshots", snaps, "--policies", policyDir, "--fail-on", "none", "-o", out); r.code != exitOK {
		t.Errorf("report beside the inputs: exit %d\n%s", r.code, r.stderr)
	}
}
