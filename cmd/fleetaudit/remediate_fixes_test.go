package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The round-2 fixes through the CLI, on the example config repo: remediate
// --dry-run proposes one change, git apply takes its diff, and gate then
// reports the findings resolved and nothing introduced.
func TestRemediateRound2FixesApply(t *testing.T) {
	for _, tc := range []struct {
		rule     string
		files    map[string]string
		resolved int
	}{{
		rule: "service-memlock-too-low",
		files: map[string]string{
			"layers/gpu/etc/systemd/system/slurmd.service":                 "[Service]\nExecStart=/usr/sbin/slurmd --systemd\n",
			"layers/gpu/etc/systemd/system/slurmd.service.d/override.conf": "[Service]\nLimitMEMLOCK=64M\n",
		},
		resolved: 1,
	}, {
		rule: "pod-shm-exceeds-memory-limit",
		files: map[string]string{"k8s/gpu-training/eval.yaml": `apiVersion: v1
kind: Pod
metadata: {name: eval, namespace: research}
spec:
  containers:
  - name: eval
    image: eval:3
    resources:
      limits: {nvidia.com/gpu: 1, memory: 96Gi}
    volumeMounts:
    - {name: shm, mountPath: /dev/shm}
  volumes:
  - name: shm
    emptyDir: {medium: Memory, sizeLimit: 96Gi}
`},
		resolved: 1,
	}, {
		rule: "pod-nccl-debug-env",
		files: map[string]string{"k8s/gpu-training/bench.yaml": `apiVersion: v1
kind: Pod
metadata: {name: bench, namespace: research}
spec:
  containers:
  - name: bench
    image: bench:2
    env:
    - name: NCCL_ALGO
      value: Ring
    - name: NCCL_DEBUG
      value: WARN
    resources:
      limits: {nvidia.com/gpu: 1, memory: 64Gi}
`},
		resolved: 1,
	}} {
		t.Run(tc.rule, func(t *testing.T) {
			dir, _ := exampleRepo(t)
			for name, content := range tc.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			gitIn(t, dir, "add", "-A")
			gitIn(t, dir, "commit", "-q", "-m", tc.rule)
			r := runCLI(t, nil, "remediate", "--repo", dir, "--dry-run", "--format", "json", "--rule", tc.rule, "--fleet", "gpu-training")
			if r.code != exitOK {
				t.Fatalf("remediate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			var doc struct {
				Proposals []struct{ Diff string }
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Proposals) != 1 {
				t.Fatalf("%d proposals, want 1:\n%s", len(doc.Proposals), r.stdout)
			}
			patch := filepath.Join(t.TempDir(), "fix.patch")
			if err := os.WriteFile(patch, []byte(doc.Proposals[0].Diff), 0o644); err != nil {
				t.Fatal(err)
			}
			gitIn(t, dir, "apply", "--check", patch)
			gitIn(t, dir, "apply", patch)
			g := runCLI(t, nil, "gate", "--repo", dir, "--base", "HEAD", "--format", "json")
			if g.code != exitOK {
				t.Fatalf("gate after apply: exit %d\n%s\n%s", g.code, g.stdout, g.stderr)
			}
			var gate struct {
				Summary struct{ Resolved, Introduced int }
			}
			if err := json.Unmarshal([]byte(g.stdout), &gate); err != nil {
				t.Fatal(err)
			}
			if gate.Summary.Resolved != tc.resolved || gate.Summary.Introduced != 0 {
				t.Errorf("gate after apply: %+v, want %d resolved, none introduced\n%s", gate.Summary, tc.resolved, g.stdout)
			}
		})
	}
}
