// Package openreports publishes an audit's OpenReports (reports.OpenReports)
// to a cluster: each report by server-side apply with field manager
// fleetaudit, so a report replaces the one of the run before (a result
// that no longer fails is gone with it), and fleetaudit's reports that
// the run did not write (nodes and hosts gone) deleted, or listed when the
// run saw only part of the fleet.
package openreports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/fleetaudit/fleetaudit/reports"
)

// FieldManager is the server-side apply field manager of every report.
const FieldManager = "fleetaudit"

// CRDsURL is where the OpenReports CRDs are published, for the message of
// a cluster that lacks them.
const CRDsURL = "https://github.com/openreports/reports-api/tree/main/config/crd"

var (
	reportsGVR        = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "reports"}
	clusterReportsGVR = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "clusterreports"}
	managedBy         = "app.kubernetes.io/managed-by=" + reports.OpenReportsManagedBy
)

// Options say where the reports go and what becomes of the old ones.
type Options struct {
	// Namespace is the one the Reports are in (reports.OpenReportsOptions'):
	// fleetaudit's Reports elsewhere are not touched.
	Namespace string
	// Prune deletes fleetaudit's reports the run did not write; false
	// keeps them (Outcome.Stale lists them), for a run that saw part of
	// the fleet (a shard, a node selector).
	Prune bool
	// Parallel is how many requests are in flight (default 8).
	Parallel int
}

// Outcome is what a publish did.
type Outcome struct {
	// Applied counts the reports written.
	Applied int
	// Deleted and Stale are fleetaudit's reports the run did not write,
	// deleted (Prune) or kept, as KIND/NAME or KIND/NAMESPACE/NAME.
	Deleted, Stale []string
}

// Publish applies reps and removes (or lists) fleetaudit's other reports.
// Nothing is deleted when a report could not be applied.
func Publish(ctx context.Context, cfg *rest.Config, reps []reports.OpenReport, opts Options) (Outcome, error) {
	var out Outcome
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{}
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 100, 200
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return out, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	resource := func(kind, namespace string) (dynamic.ResourceInterface, error) {
		switch kind {
		case "Report":
			if namespace != opts.Namespace {
				return nil, fmt.Errorf("report in namespace %q, publishing to %q", namespace, opts.Namespace)
			}
			return dyn.Resource(reportsGVR).Namespace(namespace), nil
		case "ClusterReport":
			return dyn.Resource(clusterReportsGVR), nil
		}
		return nil, fmt.Errorf("%s is no OpenReports kind", kind)
	}

	written := map[string]bool{}
	for _, r := range reps {
		written[objectKey(r.Kind, r.Metadata.Namespace, r.Metadata.Name)] = true
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	work := make(chan reports.OpenReport)
	for range max(1, cmpOr(opts.Parallel, 8)) {
		wg.Go(func() {
			for r := range work {
				err := apply(ctx, resource, r)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					out.Applied++
				}
				mu.Unlock()
			}
		})
	}
	for _, r := range reps {
		if ctx.Err() != nil {
			break
		}
		work <- r
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return out, err
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("publishing to %s: %d of %d reports not applied, none deleted: %w", cfg.Host, len(errs), len(reps), errors.Join(errs[:min(len(errs), 5)]...))
	}

	for _, kind := range []string{"Report", "ClusterReport"} {
		ri, _ := resource(kind, opts.Namespace)
		stale, err := list(ctx, ri, managedBy)
		if err != nil {
			return out, fmt.Errorf("listing fleetaudit's %ss on %s: %w", kind, cfg.Host, hint(err))
		}
		for _, o := range stale {
			key := objectKey(kind, o.namespace, o.name)
			if written[key] {
				continue
			}
			if !opts.Prune {
				out.Stale = append(out.Stale, key)
				continue
			}
			err := ri.Delete(ctx, o.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &o.uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				return out, fmt.Errorf("deleting %s on %s: %w", key, cfg.Host, err)
			}
			out.Deleted = append(out.Deleted, key)
		}
	}
	slices.Sort(out.Deleted)
	slices.Sort(out.Stale)
	return out, nil
}

func apply(ctx context.Context, resource func(kind, namespace string) (dynamic.ResourceInterface, error), r reports.OpenReport) error {
	key := objectKey(r.Kind, r.Metadata.Namespace, r.Metadata.Name)
	ri, err := resource(r.Kind, r.Metadata.Namespace)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	force := true
	_, err = ri.Patch(ctx, r.Metadata.Name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return fmt.Errorf("applying %s: %w", key, hint(err))
	}
	return nil
}

// hint adds to a resource the server does not know that the CRDs are
// missing.
func hint(err error) error {
	var status apierrors.APIStatus
	// An apply creates what is missing: not found is the resource type,
	// or the namespace.
	if apierrors.IsNotFound(err) && errors.As(err, &status) && (status.Status().Details == nil || status.Status().Details.Kind != "namespaces") {
		return fmt.Errorf("%w (are the OpenReports CRDs installed? see %s)", err, CRDsURL)
	}
	return err
}

type listed struct {
	namespace, name string
	uid             types.UID
}

// list reads the objects a selector picks, in pages.
func list(ctx context.Context, ri dynamic.ResourceInterface, selector string) ([]listed, error) {
	var out []listed
	cont := ""
	for {
		l, err := ri.List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 500, Continue: cont})
		if err != nil {
			return nil, err
		}
		for _, o := range l.Items {
			out = append(out, listed{o.GetNamespace(), o.GetName(), o.GetUID()})
		}
		if cont = l.GetContinue(); cont == "" {
			return out, nil
		}
	}
}

func objectKey(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

func cmpOr(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}
