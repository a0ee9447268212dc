package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

func TestCommandRunnerOnlyForTheLiveRoot(t *testing.T) {
	abs, err := filepath.Abs(gpuRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		root   string
		noExec bool
		want   bool
	}{
		{"/", false, true},
		{"/.", false, true},
		{"/", true, false},
		{abs, false, false},
		{"/mnt/image", false, false},
	} {
		if got := commandRunner(tt.root, tt.noExec) != nil; got != tt.want {
			t.Errorf("commandRunner(%q, no-exec %v) runs commands: %v, want %v", tt.root, tt.noExec, got, tt.want)
		}
	}
}

func TestRunCommand(t *testing.T) {
	ctx := context.Background()
	t.Setenv("FLEETAUDIT_TEST_SECRET", "hunter2")
	out, err := runCommand(ctx, "sh", "-c", `printf 'a, Enabled\n'; echo "${FLEETAUDIT_TEST_SECRET:-unset}"`)
	if err != nil || string(out) != "a, Enabled\nunset\n" {
		t.Errorf("output %q, error %v (the environment must not reach the command)", out, err)
	}
	_, err = runCommand(ctx, "sh", "-c", `echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9`)
	if err == nil || err.Error() != "sh: exit status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." {
		t.Errorf("error = %v", err)
	}
	_, err = runCommand(ctx, "sh", "-c", `echo "No devices were found"; exit 6`)
	if err == nil || err.Error() != "sh: exit status 6: No devices were found" || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error = %v", err)
	}
	_, err = runCommand(ctx, "fleetaudit-no-such-command")
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing binary: %v, want exec.ErrNotFound", err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := runCommand(short, "sleep", "30"); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("sleep under a 100ms deadline: %v after %s", err, time.Since(start))
	}
}

func TestLookCommandBeyondPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	got, err := lookCommand("nvidia-smi", []string{"/does/not/exist", dir})
	if err != nil || got != filepath.Join(dir, "nvidia-smi") {
		t.Errorf("lookCommand = %q, %v", got, err)
	}
	if _, err := lookCommand("nvidia-smi", []string{"/does/not/exist"}); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("not found: %v, want exec.ErrNotFound", err)
	}
}

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
