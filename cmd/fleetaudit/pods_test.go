package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

const (
	shmManifest = "../../kube/testdata/deployment-shm.yaml"
	mpiManifest = "../../kube/testdata/mpijob.yaml"
)

// TestCollectPodsThenAudit collects a host with the pods of two manifests
// and audits the snapshot: the Deployment's unbounded /dev/shm is reported
// with the manifest line as its source.
func TestCollectPodsThenAudit(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gpu-a-001.json")
	r := runCLI(t, nil, "collect", "--root", gpuRoot, "--pods", shmManifest, "--pods", mpiManifest, "-o", out)
	if r.code != exitOK {
		t.Fatalf("collect: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "pods=3") {
		t.Errorf("summary log lacks pods=3:\n%s", r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.DecodeBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range snap.Pods {
		names = append(names, p["metadata"].(map[string]any)["name"].(string))
	}
	if strings.Join(names, " ") != "triton nccl-tests-launcher nccl-tests-worker" {
		t.Errorf("pods = %v", names)
	}
	for fact, want := range map[string]string{"pods.0": shmManifest + ":22", "pods.1": mpiManifest + ":12", "pods.2": mpiManifest + ":33"} {
		if got := snap.Sources[fact].String(); got != want {
			t.Errorf("source of %s = %q, want %q", fact, got, want)
		}
	}

	r = runCLI(t, nil, "audit", "--snapshots", out, "--format", "json", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("audit: exit %d\n%s", r.code, r.stderr)
	}
	found := map[string]bool{}
	for _, f := range decodeFindings(t, r.stdout).Findings {
		if !strings.HasPrefix(f.Rule, "pod-") {
			continue
		}
		found[f.Rule] = true
		if f.Rule != "pod-shm-unbounded" {
			continue
		}
		if f.Host != "gpu-a-001" || f.Fleet != "gpu-training" || !strings.Contains(f.Message, "serving/triton") {
			t.Errorf("pod-shm-unbounded: %+v", f)
		}
		if len(f.Evidence) != 1 || f.Evidence[0].Fact != "pods.0" || f.Evidence[0].Source != shmManifest+":22" {
			t.Errorf("pod-shm-unbounded evidence = %+v, want pods.0 from %s:22", f.Evidence, shmManifest)
		}
	}
	if !found["pod-shm-unbounded"] {
		t.Errorf("no pod-shm-unbounded finding; pod findings: %v\n%s", found, r.stdout)
	}
	// The MPIJob worker runs NCCL without /dev/shm; its launcher does not count.
	if !found["pod-shm-missing"] {
		t.Errorf("no pod-shm-missing finding for the MPIJob worker: %v", found)
	}
}

func TestCollectPodsUsageErrors(t *testing.T) {
	r := runCLI(t, nil, "collect", "--root", gpuRoot, "--pods", "does-not-exist.json")
	if r.code != exitError || !strings.Contains(r.stderr, "--pods does-not-exist.json") {
		t.Errorf("missing --pods file: exit %d\n%s", r.code, r.stderr)
	}
	// A manifest that does not parse is a collection error, not a failure.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("kind: Pod\nmetadata:\n  name: a: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "collect", "--root", gpuRoot, "--pods", bad)
	if r.code != exitOK || !strings.Contains(r.stderr, "collector=pods") || !strings.Contains(r.stderr, "line 3") {
		t.Errorf("bad manifest: exit %d\n%s", r.code, r.stderr)
	}
}
