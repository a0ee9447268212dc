package openreports

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/internal/kubetest"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/reports"
)

var apiserver kubetest.Server

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m)) }

// The vendored CRDs (see testdata/openreports/README.md).
var crdFiles = []string{"../../testdata/openreports/openreports.io_reports.yaml", "../../testdata/openreports/openreports.io_clusterreports.yaml"}

const ns = "fleetaudit"

// night is one audit: hosts failing rule r-crit, the others passing it;
// node-* hosts are Kubernetes nodes.
func night(t *testing.T, at time.Time, hosts []string, failing ...string) []reports.OpenReport {
	t.Helper()
	res := &audit.Result{}
	for _, h := range hosts {
		res.Hosts = append(res.Hosts, fleetrun.HostRun{Host: h, Fleet: "gpu"})
	}
	for _, h := range failing {
		res.Findings = append(res.Findings, policies.Finding{Rule: "r-crit", Severity: "critical", Host: h, Fleet: "gpu",
			Message:  "hugetlb_cma=6G",
			Evidence: []policies.Evidence{{Fact: "boot.configured.params.hugetlb_cma", Value: "6G", Source: "/etc/default/grub:3"}}})
	}
	cat := &reports.Catalog{
		Rules:      map[string]policies.Rule{"r-crit": {ID: "r-crit", Title: "CMA on GPU", Severity: "critical"}, "r-low": {ID: "r-low", Title: "low", Severity: "low"}},
		FleetRules: map[string][]string{"gpu": {"r-crit", "r-low"}},
	}
	return reports.OpenReports(res, reports.Options{Catalog: cat, Run: reports.RunInfo{At: at},
		OpenReports: reports.OpenReportsOptions{Namespace: ns, Node: func(h string) string {
			if strings.HasPrefix(h, "node-") {
				return h
			}
			return ""
		}}})
}

// readBack gets a published report as the API server stores it.
func readBack(t *testing.T, dyn dynamic.Interface, kind, name string) (*unstructured.Unstructured, reports.OpenReport) {
	t.Helper()
	var ri dynamic.ResourceInterface = dyn.Resource(clusterReportsGVR)
	if kind == "Report" {
		ri = dyn.Resource(reportsGVR).Namespace(ns)
	}
	o, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading back %s %s: %v", kind, name, err)
	}
	data, err := json.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	var rep reports.OpenReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return o, rep
}

func resultOf(rep reports.OpenReport, policy string) string {
	for _, r := range rep.Results {
		if r.Policy == policy {
			return r.Result
		}
	}
	return ""
}

// Three nights against a real API server with the OpenReports CRDs: the
// reports are applied by fleetaudit's field manager and read back as
// written; the next night's replace them (a node that no longer fails has
// no fail result, a node gone loses its report), others' reports are left
// alone, and a partial run lists what it did not write instead of
// deleting it.
func TestPublishReplacesLastNightsReports(t *testing.T) {
	env := apiserver.Get(t)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	day := time.Date(2026, 12, 7, 2, 30, 0, 0, time.UTC)
	opts := Options{Namespace: ns, Prune: true}

	// Without the CRDs, the error says what is missing.
	if _, err := Publish(ctx, env.Config, night(t, day, []string{"node-a"}), opts); err == nil || !strings.Contains(err.Error(), "OpenReports CRDs installed") {
		t.Fatalf("publish without the CRDs: %v", err)
	}
	if err := kubetest.InstallCRDs(ctx, env.Config, crdFiles...); err != nil {
		t.Fatal(err)
	}
	// Another tool's report in the same namespace.
	foreign := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "openreports.io/v1alpha1", "kind": "Report",
		"metadata": map[string]any{"name": "kyverno-pod-x", "namespace": ns, "labels": map[string]any{"app.kubernetes.io/managed-by": "kyverno"}},
		"source":   "kyverno", "results": []any{map[string]any{"policy": "require-labels", "result": "fail"}},
	}}
	if _, err := dyn.Resource(reportsGVR).Namespace(ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	// Night 1: node-a and bare-1 fail r-crit, node-b passes.
	first := night(t, day, []string{"node-a", "node-b", "bare-1"}, "node-a", "bare-1")
	out, err := Publish(ctx, env.Config, first, opts)
	if err != nil {
		t.Fatal(err)
	}
	if out.Applied != 3 || len(out.Deleted) != 0 || len(out.Stale) != 0 {
		t.Errorf("night 1: %+v", out)
	}
	obj, got := readBack(t, dyn, "Report", "fleetaudit-node-node-a")
	// Read back as written: the server pruned nothing and defaulted nothing.
	want := first[0]
	if want.Metadata.Name != "fleetaudit-node-node-a" {
		t.Fatalf("first report %s", want.Metadata.Name)
	}
	got.Metadata.Labels, got.Metadata.Annotations = want.Metadata.Labels, want.Metadata.Annotations
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if string(wantJSON) != string(gotJSON) {
		t.Errorf("node-a's report read back differs:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	if resultOf(got, "r-crit") != "fail" || got.Summary.Fail != 1 || got.Scope == nil || got.Scope.Kind != "Node" || got.Scope.Name != "node-a" {
		t.Errorf("node-a night 1: %+v", got)
	}
	managers := obj.GetManagedFields()
	if len(managers) != 1 || managers[0].Manager != "fleetaudit" || managers[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("node-a's managed fields: %+v, want fleetaudit's apply alone", managers)
	}
	if _, bare := readBack(t, dyn, "ClusterReport", "fleetaudit-host-bare-1"); resultOf(bare, "r-crit") != "fail" {
		t.Errorf("bare-1 night 1: %+v", bare)
	}

	// Night 2: node-a fixed, node-b gone, bare-1 still failing.
	out, err = Publish(ctx, env.Config, night(t, day.AddDate(0, 0, 1), []string{"node-a", "bare-1"}, "bare-1"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if out.Applied != 2 || !slices.Equal(out.Deleted, []string{"Report/fleetaudit/fleetaudit-node-node-b"}) || len(out.Stale) != 0 {
		t.Errorf("night 2: %+v", out)
	}
	_, got = readBack(t, dyn, "Report", "fleetaudit-node-node-a")
	if resultOf(got, "r-crit") != "pass" || got.Summary != (reports.OpenReportSummary{Pass: 2}) || len(got.Results) != 2 {
		t.Errorf("node-a night 2, fixed: %+v", got)
	}
	for _, r := range got.Results {
		if len(r.Properties) > 0 || r.Timestamp == nil || r.Timestamp.Seconds != day.AddDate(0, 0, 1).Unix() {
			t.Errorf("node-a night 2 keeps night 1's %s: %+v", r.Policy, r)
		}
	}
	if _, err := dyn.Resource(reportsGVR).Namespace(ns).Get(ctx, "fleetaudit-node-node-b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node-b's report after node-b is gone: %v", err)
	}
	if _, err := dyn.Resource(reportsGVR).Namespace(ns).Get(ctx, "kyverno-pod-x", metav1.GetOptions{}); err != nil {
		t.Errorf("another tool's report: %v", err)
	}

	// Night 3, a partial run (one shard): bare-1 is not in it and stays.
	out, err = Publish(ctx, env.Config, night(t, day.AddDate(0, 0, 2), []string{"node-a"}), Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if out.Applied != 1 || len(out.Deleted) != 0 || !slices.Equal(out.Stale, []string{"ClusterReport/fleetaudit-host-bare-1"}) {
		t.Errorf("night 3: %+v", out)
	}
	if _, bare := readBack(t, dyn, "ClusterReport", "fleetaudit-host-bare-1"); resultOf(bare, "r-crit") != "fail" {
		t.Errorf("bare-1 after a partial run: %+v", bare)
	}
}

// BenchmarkPublish applies the reports of 1,000 nodes of 55 rules each
// (5 failing) and replaces them, as a nightly run does.
func BenchmarkPublish(b *testing.B) {
	env := apiserver.Get(b)
	ctx := context.Background()
	if err := kubetest.InstallCRDs(ctx, env.Config, crdFiles...); err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	cat := &reports.Catalog{Rules: map[string]policies.Rule{}, FleetRules: map[string][]string{}}
	res := &audit.Result{}
	for i := range 55 {
		id := fmt.Sprintf("rule-%02d", i)
		cat.Rules[id] = policies.Rule{ID: id, Title: "title of " + id, Severity: "high"}
		cat.FleetRules["gpu"] = append(cat.FleetRules["gpu"], id)
	}
	for n := range 1000 {
		host := fmt.Sprintf("node-%04d", n)
		res.Hosts = append(res.Hosts, fleetrun.HostRun{Host: host, Fleet: "gpu"})
		for i := range 5 {
			res.Findings = append(res.Findings, policies.Finding{Rule: fmt.Sprintf("rule-%02d", i*11), Severity: "high", Host: host, Fleet: "gpu",
				Message:  "a value the rule refuses",
				Evidence: []policies.Evidence{{Fact: "sysctl.running.vm.x", Value: "1", Source: "/etc/sysctl.d/99-x.conf:3"}}})
		}
	}
	reps := reports.OpenReports(res, reports.Options{Catalog: cat, Run: reports.RunInfo{At: time.Now()},
		OpenReports: reports.OpenReportsOptions{Namespace: ns, Node: func(h string) string { return h }}})
	for b.Loop() {
		out, err := Publish(ctx, env.Config, reps, Options{Namespace: ns, Prune: true})
		if err != nil || out.Applied != len(reps) {
			b.Fatalf("%+v, %v", out, err)
		}
	}
	b.ReportMetric(float64(len(reps)*b.N)/b.Elapsed().Seconds(), "reports/s")
}
