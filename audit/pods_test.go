package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

const gpuPodManifest = `apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers:
  - name: trainer
    image: img
    resources:
      limits: {nvidia.com/gpu: 8, memory: 64Gi, example.com/counter: 9007199254740993}
    volumeMounts: [{name: dshm, mountPath: /dev/shm}]
  - name: helper
    image: img
    resources:
      limits: {nvidia.com/gpu: 8}
  volumes:
  - {name: dshm, emptyDir: {medium: Memory}}
`

// A pod's resources read the same whether the engine gets the pod from a
// manifest, collected straight in, or from a snapshot file: numbers are
// json.Number on both paths, exact as the manifest wrote them (a
// manifest's went YAML -> JSON -> float64, which rounds 2^53+1).
func TestPodFromManifestAndFromSnapshotFileAlike(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "train.yaml")
	if err := os.WriteFile(manifest, []byte(gpuPodManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	target, err := collectors.Local("../testdata/hosts/gpu-node", collectors.LocalOptions{NoExec: true, Manifests: []string{manifest}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := collectors.Collect(ctx, target, collectors.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snapshot.Encode(&buf, snap); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "gpu.json")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := fleets.NewEngine(ctx, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	podFindings := func(in fleetrun.HostInput) []policies.Finding {
		t.Helper()
		rep, err := fleetrun.Run(ctx, engine, slices.Values([]fleetrun.HostInput{in}), fleetrun.RunOptions{FleetOf: newFleetResolver(set, nil).fleet})
		if err != nil {
			t.Fatal(err)
		}
		var out []policies.Finding
		for _, f := range rep.Findings {
			if strings.HasPrefix(f.Rule, "pod-") {
				out = append(out, f)
			}
		}
		return out
	}
	direct := podFindings(fleetrun.HostInput{Origin: manifest, Name: snap.Host, Load: func(context.Context) (map[string]any, error) {
		return snapshot.Document(snap)
	}})
	fromFile := podFindings(fleetrun.SnapshotFile(file))
	if diff := cmp.Diff(fromFile, direct); diff != "" {
		t.Errorf("pod findings differ (-snapshot file +manifest):\n%s", diff)
	}
	var rules []string
	for _, f := range direct {
		rules = append(rules, f.Rule)
	}
	if !slices.Contains(rules, "pod-memory-limit-missing") || !slices.Contains(rules, "pod-shm-unbounded") {
		t.Fatalf("pod findings %v, want the helper's missing memory limit and the unbounded /dev/shm", rules)
	}
	for _, f := range direct {
		if f.Rule != "pod-memory-limit-missing" {
			continue
		}
		limits, _ := snapshot.Lookup(f.Evidence[0].Value, "spec.containers.0.resources.limits")
		if m, _ := limits.(map[string]any); m["nvidia.com/gpu"] != json.Number("8") || m["memory"] != "64Gi" ||
			m["example.com/counter"] != json.Number("9007199254740993") {
			t.Errorf("trainer limits in the evidence = %#v, want json.Number 8, 64Gi and the exact counter", limits)
		}
	}
}
