package remediate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/kube"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

const pytorchJob = `# Pretraining: one master, fifteen workers.
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llm-pretrain
  namespace: research
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: train:1
            resources:
              limits:
                nvidia.com/gpu: 8
                rdma/ib: 1
            securityContext:
              capabilities:
                add: [IPC_LOCK]
    Worker:
      replicas: 15
      template:
        metadata:
          labels: {team: llm}
        spec:
          containers:
          - name: pytorch   # the trainer
            image: train:1
            resources:
              limits:
                nvidia.com/gpu: 8   # whole node
                rdma/ib: 1
            # RDMA registers pinned memory.
          - name: logs
            image: logs:1
`

// The worker template of pytorchJob starts at line 25 ("template:").
const pytorchWorkerLine = 25

// editPod's text edits: only the lines of the change, at the indentation
// the file uses, comments and every other document kept; flow style edited
// in place.
func TestEditPod(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		change   PodChange
		want     string
	}{{
		name:   "capability block, new securityContext",
		in:     pytorchJob,
		change: PodChange{Line: pytorchWorkerLine, Container: "pytorch", AddCapabilities: []string{"IPC_LOCK"}},
		want: strings.Replace(pytorchJob, "                rdma/ib: 1\n            # RDMA", `                rdma/ib: 1
            securityContext:
              capabilities:
                add:
                - IPC_LOCK
            # RDMA`, 1),
	}, {
		name: "capability appended to a block list, indented dashes",
		in: `apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
    - name: c
      securityContext:
        capabilities:
          add:
            - NET_RAW   # ping
      image: x
`,
		change: PodChange{Line: 1, Container: "c", AddCapabilities: []string{"IPC_LOCK"}},
		want: `apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
    - name: c
      securityContext:
        capabilities:
          add:
            - NET_RAW   # ping
            - IPC_LOCK
      image: x
`,
	}, {
		name:   "capability in a flow container",
		in:     "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: c, image: x}   # one\n",
		change: PodChange{Line: 1, Container: "c", AddCapabilities: []string{"IPC_LOCK"}},
		want:   "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: c, image: x, securityContext: {capabilities: {add: [IPC_LOCK]}}}   # one\n",
	}, {
		name:   "capability in a flow list",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    securityContext:\n      capabilities: {add: [NET_RAW], drop: [ALL]}\n",
		change: PodChange{Line: 1, Container: "c", AddCapabilities: []string{"IPC_LOCK"}},
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    securityContext:\n      capabilities: {add: [NET_RAW, IPC_LOCK], drop: [ALL]}\n",
	}, {
		name:   "already there",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    securityContext:\n      capabilities: {add: [IPC_LOCK]}\n",
		change: PodChange{Line: 1, Container: "c", AddCapabilities: []string{"IPC_LOCK"}},
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    securityContext:\n      capabilities: {add: [IPC_LOCK]}\n",
	}, {
		name: "memory limit, init container, 4-space indent",
		in: `kind: Pod
spec:
    initContainers:
    -   name: warm
        resources:
            requests:
                memory: 8Gi
            limits:
                nvidia.com/gpu: 1
    containers:
    -   name: c
`,
		change: PodChange{Line: 1, Container: "warm", Limits: map[string]string{"memory": "8Gi"}},
		want: `kind: Pod
spec:
    initContainers:
    -   name: warm
        resources:
            requests:
                memory: 8Gi
            limits:
                nvidia.com/gpu: 1
                memory: 8Gi
    containers:
    -   name: c
`,
	}, {
		name:   "memory limit in a flow map, a number quoted",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits: {nvidia.com/gpu: 1}\n",
		change: PodChange{Line: 1, Container: "c", Limits: map[string]string{"memory": "1024"}},
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits: {nvidia.com/gpu: 1, memory: \"1024\"}\n",
	}, {
		name:   "memory limit replaced",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits:\n        memory: '2Gi'  # old\n",
		change: PodChange{Line: 1, Container: "c", Limits: map[string]string{"memory": "16Gi"}},
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits:\n        memory: 16Gi  # old\n",
	}, {
		name: "sizeLimit, block emptyDir, second document of three",
		in: `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data:
  a: "1"
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
          volumeMounts:
            - {name: dshm, mountPath: /dev/shm}
      volumes:
        - name: dshm
          emptyDir:
            medium: Memory   # NCCL shared memory

        - name: cache
          emptyDir: {}
---
kind: Service
metadata: {name: infer}
`,
		change: PodChange{Line: 13, Volume: "dshm", Size: "64Gi"},
		want: `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data:
  a: "1"
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
          volumeMounts:
            - {name: dshm, mountPath: /dev/shm}
      volumes:
        - name: dshm
          emptyDir:
            medium: Memory   # NCCL shared memory
            sizeLimit: 64Gi

        - name: cache
          emptyDir: {}
---
kind: Service
metadata: {name: infer}
`,
	}, {
		name:   "sizeLimit, flow emptyDir",
		in:     "kind: Pod\nspec:\n  containers: [{name: c}]\n  volumes:\n  - name: dshm\n    emptyDir: {medium: Memory}\n",
		change: PodChange{Line: 1, Volume: "dshm", Size: "64Gi"},
		want:   "kind: Pod\nspec:\n  containers: [{name: c}]\n  volumes:\n  - name: dshm\n    emptyDir: {medium: Memory, sizeLimit: 64Gi}\n",
	}, {
		name:   "sizeLimit, empty flow emptyDir, no newline at the end",
		in:     "kind: Pod\nspec:\n  containers: [{name: c}]\n  volumes:\n  - name: dshm\n    emptyDir: {}",
		change: PodChange{Line: 1, Volume: "dshm", Size: "64Gi"},
		want:   "kind: Pod\nspec:\n  containers: [{name: c}]\n  volumes:\n  - name: dshm\n    emptyDir: {sizeLimit: 64Gi}",
	}, {
		name:   "last line without a newline",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: x",
		change: PodChange{Line: 1, Container: "c", Limits: map[string]string{"memory": "1Gi"}},
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: x\n    resources:\n      limits:\n        memory: 1Gi\n",
	}, {
		name:   "CRLF line ends kept",
		in:     "kind: Pod\r\nspec:\r\n  containers:\r\n  - name: c\r\n    image: x\r\n",
		change: PodChange{Line: 1, Container: "c", Limits: map[string]string{"memory": "1Gi"}},
		want:   "kind: Pod\r\nspec:\r\n  containers:\r\n  - name: c\r\n    image: x\r\n    resources:\r\n      limits:\r\n        memory: 1Gi\r\n",
	}, {
		name:   "multi-line flow list closed on its own line",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    command: [sh, -c,\n      run\n    ]\n  - name: d\n",
		change: PodChange{Line: 1, Container: "c", Limits: map[string]string{"memory": "1Gi"}},
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    command: [sh, -c,\n      run\n    ]\n    resources:\n      limits:\n        memory: 1Gi\n  - name: d\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := editPod([]byte(tc.in), tc.change)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("edited (-want +got):\n%s", diff)
			}
		})
	}
}

// What editPod cannot do safely it refuses, saying why.
func TestEditPodRefuses(t *testing.T) {
	caps := PodChange{Line: 1, Container: "c", AddCapabilities: []string{"IPC_LOCK"}}
	for _, tc := range []struct {
		name, in string
		change   PodChange
		want     string
	}{
		{"helm template", "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: \"{{ .Values.image }}\"\n", caps, "template"},
		{"variable on the line after which the edit goes", "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: train:${TAG}\n", caps, "template variable"},
		{"variable in the flow map edited", "kind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits: {memory: $MEM}\n", PodChange{Line: 1, Container: "c", Limits: map[string]string{"memory": "1Gi"}}, "template variable"},
		{"anchored securityContext shared by an alias", "kind: Pod\nspec:\n  containers:\n  - name: c\n    securityContext: &sc\n      runAsUser: 0\n  - name: d\n    securityContext: *sc\n", caps, "anchor"},
		{"container with a merge key", "kind: Pod\nspec:\n  containers:\n  - name: c\n    <<: {image: x}\n", caps, "merge key"},
		{"no such container", "kind: Pod\nspec:\n  containers:\n  - name: d\n", caps, "no container c"},
		{"no pod at the line", pytorchJob, PodChange{Line: 5, Container: "pytorch", AddCapabilities: []string{"IPC_LOCK"}}, "0 pods or pod templates start at this line"},
		{"not an emptyDir", "kind: Pod\nspec:\n  containers: [{name: c}]\n  volumes:\n  - name: dshm\n    hostPath: {path: /dev/shm}\n", PodChange{Line: 1, Volume: "dshm", Size: "1Gi"}, "not an emptyDir"},
		// The text edit would go inside the block scalar, whose last line
		// reads like a comment: the re-parse check catches it.
		{"block scalar ending in a #-line", "kind: Pod\nspec:\n  containers:\n  - name: c\n    command:\n    - |\n      run\n      # end\n", caps, "is not the old one plus"},
		{"template spec shared by an alias", "kind: PyTorchJob\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      template:\n        spec: &pod\n          containers:\n          - name: c\n    Worker:\n      template:\n        spec: *pod\n", PodChange{Line: 5, Container: "c", AddCapabilities: []string{"IPC_LOCK"}}, "is not the old one plus"},
		{"an empty value at the end of the file", "kind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits:\n        memory:\n", PodChange{Line: 1, Container: "c", Limits: map[string]string{"memory": "1Gi"}}, "written in a way fleetaudit does not edit"},
		{"capabilities not a mapping", "kind: Pod\nspec:\n  containers:\n  - name: c\n    securityContext:\n      capabilities: [IPC_LOCK]\n", caps, "not a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := editPod([]byte(tc.in), tc.change)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("editPod = %q, %v; want an error with %q", got, err, tc.want)
			}
		})
	}
}

// Every kind of workload kube flattens: editPod at the line kube reports
// for a pod or template changes that pod alone, as kube reads the file
// again (the other templates, the other documents unchanged).
func TestEditPodEveryWorkloadKind(t *testing.T) {
	file := `apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers:
  - {name: c, image: x}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: dep}
spec:
  template:
    spec:
      containers:
      - name: c
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts}
spec:
  template:
    metadata: {labels: {app: sts}}
    spec:
      containers: [{name: c}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  template:
    spec:
      initContainers:
      - name: c
      containers:
      - name: d
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cron}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: c
---
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mpi}
spec:
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
          - name: c
    Worker:
      template:
        spec:
          containers:
          - name: c
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: lws}
spec:
  leaderWorkerTemplate:
    leaderTemplate:
      spec:
        containers:
        - name: c
    workerTemplate:
      spec:
        containers:
        - name: c
---
apiVersion: v1
kind: PodList
items:
- metadata: {name: listed}
  spec:
    containers:
    - name: c
`
	before, err := kube.ParseManifests([]byte(file), "k8s/all.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 10 {
		t.Fatalf("kube found %d pods and templates, want 10", len(before))
	}
	for i, o := range before {
		t.Run(strings.TrimSpace(fmt.Sprintf("%s %s %s", o.Kind, o.Name, o.Role)), func(t *testing.T) {
			edited, err := editPod([]byte(file), PodChange{Line: o.Line, Container: "c", AddCapabilities: []string{"IPC_LOCK"}})
			if err != nil {
				t.Fatal(err)
			}
			after, err := kube.ParseManifests(edited, "k8s/all.yaml")
			if err != nil || len(after) != len(before) {
				t.Fatalf("edited file: %d objects, %v\n%s", len(after), err, edited)
			}
			for j := range before {
				want := before[j].Pod
				if j == i {
					want = withCapability(t, before[j].Pod, "c", "IPC_LOCK")
				}
				if diff := cmp.Diff(want, after[j].Pod); diff != "" {
					t.Errorf("object %d (%s %s) (-want +got):\n%s", j, before[j].Kind, before[j].Role, diff)
				}
			}
		})
	}
}

// withCapability is pod (a fresh copy) with capability added to
// container name.
func withCapability(t *testing.T, pod map[string]any, name, capability string) map[string]any {
	t.Helper()
	data, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := snapshot.DecodeJSON(data, &out); err != nil {
		t.Fatal(err)
	}
	spec := out["spec"].(map[string]any)
	for _, list := range []string{"containers", "initContainers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			if c := c.(map[string]any); c["name"] == name {
				c["securityContext"] = map[string]any{"capabilities": map[string]any{"add": []any{capability}}}
				return out
			}
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}
