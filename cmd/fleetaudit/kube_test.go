package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/fleetaudit/fleetaudit/internal/kubetest"
)

// One real etcd + kube-apiserver for this package's tests, started by the
// first test that needs it.
var apiserver kubetest.Server

func TestMain(m *testing.M) {
	code := apiserver.Main(m)
	postgres.Stop()
	os.Exit(code)
}

// seedCluster creates gpu-a-001 (the gpu-node fixture's host) with a pod
// lacking /dev/shm and a device plugin advertising 4 EFA devices the host
// does not have, and gpu-b-002, a node no host snapshot describes, with an
// RDMA pod lacking IPC_LOCK.
func seedCluster(t *testing.T, env *kubetest.Env) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, "gpu-a-001", metav1.GetOptions{}); err == nil {
		return
	}
	for _, n := range []struct {
		name   string
		labels map[string]string
		alloc  corev1.ResourceList
	}{
		{"gpu-a-001", map[string]string{"nvidia.com/gpu.present": "true"},
			corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), "vpc.amazonaws.com/efa": resource.MustParse("4")}},
		{"gpu-b-002", map[string]string{"fleetaudit.io/fleet": "gpu-training", "feature.node.kubernetes.io/rdma.available": "true"},
			corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), "rdma/ib": resource.MustParse("1k")}},
	} {
		node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Allocatable, node.Status.Capacity = n.alloc, n.alloc
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "research"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gpus := func(extra corev1.ResourceList) corev1.ResourceRequirements {
		l := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), "memory": resource.MustParse("512Gi")}
		for k, v := range extra {
			l[k] = v
		}
		return corev1.ResourceRequirements{Limits: l, Requests: l}
	}
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "train-0", Namespace: "research", Labels: map[string]string{"batch.kubernetes.io/job-name": "train"}},
			Spec: corev1.PodSpec{NodeName: "gpu-a-001", Containers: []corev1.Container{{Name: "trainer", Image: "nvcr.io/nvidia/pytorch:24.05-py3", Resources: gpus(nil)}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "llama-worker-0", Namespace: "research"},
			Spec: corev1.PodSpec{NodeName: "gpu-b-002", Containers: []corev1.Container{{Name: "pytorch", Image: "nvcr.io/nvidia/pytorch:24.05-py3",
				Resources:    gpus(corev1.ResourceList{"rdma/ib": resource.MustParse("1")}),
				VolumeMounts: []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}}},
				Volumes: []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("64Gi"))}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sh", Image: "busybox"}}}},
	} {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

type auditJSON struct {
	Findings []struct {
		Rule, Host, Fleet, Message string
		Evidence                   []struct{ Fact, Source string }
	}
	Summary struct {
		Hosts, Audited int
		RulesSkipped   map[string]int `json:"rules_skipped"`
	}
}

// audit --kube with a collected host: the host's snapshot gets its node and
// pods (provenance kube:...), and the node no host describes is audited on
// the cluster's facts alone, its host rules skipped.
func TestAuditKube(t *testing.T) {
	env := apiserver.Get(t)
	seedCluster(t, env)
	r := runCLI(t, nil, "audit", "--kubeconfig", env.Kubeconfig, "--context", "fleetaudit-test",
		"--root", gpuRoot, "--no-exec", "--format", "json", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var res auditJSON
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range res.Findings {
		if !strings.HasPrefix(f.Rule, "pod-") && !strings.HasPrefix(f.Rule, "efa-") && !strings.HasPrefix(f.Rule, "rdma-label") {
			continue // the gpu-node fixture's own host findings
		}
		var srcs []string
		for _, e := range f.Evidence {
			if e.Source != "" {
				srcs = append(srcs, e.Source)
			}
		}
		got = append(got, f.Host+" "+f.Rule+" "+strings.Join(srcs, " "))
	}
	slices.Sort(got)
	want := []string{
		// rdma.devices is a listing: its source is the directory.
		"gpu-a-001 efa-device-count-mismatch kube:node/gpu-a-001 /sys/class/infiniband",
		"gpu-a-001 pod-rdma-resource-missing kube:pod/research/train-0 /sys/class/infiniband", // 8 GPUs on an InfiniBand node, no RDMA resource
		"gpu-a-001 pod-shm-missing kube:pod/research/train-0",
		"gpu-b-002 pod-rdma-without-ipc-lock kube:pod/research/llama-worker-0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range res.Findings {
		if f.Host == "gpu-b-002" && f.Fleet != "gpu-training" {
			t.Errorf("gpu-b-002 in fleet %q, want gpu-training (its node label)", f.Fleet)
		}
	}
	// Two hosts: gpu-a-001 collected and joined, gpu-b-002 from the cluster
	// alone, whose host rules are reported skipped rather than run.
	if res.Summary.Hosts != 2 || res.Summary.Audited != 2 || res.Summary.RulesSkipped["hugetlb-cma-on-gpu"] != 1 || res.Summary.RulesSkipped["rdma-label-without-device"] != 1 {
		t.Errorf("summary %+v", res.Summary)
	}
	if !strings.Contains(r.stderr, "msg=\"read the cluster\"") || !strings.Contains(r.stderr, "nodes=2 pods=3 unscheduled=1") {
		t.Errorf("stderr lacks the cluster line:\n%s", r.stderr)
	}
}

// KUBECONFIG names the cluster for --kube, as for kubectl.
func TestAuditKubeFromKUBECONFIG(t *testing.T) {
	env := apiserver.Get(t)
	seedCluster(t, env)
	r := runCLI(t, map[string]string{"KUBECONFIG": env.Kubeconfig}, "audit", "--kube", "--kube-node-selector", "fleetaudit.io/fleet=gpu-training", "--format", "json", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var res auditJSON
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Summary.Hosts != 1 {
		t.Errorf("hosts %d, want 1 (the selector's node)", res.Summary.Hosts)
	}
}

func TestAuditKubeAndManifestsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--manifests", "../../testdata/manifests/kinds"}, "--manifests needs --fleet"},
		{[]string{"--fleet", "gpu-training"}, "give --manifests"},
		{[]string{"--manifests", "../../testdata/manifests/kinds", "--fleet", "nope"}, `--fleet "nope": no such fleet profile`},
		{[]string{"--manifests", "missing-dir", "--fleet", "gpu-training"}, "--manifests missing-dir"},
		{[]string{"--kube-node-selector", "a=b", "--root", gpuRoot}, "need --kube"},
		{[]string{"--kubeconfig", filepath.Join(t.TempDir(), "none")}, "kubeconfig"},
	} {
		r := runCLI(t, nil, append([]string{"audit"}, tc.args...)...)
		if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("audit %v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// audit --manifests exits 1 on the templated job's findings, 0 on the
// negative controls.
func TestAuditManifests(t *testing.T) {
	r := runCLI(t, nil, "audit", "--manifests", "../../testdata/manifests/templated", "--fleet", "gpu-training", "--format", "json")
	if r.code != exitFindings || !strings.Contains(r.stdout, "GPU count left to the template: nvidia.com/gpu: $GPU_PER_NODE") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "audit", "--manifests", "../../testdata/manifests/negative", "--fleet", "gpu-training")
	if r.code != exitOK {
		t.Errorf("negative controls: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

// The commands deploy/ runs are commands this build accepts.
func TestDeployCommandsParse(t *testing.T) {
	for _, file := range []string{"../../deploy/daemonset.yaml", "../../deploy/cronjob.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var obj struct {
			Spec struct {
				Template    struct{ Spec corev1.PodSpec }
				JobTemplate struct {
					Spec struct{ Template struct{ Spec corev1.PodSpec } }
				}
			}
		}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		spec := obj.Spec.Template.Spec
		if len(spec.Containers) == 0 {
			spec = obj.Spec.JobTemplate.Spec.Template.Spec
		}
		args := spec.Containers[0].Args
		if len(args) == 0 {
			t.Fatalf("%s: no args", file)
		}
		r := runCLI(t, nil, append(slices.Clone(args), "--help")...)
		if r.code != exitOK {
			t.Errorf("%s: fleetaudit %v: exit %d\n%s", file, args, r.code, r.stderr)
		}
	}
}
