package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// collect --every writes the snapshot, waits, and ends cleanly (exit 0)
// when stopped, as a DaemonSet's container is on SIGTERM.
func TestCollectEveryStopsOnSignal(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gpu-a-001.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Stop once the first snapshot is in place.
		for ctx.Err() == nil {
			if _, err := os.Stat(out); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"collect", "--root", gpuRoot, "-o", out, "--every", "1h"},
		streams{in: strings.NewReader(""), out: &stdout, err: &stderr}, func(string) string { return "" })
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := snapshot.DecodeBytes(data); err != nil || s.Host != "gpu-a-001" {
		t.Errorf("snapshot %v, %v", s, err)
	}
}

func TestCollectEveryTooShort(t *testing.T) {
	r := runCLI(t, nil, "collect", "--root", gpuRoot, "--every", "5s")
	if r.code != exitError || !strings.Contains(r.stderr, "--every 5s: want at least 1m0s") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
