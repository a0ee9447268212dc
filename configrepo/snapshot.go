package configrepo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// SourceKind marks snapshots of a rendered config repo: rules that compare
// running with configured state do not apply to them.
const SourceKind = "config-repo"

// liveSections are facts a repo cannot know; they come from the fleet's
// baseline snapshot when it has one, and are empty otherwise.
var liveSections = []string{"kernel", "nvidia", "libraries", "memory", "rdma", "iommu", "pci"}

// hostDoc collects a rendered fleet as one host and returns the document
// the engine evaluates. The repo's sysctls are taken as what a host of the
// fleet would run after applying them, so rules about running values see
// the change. Boot rules read the configured cmdline already.
func hostDoc(ctx context.Context, co *Checkout, m *Manifest, r *Rendered, version string) (map[string]any, error) {
	snap, err := collectors.Collect(ctx, r.Target(co), collectors.Options{Hostname: r.Fleet, Version: version})
	if err != nil {
		return nil, err
	}
	project(snap)
	snap.Labels = maps.Clone(m.Fleets[r.Fleet].Labels)
	for _, refused := range r.Refused {
		p, why, _ := strings.Cut(refused, ": ")
		snap.Errors = append(snap.Errors, snapshot.CollectionError{Collector: "configrepo", Path: p, Reason: "refused: " + why})
	}
	var buf bytes.Buffer
	if err := snapshot.Encode(&buf, snap); err != nil {
		return nil, err
	}
	doc, err := decodeDoc(buf.Bytes())
	if err != nil {
		return nil, err
	}
	if r.Baseline != nil {
		if err := mergeBaseline(doc, r.Baseline, m.Fleets[r.Fleet].Baseline); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

// Target is the rendered fleet as a host to collect: its files, named by
// their layer in provenance and errors, its manifests as pods, and no
// commands (a repo runs nothing).
func (r *Rendered) Target(co *Checkout) collectors.Target {
	t := collectors.Target{
		Origin: snapshot.Origin{Kind: SourceKind, Root: co.Label()},
		Files:  r.Root,
	}
	if r.Manifests != "" {
		t.Pods = collectors.ManifestsIn(co.Files, r.Manifests)
	}
	return t
}

// project sets the running sysctls to the configured ones.
func project(s *snapshot.Snapshot) {
	s.Sysctl.Running = maps.Clone(s.Sysctl.Configured)
	s.Sysctl.Missing = nil
	for k, v := range s.Sources {
		if rest, ok := strings.CutPrefix(k, "sysctl.configured."); ok {
			s.Sources["sysctl.running."+rest] = v
		}
	}
}

// mergeBaseline fills what a repo cannot know from a snapshot of a typical
// host of the fleet: the live sections, the loaded modules, the OS when the
// repo has no os-release, logind's RemoveIPC when the repo leaves it to the
// OS default, and running sysctls the repo does not configure.
func mergeBaseline(doc map[string]any, data []byte, repoPath string) error {
	base, err := decodeDoc(data)
	if err != nil {
		return fmt.Errorf("baseline %s: %w", repoPath, err)
	}
	schema, _ := base["schema"].(string)
	if err := snapshot.CheckSchema(schema); err != nil {
		return fmt.Errorf("baseline %s: %w", repoPath, err)
	}
	sources, _ := doc["sources"].(map[string]any)
	if sources == nil {
		sources = map[string]any{}
		doc["sources"] = sources
	}
	baseSources, _ := base["sources"].(map[string]any)
	take := func(prefix string) {
		for k, v := range baseSources {
			if k == prefix || strings.HasPrefix(k, prefix+".") {
				sources[k] = fmt.Sprintf("%v (baseline %s)", v, repoPath)
			}
		}
	}
	for _, sec := range liveSections {
		if v, ok := base[sec]; ok {
			doc[sec] = v
			take(sec)
		}
	}
	if loaded, ok := snapshot.Lookup(base, "modules.loaded"); ok {
		set(doc, loaded, "modules", "loaded")
		take("modules.loaded")
	}
	if id, _ := snapshot.Lookup(doc, "os.id"); id == "" || id == nil {
		if v, ok := base["os"]; ok {
			doc["os"] = v
			take("os")
		}
	}
	if def, _ := snapshot.Lookup(doc, "logind.remove_ipc_default"); def == true {
		for _, k := range []string{"remove_ipc", "remove_ipc_default", "installed"} {
			if v, ok := snapshot.Lookup(base, "logind."+k); ok {
				set(doc, v, "logind", k)
				take("logind." + k)
			}
		}
	}
	running, _ := snapshot.Lookup(doc, "sysctl.running")
	configured, _ := snapshot.Lookup(doc, "sysctl.configured")
	baseRunning, _ := snapshot.Lookup(base, "sysctl.running")
	if rm, ok := running.(map[string]any); ok {
		cm, _ := configured.(map[string]any)
		bm, _ := baseRunning.(map[string]any)
		for k, v := range bm {
			if _, set := cm[k]; !set {
				rm[k] = v
				take("sysctl.running." + k)
			}
		}
	}
	labels, _ := doc["labels"].(map[string]any)
	baseLabels, _ := base["labels"].(map[string]any)
	if len(baseLabels) > 0 {
		merged := maps.Clone(baseLabels)
		maps.Copy(merged, labels)
		doc["labels"] = merged
	}
	return nil
}

func set(doc map[string]any, v any, path ...string) {
	m := doc
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// decodeDoc decodes JSON as the engine does, numbers kept exact.
func decodeDoc(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a JSON snapshot: %w", err)
	}
	if doc == nil {
		return nil, fmt.Errorf("not a JSON snapshot: the document is not an object")
	}
	return doc, nil
}
