package sshsource

import (
	"context"
	"os"
	"testing"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// TestStreamSizeOfRoot streams the root FLEETAUDIT_STREAM_ROOT names (say
// "/") with this machine's sh and logs the stream's size and what had to be
// fetched after it: a measurement, run by hand with -v, never asserted.
func TestStreamSizeOfRoot(t *testing.T) {
	root := os.Getenv("FLEETAUDIT_STREAM_ROOT")
	if root == "" {
		t.Skip("set FLEETAUDIT_STREAM_ROOT=/ to measure the stream of a real root")
	}
	ctx := context.Background()
	out, err := shFetcher{}.output(ctx, snapshotScript(root, collectors.DefaultMaxFileSize+1))
	if err != nil {
		t.Fatal(err)
	}
	tr := newTree(ctx, shFetcher{}, root, collectors.DefaultMaxFileSize+1)
	var misses []string
	tr.onMiss = func(what string) { misses = append(misses, what) }
	if err := tr.load(out); err != nil {
		t.Fatal(err)
	}
	snap, err := collectors.Collect(ctx, collectors.Target{Origin: snapshot.Origin{Kind: "local", Root: root}, Files: collectors.Chroot(tr)}, collectors.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for unit, u := range snap.Services.Units {
		t.Logf("%s: pid %d, running memlock %+v", unit, u.RunningPID, u.RunningMemlock)
	}
	t.Logf("stream: %d bytes, %d names; fetched after it: %d %q", len(out), len(tr.nodes), len(misses), misses)
}
