package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates the CustomResourceDefinitions of YAML files (one
// that exists already is left as it is) and waits until each is
// established and its resources can be listed.
func InstallCRDs(ctx context.Context, cfg *rest.Config, files ...string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var o unstructured.Unstructured
			if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if len(o.Object) == 0 {
				continue
			}
			if o.GetKind() != "CustomResourceDefinition" {
				return fmt.Errorf("%s: %s %s is no CustomResourceDefinition", f, o.GetKind(), o.GetName())
			}
			if _, err := dyn.Resource(crdGVR).Create(ctx, &o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%s: creating %s: %w", f, o.GetName(), err)
			}
			if err := waitServed(ctx, dyn, &o); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	return nil
}

// waitServed waits, for at most a minute, until the CRD is established and
// a list of its first version's resource succeeds.
func waitServed(ctx context.Context, dyn dynamic.Interface, crd *unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) == 0 {
		return fmt.Errorf("%s has no version", crd.GetName())
	}
	version, _ := versions[0].(map[string]any)["name"].(string)
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
	var err error
	for {
		var got *unstructured.Unstructured
		if got, err = dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{}); err == nil {
			err = fmt.Errorf("%s not established", crd.GetName())
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				if c, _ := c.(map[string]any); c["type"] == "Established" && c["status"] == "True" {
					_, err = dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
				}
			}
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", crd.GetName(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
