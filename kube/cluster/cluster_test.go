package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetaudit/fleetaudit/internal/kubetest"
	"github.com/fleetaudit/fleetaudit/kube/cluster"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// One real etcd + kube-apiserver for this package's tests.
var apiserver kubetest.Server

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m)) }

// seed creates, once per apiserver, three nodes and pods of several owners
// bound to two of them, plus an unscheduled pod and one on a node that the
// selector test leaves out.
func seed(t *testing.T, env *kubetest.Env) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, "gpu-a-001", metav1.GetOptions{}); err == nil {
		return // seeded by an earlier test
	}
	for _, n := range []struct {
		name   string
		labels map[string]string
		alloc  corev1.ResourceList
		taints []corev1.Taint
	}{
		{"gpu-a-001", map[string]string{"nvidia.com/gpu.present": "true", "node.kubernetes.io/instance-type": "p5.48xlarge", "fleetaudit.io/host": "a1"},
			corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), "vpc.amazonaws.com/efa": resource.MustParse("32"), "cpu": resource.MustParse("192"), "memory": resource.MustParse("2003424Ki")},
			[]corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
		{"gpu-a-002", map[string]string{"nvidia.com/gpu.present": "true", "feature.node.kubernetes.io/rdma.available": "true", "fleetaudit.io/host": "a2"},
			corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), "rdma/ib": resource.MustParse("1k")}, nil},
		{"cpu-x-001", map[string]string{"fleetaudit.io/host": "x1"}, corev1.ResourceList{"cpu": resource.MustParse("64")}, nil},
	} {
		node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels},
			Spec:       corev1.NodeSpec{Taints: n.taints},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Allocatable is status: the kubelet writes it, through the status
		// subresource.
		node.Status.Allocatable, node.Status.Capacity = n.alloc, n.alloc
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "research"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrl := true
	for _, p := range []*corev1.Pod{
		// A Job's pod, with a secret in its env and a kubectl apply copy.
		{ObjectMeta: metav1.ObjectMeta{Name: "train-0", Namespace: "research",
			Labels:          map[string]string{"batch.kubernetes.io/job-name": "train"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"secret":"copy"}`, "team": "nlp"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "1b4e28ba-2fa1-11d2-883f-0016d3cca427", Controller: &ctrl}}},
			Spec: corev1.PodSpec{NodeName: "gpu-a-001", Containers: []corev1.Container{{
				Name: "trainer", Image: "nvcr.io/nvidia/pytorch:24.05-py3",
				Env:       []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}, {Name: "WANDB_API_KEY", Value: "hunter2"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}},
			}}}},
		// A PyTorchJob worker (owned by a custom resource).
		{ObjectMeta: metav1.ObjectMeta{Name: "llama-worker-0", Namespace: "research",
			Labels:          map[string]string{"training.kubeflow.org/job-name": "llama", "training.kubeflow.org/replica-type": "worker"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "llama", UID: "2b4e28ba-2fa1-11d2-883f-0016d3cca427", Controller: &ctrl}}},
			Spec: corev1.PodSpec{NodeName: "gpu-a-002", Containers: []corev1.Container{{
				Name: "pytorch", Image: "nvcr.io/nvidia/pytorch:24.05-py3",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), "rdma/ib": resource.MustParse("1")}},
			}}}},
		// A DaemonSet's pod on every node, and a bare pod.
		{ObjectMeta: metav1.ObjectMeta{Name: "dcgm-exporter-abcde", Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "dcgm-exporter", UID: "3b4e28ba-2fa1-11d2-883f-0016d3cca427", Controller: &ctrl}}},
			Spec: corev1.PodSpec{NodeName: "gpu-a-001", Containers: []corev1.Container{{Name: "exporter", Image: "nvcr.io/nvidia/k8s/dcgm-exporter:4.1.1"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "debug", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "gpu-a-002", Containers: []corev1.Container{{Name: "sh", Image: "busybox"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "cpu-x-001", Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}}},
		// Not scheduled yet.
		{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sh", Image: "busybox"}}}},
	} {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadJoinsPodsToNodes(t *testing.T) {
	env := apiserver.Get(t)
	seed(t, env)
	ctx := context.Background()
	// Pages of 2 objects: three node pages and three pod pages.
	c, err := cluster.Read(ctx, env.Config, cluster.Options{PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range c.Nodes {
		var pods []string
		for _, o := range n.Pods {
			pods = append(pods, o.File)
		}
		got = append(got, n.Host+": "+strings.Join(pods, " "))
	}
	want := []string{
		"cpu-x-001: kube:pod/default/web",
		"gpu-a-001: kube:pod/default/dcgm-exporter-abcde kube:pod/research/train-0",
		"gpu-a-002: kube:pod/default/debug kube:pod/research/llama-worker-0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes and their pods (-want +got):\n%s", diff)
	}
	if c.Pods != 6 || c.Unscheduled != 1 || c.Elsewhere != 0 {
		t.Errorf("pods %d, unscheduled %d, elsewhere %d; want 6, 1, 0", c.Pods, c.Unscheduled, c.Elsewhere)
	}
	n := c.Lookup("gpu-a-001")
	wantInfo := snapshot.KubeNode{
		Name: "gpu-a-001",
		// The API server's TaintNodesByCondition admission adds not-ready to
		// a new node until a kubelet reports it ready.
		Taints:      []snapshot.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: "NoSchedule"}, {Key: "node.kubernetes.io/not-ready", Effect: "NoSchedule"}},
		Allocatable: map[string]string{"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "cpu": "192", "memory": "2003424Ki"},
		Capacity:    map[string]string{"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "cpu": "192", "memory": "2003424Ki"},
	}
	if diff := cmp.Diff(wantInfo, n.Info); diff != "" {
		t.Errorf("node (-want +got):\n%s", diff)
	}
	if n.Labels["node.kubernetes.io/instance-type"] != "p5.48xlarge" {
		t.Errorf("labels: %v", n.Labels)
	}
}

func TestPodsAsThePodRulesReadThem(t *testing.T) {
	env := apiserver.Get(t)
	seed(t, env)
	c, err := cluster.Read(context.Background(), env.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var train map[string]any
	for _, o := range c.Lookup("gpu-a-001").Pods {
		if o.Name == "train-0" {
			train = o.Pod
		}
	}
	if train == nil {
		t.Fatal("train-0 not on gpu-a-001")
	}
	if train["kind"] != "Pod" || train["apiVersion"] != "v1" {
		t.Errorf("kind %v, apiVersion %v; want Pod, v1 (as kubectl get -o json)", train["kind"], train["apiVersion"])
	}
	meta := train["metadata"].(map[string]any)
	if _, ok := meta["managedFields"]; ok {
		t.Error("managedFields kept")
	}
	if ann := meta["annotations"].(map[string]any); ann["kubectl.kubernetes.io/last-applied-configuration"] != nil || ann["team"] != "nlp" {
		t.Errorf("annotations %v: want team kept, last-applied dropped", ann)
	}
	c0 := train["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	env0 := fmt.Sprint(c0["env"])
	if strings.Contains(env0, "hunter2") || !strings.Contains(env0, "INFO") {
		t.Errorf("env %s: want the secret redacted and NCCL_DEBUG kept", env0)
	}
	// The GPU count is a json.Number, as a snapshot file reads it.
	gpus := c0["resources"].(map[string]any)["limits"].(map[string]any)["nvidia.com/gpu"]
	if gpus != "8" {
		t.Errorf("nvidia.com/gpu = %#v, want the quantity \"8\"", gpus)
	}
}

func TestReadSelectorAndHostLabel(t *testing.T) {
	env := apiserver.Get(t)
	seed(t, env)
	c, err := cluster.Read(context.Background(), env.Config, cluster.Options{NodeSelector: "nvidia.com/gpu.present=true", HostLabel: "fleetaudit.io/host"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 2 || c.Lookup("a1") == nil || c.Lookup("a1").Name != "gpu-a-001" || c.Lookup("gpu-a-001") != nil {
		t.Fatalf("nodes %v: want a1 (gpu-a-001) and a2 joined by label", c.Nodes)
	}
	if c.Elsewhere != 1 {
		t.Errorf("elsewhere = %d, want 1 (the pod on cpu-x-001, which the selector leaves out)", c.Elsewhere)
	}
	// A label two nodes share cannot name one host each.
	if _, err := cluster.Read(context.Background(), env.Config, cluster.Options{HostLabel: "nvidia.com/gpu.present", NodeSelector: "nvidia.com/gpu.present"}); err == nil || !strings.Contains(err.Error(), "both name host true") {
		t.Errorf("duplicate host label: err = %v", err)
	}
	if _, err := cluster.Read(context.Background(), env.Config, cluster.Options{HostLabel: "nvidia.com/gpu.present"}); err == nil || !strings.Contains(err.Error(), "has no label") {
		t.Errorf("missing host label: err = %v", err)
	}
}

func TestSnapshotWithoutHostFacts(t *testing.T) {
	env := apiserver.Get(t)
	seed(t, env)
	c, err := cluster.Read(context.Background(), env.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	doc, err := c.Lookup("gpu-a-001").Snapshot(now, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"boot", "sysctl", "nvidia", "rdma", "limits"} {
		if _, ok := doc[s]; ok {
			t.Errorf("host section %s present in a node-only snapshot", s)
		}
	}
	src := doc["sources"].(map[string]any)
	if src["labels"] != "kube:node/gpu-a-001" || src["node"] != "kube:node/gpu-a-001" || src["pods.1"] != "kube:pod/research/train-0" {
		t.Errorf("sources %v", src)
	}
	if doc["source"].(map[string]any)["kind"] != "kube" {
		t.Errorf("source %v", doc["source"])
	}
	// Written to a file and read back, it is the same document.
	file := filepath.Join(t.TempDir(), "gpu-a-001.json")
	data, err := jsonIndent(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := snapshot.ReadDocument(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(doc, back); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}

func TestAttachReplacesManifestPods(t *testing.T) {
	env := apiserver.Get(t)
	seed(t, env)
	c, err := cluster.Read(context.Background(), env.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"host":   "gpu-a-002",
		"labels": map[string]any{"rack": "r1", "nvidia.com/gpu.present": "false"},
		"pods":   []any{map[string]any{"kind": "Pod"}, map[string]any{"kind": "Pod"}, map[string]any{"kind": "Pod"}},
		"sources": map[string]any{"pods.0": "a.yaml:1", "pods.1": "a.yaml:9", "pods.2": "a.yaml:20",
			"boot.running.params": "/proc/cmdline"},
	}
	replaced, err := c.Lookup("gpu-a-002").Attach(doc)
	if err != nil {
		t.Fatal(err)
	}
	if replaced != 3 || len(doc["pods"].([]any)) != 2 {
		t.Errorf("replaced %d, pods %d; want 3 replaced by 2", replaced, len(doc["pods"].([]any)))
	}
	want := map[string]any{
		"pods.0": "kube:pod/default/debug", "pods.1": "kube:pod/research/llama-worker-0",
		"labels": "kube:node/gpu-a-002", "node": "kube:node/gpu-a-002", "boot.running.params": "/proc/cmdline",
	}
	if diff := cmp.Diff(want, doc["sources"]); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	labels := doc["labels"].(map[string]any)
	if labels["rack"] != "r1" || labels["nvidia.com/gpu.present"] != "true" {
		t.Errorf("labels %v: want the snapshot's kept and the node's over them", labels)
	}
}

func TestConfigFromKubeconfig(t *testing.T) {
	env := apiserver.Get(t)
	// $KUBECONFIG, read through the injected environment, and a context.
	getenv := func(k string) string {
		if k == "KUBECONFIG" {
			return filepath.Join(t.TempDir(), "missing") + string(filepath.ListSeparator) + env.Kubeconfig
		}
		return ""
	}
	cfg, where, err := cluster.Config(cluster.Options{Getenv: getenv, Context: "fleetaudit-test"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != env.Server || !strings.Contains(where, "context fleetaudit-test") {
		t.Errorf("host %s (%s), want %s", cfg.Host, where, env.Server)
	}
	if _, _, err := cluster.Config(cluster.Options{Kubeconfig: env.Kubeconfig, Context: "nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown context: err = %v", err)
	}
	if _, _, err := cluster.Config(cluster.Options{Kubeconfig: filepath.Join(t.TempDir(), "none")}); err == nil {
		t.Error("missing --kubeconfig file: no error")
	}
}

func TestReadUnreachable(t *testing.T) {
	env := apiserver.Get(t)
	cfg := *env.Config
	cfg.BearerToken = "wrong"
	_, err := cluster.Read(context.Background(), &cfg, cluster.Options{})
	if err == nil || !strings.Contains(err.Error(), "listing nodes on "+env.Server) || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("err = %v, want the node list refused, naming the server", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cluster.Read(ctx, env.Config, cluster.Options{}); err == nil {
		t.Error("cancelled context: no error")
	}
}

func jsonIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }
