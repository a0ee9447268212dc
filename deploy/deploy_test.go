// Package deploy holds the Kubernetes manifests that run fleetaudit in a
// cluster; its test applies them to a real kube-apiserver.
package deploy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/fleetaudit/fleetaudit/internal/kubetest"
	"github.com/fleetaudit/fleetaudit/kube/cluster"
	"github.com/fleetaudit/fleetaudit/kube/openreports"
	"github.com/fleetaudit/fleetaudit/reports"
)

var apiserver kubetest.Server

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m)) }

// objects reads every Kubernetes object of the manifests kustomization.yaml
// lists, in its order.
func objects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*.yaml")
	listed := append([]string{"kustomization.yaml"}, k.Resources...)
	slices.Sort(listed)
	if !slices.Equal(files, listed) {
		t.Fatalf("kustomization.yaml lists %v; the directory has %v", k.Resources, files)
	}
	var objs []*unstructured.Unstructured
	for _, f := range k.Resources {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var o unstructured.Unstructured
			if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(o.Object) > 0 {
				objs = append(objs, &o)
			}
		}
	}
	return objs
}

// The manifests pass server-side dry-run: the API server's validation,
// defaulting and admission accept every object as written.
func TestManifestsPassServerSideDryRun(t *testing.T) {
	env := apiserver.Get(t)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	objs := objects(t)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
	}
	for _, want := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "PersistentVolumeClaim", "DaemonSet", "CronJob"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("no %s among %v", want, kinds)
		}
	}
	apply := func(o *unstructured.Unstructured, dryRun bool) error {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		var r dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			r = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		opts := metav1.CreateOptions{FieldValidation: "Strict"}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err = r.Create(ctx, o, opts)
		return err
	}
	// The namespace is created for real (objects in a namespace that does
	// not exist are refused even in a dry run), after its own dry run.
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			continue
		}
		if err := apply(o, true); err != nil {
			t.Fatalf("dry-run Namespace %s: %v", o.GetName(), err)
		}
		if err := apply(o, false); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			continue
		}
		if err := apply(o, true); err != nil {
			t.Errorf("dry-run %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// The auditor's role is enough to read the cluster, and no more: with its
// service account's identity the source lists nodes and pods, and secrets
// and writes are forbidden.
func TestAuditorRoleIsGetListNodesAndPods(t *testing.T) {
	env := apiserver.Get(t)
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	createRBAC(t, env)
	// The RBAC authorizer learns of the new binding through its informers:
	// wait until it allows what the role grants.
	waitAllowed(t, admin, "system:serviceaccount:fleetaudit:fleetaudit-auditor")
	auditor := rest.CopyConfig(env.Config)
	auditor.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:fleetaudit:fleetaudit-auditor"}
	if _, err := cluster.Read(ctx, auditor, cluster.Options{PageSize: 1}); err != nil {
		t.Errorf("the auditor cannot read the cluster: %v", err)
	}
	cs, err := kubernetes.NewForConfig(auditor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("auditor lists secrets: err = %v, want forbidden", err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "x", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("auditor deletes pods: err = %v, want forbidden", err)
	}
	if _, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("auditor watches nodes: err = %v, want forbidden", err)
	}
	// The collector's account has no role at all.
	collector := rest.CopyConfig(env.Config)
	collector.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:fleetaudit:fleetaudit-collector"}
	if _, err := cluster.Read(ctx, collector, cluster.Options{}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("the collector reads the cluster: err = %v, want forbidden", err)
	}
}

// createRBAC creates the manifests' namespace, service accounts, roles
// and bindings (those that exist already are left).
func createRBAC(t *testing.T, env *kubetest.Env) {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, o := range objects(t) {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		var r dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			r = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := r.Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// What the manifests promise about privilege, checked on the objects: the
// host's root read-only, no capabilities, no API token for the collector.
func TestLeastPrivilege(t *testing.T) {
	for _, o := range objects(t) {
		switch o.GetKind() {
		case "DaemonSet":
			spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			if spec["automountServiceAccountToken"] != false {
				t.Error("the collector mounts an API token")
			}
			c := spec["containers"].([]any)[0].(map[string]any)
			sc := c["securityContext"].(map[string]any)
			if sc["privileged"] != false || sc["allowPrivilegeEscalation"] != false || sc["readOnlyRootFilesystem"] != true {
				t.Errorf("collector securityContext %v", sc)
			}
			if drop, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "drop"); !slices.Equal(drop, []string{"ALL"}) {
				t.Errorf("collector drops %v, want ALL", drop)
			}
			for _, m := range c["volumeMounts"].([]any) {
				m := m.(map[string]any)
				if m["name"] == "host" && (m["readOnly"] != true || m["recursiveReadOnly"] != "IfPossible") {
					t.Errorf("host root mounted %v, want read-only, recursively", m)
				}
			}
		case "ClusterRole", "Role":
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			if len(rules) != 1 {
				t.Fatalf("rules %v", rules)
			}
			r := rules[0].(map[string]any)
			groups, _, _ := unstructured.NestedStringSlice(r, "apiGroups")
			res, _, _ := unstructured.NestedStringSlice(r, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(r, "verbs")
			want := map[string][3][]string{ // groups, resources, verbs
				"ClusterRole/fleetaudit-auditor":        {{""}, {"nodes", "pods"}, {"get", "list"}},
				"Role/fleetaudit-reports":               {{"openreports.io"}, {"reports"}, {"get", "list", "patch", "create", "delete"}},
				"ClusterRole/fleetaudit-clusterreports": {{"openreports.io"}, {"clusterreports"}, {"get", "list", "patch", "create", "delete"}},
			}[o.GetKind()+"/"+o.GetName()]
			if !slices.Equal(groups, want[0]) || !slices.Equal(res, want[1]) || !slices.Equal(verbs, want[2]) {
				t.Errorf("%s %s: %v on %v %v, want %v on %v %v", o.GetKind(), o.GetName(), verbs, groups, res, want[2], want[0], want[1])
			}
			if o.GetKind() == "Role" && o.GetNamespace() != "fleetaudit" {
				t.Errorf("role %s in namespace %q", o.GetName(), o.GetNamespace())
			}
		}
	}
}

// waitAllowed polls a SubjectAccessReview until user may list nodes, for at
// most a minute (the authorizer's informers usually take milliseconds).
func waitAllowed(t *testing.T, admin kubernetes.Interface, user string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"},
		}}, metav1.CreateOptions{})
		if err == nil && r.Status.Allowed {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s is never allowed to list nodes: %v", user, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// The auditor's account publishes the OpenReports (apply, and delete a
// report of a host gone) with the roles of rbac.yaml, and no more: no
// update or watch, no reports outside its namespace, no CRDs.
func TestAuditorPublishesOpenReports(t *testing.T) {
	env := apiserver.Get(t)
	ctx := context.Background()
	if err := kubetest.InstallCRDs(ctx, env.Config, "../testdata/openreports/openreports.io_reports.yaml", "../testdata/openreports/openreports.io_clusterreports.yaml"); err != nil {
		t.Fatal(err)
	}
	createRBAC(t, env)
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	const user = "system:serviceaccount:fleetaudit:fleetaudit-auditor"
	waitAllowed(t, admin, user)
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Verb: "patch", Group: "openreports.io", Resource: "reports", Namespace: "fleetaudit"},
		{Verb: "patch", Group: "openreports.io", Resource: "clusterreports"},
	} {
		waitAccess(t, admin, user, ra, true)
	}
	auditor := rest.CopyConfig(env.Config)
	auditor.Impersonate = rest.ImpersonationConfig{UserName: user}
	rep := func(kind, name string) reports.OpenReport {
		r := reports.OpenReport{APIVersion: "openreports.io/v1alpha1", Kind: kind, Source: "fleetaudit",
			Metadata: reports.OpenReportMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "fleetaudit"}},
			Results:  []reports.OpenReportResult{{Policy: "hugetlb-cma-on-gpu", Result: "fail", Severity: "critical", Source: "fleetaudit", Scored: true}}}
		if kind == "Report" {
			r.Metadata.Namespace = "fleetaudit"
		}
		return r
	}
	opts := openreports.Options{Namespace: "fleetaudit", Prune: true}
	first := []reports.OpenReport{rep("Report", "fleetaudit-node-a"), rep("Report", "fleetaudit-node-b"), rep("ClusterReport", "fleetaudit-host-c"), rep("ClusterReport", "fleetaudit-host-d")}
	if _, err := openreports.Publish(ctx, auditor, first, opts); err != nil {
		t.Fatalf("the auditor cannot publish: %v", err)
	}
	out, err := openreports.Publish(ctx, auditor, first[:1], opts)
	if err != nil {
		t.Fatalf("the auditor cannot replace its reports: %v", err)
	}
	if len(out.Deleted) != 3 {
		t.Errorf("deleted %v, want node-b, host-c and host-d's", out.Deleted)
	}
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Group: "openreports.io", Resource: "reports", Namespace: "default"},
		{Verb: "update", Group: "openreports.io", Resource: "reports", Namespace: "fleetaudit"},
		{Verb: "watch", Group: "openreports.io", Resource: "clusterreports"},
		{Verb: "deletecollection", Group: "openreports.io", Resource: "clusterreports"},
		{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Verb: "create", Group: "wgpolicyk8s.io", Resource: "policyreports", Namespace: "fleetaudit"},
	} {
		waitAccess(t, admin, user, ra, false)
	}
	other := rep("Report", "fleetaudit-node-a")
	other.Metadata.Namespace = "default"
	if _, err := openreports.Publish(ctx, auditor, []reports.OpenReport{other}, openreports.Options{Namespace: "default"}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("the auditor publishes to namespace default: %v", err)
	}
}

// waitAccess checks what a SubjectAccessReview says of user and ra,
// polling for at most a minute for an allowed one (the authorizer learns
// of new bindings through its informers).
func waitAccess(t *testing.T, admin kubernetes.Interface, user string, ra authorizationv1.ResourceAttributes, allowed bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, ResourceAttributes: &ra,
		}}, metav1.CreateOptions{})
		if err == nil && (r.Status.Allowed == allowed || !allowed) {
			if r.Status.Allowed != allowed {
				t.Errorf("%s may %s %s.%s in %q: %v, want %v", user, ra.Verb, ra.Resource, ra.Group, ra.Namespace, r.Status.Allowed, allowed)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s is never allowed to %s %s.%s: %v", user, ra.Verb, ra.Resource, ra.Group, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
