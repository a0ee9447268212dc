package collectors

import (
	"testing"
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
	t.Run("no /proc", func(t *testing.T) {
		c := hwTestCollection(t.TempDir())
		collectProcesses(c)
		if _, ok := c.snap.Sources["nvidia.persistenced"]; ok || len(c.snap.Errors) > 0 {
			t.Errorf("sources %v, errors %v", c.snap.Sources, c.snap.Errors)
		}
	})
}
