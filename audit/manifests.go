package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/kube"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Workload manifests audited without a host (audit --manifests): each path
// is one host-less snapshot of its pods and pod templates, in the fleet the
// caller names, so the pod rules judge a team's job specs in CI before any
// node runs them. Host rules skip it: no host facts were collected.

// manifestInputs are the inputs of opts.Manifests, one per path, named by
// the path.
// Each file that cannot be read or parsed is added to unreadable.
func manifestInputs(opts Options, now func() time.Time, unreadable *manifestErrors) iter.Seq[fleetrun.HostInput] {
	return func(yield func(fleetrun.HostInput) bool) {
		for _, path := range opts.Manifests {
			in := fleetrun.HostInput{
				Origin: path,
				Name:   path,
				Load: func(ctx context.Context) (map[string]any, error) {
					doc, errs, err := manifestDocument(ctx, path, now(), opts.Version)
					for _, e := range errs {
						unreadable.add(HostError{Host: path, Fleet: opts.ManifestFleet, Source: e.Path, Error: e.Reason})
					}
					return doc, err
				},
			}
			if !yield(in) {
				return
			}
		}
	}
}

// manifestHosts names the fleet of each manifest path's host.
func manifestHosts(opts Options) []inventory.Host {
	var hosts []inventory.Host
	for _, path := range opts.Manifests {
		hosts = append(hosts, inventory.Host{Name: path, Fleet: opts.ManifestFleet})
	}
	return hosts
}

// manifestDocument reads the pods of path (a file or directory) into a
// host-less snapshot document; files that cannot be read or parsed are its
// collection errors, as collect --pods records them, and are returned.
func manifestDocument(ctx context.Context, path string, now time.Time, version string) (map[string]any, []snapshot.CollectionError, error) {
	s := snapshot.New(path)
	s.CollectedAt = now.UTC()
	s.Source = snapshot.Origin{Kind: "manifests", Root: path, Collector: version}
	objs, errs := collectors.ManifestFiles(path).ReadPods(ctx)
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for _, o := range objs {
		s.Sources[fmt.Sprintf("pods.%d", len(s.Pods))] = snapshot.FileAt(o.File, o.Line)
		s.Pods = append(s.Pods, o.Pod)
	}
	for _, err := range errs {
		e := snapshot.CollectionError{Collector: "pods", Path: path, Reason: err.Error()}
		var me *kube.ManifestError
		if errors.As(err, &me) {
			e.Path, e.Reason = me.File, me.Err.Error()
			if me.Line > 0 {
				e.Reason = fmt.Sprintf("line %d: %s", me.Line, e.Reason)
			}
		}
		s.Errors = append(s.Errors, e)
	}
	unread := slices.Clone(s.Errors)
	s.Normalize()
	doc, err := snapshot.Document(s)
	if err != nil {
		return nil, unread, err
	}
	snapshot.WithoutHostFacts(doc)
	return doc, unread, nil
}

// manifestErrors collects the manifest files a run could not read, from
// the engine's workers.
type manifestErrors struct {
	mu   sync.Mutex
	errs []HostError
}

func (m *manifestErrors) add(e HostError) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs = append(m.errs, e)
}

// sorted are the errors by manifest path and file, nil for none.
func (m *manifestErrors) sorted() []HostError {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.errs)
	slices.SortStableFunc(out, func(a, b HostError) int {
		return cmp.Or(strings.Compare(a.Host, b.Host), strings.Compare(a.Source, b.Source))
	})
	return slices.Compact(out)
}
