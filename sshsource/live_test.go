package sshsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/internal/sshdtest"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// countingFetcher fails every fetch and counts them.
type countingFetcher struct{ n atomic.Int64 }

func (c *countingFetcher) output(context.Context, string) ([]byte, error) {
	c.n.Add(1)
	return nil, errors.New("fetched")
}

func (c *countingFetcher) stream(context.Context, string) (io.ReadCloser, error) {
	c.n.Add(1)
	return nil, errors.New("fetched")
}

// A file the listing has and the stream was to carry, but whose contents
// did not come (a process that exited between the listing and the read),
// is absent: no fetch, no error.
func TestVanishedFileIsAbsent(t *testing.T) {
	rec := func(flag, typ, mode, name string) string {
		return flag + " " + typ + " " + mode + " 0 ./" + name + "\x00\x00"
	}
	stream := startMarker +
		rec("F", "d", "0755", "") + // "."
		rec("F", "d", "0555", "proc") +
		rec("F", "d", "0555", "proc/5") + rec("-", "f", "0644", "proc/5/comm") + rec("-", "f", "0444", "proc/5/limits") +
		rec("F", "d", "0755", "etc") + rec("-", "f", "0644", "etc/os-release") +
		metaEnd + "\x00" +
		"==> ./proc/6/comm <==\nnvidia-persiste\n\n" +
		"==> " + contentsEnd + " <==\n"
	stream = strings.Replace(stream, "./\x00", ".\x00", 1)
	f := &countingFetcher{}
	tr := newTree(context.Background(), f, "/", 1<<20)
	if err := tr.load([]byte(stream)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"proc/5/comm", "proc/5/limits", "etc/os-release", "proc/7/comm"} {
		if _, err := tr.Open(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%s) = %v, want not exist", name, err)
		}
	}
	// Process 6 is listed by its comm alone.
	entries, err := tr.ReadDir("proc")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[5 6]" {
		t.Errorf("proc lists %v, want [5 6]", names)
	}
	snap, err := collectors.Collect(context.Background(), collectors.Target{Origin: snapshot.Origin{Kind: "ssh", Root: "/"}, Files: collectors.Chroot(tr)}, collectors.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range snap.Errors {
		if e.Collector == "processes" {
			t.Errorf("a process that exited is an error: %+v", e)
		}
	}
	if !snap.NVIDIA.Persistenced {
		t.Error("nvidia-persistenced (process 6) not seen")
	}
	if n := f.n.Load(); n != 0 {
		t.Errorf("%d fetches after the stream, want none", n)
	}
}

// A command the collectors run through Exec comes in the stream's trailer,
// with the wording of a command run on its own.
func TestExecTrailer(t *testing.T) {
	root := fixture(t, "web-node")
	cmds := [][]string{{"printf", "a b\n\n"}, {"fleetaudit-no-such-command"}, {"sh", "-c", "echo 'bad thing'; exit 3"}, {"printf", ""}}
	ctx := context.Background()
	out, err := shFetcher{}.output(ctx, snapshotScript(root, collectors.DefaultMaxFileSize+1, cmds...))
	if err != nil {
		t.Fatal(err)
	}
	f := &countingFetcher{}
	tr := newTree(ctx, f, root, collectors.DefaultMaxFileSize+1)
	tr.cmds = cmds
	if err := tr.load(out); err != nil {
		t.Fatal(err)
	}
	if len(tr.ran) != len(cmds) {
		t.Fatalf("trailer has %d commands, want %d", len(tr.ran), len(cmds))
	}
	run := ranRunner(tr.ran, tr, func(context.Context, string, ...string) ([]byte, error) { return nil, errors.New("ran on its own") })
	if got, err := run(ctx, "printf", "a b\n\n"); err != nil || string(got) != "a b\n\n" {
		t.Errorf("printf: %q, %v", got, err)
	}
	if got, err := run(ctx, "printf", ""); err != nil || len(got) != 0 {
		t.Errorf("empty printf: %q, %v", got, err)
	}
	if _, err := run(ctx, "fleetaudit-no-such-command"); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing command: %v, want exec.ErrNotFound", err)
	}
	if _, err := run(ctx, "sh", "-c", "echo 'bad thing'; exit 3"); err == nil || err.Error() != "sh: exit status 3: bad thing" {
		t.Errorf("failing command: %v", err)
	}
	if _, err := run(ctx, "other"); err == nil || err.Error() != "ran on its own" || tr.misses.Load() != 1 {
		t.Errorf("a command not in the trailer: %v, %d misses; want it run on its own, one miss", err, tr.misses.Load())
	}
}

// budgetRoot is a tree whose ld.so.conf names n library directories
// through links, which the stream does not follow: each is a fetch.
func budgetRoot(t *testing.T, n int) string {
	root := t.TempDir()
	var conf strings.Builder
	os.MkdirAll(filepath.Join(root, "srv"), 0o755)
	for i := range n {
		dir := filepath.Join(root, "data", fmt.Sprintf("l%02d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../data/"+filepath.Base(dir), filepath.Join(root, "srv", filepath.Base(dir))); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&conf, "/srv/l%02d\n", i)
	}
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "etc", "ld.so.conf"), []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func slowSSHD(t *testing.T) *testSSHD {
	s := &testSSHD{Server: sshdtest.StartWith(t, sshdtest.Config{LoginRC: "sleep 1"}), timeout: sshdtest.Timeout(t)}
	if !s.CountsExecs {
		t.Skip("the user's login shell is not bash: execs are not counted")
	}
	return s
}

// TestSSHOneExecPerHost: behind a login shell that takes a second per
// command (a .bashrc running conda init), every fixture host and a live
// "/" (busy with processes that come and go) is collected in one exec, or
// a few bounded ones for "/", and a process that exits mid-collection is
// no error.
func TestSSHOneExecPerHost(t *testing.T) {
	s := slowSSHD(t)
	churn := exec.Command("sh", "-c", "while :; do /bin/sleep 0.01; done")
	if err := churn.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { churn.Process.Kill(); churn.Wait() }()
	var hosts []Host
	for _, h := range fixtureHosts {
		hosts = append(hosts, s.host("h-"+h, fixture(t, h)))
	}
	for i := range 4 {
		hosts = append(hosts, s.host(fmt.Sprintf("live-%d", i), "/"))
	}
	before := s.Execs()
	res := NewDialer(s.options()).CollectAll(context.Background(), hosts, len(hosts), s.timeout, nil)
	var sessions int64
	for _, r := range res {
		sessions += r.Sessions
		if r.Err != nil && r.Err.Class != ClassPartial {
			t.Errorf("%s: %v", r.Host.Name, r.Err)
			continue
		}
		if r.Host.Root != "/" {
			if want := 1 + streamMisses(t, r.Host.Root); r.Sessions != want {
				t.Errorf("%s: %d execs, want %d (the stream, and the libraries read for their version)", r.Host.Name, r.Sessions, want)
			}
			continue
		}
		if r.Sessions > 1+defaultMaxFetches {
			t.Errorf("%s: %d execs, want at most %d", r.Host.Name, r.Sessions, 1+defaultMaxFetches)
		}
		for _, e := range r.Snapshot.Errors {
			if e.Collector == "processes" {
				t.Errorf("%s: %+v", r.Host.Name, e)
			}
		}
	}
	if got := int64(s.Execs() - before); got != sessions {
		t.Errorf("sshd ran %d commands, the results count %d", got, sessions)
	}
	t.Logf("%d hosts, %d execs", len(hosts), sessions)
}

// TestSSHFetchBudget: a host whose collectors ask for more names outside
// the stream than the budget gets them up to the budget, and the rest are
// collection errors saying so; the host is read in part.
func TestSSHFetchBudget(t *testing.T) {
	s := slowSSHD(t)
	root := budgetRoot(t, 3*defaultMaxFetches)
	before := s.Execs()
	r := NewDialer(s.options()).CollectTimeout(context.Background(), s.host("greedy", root), s.timeout)
	if r.Err == nil || r.Err.Class != ClassPartial || !strings.Contains(r.Err.Error(), "not collected") {
		t.Fatalf("err = %v, want %s naming what was not collected", r.Err, ClassPartial)
	}
	if r.Sessions != 1+defaultMaxFetches || r.NotFetched == 0 {
		t.Errorf("sessions %d, not fetched %d; want %d and some", r.Sessions, r.NotFetched, 1+defaultMaxFetches)
	}
	if got := s.Execs() - before; int64(got) != r.Sessions {
		t.Errorf("sshd ran %d commands, want %d", got, r.Sessions)
	}
	reported := 0
	for _, e := range r.Snapshot.Errors {
		if strings.Contains(e.Reason, "not collected") {
			reported++
		}
	}
	if int64(reported) < r.NotFetched {
		t.Errorf("%d errors say not collected, want %d: %+v", reported, r.NotFetched, r.Snapshot.Errors)
	}
}

// streamMisses is how many fetches collecting root from its stream takes
// (TestFixtureRootsNeedNoMiss says which).
func streamMisses(t *testing.T, root string) int64 {
	ctx := context.Background()
	out, err := shFetcher{}.output(ctx, snapshotScript(root, collectors.DefaultMaxFileSize+1))
	if err != nil {
		t.Fatal(err)
	}
	tr := newTree(ctx, shFetcher{}, root, collectors.DefaultMaxFileSize+1)
	if err := tr.load(out); err != nil {
		t.Fatal(err)
	}
	if _, err := collectors.Collect(ctx, collectors.Target{Origin: snapshot.Origin{Kind: "local", Root: root}, Files: collectors.Chroot(tr)}, collectors.Options{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	return tr.misses.Load()
}

// The directories ld.so.conf names are in the stream: a library there
// costs no fetch.
func TestLdSoConfDirsAreStreamed(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"etc/ld.so.conf":                        "include /etc/ld.so.conf.d/*.conf\n/srv/nccl/lib # comment\n",
		"etc/ld.so.conf.d/x.conf":               "/opt2/cuda/lib64=x86_64\n/srv/gone\n/srv/../etc\n",
		"srv/nccl/lib/libnccl.so.2.18.3":        "",
		"opt2/cuda/lib64/libcudart.so.12.2.140": "",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n := streamMisses(t, root); n != 0 {
		t.Errorf("%d fetches after the stream, want none", n)
	}
	ctx := context.Background()
	out, err := shFetcher{}.output(ctx, snapshotScript(root, collectors.DefaultMaxFileSize+1))
	if err != nil {
		t.Fatal(err)
	}
	tr := newTree(ctx, &countingFetcher{}, root, collectors.DefaultMaxFileSize+1)
	if err := tr.load(out); err != nil {
		t.Fatal(err)
	}
	got, err := collectors.Collect(ctx, collectors.Target{Origin: snapshot.Origin{Kind: "local", Root: root}, Files: collectors.Chroot(tr)}, collectors.Options{Now: fixedNow, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	want := collectLocal(t, root)
	if a, b := encode(t, want), encode(t, got); a != b {
		t.Errorf("the stream's snapshot differs from the local one:\nlocal %s\nstream %s", a, b)
	}
	if len(got.Libraries.NCCL) != 1 || len(got.Libraries.CUDA) != 1 {
		t.Errorf("libraries: %+v, want nccl and cudart", got.Libraries)
	}
	for name := range tr.nodes {
		if strings.HasPrefix(name, "..") || strings.Contains(name, "/../") {
			t.Errorf("the stream lists %s, outside the root", name)
		}
	}
}
