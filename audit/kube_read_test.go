package audit

import (
	"context"
	"log/slog"
	"testing"

	"github.com/fleetaudit/fleetaudit/kube/cluster"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// The engine reads a snapshot file's bytes (fleetrun.HostInput.Read) instead of
// calling Load when it can, and shares the evaluation of equal files: a
// file joined to its Kubernetes node must go through Load, where the node
// is attached, or the rules would never see the node's labels and pods.
func TestKubeJoinLoadsSnapshotFiles(t *testing.T) {
	in := fleetrun.SnapshotFile(exampleSnapshots + "/gpu-a-001.json")
	if in.Read == nil {
		t.Fatal("snapshot files no longer read bytes: this test proves nothing")
	}
	k := &kubeJoin{cluster: &cluster.Cluster{}, named: map[string]bool{}, log: slog.New(slog.DiscardHandler)}
	wrapped := k.wrap(in)
	if wrapped.Read != nil {
		t.Fatal("a host joined to its node keeps Read: the engine would skip the join")
	}
	doc, err := wrapped.Load(context.Background())
	if err != nil || doc["host"] != "gpu-a-001" {
		t.Fatalf("Load: %v, host %v", err, doc["host"])
	}
}
