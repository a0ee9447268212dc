package kube

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every pod a manifest gives is redacted as it is read: env values other
// than NCCL's and libfabric's, secrets on command lines, probe headers and
// the last-applied copy never leave ParseManifests.
func TestParseManifestsRedactsSecrets(t *testing.T) {
	const manifest = `apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"env":"hf_LASTAPPLIEDsecret000000000000"}'
spec:
  template:
    metadata:
      annotations:
        kubectl.kubernetes.io/last-applied-configuration: '{"env":"hf_LASTAPPLIEDsecret000000000000"}'
    spec:
      initContainers:
      - name: fetch
        image: curl
        command: ["sh", "-c", "curl -H 'Authorization: Bearer tokSECRETbearer123' https://user:pwSECRET@example.com/x && DB_PASSWORD=dbSECRETinline ./run"]
      containers:
      - name: trainer
        image: pytorch
        args: ["--hf-token", "hfSECRETflagvalue", "--api-key=apiSECRETkey", "--epochs", "3", "ghp_SECRETSECRETSECRETSECRET0123", "--max-tokens", "4096"]
        env:
        - {name: HF_TOKEN, value: hfSECRETtoken}
        - {name: WANDB_API_KEY, value: wandbSECRETkey}
        - {name: DB_PASSWORD, value: dbSECRETpassword}
        - {name: RUN_NAME, value: llama-SECRETish}
        - {name: NCCL_DEBUG, value: INFO}
        - {name: FI_PROVIDER, value: efa}
        - {name: EMPTY, value: ""}
        - name: FROM_VAULT
          valueFrom: {secretKeyRef: {name: hf, key: token}}
        livenessProbe:
          httpGet:
            path: /healthz
            port: 8080
            httpHeaders: [{name: Authorization, value: Bearer probeSECRET}]
          exec:
            command: ["check", "--password=probeSECRETpw"]
`
	objs, err := ParseManifests([]byte(manifest), "job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1", len(objs))
	}
	data, err := json.Marshal(objs[0].Pod)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if n := strings.Count(text, "SECRET"); n != 0 {
		t.Errorf("%d secrets left in the pod:\n%s", n, text)
	}
	for _, kept := range []string{
		`{"name":"NCCL_DEBUG","value":"INFO"}`, `{"name":"FI_PROVIDER","value":"efa"}`,
		`{"name":"HF_TOKEN","value":"(redacted)"}`, `{"name":"RUN_NAME","value":"(redacted)"}`,
		`{"name":"EMPTY","value":""}`, `"secretKeyRef":{"key":"token","name":"hf"}`,
		`"--hf-token","(redacted)","--api-key=(redacted)","--epochs","3","(redacted)","--max-tokens","4096"`,
		`Authorization: Bearer (redacted)`, `https://user:(redacted)@example.com/x`, `DB_PASSWORD=(redacted) ./run`,
		`"path":"/healthz"`, `"--password=(redacted)"`,
	} {
		if !strings.Contains(text, kept) {
			t.Errorf("pod lacks %s:\n%s", kept, text)
		}
	}
	if strings.Contains(text, "last-applied") {
		t.Errorf("the last-applied copy was kept:\n%s", text)
	}
}

func TestRedactText(t *testing.T) {
	for in, want := range map[string]string{
		"python train.py --epochs 3":               "python train.py --epochs 3",
		"python train.py --token=abc --lr 0.1":     "python train.py --token=(redacted) --lr 0.1",
		"export HF_TOKEN='a b'; run":               "export HF_TOKEN=(redacted); run",
		"aws AKIAABCDEFGHIJKLMNOP":                 "aws (redacted)",
		"git clone https://x:y@github.com/a/b.git": "git clone https://x:(redacted)@github.com/a/b.git",
		"NCCL_DEBUG=INFO torchrun":                 "NCCL_DEBUG=INFO torchrun",
		"vllm --max-num-tokens 2048 --author=ada":  "vllm --max-num-tokens 2048 --author=ada",
		"run --auth-token abc MAX_TOKENS=8":        "run --auth-token (redacted) MAX_TOKENS=8",
	} {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q) = %q, want %q", in, got, want)
		}
	}
}
