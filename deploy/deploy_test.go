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
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
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
		case "ClusterRole":
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			if len(rules) != 1 {
				t.Fatalf("rules %v", rules)
			}
			r := rules[0].(map[string]any)
			res, _, _ := unstructured.NestedStringSlice(r, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(r, "verbs")
			if !slices.Equal(res, []string{"nodes", "pods"}) || !slices.Equal(verbs, []string{"get", "list"}) {
				t.Errorf("auditor role: %v on %v, want get, list on nodes, pods", verbs, res)
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
