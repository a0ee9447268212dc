package remediate

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// efaBaseline is the example GPU baseline with EFA devices in place of its
// InfiniBand HCAs: a p4d/p5-like node.
func efaBaseline(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../examples/config-repo/baselines/gpu-training.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["rdma"] = map[string]any{"devices": map[string]any{
		"rdmap16s27": map[string]any{"driver": "efa", "pci_address": "0000:10:1b.0"},
		"rdmap32s27": map[string]any{"driver": "efa", "pci_address": "0000:20:1b.0"},
	}}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out) + "\n"
}

const efaTrainJob = `# Fine-tuning on the EFA nodes.
apiVersion: batch/v1
kind: Job
metadata: {name: finetune, namespace: research}
spec:
  template:
    spec:
      containers:
      - name: trainer
        image: train:7
        env:
        - name: NCCL_DEBUG
          value: WARN
        - name: FI_PROVIDER
          value: tcp   # copied from a laptop run
        - {name: FI_EFA_USE_DEVICE_RDMA, value: "0"}
        resources:
          limits: {nvidia.com/gpu: 8, memory: 1000Gi, vpc.amazonaws.com/efa: 2}
        securityContext:
          capabilities: {add: [IPC_LOCK]}
        volumeMounts:
        - {name: dshm, mountPath: /dev/shm}
      volumes:
      - name: dshm
        emptyDir: {medium: Memory, sizeLimit: 64Gi}
`

// efa-nccl-env in a pod on EFA nodes: the fix sets the container's
// FI_PROVIDER and FI_EFA_USE_DEVICE_RDMA in the manifest in place, git
// apply takes the diff, and the gate then resolves the finding. The host
// configuration sets NCCL_SOCKET_IFNAME, so the fleet's only finding of
// the rule is the pod's.
func TestPlanEFAPodEnvFix(t *testing.T) {
	r := podRepo(t, "fleets:\n  gpu-training: {layers: [base], baseline: baselines/efa.json}\n  web-serving: {layers: [base]}\n", map[string]string{
		"baselines/efa.json":             efaBaseline(t),
		"layers/base/etc/nccl.conf":      "NCCL_SOCKET_IFNAME=ens32\n",
		"k8s/gpu-training/finetune.yaml": efaTrainJob,
	})
	g := onlyGroup(t, plan(t, r, Options{Rule: "efa-nccl-env"}))
	prop := proposal(t, g)
	file := "k8s/gpu-training/finetune.yaml"
	want := []string{
		"-          value: tcp   # copied from a laptop run\n",
		"-        - {name: FI_EFA_USE_DEVICE_RDMA, value: \"0\"}\n",
		"+          value: efa   # copied from a laptop run\n",
		"+        - {name: FI_EFA_USE_DEVICE_RDMA, value: \"1\"}\n",
	}
	if diff := cmp.Diff(want, changedLines(prop.Diff, file)); diff != "" {
		t.Errorf("diff (-want +got):\n%s\n%s", diff, prop.Diff)
	}
	if !strings.Contains(prop.Body, "container trainer: env FI_EFA_USE_DEVICE_RDMA=1 FI_PROVIDER=efa") {
		t.Errorf("body:\n%s", prop.Body)
	}
	res := applyAndGate(t, r, prop)
	if got := rulesOf(fleetResult(t, res, "gpu-training").Resolved); !slices.Contains(got, "efa-nccl-env") {
		t.Errorf("applied: gpu-training resolved %v", got)
	}
	if res.Summary.Introduced != 0 {
		t.Errorf("applied: introduced %d", res.Summary.Introduced)
	}
}

// Where the host configuration has a finding of the rule too (no
// NCCL_SOCKET_IFNAME, whose value no snapshot knows), no single change
// resolves the fleet's group: it is skipped with the reason, never half
// fixed.
func TestPlanEFAPodEnvWithHostFindingSkipped(t *testing.T) {
	r := podRepo(t, "fleets:\n  gpu-training: {layers: [base], baseline: baselines/efa.json}\n  web-serving: {layers: [base]}\n", map[string]string{
		"baselines/efa.json":             efaBaseline(t),
		"k8s/gpu-training/finetune.yaml": efaTrainJob,
	})
	p := plan(t, r, Options{Rule: "efa-nccl-env"})
	if len(p.Groups) != 0 || len(p.Skipped) != 1 || !strings.Contains(p.Skipped[0].Reason, "carry no fix") {
		t.Fatalf("groups %d, skipped %+v: want the group skipped", len(p.Groups), p.Skipped)
	}
}

// pod-nccl-debug-env: each debug variable's entry is deleted, both in one
// change to the manifest, proven by the gate.
func TestPlanPodDebugEnvRemoved(t *testing.T) {
	file := "k8s/gpu-training/bench.yaml"
	r := podRepo(t, podFleets, map[string]string{file: `apiVersion: v1
kind: Pod
metadata: {name: bench, namespace: perf}
spec:
  containers:
  - name: bench
    image: bench:2
    env:
    - name: NCCL_DEBUG
      value: INFO
    # Ring was faster on the old fabric.
    - name: NCCL_ALGO
      value: Ring
    - name: NCCL_P2P_DISABLE
      value: "1"   # see ticket 4411
    resources:
      limits: {nvidia.com/gpu: 1, memory: 64Gi}
`})
	g := onlyGroup(t, plan(t, r, Options{Rule: "pod-nccl-debug-env"}))
	prop := proposal(t, g)
	want := []string{
		"-    - name: NCCL_ALGO\n",
		"-      value: Ring\n",
		"-    - name: NCCL_P2P_DISABLE\n",
		"-      value: \"1\"   # see ticket 4411\n",
	}
	if diff := cmp.Diff(want, changedLines(prop.Diff, file)); diff != "" {
		t.Errorf("diff (-want +got):\n%s\n%s", diff, prop.Diff)
	}
	res := applyAndGate(t, r, prop)
	gpu := fleetResult(t, res, "gpu-training")
	if got := rulesOf(gpu.Resolved); len(got) != 2 || got[0] != "pod-nccl-debug-env" || got[1] != "pod-nccl-debug-env" {
		t.Errorf("applied: gpu-training resolved %v, want both findings", got)
	}
	if res.Summary.Introduced != 0 {
		t.Errorf("applied: introduced %d", res.Summary.Introduced)
	}
}

// A debug variable the container's envFrom could also set is refused: the
// ConfigMap's value would take over, and no snapshot shows it.
func TestPlanPodDebugEnvRefusedWithEnvFrom(t *testing.T) {
	r := podRepo(t, podFleets, map[string]string{"k8s/gpu-training/bench.yaml": `apiVersion: v1
kind: Pod
metadata: {name: bench}
spec:
  containers:
  - name: bench
    image: bench:2
    envFrom:
    - configMapRef: {name: nccl-tuning}
    env:
    - {name: NCCL_ALGO, value: Ring}
    resources:
      limits: {nvidia.com/gpu: 1, memory: 64Gi}
`})
	g := onlyGroup(t, plan(t, r, Options{Rule: "pod-nccl-debug-env"}))
	if g.Proposal != nil || !strings.Contains(g.Refused, "envFrom") {
		t.Fatalf("refused %q (proposal %v), want the envFrom refusal", g.Refused, g.Proposal != nil)
	}
}

// pod-rdma-resource-missing on EFA nodes: the worker requests one of the
// node's two EFA devices and lacks IPC_LOCK; the fix raises the limit to
// the node's count and adds the capability (or the fixed pod would be
// pod-rdma-without-ipc-lock), and the gate proves both.
func TestPlanEFAResourceFix(t *testing.T) {
	file := "k8s/gpu-training/pretrain.yaml"
	r := podRepo(t, "fleets:\n  gpu-training: {layers: [base], baseline: baselines/efa.json}\n  web-serving: {layers: [base]}\n", map[string]string{
		"baselines/efa.json":        efaBaseline(t),
		"layers/base/etc/nccl.conf": "NCCL_SOCKET_IFNAME=ens32\n",
		file: `apiVersion: batch/v1
kind: Job
metadata: {name: pretrain, namespace: research}
spec:
  template:
    spec:
      containers:
      - name: trainer
        image: train:7
        resources:
          limits:
            nvidia.com/gpu: 8
            memory: 1000Gi
            vpc.amazonaws.com/efa: 1   # one NIC per pod, from the old cluster
        volumeMounts:
        - {name: dshm, mountPath: /dev/shm}
      volumes:
      - name: dshm
        emptyDir: {medium: Memory, sizeLimit: 64Gi}
`,
	})
	g := onlyGroup(t, plan(t, r, Options{Rule: "pod-rdma-resource-missing"}))
	prop := proposal(t, g)
	want := []string{
		"-            vpc.amazonaws.com/efa: 1   # one NIC per pod, from the old cluster\n",
		"+            vpc.amazonaws.com/efa: \"2\"   # one NIC per pod, from the old cluster\n",
		"+        securityContext:\n",
		"+          capabilities:\n",
		"+            add:\n",
		"+            - IPC_LOCK\n",
	}
	if diff := cmp.Diff(want, changedLines(prop.Diff, file)); diff != "" {
		t.Errorf("diff (-want +got):\n%s\n%s", diff, prop.Diff)
	}
	res := applyAndGate(t, r, prop)
	if got := rulesOf(fleetResult(t, res, "gpu-training").Resolved); !slices.Contains(got, "pod-rdma-resource-missing") {
		t.Errorf("applied: gpu-training resolved %v", got)
	}
	if res.Summary.Introduced != 0 {
		t.Errorf("applied: introduced %d", res.Summary.Introduced)
	}
}
