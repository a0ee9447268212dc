package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// want is what a test checks of one flattened object.
type want struct {
	line      int
	kind      string
	name      string
	role      string
	podName   string
	namespace string
	labels    map[string]any
	image     string
}

func got(o Object) want {
	meta, _ := o.Pod["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	if len(labels) == 0 {
		labels = nil
	}
	w := want{line: o.Line, kind: o.Kind, name: o.Name, role: o.Role, labels: labels}
	w.podName, _ = meta["name"].(string)
	w.namespace, _ = meta["namespace"].(string)
	if spec, ok := o.Pod["spec"].(map[string]any); ok {
		if cs, ok := spec["containers"].([]any); ok && len(cs) > 0 {
			w.image, _ = cs[0].(map[string]any)["image"].(string)
		}
	}
	return w
}

const podTemplate = `    metadata:
      labels: {app: web}
    spec:
      containers: [{name: c, image: img}]
`

func TestParseManifestsKinds(t *testing.T) {
	web := map[string]any{"app": "web"}
	tests := []struct {
		name string
		yaml string
		want []want
	}{{
		name: "pod",
		yaml: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {a: b}\nspec:\n  containers: [{name: c, image: img}]\n",
		want: []want{{line: 1, kind: "Pod", name: "p", podName: "p", namespace: "default", labels: map[string]any{"a": "b"}, image: "img"}},
	}, {
		name: "pods carry the template's labels, not the workload's",
		yaml: "kind: Deployment\nmetadata:\n  name: d\n  namespace: ns\n  labels: {app: workload, tier: x}\nspec:\n  template:\n" + podTemplate,
		want: []want{{line: 7, kind: "Deployment", name: "d", podName: "d", namespace: "ns", labels: map[string]any{"app": "web"}, image: "img"}},
	}, {
		name: "statefulset",
		yaml: "kind: StatefulSet\nmetadata: {name: s}\nspec:\n  template:\n" + podTemplate,
		want: []want{{line: 4, kind: "StatefulSet", name: "s", podName: "s", namespace: "default", labels: web, image: "img"}},
	}, {
		name: "daemonset",
		yaml: "kind: DaemonSet\nmetadata: {name: ds}\nspec:\n  template:\n" + podTemplate,
		want: []want{{line: 4, kind: "DaemonSet", name: "ds", podName: "ds", namespace: "default", labels: web, image: "img"}},
	}, {
		name: "replicaset",
		yaml: "kind: ReplicaSet\nmetadata: {name: rs}\nspec:\n  template:\n" + podTemplate,
		want: []want{{line: 4, kind: "ReplicaSet", name: "rs", podName: "rs", namespace: "default", labels: web, image: "img"}},
	}, {
		name: "replicationcontroller",
		yaml: "kind: ReplicationController\nmetadata: {name: rc}\nspec:\n  template:\n" + podTemplate,
		want: []want{{line: 4, kind: "ReplicationController", name: "rc", podName: "rc", namespace: "default", labels: web, image: "img"}},
	}, {
		name: "job gets the job-name labels",
		yaml: "kind: Job\nmetadata: {name: j}\nspec:\n  template:\n" + podTemplate,
		want: []want{{line: 4, kind: "Job", name: "j", podName: "j", namespace: "default", labels: map[string]any{"app": "web", "batch.kubernetes.io/job-name": "j", "job-name": "j"}, image: "img"}},
	}, {
		name: "cronjob",
		yaml: "kind: CronJob\nmetadata: {name: cj, labels: {a: cron}}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    metadata: {labels: {a: job, b: job}}\n    spec:\n      template:\n        spec:\n          containers: [{name: c, image: img}]\n",
		want: []want{{line: 8, kind: "CronJob", name: "cj", podName: "cj", namespace: "default", image: "img"}},
	}, {
		name: "pod template",
		yaml: "kind: PodTemplate\nmetadata: {name: pt}\ntemplate:\n  spec:\n    containers: [{name: c, image: img}]\n",
		want: []want{{line: 3, kind: "PodTemplate", name: "pt", podName: "pt", namespace: "default", image: "img"}},
	}, {
		name: "tfjob roles in file order",
		yaml: "kind: TFJob\nmetadata: {name: tf}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template:\n        spec: {containers: [{name: c, image: w}]}\n    Chief:\n      template:\n        spec: {containers: [{name: c, image: c}]}\n",
		want: []want{
			{line: 6, kind: "TFJob", name: "tf", role: "Worker", podName: "tf-worker", namespace: "default", labels: map[string]any{"training.kubeflow.org/job-name": "tf", "training.kubeflow.org/replica-type": "worker"}, image: "w"},
			{line: 9, kind: "TFJob", name: "tf", role: "Chief", podName: "tf-chief", namespace: "default", labels: map[string]any{"training.kubeflow.org/job-name": "tf", "training.kubeflow.org/replica-type": "chief", "training.kubeflow.org/job-role": "master"}, image: "c"},
		},
	}, {
		name: "xgboost and paddle style",
		yaml: "kind: XGBoostJob\nmetadata: {name: x}\nspec:\n  xgbReplicaSpecs:\n    Master:\n      template: {spec: {containers: [{name: c, image: m}]}}\n---\nkind: PaddleJob\nmetadata: {name: pd}\nspec:\n  paddleReplicaSpecs:\n    Worker:\n      template: {spec: {containers: [{name: c, image: w}]}}\n",
		want: []want{
			{line: 6, kind: "XGBoostJob", name: "x", role: "Master", podName: "x-master", namespace: "default", labels: map[string]any{"training.kubeflow.org/job-name": "x", "training.kubeflow.org/replica-type": "master", "training.kubeflow.org/job-role": "master"}, image: "m"},
			{line: 13, kind: "PaddleJob", name: "pd", role: "Worker", podName: "pd-worker", namespace: "default", labels: map[string]any{"training.kubeflow.org/job-name": "pd", "training.kubeflow.org/replica-type": "worker"}, image: "w"},
		},
	}, {
		name: "leaderworkerset",
		yaml: "kind: LeaderWorkerSet\nmetadata: {name: vllm}\nspec:\n  leaderWorkerTemplate:\n    size: 2\n    leaderTemplate:\n      spec: {containers: [{name: c, image: l}]}\n    workerTemplate:\n      spec: {containers: [{name: c, image: w}]}\n",
		want: []want{
			{line: 6, kind: "LeaderWorkerSet", name: "vllm", role: "leader", podName: "vllm-leader", namespace: "default", labels: map[string]any{"leaderworkerset.sigs.k8s.io/name": "vllm"}, image: "l"},
			{line: 8, kind: "LeaderWorkerSet", name: "vllm", role: "worker", podName: "vllm-worker", namespace: "default", labels: map[string]any{"leaderworkerset.sigs.k8s.io/name": "vllm"}, image: "w"},
		},
	}, {
		name: "unknown kind with a pod template",
		yaml: "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec:\n  template:\n" + podTemplate,
		want: []want{{line: 5, kind: "Rollout", name: "r", podName: "r", namespace: "default", labels: web, image: "img"}},
	}, {
		name: "objects without pods are skipped",
		yaml: "kind: ConfigMap\nmetadata: {name: c}\ndata: {template: x}\n---\nkind: Service\nspec: {template: {spec: {}}}\n---\nreplicas: 3 # a values file\n---\n# only a comment\n",
	}, {
		name: "typed list items without kind",
		yaml: `{"kind": "PodList", "apiVersion": "v1", "items": [` + "\n" + `{"metadata": {"name": "a", "namespace": "n"}, "spec": {"containers": [{"name": "c", "image": "img"}]}}]}`,
		want: []want{{line: 2, kind: "Pod", name: "a", podName: "a", namespace: "n", image: "img"}},
	}, {
		name: "nested list",
		yaml: "kind: List\nitems:\n- kind: List\n  items:\n  - kind: Deployment\n    metadata: {name: d}\n    spec:\n      template: {spec: {containers: [{name: c, image: img}]}}\n",
		want: []want{{line: 8, kind: "Deployment", name: "d", podName: "d", namespace: "default", image: "img"}},
	}, {
		name: "anchors and merge keys",
		yaml: "base: &tmpl\n  template:\n    spec: {containers: [{name: c, image: img}]}\n---\nkind: Deployment\nmetadata: {name: d}\nspec:\n  <<: *tmpl\n",
		want: []want{{line: 2, kind: "Deployment", name: "d", podName: "d", namespace: "default", image: "img"}},
	}, {
		name: "generateName",
		yaml: "kind: Job\nmetadata: {generateName: bench-}\nspec:\n  template: {spec: {containers: [{name: c, image: img}]}}\n",
		want: []want{{line: 4, kind: "Job", name: "bench-", podName: "bench-", namespace: "default", labels: map[string]any{"batch.kubernetes.io/job-name": "bench-", "job-name": "bench-"}, image: "img"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := ParseManifests([]byte(tt.yaml), "m.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var gots []want
			for _, o := range objs {
				if o.File != "m.yaml" {
					t.Errorf("file %q", o.File)
				}
				gots = append(gots, got(o))
			}
			if diff := cmp.Diff(tt.want, gots, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseManifestsAnchorsShareNothing(t *testing.T) {
	// Two workloads share a template through an alias: labels added to one
	// must not show on the other.
	data := "kind: List\nitems:\n- kind: Job\n  metadata: {name: a}\n  spec: {template: &t {spec: {containers: [{name: c, image: img}]}}}\n- kind: Job\n  metadata: {name: b}\n  spec: {template: *t}\n"
	objs, err := ParseManifests([]byte(data), "m.yaml")
	if err != nil || len(objs) != 2 {
		t.Fatalf("%d objects, %v", len(objs), err)
	}
	if l := got(objs[0]).labels["job-name"]; l != "a" {
		t.Errorf("first job's job-name label = %v", l)
	}
}

func TestParseManifestsSamples(t *testing.T) {
	tests := []struct {
		file string
		want []want
	}{{
		file: "pytorchjob.yaml",
		want: []want{
			{line: 16, kind: "PyTorchJob", name: "llama-finetune", role: "Master", podName: "llama-finetune-master", namespace: "research", labels: map[string]any{"app": "llama", "training.kubeflow.org/job-name": "llama-finetune", "training.kubeflow.org/replica-type": "master", "training.kubeflow.org/job-role": "master"}, image: "nvcr.io/nvidia/pytorch:24.05-py3"},
			{line: 43, kind: "PyTorchJob", name: "llama-finetune", role: "Worker", podName: "llama-finetune-worker", namespace: "research", labels: map[string]any{"app": "llama", "training.kubeflow.org/job-name": "llama-finetune", "training.kubeflow.org/replica-type": "worker"}, image: "nvcr.io/nvidia/pytorch:24.05-py3"},
		},
	}, {
		file: "mpijob.yaml",
		want: []want{
			{line: 12, kind: "MPIJob", name: "nccl-tests", role: "Launcher", podName: "nccl-tests-launcher", namespace: "default", labels: map[string]any{"training.kubeflow.org/job-name": "nccl-tests", "training.kubeflow.org/replica-type": "launcher", "training.kubeflow.org/job-role": "launcher"}, image: "ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1"},
			{line: 33, kind: "MPIJob", name: "nccl-tests", role: "Worker", podName: "nccl-tests-worker", namespace: "default", labels: map[string]any{"training.kubeflow.org/job-name": "nccl-tests", "training.kubeflow.org/replica-type": "worker"}, image: "ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1"},
		},
	}, {
		file: "deployment-shm.yaml",
		want: []want{{line: 22, kind: "Deployment", name: "triton", podName: "triton", namespace: "serving", labels: map[string]any{"app": "triton"}, image: "nvcr.io/nvidia/tritonserver:24.05-py3"}},
	}, {
		file: "kubectl-pods.json",
		want: []want{
			{line: 4, kind: "Pod", name: "llama-finetune-worker-0", podName: "llama-finetune-worker-0", namespace: "research", labels: map[string]any{"training.kubeflow.org/job-name": "llama-finetune", "training.kubeflow.org/operator-name": "pytorchjob-controller", "training.kubeflow.org/replica-index": "0", "training.kubeflow.org/replica-type": "worker"}, image: "nvcr.io/nvidia/pytorch:24.05-py3"},
			{line: 58, kind: "Pod", name: "nvidia-device-plugin-daemonset-x7k2p", podName: "nvidia-device-plugin-daemonset-x7k2p", namespace: "gpu-operator", labels: map[string]any{"k8s-app": "nvidia-device-plugin"}, image: "nvcr.io/nvidia/k8s-device-plugin:v0.15.0"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := ParseManifests(data, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			var gots []want
			for _, o := range objs {
				gots = append(gots, got(o))
			}
			if diff := cmp.Diff(tt.want, gots, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseManifestsJSONShape checks values come out as a snapshot document
// holds them (snapshot.DecodeJSON: numbers as json.Number), as in a
// snapshot read back from disk.
func TestParseManifestsJSONShape(t *testing.T) {
	data, err := os.ReadFile("testdata/kubectl-pods.json")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ParseManifests(data, "pods.json")
	if err != nil {
		t.Fatal(err)
	}
	spec := objs[0].Pod["spec"].(map[string]any)
	if v := spec["terminationGracePeriodSeconds"]; v != json.Number("30") {
		t.Errorf("terminationGracePeriodSeconds = %#v, want json.Number 30", v)
	}
	if status := objs[0].Pod["status"].(map[string]any); status["phase"] != "Running" {
		t.Errorf("status not kept: %v", status)
	}
	vol := spec["volumes"].([]any)[0].(map[string]any)
	if diff := cmp.Diff(map[string]any{"name": "dshm", "emptyDir": map[string]any{"medium": "Memory"}}, vol); diff != "" {
		t.Errorf("volume (-want +got):\n%s", diff)
	}
	objs, err = ParseManifests([]byte("kind: Pod\nmetadata: {name: p, labels: {1: one, true: yes}}\nspec: {containers: [{name: c, image: img, ports: [{containerPort: 0x1F90}]}]}\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := got(objs[0])
	if diff := cmp.Diff(map[string]any{"1": "one", "true": "yes"}, w.labels); diff != "" {
		t.Errorf("non-string keys (-want +got):\n%s", diff)
	}
	port := objs[0].Pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["ports"].([]any)[0].(map[string]any)["containerPort"]
	if port != json.Number("8080") {
		t.Errorf("containerPort = %#v, want json.Number 8080", port)
	}
}

func TestParseManifestsJSONEscapedSlash(t *testing.T) {
	data := `{"kind": "Pod", "metadata": {"name": "p"},` + "\n" + `"spec": {"containers": [{"name": "c", "image": "registry.io\/img", "args": ["a\\\/b"]}]}}`
	objs, err := ParseManifests([]byte(data), "p.json")
	if err != nil || len(objs) != 1 {
		t.Fatalf("%d objects, %v", len(objs), err)
	}
	c := objs[0].Pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if c["image"] != "registry.io/img" || c["args"].([]any)[0] != `a\/b` {
		t.Errorf("container = %v", c)
	}
}

func TestParseManifestsErrors(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		objects int
		want    []string // one substring per error, in order
	}{
		{"syntax error keeps earlier documents", "kind: Pod\nmetadata: {name: a}\n---\nkind: Pod\nmetadata:\n  name: a: b\n", 1, []string{"m.yaml:6: mapping values are not allowed"}},
		{"unclosed JSON", `{"kind": "List", "items": [` + "\n{\"kind\": \"Pod\"}\n", 0, []string{"m.yaml:"}},
		{"scalar document", "just some text\n", 0, []string{"m.yaml:1: not a Kubernetes object: the document is a string"}},
		{"list document", "- a\n- b\n", 0, []string{"m.yaml:1: not a Kubernetes object: the document is a list"}},
		{"bad template goes on with the next document", "kind: Deployment\nmetadata: {name: d}\nspec:\n  template: oops\n---\nkind: Pod\nmetadata: {name: p}\n", 1, []string{"m.yaml:4: template is a string, not a mapping"}},
		{"bad template spec", "kind: Job\nspec:\n  template:\n    spec: [1]\n", 0, []string{"m.yaml:4: spec is a list, not a mapping"}},
		{"bad metadata", "kind: Pod\nmetadata: x\n", 0, []string{"m.yaml:2: metadata is a string"}},
		{"bad labels", "kind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    metadata: {labels: [a]}\n    spec: {}\n", 0, []string{"m.yaml:5: labels is a list"}},
		{"bad replica spec", "kind: PyTorchJob\nspec:\n  pytorchReplicaSpecs:\n    Worker: 3\n", 0, []string{"m.yaml:4: Worker is a number"}},
		{"bad list item", "kind: List\nitems:\n- 1\n- kind: Pod\n", 1, []string{"m.yaml:3: list item is a number"}},
		{"items not a list", "kind: PodList\nitems: {a: b}\n", 0, []string{"m.yaml:2: items is not a list"}},
		{"infinity", "kind: Pod\nspec: {x: .inf}\n", 0, []string{"m.yaml:1: json: unsupported value: +Inf"}},
		{"complex key", "kind: Pod\nspec: {[a]: b}\n", 0, []string{"m.yaml:1: yaml: invalid map key"}},
		{"null key", "kind: Pod\nspec: {~: b}\n", 0, []string{"m.yaml:1: a null is not a valid key"}},
		{"duplicate key", "kind: Pod\nkind: Pod\n", 0, []string{"m.yaml:1: yaml: unmarshal errors"}},
		{"binary garbage", "\x00\x01\x02\xff", 0, []string{"m.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := ParseManifests([]byte(tt.data), "m.yaml")
			if len(objs) != tt.objects {
				t.Errorf("%d objects, want %d", len(objs), tt.objects)
			}
			errs := unjoin(err)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %v, want %d", errs, len(tt.want))
			}
			for i, e := range errs {
				var me *ManifestError
				if !errors.As(e, &me) || me.File != "m.yaml" {
					t.Errorf("error %v is not a *ManifestError for m.yaml", e)
				}
				if !strings.Contains(e.Error(), tt.want[i]) {
					t.Errorf("error %q lacks %q", e, tt.want[i])
				}
			}
		})
	}
}

func TestParseManifestsLimits(t *testing.T) {
	doc := "kind: Pod\nmetadata: {name: p}\n---\n"
	objs, err := ParseManifests([]byte(strings.Repeat(doc, maxObjects+5)), "m.yaml")
	if len(objs) != maxObjects || err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d objects, %v", len(objs), err)
	}
	deep := strings.Repeat("{kind: List, items: [", maxListDepth+2) + strings.Repeat("]}", maxListDepth+2)
	if _, err := ParseManifests([]byte(deep), "m.yaml"); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("deep lists: %v", err)
	}
	bomb := "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nkind: Pod\n"
	if _, err := ParseManifests([]byte(bomb), "m.yaml"); err == nil || !strings.Contains(err.Error(), "aliasing") {
		t.Errorf("alias bomb: %v", err)
	}
}

func TestReadManifests(t *testing.T) {
	pod := []byte("kind: Pod\nmetadata: {name: p}\n")
	fsys := fstest.MapFS{
		"m/b.yaml":             {Data: pod},
		"m/a.yml":              {Data: pod},
		"m/sub/c.JSON":         {Data: []byte(`{"kind": "Pod", "metadata": {"name": "c"}}`)},
		"m/broken.yaml":        {Data: []byte("kind: Pod\nmetadata:\n  name: a: b\n")},
		"m/z.yaml":             {Data: pod},
		"m/README.md":          {Data: []byte("# not a manifest: {")},
		"m/.hidden.yaml":       {Data: []byte("garbage: [")},
		"m/.git/config.yaml":   {Data: []byte("garbage: [")},
		"m/..data/config.yaml": {Data: []byte("garbage: [")},
		"one.txt":              {Data: pod},
	}
	objs, errs := ReadManifests(fsys, "m")
	var files []string
	for _, o := range objs {
		files = append(files, fmt.Sprintf("%s:%d", o.File, o.Line))
	}
	if diff := cmp.Diff([]string{"m/a.yml:1", "m/b.yaml:1", "m/sub/c.JSON:1", "m/z.yaml:1"}, files); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "m/broken.yaml:3: ") {
		t.Errorf("errors = %v, want one for m/broken.yaml:3", errs)
	}
	// A file is read whatever its name.
	if objs, errs := ReadManifests(fsys, "one.txt"); len(objs) != 1 || errs != nil {
		t.Errorf("one file: %d objects, %v", len(objs), errs)
	}
	if _, errs := ReadManifests(fsys, "missing"); len(errs) != 1 || !errors.Is(errs[0], os.ErrNotExist) {
		t.Errorf("missing root: %v", errs)
	}
}
