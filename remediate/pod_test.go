package remediate

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
)

// podRepo is a config repo with a GPU and a web fleet sharing one layer,
// and the given files (manifests under k8s/).
func podRepo(t *testing.T, manifest string, files map[string]string) *gitRepo {
	t.Helper()
	r := newGitRepo(t)
	r.Write(configrepo.ManifestFile, manifest)
	r.Write("layers/base/etc/sysctl.d/10-base.conf", "kernel.panic = 10\n")
	for name, content := range files {
		r.Write(name, content)
	}
	r.Commit("base")
	return r
}

const podFleets = "# Two fleets, one base.\nfleets:\n  gpu-training: {layers: [base]}\n  web-serving: {layers: [base]}\n"

// changedLines are the diff's added and removed lines of one file.
func changedLines(diff, file string) []string {
	_, section, _ := strings.Cut(diff, "diff --git a/"+file+" b/"+file+"\n")
	section, _, _ = strings.Cut(section, "diff --git ")
	var changed []string
	for l := range strings.Lines(section) {
		if (l[0] == '-' || l[0] == '+') && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++") {
			changed = append(changed, l)
		}
	}
	return changed
}

// Each pod rule's fix, proven on a real repo: the manifest the finding's
// evidence cites is edited on the right template and container (the diff
// is exactly the change's lines, comments kept), git apply takes the diff,
// and the gate then resolves the finding and introduces nothing.
func TestPlanPodFixes(t *testing.T) {
	for _, tc := range []struct {
		name, rule, file, content string
		diff                      []string
	}{{
		name:    "IPC_LOCK in a PyTorchJob's worker",
		rule:    "pod-rdma-without-ipc-lock",
		file:    "k8s/gpu-training/pretrain.yaml",
		content: pytorchJob,
		diff: []string{
			"+            securityContext:\n",
			"+              capabilities:\n",
			"+                add:\n",
			"+                - IPC_LOCK\n",
		},
	}, {
		name: "sizeLimit on a Deployment's /dev/shm, second document",
		rule: "pod-shm-unbounded",
		file: "k8s/gpu-training/infer.yaml",
		content: `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {a: "1"}
---
# Inference servers.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: infer
spec:
  template:
    spec:
      containers:
        - name: server
          image: srv:1
          resources:
            limits: {nvidia.com/gpu: 2, memory: 64Gi}
          volumeMounts:
            - name: dshm
              mountPath: /dev/shm
      volumes:
        - name: dshm
          emptyDir:
            medium: Memory   # NCCL shared memory
`,
		diff: []string{"+            sizeLimit: 32Gi\n"},
	}, {
		name: "sizeLimit at the memory limit lowered, a Pod with a pod-level limit",
		rule: "pod-shm-exceeds-memory-limit",
		file: "k8s/gpu-training/eval.yaml",
		content: `apiVersion: v1
kind: Pod
metadata: {name: eval, namespace: research}
spec:
  resources:
    limits: {memory: 96Gi}   # the pod's budget
  containers:
  - name: eval
    image: eval:3
    resources:
      limits: {nvidia.com/gpu: 1}
    volumeMounts:
    - {name: shm, mountPath: /dev/shm}
  volumes:
  - name: shm
    emptyDir:
      medium: Memory
      sizeLimit: 96Gi   # "as much as the pod has"
`,
		diff: []string{
			"-      sizeLimit: 96Gi   # \"as much as the pod has\"\n",
			"+      sizeLimit: 48Gi   # \"as much as the pod has\"\n",
		},
	}, {
		name: "memory limit from the request, a Job",
		rule: "pod-memory-limit-missing",
		file: "k8s/gpu-training/bench.yaml",
		content: `apiVersion: batch/v1
kind: Job
metadata: {name: bench, namespace: perf}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: bench
        image: bench:2
        resources:
          requests:
            memory: 32Gi   # measured
          limits:
            nvidia.com/gpu: 1
        # no volumes
`,
		diff: []string{"+            memory: 32Gi\n"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := podRepo(t, podFleets, map[string]string{tc.file: tc.content})
			g := onlyGroup(t, plan(t, r, Options{Rule: tc.rule}))
			prop := proposal(t, g)
			if diff := cmp.Diff([]string{tc.file}, g.Placement.Paths()); diff != "" {
				t.Fatalf("files (-want +got):\n%s", diff)
			}
			if g.Placement.Layer != "k8s/gpu-training" || !strings.Contains(g.Placement.Why, "no other fleet renders") {
				t.Errorf("placement %+v", g.Placement)
			}
			if len(g.Fix.Pods) != 1 || g.Fix.Pods[0].File != tc.file || g.Fix.Pods[0].Line == 0 {
				t.Errorf("fix %+v: want one change located in %s", g.Fix, tc.file)
			}
			// Only added lines: every line of the old file, comments
			// included, stays as it was, in order.
			if diff := cmp.Diff(tc.diff, changedLines(prop.Diff, tc.file)); diff != "" {
				t.Errorf("diff (-want +got):\n%s\n%s", diff, prop.Diff)
			}
			for _, want := range []string{"resolved in gpu-training: " + tc.rule, "introduced in any fleet: nothing"} {
				if !slices.ContainsFunc(g.Proof, func(l string) bool { return strings.HasPrefix(l, want) }) {
					t.Errorf("proof lacks %q:\n%s", want, strings.Join(g.Proof, "\n"))
				}
			}
			if !strings.Contains(prop.Title, tc.file) || !strings.Contains(prop.Body, "running pods keep their spec") {
				t.Errorf("title %q body:\n%s", prop.Title, prop.Body)
			}
			res := applyAndGate(t, r, prop)
			if got := rulesOf(fleetResult(t, res, "gpu-training").Resolved); !slices.Contains(got, tc.rule) {
				t.Errorf("applied: gpu-training resolved %v", got)
			}
			if res.Summary.Introduced != 0 {
				t.Errorf("applied: introduced %d", res.Summary.Introduced)
			}
		})
	}
}

// Two findings of one rule in one manifest (both replica types lack the
// capability): one edit each, in one file, proven together.
func TestPlanPodFixTwoTemplates(t *testing.T) {
	job := strings.Replace(pytorchJob, "            securityContext:\n              capabilities:\n                add: [IPC_LOCK]\n", "", 1)
	r := podRepo(t, podFleets, map[string]string{"k8s/gpu-training/pretrain.yaml": job})
	g := onlyGroup(t, plan(t, r, Options{Rule: "pod-rdma-without-ipc-lock"}))
	prop := proposal(t, g)
	if len(g.Fix.Pods) != 2 {
		t.Errorf("fix %s: want two changes", g.Fix)
	}
	if got := strings.Count(string(prop.Files[0].Content), "- IPC_LOCK\n"); got != 2 {
		t.Errorf("IPC_LOCK added %d times:\n%s", got, prop.Files[0].Content)
	}
	res := applyAndGate(t, r, prop)
	if got := rulesOf(fleetResult(t, res, "gpu-training").Resolved); len(got) != 2 {
		t.Errorf("applied: resolved %v, want the finding of each template", got)
	}
}

// Pod fixes that cannot be placed safely are refused with the reason.
func TestPlanPodFixRefused(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		files          map[string]string
		want           string
	}{{
		name:     "a manifest an unaffected fleet also renders",
		manifest: "fleets:\n  gpu-training: {layers: [base], k8s: k8s/shared}\n  web-serving: {layers: [base], k8s: k8s/shared}\n",
		files:    map[string]string{"k8s/shared/pretrain.yaml": pytorchJob},
		want:     "k8s/shared/pretrain.yaml is also rendered for fleet web-serving (its manifests are k8s/shared), which the finding does not hold in",
	}, {
		name:     "a manifest under a directory an unaffected fleet renders whole",
		manifest: "fleets:\n  gpu-training: {layers: [base]}\n  web-serving: {layers: [base], k8s: k8s}\n",
		files:    map[string]string{"k8s/gpu-training/pretrain.yaml": pytorchJob},
		want:     "is also rendered for fleet web-serving (its manifests are k8s)",
	}, {
		name:     "a templated image on the line the edit follows",
		manifest: podFleets,
		files:    map[string]string{"k8s/gpu-training/pretrain.yaml": strings.Replace(pytorchJob, "                rdma/ib: 1\n            # RDMA", "                rdma/ib: ${RDMA_COUNT}\n            # RDMA", 1)},
		want:     "holds a template variable",
	}, {
		name:     "JSON from kubectl",
		manifest: podFleets,
		files: map[string]string{"k8s/gpu-training/pod.json": `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
 "spec": {"containers": [{"name": "c", "resources": {"limits": {"rdma/ib": 1}}}]}}
`},
		want: "k8s/gpu-training/pod.json is JSON",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := podRepo(t, tc.manifest, tc.files)
			g := onlyGroup(t, plan(t, r, Options{Rule: "pod-rdma-without-ipc-lock", Fleet: "gpu-training"}))
			if g.Proposal != nil || !strings.Contains(g.Refused, tc.want) {
				t.Fatalf("refused %q, want %q (proposal %v)", g.Refused, tc.want, g.Proposal != nil)
			}
		})
	}
}

// From an audit: the hosts' pod finding cites the cluster (kubectl's
// JSON on the host), not the repo; the fix goes to the repo's manifest
// whose pod shows the same finding, and the body lists the hosts.
func TestPlanPodFixFromAudit(t *testing.T) {
	r := podRepo(t, podFleets, map[string]string{"k8s/gpu-training/pretrain.yaml": pytorchJob})
	fix := map[string]any{"kind": "pod", "container": "pytorch", "add_capabilities": []any{"IPC_LOCK"}}
	audit := []policies.Finding{
		{Rule: "pod-rdma-without-ipc-lock", Fleet: "gpu-training", Host: "gpu-a-001", Severity: "high", Fix: fix,
			Evidence: []policies.Evidence{{Fact: "pods.3", Source: "/var/lib/fleetaudit/pods.json:120"}}},
		{Rule: "pod-rdma-without-ipc-lock", Fleet: "gpu-training", Host: "gpu-a-002", Severity: "high", Fix: fix,
			Evidence: []policies.Evidence{{Fact: "pods.0", Source: "/var/lib/fleetaudit/pods.json:4"}}},
	}
	g := onlyGroup(t, plan(t, r, Options{Audit: audit}))
	prop := proposal(t, g)
	if len(g.Fix.Pods) != 1 || g.Fix.Pods[0].File != "k8s/gpu-training/pretrain.yaml" || g.Fix.Pods[0].Line != pytorchWorkerLine {
		t.Errorf("fix %s: want the worker template of the repo's manifest", g.Fix)
	}
	if diff := cmp.Diff([]string{"gpu-a-001", "gpu-a-002"}, prop.Hosts); diff != "" {
		t.Errorf("hosts (-want +got):\n%s", diff)
	}
	res := applyAndGate(t, r, prop)
	if got := rulesOf(fleetResult(t, res, "gpu-training").Resolved); !slices.Contains(got, "pod-rdma-without-ipc-lock") {
		t.Errorf("applied: resolved %v", got)
	}
}

// The pod fixes the rules give parse into one change each; what the
// schema does not allow is an error naming the key.
func TestParsePodFix(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  map[string]any
		want PodChange
		err  string
	}{
		{"capability", map[string]any{"kind": "pod", "container": "c", "add_capabilities": []any{"IPC_LOCK"}}, PodChange{Container: "c", AddCapabilities: []string{"IPC_LOCK"}}, ""},
		{"memory limit", map[string]any{"kind": "pod", "container": "c", "resources": map[string]any{"limits": map[string]any{"memory": "32Gi"}}}, PodChange{Container: "c", Limits: map[string]string{"memory": "32Gi"}}, ""},
		{"size limit", map[string]any{"kind": "pod", "volume_size_limit": map[string]any{"volume": "dshm", "size": "64Gi"}}, PodChange{Volume: "dshm", Size: "64Gi"}, ""},
		{"file", map[string]any{"kind": "pod", "file": "k8s/a.yaml", "volume_size_limit": map[string]any{"volume": "dshm", "size": "1073741824"}}, PodChange{File: "k8s/a.yaml", Volume: "dshm", Size: "1073741824"}, ""},
		{"requests", map[string]any{"kind": "pod", "container": "c", "resources": map[string]any{"requests": map[string]any{"memory": "1Gi"}}}, PodChange{}, "resources.requests: only limits are set"},
		{"limit without container", map[string]any{"kind": "pod", "resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}}}, PodChange{}, "needs the container's name"},
		{"capability not a name", map[string]any{"kind": "pod", "container": "c", "add_capabilities": []any{"ipc_lock; rm"}}, PodChange{}, "not a capability name"},
		{"size not a quantity", map[string]any{"kind": "pod", "volume_size_limit": map[string]any{"volume": "dshm", "size": "64Gi\nx: y"}}, PodChange{}, "want a volume name and a quantity"},
		{"number", map[string]any{"kind": "pod", "container": "c", "resources": map[string]any{"limits": map[string]any{"memory": 1024}}}, PodChange{}, "want a string"},
		{"nothing", map[string]any{"kind": "pod", "container": "c"}, PodChange{}, "nothing to set"},
		{"env", map[string]any{"kind": "pod", "container": "c", "env": map[string]any{"FI_PROVIDER": "efa"}}, PodChange{Container: "c", Env: map[string]string{"FI_PROVIDER": "efa"}}, ""},
		{"remove env", map[string]any{"kind": "pod", "container": "c", "remove_env": []any{"NCCL_ALGO"}}, PodChange{Container: "c", RemoveEnv: []string{"NCCL_ALGO"}}, ""},
		{"env without container", map[string]any{"kind": "pod", "remove_env": []any{"NCCL_ALGO"}}, PodChange{}, "needs the container's name"},
		{"env value that needs quoting", map[string]any{"kind": "pod", "container": "c", "env": map[string]any{"FI_PROVIDER": "efa\" x"}}, PodChange{}, "want a variable name and a non-empty value"},
		{"env name not a variable", map[string]any{"kind": "pod", "container": "c", "remove_env": []any{"A-B"}}, PodChange{}, "not a variable name"},
		{"env set and removed", map[string]any{"kind": "pod", "container": "c", "env": map[string]any{"A": "1"}, "remove_env": []any{"A"}}, PodChange{}, "both name A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFix(tc.raw)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseFix = %+v, %v; want an error with %q", f, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]PodChange{tc.want}, f.Pods); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
		})
	}
	a := Fix{Kind: KindPod, Pods: []PodChange{{File: "k8s/a.yaml", Line: 3, Container: "c", AddCapabilities: []string{"IPC_LOCK"}}}}
	b := Fix{Kind: KindPod, Pods: []PodChange{{File: "k8s/a.yaml", Line: 9, Container: "c", AddCapabilities: []string{"IPC_LOCK"}}}}
	m, err := a.merge(b)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = m.merge(a); err != nil || len(m.Pods) != 2 {
		t.Errorf("merged %+v, %v: want the two pods once each", m.Pods, err)
	}
}

// A manifest two fleets render, where the finding holds in both: each
// fleet's group edits it (no unaffected fleet is touched), and the proof
// shows the other fleet changed with nothing introduced.
func TestPlanPodFixSharedByAffectedFleets(t *testing.T) {
	manifest := "fleets:\n  gpu-training: {layers: [base], k8s: k8s/shared}\n  gpu-b: {layers: [base], k8s: k8s/shared, profile: gpu-training}\n"
	r := podRepo(t, manifest, map[string]string{"k8s/shared/pretrain.yaml": pytorchJob})
	p := plan(t, r, Options{Rule: "pod-rdma-without-ipc-lock"})
	if len(p.Groups) != 2 {
		t.Fatalf("%d groups, want one per fleet", len(p.Groups))
	}
	for _, g := range p.Groups {
		prop := proposal(t, g)
		if !strings.Contains(g.Placement.Why, "also rendered for") {
			t.Errorf("%s: why %q", g.Fleet, g.Placement.Why)
		}
		other := map[string]string{"gpu-training": "gpu-b", "gpu-b": "gpu-training"}[g.Fleet]
		if want := "fleet " + other + ": changed"; !slices.ContainsFunc(g.Proof, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("%s: proof lacks %q:\n%s", g.Fleet, want, strings.Join(g.Proof, "\n"))
		}
		if diff := cmp.Diff([]string{"k8s/shared/pretrain.yaml"}, g.Placement.Paths()); diff != "" || len(prop.Files) != 1 {
			t.Errorf("%s: files (-want +got):\n%s", g.Fleet, diff)
		}
	}
}

// The pod's name comes from the repo: the pull request body shows it as
// text, never as HTML.
func TestPlanPodFixBodyEscapesPodName(t *testing.T) {
	job := strings.Replace(pytorchJob, "name: llm-pretrain", `name: "llm<img src=x>"`, 1)
	r := podRepo(t, podFleets, map[string]string{"k8s/gpu-training/pretrain.yaml": job})
	prop := proposal(t, onlyGroup(t, plan(t, r, Options{Rule: "pod-rdma-without-ipc-lock"})))
	if strings.Contains(prop.Body, "<img") || !strings.Contains(prop.Body, "**Fix**: pod: k8s/gpu-training/pretrain.yaml:25 pod research/llm&lt;img src=x&gt;-worker") {
		t.Errorf("body:\n%s", prop.Body)
	}
}
