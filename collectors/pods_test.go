package collectors

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

func TestCollectPodsFromManifests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pods := write("pods.json", `{"kind": "List", "items": [`+"\n"+`{"kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}, "spec": {"containers": [{"name": "c", "image": "img", "ports": [{"containerPort": 80}]}]}}]}`)
	jobs := filepath.Dir(write("jobs/train.yaml", "kind: Job\nmetadata: {name: train}\nspec:\n  template:\n    spec: {containers: [{name: c, image: img}]}\n"))
	write("jobs/broken.yaml", "kind: Pod\nmetadata:\n  name: a: b\n")
	missing := filepath.Join(dir, "missing.yaml")

	opts := fixtureOptions("gpu-node")
	opts.Hostname = "gpu-a-001"
	target := Target{Files: Dir(t.TempDir()), Pods: ManifestFiles(pods, jobs, missing)}
	snap, err := Collect(context.Background(), target, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Pods) != 2 {
		t.Fatalf("%d pods, want 2: %v", len(snap.Pods), snap.Pods)
	}
	sources := map[string]string{}
	for fact, src := range snap.Sources {
		if strings.HasPrefix(fact, "pods.") {
			sources[fact] = src.String()
		}
	}
	want := map[string]string{"pods.0": pods + ":2", "pods.1": filepath.Join(jobs, "train.yaml") + ":4"}
	if diff := cmp.Diff(want, sources); diff != "" {
		t.Errorf("pod sources (-want +got):\n%s", diff)
	}
	if labels := snap.Pods[1]["metadata"].(map[string]any)["labels"]; !cmp.Equal(labels, map[string]any{"batch.kubernetes.io/job-name": "train", "job-name": "train"}) {
		t.Errorf("job pod labels = %v", labels)
	}
	var podErrs []snapshot.CollectionError
	for _, e := range snap.Errors {
		if e.Collector == "pods" {
			podErrs = append(podErrs, e)
		}
	}
	wantErrs := []snapshot.CollectionError{
		{Collector: "pods", Path: filepath.Join(jobs, "broken.yaml"), Reason: "line 3: mapping values are not allowed in this context"},
		{Collector: "pods", Path: missing, Reason: "stat: no such file or directory"},
	}
	if diff := cmp.Diff(wantErrs, podErrs); diff != "" {
		t.Errorf("pod errors (-want +got):\n%s", diff)
	}

	// A snapshot read back holds the same pods: numbers were already JSON's.
	data, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	back, err := snapshot.DecodeBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(snap.Pods, back.Pods); diff != "" {
		t.Errorf("pods changed through JSON (-collected +decoded):\n%s", diff)
	}
}
