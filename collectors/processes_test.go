package collectors

import (
	"context"
	"io/fs"
	"slices"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

func TestIsPersistencedComm(t *testing.T) {
	for comm, want := range map[string]bool{
		"nvidia-persiste\n":     true, // what the kernel shows: 15 bytes
		"nvidia-persistenced\n": true,
		"nvidia-smi\n":          false,
		"nv-fabricmanage\n":     false,
		"":                      false,
	} {
		if got := isPersistencedComm(comm); got != want {
			t.Errorf("isPersistencedComm(%q) = %v, want %v", comm, got, want)
		}
	}
}

func TestCollectProcesses(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		dir := t.TempDir()
		hwWriteTree(t, dir, map[string]string{
			"proc/1/comm":       "systemd\n",
			"proc/2/status":     "Name:\tkthreadd\n", // exited before its comm was read
			"proc/self":         "-> 1",
			"proc/sys/vm/x":     "1\n",
			"proc/1311/comm":    "nvidia-persiste\n",
			"proc/cmdline":      "ro quiet\n",
			"proc/1400/cmdline": "sshd\x00",
		})
		c := hwTestCollection(dir)
		collectProcesses(c)
		if !c.snap.NVIDIA.Persistenced || c.snap.Sources["nvidia.persistenced"].String() != "/proc/1311/comm" {
			t.Errorf("persistenced = %v from %q", c.snap.NVIDIA.Persistenced, c.snap.Sources["nvidia.persistenced"].String())
		}
		if len(c.snap.Errors) > 0 {
			t.Errorf("errors: %v", c.snap.Errors)
		}
	})
	t.Run("not running", func(t *testing.T) {
		dir := t.TempDir()
		hwWriteTree(t, dir, map[string]string{"proc/1/comm": "systemd\n", "proc/20/comm": "sshd\n"})
		c := hwTestCollection(dir)
		collectProcesses(c)
		if c.snap.NVIDIA.Persistenced {
			t.Error("persistenced = true")
		}
		if got := c.snap.Sources["nvidia.persistenced"].String(); got != "default: no nvidia-persistenced process in /proc" {
			t.Errorf("source = %q", got)
		}
	})
	// A live root without /proc: not knowing is said, as for
	// /proc/modules; a config repo has no running state to miss.
	t.Run("no /proc", func(t *testing.T) {
		c := hwTestCollection(t.TempDir())
		collectProcesses(c)
		if _, ok := c.snap.Sources["nvidia.persistenced"]; ok || len(c.snap.Errors) != 1 || c.snap.Errors[0].Collector != "processes" || c.snap.Errors[0].Path != "/proc" {
			t.Errorf("sources %v, errors %v", c.snap.Sources, c.snap.Errors)
		}
		c = hwTestCollection(t.TempDir())
		c.opts.ConfigOnly = true
		collectProcesses(c)
		if _, ok := c.snap.Sources["nvidia.persistenced"]; ok || len(c.snap.Errors) > 0 {
			t.Errorf("config only: sources %v, errors %v", c.snap.Sources, c.snap.Errors)
		}
	})
}

// eioFS fails the open of one file with EIO, as a /proc entry of a process
// stuck in the kernel may.
type eioFS struct {
	fs.FS
	name string
}

func (f eioFS) Open(name string) (fs.File, error) {
	if name == f.name {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	return f.FS.Open(name)
}

// A comm that could not be read may be nvidia-persistenced's: the scan
// files the error and leaves persistenced false with no source, so no rule
// reads "not running" as a fact (persistence-mode-off did).
func TestCollectProcessesUnreadComm(t *testing.T) {
	fsys := eioFS{FS: fstest.MapFS{
		"proc/1/comm":  {Data: []byte("systemd\n")},
		"proc/77/comm": {Data: []byte("nvidia-persiste\n")},
		"proc/90/comm": {Data: []byte("sshd\n")},
	}, name: "proc/77/comm"}
	snap, err := Collect(context.Background(), Target{Files: FS(fsys)}, Options{Hostname: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.NVIDIA.Persistenced {
		t.Error("persistenced = true from an unreadable comm")
	}
	if src, ok := snap.Sources["nvidia.persistenced"]; ok {
		t.Errorf("persistenced has source %q, though a comm could not be read", src.String())
	}
	var got []string
	for _, e := range snap.Errors {
		if slices.Contains(snapshot.FamilyWrites(e.Collector), "nvidia.persistenced") {
			got = append(got, e.Collector+" "+e.Path)
		}
	}
	if want := []string{"processes /proc/77/comm"}; !slices.Equal(got, want) {
		t.Errorf("errors covering nvidia.persistenced: %q, want %q (all: %v)", got, want, snap.Errors)
	}
}

// countingSource counts what a collection opens and lists.
type countingSource struct {
	Source
	opens, lists map[string]int
	listErr      map[string]error // ReadDir of the name fails so
}

func (s *countingSource) Open(name string) (fs.File, error) {
	s.opens[name]++
	return s.Source.Open(name)
}

func (s *countingSource) ReadDir(name string) ([]fs.DirEntry, error) {
	s.lists[name]++
	if err := s.listErr[name]; err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return s.Source.ReadDir(name)
}

// /proc is scanned once per host: the services and processes families
// share one listing and one read of each comm, and each still finds what
// it looks for.
func TestProcScannedOnce(t *testing.T) {
	root := versionsHostTree(t, map[string]string{
		"etc/hostname":                          "h\n",
		"usr/lib/systemd/system/slurmd.service": "[Service]\nLimitMEMLOCK=infinity\n",
		"proc/1/comm":                           "systemd\n",
		"proc/700/comm":                         "slurmd\n",
		"proc/700/limits":                       "Max locked memory         unlimited            unlimited            bytes\n",
		"proc/1311/comm":                        "nvidia-persiste\n",
		"proc/1400/comm":                        "sshd\n",
	})
	src := &countingSource{Source: Dir(root), opens: map[string]int{}, lists: map[string]int{}}
	snap, err := Collect(context.Background(), Target{Files: src}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if u := snap.Services.Units["slurmd.service"]; u.RunningPID != 700 {
		t.Errorf("slurmd running pid %d, want 700", u.RunningPID)
	}
	if !snap.NVIDIA.Persistenced {
		t.Error("persistenced = false")
	}
	if n := src.lists["proc"]; n != 1 {
		t.Errorf("/proc listed %d times, want 1", n)
	}
	for _, pid := range []string{"1", "700", "1311", "1400"} {
		if n := src.opens["proc/"+pid+"/comm"]; n != 1 {
			t.Errorf("/proc/%s/comm opened %d times, want 1", pid, n)
		}
	}
}

// A /proc that cannot be listed is filed under each family that needed it:
// both read running state from it.
func TestProcListFailedFiledPerFamily(t *testing.T) {
	root := versionsHostTree(t, map[string]string{
		"etc/hostname":  "h\n",
		"proc/1/comm":   "systemd\n",
		"proc/cmdline":  "ro\n",
		"proc/700/comm": "slurmd\n",
	})
	src := &countingSource{Source: Dir(root), opens: map[string]int{}, lists: map[string]int{}, listErr: map[string]error{"proc": syscall.EIO}}
	snap, err := Collect(context.Background(), Target{Files: src}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range snap.Errors {
		if e.Path == "/proc" {
			got = append(got, e.Collector+": "+e.Reason)
		}
	}
	want := []string{"processes: open: input/output error", "services: open: input/output error"}
	if !slices.Equal(got, want) {
		t.Errorf("errors for /proc: %q, want %q", got, want)
	}
	if _, ok := snap.Sources["nvidia.persistenced"]; ok {
		t.Errorf("persistenced has a source though /proc was not listed: %v", snap.Sources["nvidia.persistenced"])
	}
}
