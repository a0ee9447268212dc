package configrepo

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
	snap, err := collectors.Collect(ctx, r.Target(co), collectors.Options{Hostname: r.Fleet, Version: version, ConfigOnly: true})
	if err != nil {
		return nil, err
	}
	project(snap)
	snap.Labels = maps.Clone(m.Fleets[r.Fleet].Labels)
	for _, refused := range r.Refused {
		p, why, _ := strings.Cut(refused, ": ")
		snap.Errors = append(snap.Errors, snapshot.CollectionError{Collector: "configrepo", Path: p, Reason: "refused: " + why})
	}
	doc, err := snapshot.Document(snap)
	if err != nil {
		return nil, err
	}
	if r.Baseline == nil {
		return doc, nil
	}
	repoPath := m.Fleets[r.Fleet].Baseline
	base, err := snapshot.DecodeDocument(r.Baseline)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", repoPath, err)
	}
	return withBaseline(doc, base, repoPath), nil
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

// withBaseline is the rendered fleet's document with what a repo cannot
// know filled from a snapshot of a typical host of the fleet (base, the
// document of the baseline file at repoPath): the live sections, the loaded
// modules, the OS when the repo has no os-release, logind's RemoveIPC when
// the repo leaves it to the OS default, running sysctls the repo does not
// configure, and the baseline's labels under the fleet's. Each fact taken
// keeps its provenance in the baseline host, naming the baseline file
// (snapshot.Provenance.Baseline). Neither document is changed: the result
// shares their values and holds new objects only where the two meet.
func withBaseline(doc, base map[string]any, repoPath string) map[string]any {
	out := maps.Clone(doc)
	sources := map[string]any{}
	if own, ok := doc["sources"].(map[string]any); ok {
		sources = maps.Clone(own)
	}
	out["sources"] = sources
	baseSources, _ := base["sources"].(map[string]any)
	var taken []string
	take := func(prefix string) {
		taken = append(taken, prefix)
		for k, v := range baseSources {
			if k == prefix || strings.HasPrefix(k, prefix+".") {
				p := snapshot.ParseProvenance(fmt.Sprint(v))
				p.Baseline = repoPath
				sources[k] = p
			}
		}
	}
	for _, sec := range liveSections {
		if v, ok := base[sec]; ok {
			out[sec] = v
			take(sec)
		}
	}
	if loaded, ok := snapshot.Lookup(base, "modules.loaded"); ok {
		with(out, "modules", map[string]any{"loaded": loaded})
		take("modules.loaded")
	}
	if id, _ := snapshot.Lookup(doc, "os.id"); id == "" || id == nil {
		if v, ok := base["os"]; ok {
			out["os"] = v
			take("os")
		}
	}
	if def, _ := snapshot.Lookup(doc, "logind.remove_ipc_default"); def == true {
		from := map[string]any{}
		for _, k := range []string{"remove_ipc", "remove_ipc_default", "installed"} {
			if v, ok := snapshot.Lookup(base, "logind."+k); ok {
				from[k] = v
				take("logind." + k)
			}
		}
		with(out, "logind", from)
	}
	running, _ := snapshot.Lookup(doc, "sysctl.running")
	configured, _ := snapshot.Lookup(doc, "sysctl.configured")
	baseRunning, _ := snapshot.Lookup(base, "sysctl.running")
	if rm, ok := running.(map[string]any); ok {
		cm, _ := configured.(map[string]any)
		bm, _ := baseRunning.(map[string]any)
		merged := maps.Clone(rm)
		for k, v := range bm {
			if _, set := cm[k]; !set {
				merged[k] = v
				take("sysctl.running." + k)
			}
		}
		with(out, "sysctl", map[string]any{"running": merged})
	}
	// A member of the baseline removed for its type (snapshot.Validate) in
	// what was taken is a fact this document does not have either.
	baseErrs, _ := base["errors"].([]any)
	for _, x := range baseErrs {
		e, _ := x.(map[string]any)
		path, _ := e["path"].(string)
		if e["collector"] != snapshot.CollectorSnapshot || !slices.ContainsFunc(taken, func(p string) bool {
			return path == p || strings.HasPrefix(path, p+".")
		}) {
			continue
		}
		errs, _ := out["errors"].([]any)
		out["errors"] = append(slices.Clip(errs), map[string]any{"collector": snapshot.CollectorSnapshot, "path": path,
			"reason": fmt.Sprint(e["reason"]) + " in baseline " + repoPath})
	}
	labels, _ := doc["labels"].(map[string]any)
	baseLabels, _ := base["labels"].(map[string]any)
	if len(baseLabels) > 0 {
		merged := maps.Clone(baseLabels)
		maps.Copy(merged, labels)
		out["labels"] = merged
	}
	return out
}

// with sets members of out's object section (a new object: the one out
// shares with its source is left as it is).
func with(out map[string]any, section string, members map[string]any) {
	if len(members) == 0 {
		return
	}
	m, _ := out[section].(map[string]any)
	m = maps.Clone(m)
	if m == nil {
		m = map[string]any{}
	}
	maps.Copy(m, members)
	out[section] = m
}
