package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// A fixture root never runs nvidia-smi, even when one is on PATH.
func TestCollectFixtureRunsNoCommand(t *testing.T) {
	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	script := "#!/bin/sh\ntouch " + marker + "\necho '00000000:1B:00.0, Disabled'\n"
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, args := range [][]string{{"collect", "--root", gpuRoot}, {"collect", "--root", gpuRoot, "--no-exec"}} {
		r := runCLI(t, nil, args...)
		if r.code != exitOK {
			t.Fatalf("%v: exit %d, stderr:\n%s", args, r.code, r.stderr)
		}
		snap, err := snapshot.DecodeBytes([]byte(r.stdout))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range snap.NVIDIA.GPUs {
			if g.PersistenceMode != "" {
				t.Errorf("%v: %s has persistence mode %q", args, g.BusID, g.PersistenceMode)
			}
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%v ran nvidia-smi", args)
		}
	}
	r := runCLI(t, map[string]string{"FLEETAUDIT_COLLECT_NO_EXEC": "true"}, "collect", "--root", gpuRoot)
	if r.code != exitOK {
		t.Errorf("FLEETAUDIT_COLLECT_NO_EXEC=true: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
