package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetaudit/fleetaudit/internal/kubetest"
	"github.com/fleetaudit/fleetaudit/reports"
)

var (
	reportsGVR        = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "reports"}
	clusterReportsGVR = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "clusterreports"}
)

func resultsOf(rep reports.OpenReport) map[string]string {
	out := map[string]string{}
	for _, r := range rep.Results {
		out[r.Policy] = r.Result
	}
	return out
}

// audit --kube --publish-reports on the seeded cluster: the nodes' Reports
// are in the cluster, as --format openreports printed them, with the pod
// findings failing and, on the node no host snapshot describes, the host
// rules skipped; last night's report of a host gone is deleted, unless
// the run saw part of the cluster.
func TestAuditKubePublishesOpenReports(t *testing.T) {
	env := apiserver.Get(t)
	seedCluster(t, env)
	ctx := context.Background()
	if err := kubetest.InstallCRDs(ctx, env.Config, "../../testdata/openreports/openreports.io_reports.yaml", "../../testdata/openreports/openreports.io_clusterreports.yaml"); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "audit-reports"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Last night's report of a host that is gone.
	old := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "openreports.io/v1alpha1", "kind": "ClusterReport",
		"metadata": map[string]any{"name": "fleetaudit-host-retired", "labels": map[string]any{"app.kubernetes.io/managed-by": "fleetaudit"}},
		"source":   "fleetaudit",
	}}
	create := func() {
		if _, err := dyn.Resource(clusterReportsGVR).Create(ctx, old, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	create()

	// A partial run keeps it, and says so.
	r := runCLI(t, nil, "audit", "--kubeconfig", env.Kubeconfig, "--context", "fleetaudit-test", "--kube-node-selector", "fleetaudit.io/fleet=gpu-training",
		"--publish-reports", "--reports-namespace", "audit-reports", "--format", "json", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("partial run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := dyn.Resource(clusterReportsGVR).Get(ctx, "fleetaudit-host-retired", metav1.GetOptions{}); err != nil {
		t.Errorf("a partial run deleted a report it did not write: %v", err)
	}
	if !strings.Contains(r.stderr, "partial run") || !strings.Contains(r.stderr, "ClusterReport/fleetaudit-host-retired") {
		t.Errorf("stderr does not name the report kept:\n%s", r.stderr)
	}

	r = runCLI(t, nil, "audit", "--kubeconfig", env.Kubeconfig, "--context", "fleetaudit-test", "--root", gpuRoot, "--no-exec",
		"--publish-reports", "--reports-namespace", "audit-reports", "--format", "openreports", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var printed struct{ Items []reports.OpenReport }
	if err := json.Unmarshal([]byte(r.stdout), &printed); err != nil {
		t.Fatal(err)
	}
	if len(printed.Items) != 2 {
		t.Fatalf("%d reports printed, want the two nodes'", len(printed.Items))
	}
	for _, want := range printed.Items {
		if want.Kind != "Report" || want.Metadata.Namespace != "audit-reports" || want.Scope == nil || want.Scope.Kind != "Node" {
			t.Errorf("%s: %s in %q, scope %+v; want a Report of a node in audit-reports", want.Metadata.Name, want.Kind, want.Metadata.Namespace, want.Scope)
			continue
		}
		obj, err := dyn.Resource(reportsGVR).Namespace("audit-reports").Get(ctx, want.Metadata.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("reading back %s: %v", want.Metadata.Name, err)
			continue
		}
		if m := obj.GetManagedFields(); len(m) != 1 || m[0].Manager != "fleetaudit" || m[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("%s managed by %+v, want fleetaudit's apply", want.Metadata.Name, m)
		}
		data, _ := json.Marshal(obj.Object)
		var got reports.OpenReport
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if w, g := resultsOf(want), resultsOf(got); len(g) != len(w) || got.Summary != want.Summary {
			t.Errorf("%s in the cluster: %d results %+v; printed %d %+v", want.Metadata.Name, len(g), got.Summary, len(w), want.Summary)
		}
	}
	byNode := map[string]map[string]string{}
	for _, rep := range printed.Items {
		byNode[rep.Scope.Name] = resultsOf(rep)
	}
	for node, want := range map[string]map[string]string{
		"gpu-a-001": {"pod-shm-missing": "fail", "efa-device-count-mismatch": "fail"},
		"gpu-b-002": {"pod-rdma-without-ipc-lock": "fail", "pod-shm-missing": "pass", "hugetlb-cma-on-gpu": "skip"},
	} {
		for rule, res := range want {
			if got := byNode[node][rule]; got != res {
				t.Errorf("%s %s: %q, want %s", node, rule, got, res)
			}
		}
	}
	if _, err := dyn.Resource(clusterReportsGVR).Get(ctx, "fleetaudit-host-retired", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("last night's report of a host gone: %v, want deleted", err)
	}
	if !strings.Contains(r.stderr, `msg="published the OpenReports"`) || !strings.Contains(r.stderr, "applied=2 deleted=1") {
		t.Errorf("stderr lacks the publish line:\n%s", r.stderr)
	}
}

func TestAuditOpenReportsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--root", gpuRoot, "--publish-reports"}, "--publish-reports writes to a cluster: add --kube"},
		{[]string{"--root", gpuRoot, "--format", "openreports", "--reports-namespace", "Not_A_Namespace"}, "--reports-namespace"},
	} {
		r := runCLI(t, nil, append([]string{"audit"}, tc.args...)...)
		if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("audit %v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
