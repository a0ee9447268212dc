package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/store"
)

// secretValues are the job secrets of secretManifest: none may reach a
// report, a snapshot or the store.
var secretValues = []string{
	"hf_HFtokenVALUE0123456789abcdefghij", "WANDBkeyVALUE0987654321", "DBpasswordVALUE42",
	"CLItokenVALUE777", "ARGpasswordVALUE555",
}

// A training job as teams write them: secrets in env values and on the
// command line, next to the NCCL settings the pod rules judge.
const secretManifest = `apiVersion: batch/v1
kind: Job
metadata:
  name: train-llama
  namespace: ml
spec:
  template:
    spec:
      containers:
      - name: trainer
        image: pytorch/pytorch:2.3.0
        command: ["torchrun", "train.py", "--hf-token", "CLItokenVALUE777"]
        args: ["--db-password=ARGpasswordVALUE555"]
        env:
        - name: HF_TOKEN
          value: hf_HFtokenVALUE0123456789abcdefghij
        - name: WANDB_API_KEY
          value: WANDBkeyVALUE0987654321
        - name: DB_PASSWORD
          value: DBpasswordVALUE42
        - name: NCCL_IB_DISABLE
          value: "1"
        - name: S3_KEY
          valueFrom:
            secretKeyRef: {name: s3, key: key}
        resources:
          limits:
            nvidia.com/gpu: 8
`

func writeSecretManifest(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "train.yaml")
	if err := os.WriteFile(path, []byte(secretManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func countSecrets(text string) int {
	n := 0
	for _, s := range secretValues {
		n += strings.Count(text, s)
	}
	return n
}

// audit --manifests in every format: the findings are there (the pod
// rules read the NCCL value), the secrets are not (they were 15 in JSON and
// 20 in SARIF: the whole pod was evidence).
func TestAuditManifestsLeaksNoSecret(t *testing.T) {
	manifest := writeSecretManifest(t)
	for _, format := range reports.Formats() {
		t.Run(format, func(t *testing.T) {
			r := runCLI(t, nil, "audit", "--manifests", manifest, "--fleet", "gpu-training", "--format", format, "--fail-on", "none")
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if n := countSecrets(r.stdout + r.stderr); n != 0 {
				t.Errorf("%d secret values in the %s report:\n%s", n, format, r.stdout)
			}
			if !strings.Contains(r.stdout, "pod-nccl-debug-env") {
				t.Errorf("the %s report lacks pod-nccl-debug-env:\n%s", format, r.stdout)
			}
		})
	}
	// Evidence still locates and names the pod (remediate edits the
	// manifest it cites) and shows the value the rule judged.
	r := runCLI(t, nil, "audit", "--manifests", manifest, "--fleet", "gpu-training", "--format", "json", "--fail-on", "none")
	for _, f := range decodeFindings(t, r.stdout).Findings {
		if f.Rule != "pod-nccl-debug-env" {
			continue
		}
		ev, _ := json.Marshal(f.Evidence)
		for _, want := range []string{`"fact":"pods.0"`, `"name":"train-llama"`, `"namespace":"ml"`, `{"name":"NCCL_IB_DISABLE","value":"1"}`, `{"name":"HF_TOKEN","value":"(redacted)"}`, `"secretKeyRef":{"key":"key","name":"s3"}`, "train.yaml:"} {
			if !strings.Contains(string(ev), want) {
				t.Errorf("evidence lacks %s: %s", want, ev)
			}
		}
		if strings.Contains(string(ev), "torchrun") {
			t.Errorf("evidence holds the command line, which no rule reads: %s", ev)
		}
	}
}

// collect --pods writes no secret into the snapshot, and an audit that
// records it and the manifests keeps none in the store.
func TestCollectPodsAndStoreKeepNoSecret(t *testing.T) {
	manifest := writeSecretManifest(t)
	dir := t.TempDir()
	snap := filepath.Join(dir, "gpu-a-001.json")
	r := runCLI(t, nil, "collect", "--root", gpuRoot, "--pods", manifest, "-o", snap)
	if r.code != exitOK {
		t.Fatalf("collect: exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSecrets(string(data) + r.stderr); n != 0 {
		t.Errorf("%d secret values in the snapshot:\n%s", n, data)
	}
	if !strings.Contains(string(data), `"NCCL_IB_DISABLE"`) || !strings.Contains(string(data), `"(redacted)"`) {
		t.Errorf("the snapshot lacks the pod's env names:\n%s", data)
	}

	db := filepath.Join(dir, "history.db")
	for _, args := range [][]string{
		{"audit", "--record", "--store", db, "--snapshots", snap, "--format", "json", "--fail-on", "none", "-o", filepath.Join(dir, "a.json")},
		{"audit", "--record", "--store", db, "--manifests", manifest, "--fleet", "gpu-training", "--format", "json", "--fail-on", "none", "-o", filepath.Join(dir, "b.json")},
	} {
		if r := runCLI(t, nil, args...); r.code != exitOK {
			t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	ctx := context.Background()
	s, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.Runs(ctx, store.RunQuery{})
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %v, err %v: want 2", runs, err)
	}
	var stored strings.Builder
	for _, run := range runs {
		hosts, err := s.Hosts(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hosts {
			if h.Snapshot == "" {
				t.Errorf("run %v host %s: no snapshot recorded", run.ID, h.Host)
				continue
			}
			body, err := s.Blob(ctx, h.Snapshot)
			if err != nil {
				t.Fatal(err)
			}
			stored.Write(body)
		}
		fs, err := s.Findings(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(fs)
		stored.Write(b)
	}
	if !strings.Contains(stored.String(), "NCCL_IB_DISABLE") {
		t.Fatalf("the store holds no pod:\n%.2000s", stored.String())
	}
	if n := countSecrets(stored.String()); n != 0 {
		t.Errorf("%d secret values in the store", n)
	}
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSecrets(string(raw)); n != 0 {
		t.Errorf("%d secret values in the store's file", n)
	}
}
