package configrepo

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// A host after the rollout: the repo's files laid over the host's own, read
// again by the collectors. A snapshot holds facts, not files, so the host
// files of the key=value readers (sysctl.d and sysctl.conf, limits.conf and
// limits.d, logind.conf and its drop-ins) are written back from the facts
// they set, each at the line the snapshot names: the readers' own
// ordering then decides which file wins (a host's 99-local.conf over a
// repo's 60-gpu.conf), and provenance keeps the host file and line. A host
// file at a path the repo renders (at base or head) is the repo's and is
// left out. A value a host file set that another host file overrode is not
// in the snapshot and so not written back.
//
// So are the lines of modprobe.d (blacklist, install) and modules-load.d
// (and /etc/modules, rdma-core's lists) the snapshot holds, each with its
// file and line: kmod's and systemd-modules-load's ordering then decides.
//
// The other sections the repo manages (boot configuration, NCCL config,
// service drop-ins, firewall) have no such key-to-line form: when the repo
// renders a file they read (at base or head) they come from the repo's
// files alone, else they stay the host's; the plan names the host files
// left out (notStacked).

// reconstructed are the sections whose host files are written back.
var reconstructed = []string{"sysctl", "limits", "logind"}

// fedSections are the sections taken from the repo's files when it renders
// a file they read.
var fedSections = []string{"boot", "modules", "nccl_config", "services", "firewall"}

// hostFiles writes back the host's own files of the reconstructed sections,
// leaving out those at managed paths ("/etc/sysctl.d/60-gpu.conf").
func hostFiles(doc map[string]any, managed map[string]bool, into fstest.MapFS) {
	sources, _ := doc["sources"].(map[string]any)
	lines := map[string]map[int]string{}
	put := func(file string, line int, text string) {
		if file == "" || line <= 0 || managed[file] || !strings.HasPrefix(file, "/") {
			return
		}
		if lines[file] == nil {
			lines[file] = map[int]string{}
		}
		lines[file][line] = text
	}
	source := func(fact string) snapshot.Provenance {
		v, ok := sources[fact]
		if !ok {
			return snapshot.Provenance{}
		}
		return snapshot.ParseProvenance(fmt.Sprint(v))
	}
	files := func(section string) []string {
		list, _ := snapshot.Lookup(doc, section+".files")
		items, _ := list.([]any)
		var out []string
		for _, x := range items {
			if s, ok := x.(string); ok && !managed[s] && strings.HasPrefix(s, "/") {
				out = append(out, s)
			}
		}
		return out
	}
	// sysctl: each configured key at the line that set it.
	configured, _ := snapshot.Lookup(doc, "sysctl.configured")
	for k, v := range asMap(configured) {
		p := source("sysctl.configured." + k)
		if p.Layer == "" && p.Default == "" && p.Command == "" {
			put(p.File, p.Line, k+" = "+fmt.Sprint(v))
		}
	}
	// limits: each entry pam_limits accepted, in its file and line.
	entries, _ := snapshot.Lookup(doc, "limits.entries")
	list, _ := entries.([]any)
	for _, x := range list {
		e := asMap(x)
		p := snapshot.ParseProvenance(fmt.Sprint(e["source"]))
		if p.Layer != "" {
			continue
		}
		text := fmt.Sprintf("%v %v %v %v", e["domain"], e["type"], e["item"], e["value"])
		if item, _ := e["item"].(string); item == "" {
			text = fmt.Sprintf("%v -", e["domain"])
		}
		put(p.File, p.Line, text)
	}
	// logind: RemoveIPC under its section header.
	if p := source("logind.remove_ipc"); p.Layer == "" && p.Default == "" && p.File != "" {
		if v, _ := snapshot.Lookup(doc, "logind.remove_ipc"); v != nil {
			line := max(p.Line, 2)
			put(p.File, line-1, "[Login]")
			put(p.File, line, "RemoveIPC="+fmt.Sprint(v))
		}
	}
	// modules: each module modules-load.d (or /etc/modules, or rdma-core's
	// lists) loads, and each modprobe.d blacklist and install line, at the
	// line that set it; the collectors' first-wins and file-name order
	// then decide again.
	for _, m := range []struct{ fact, format string }{
		{"modules.configured", "%s"},
		{"modules.blacklisted", "blacklist %s"},
	} {
		set, _ := snapshot.Lookup(doc, m.fact)
		for name, v := range asMap(set) {
			if v == true {
				if p := source(m.fact + "." + name); p.Layer == "" {
					put(p.File, p.Line, fmt.Sprintf(m.format, name))
				}
			}
		}
	}
	install, _ := snapshot.Lookup(doc, "modules.install")
	for name, cmd := range asMap(install) {
		if p := source("modules.install." + name); p.Layer == "" && !strings.ContainsAny(fmt.Sprint(cmd), "\n") {
			put(p.File, p.Line, "install "+name+" "+fmt.Sprint(cmd))
		}
	}
	for _, section := range reconstructed {
		for _, f := range files(section) {
			if lines[f] == nil {
				lines[f] = map[int]string{} // read, set nothing that won
			}
		}
	}
	for file, byLine := range lines {
		n := 0
		for l := range byLine {
			n = max(n, l)
		}
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(byLine[i])
			b.WriteByte('\n')
		}
		into[strings.TrimPrefix(file, "/")] = &fstest.MapFile{Data: []byte(b.String()), Mode: 0o644}
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// renderedFiles copies a rendered root's regular files (links and special
// files of a render command's root are left out) and the layer of each.
func renderedFiles(r *Rendered) (fstest.MapFS, map[string]string, error) {
	files := fstest.MapFS{}
	layers := map[string]string{}
	if o, ok := r.Root.(overlay); ok {
		maps.Copy(layers, o.layers)
	}
	err := fs.WalkDir(r.Root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(r.Root, p)
		if err != nil {
			return err
		}
		files[p] = &fstest.MapFile{Data: data, Mode: 0o644}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("fleet %s: reading the rendered root: %w", r.Fleet, err)
	}
	return files, layers, nil
}

// rolledOut is the host's document after the rollout of one side's render:
// the reconstructed sections read again from the host's files and the
// repo's, the fed sections the repo's (fed: sections the repo renders a file
// for at base or head), everything else the host's.
func rolledOut(ctx context.Context, host map[string]any, name string, repo fstest.MapFS, layers map[string]string, managed, fed map[string]bool, version string) (map[string]any, error) {
	files := fstest.MapFS{}
	hostFiles(host, managed, files)
	maps.Copy(files, repo)
	var domains []string
	if eff, _ := snapshot.Lookup(host, "limits.effective"); eff != nil {
		for d := range asMap(eff) {
			if d != "*" {
				domains = append(domains, d)
			}
		}
		slices.Sort(domains)
	}
	snap, err := collectors.Collect(ctx, collectors.Target{
		Origin: snapshot.Origin{Kind: SourceKind},
		Files:  overlay{Source: collectors.FS(files), layers: layers},
	}, collectors.Options{Hostname: name, Version: version, ConfigOnly: true, LimitsDomains: domains})
	if err != nil {
		return nil, err
	}
	merged, err := snapshot.Document(snap)
	if err != nil {
		return nil, err
	}
	return assemble(host, merged, fed), nil
}

// assemble takes the managed sections from merged into a copy of host.
func assemble(host, merged map[string]any, fed map[string]bool) map[string]any {
	out := maps.Clone(host)
	// Judged as configuration, as the gate judges a rendered fleet: rules
	// comparing running with configured state (a reboot pending after
	// any rollout) do not apply.
	src := maps.Clone(asMap(host["source"]))
	if src == nil {
		src = map[string]any{}
	}
	src["kind"] = SourceKind
	out["source"] = src
	sources := maps.Clone(asMap(host["sources"]))
	if sources == nil {
		sources = map[string]any{}
	}
	out["sources"] = sources
	msrc := asMap(merged["sources"])
	under := func(k, prefix string) bool { return k == prefix || strings.HasPrefix(k, prefix+".") }
	// replace gives prefix's facts merged's provenance, but for keep.
	replace := func(prefix string, keep ...string) {
		kept := func(k string) bool {
			return slices.ContainsFunc(keep, func(p string) bool { return under(k, p) })
		}
		for k := range sources {
			if under(k, prefix) && !kept(k) {
				delete(sources, k)
			}
		}
		for k, v := range msrc {
			if under(k, prefix) && !kept(k) {
				sources[k] = v
			}
		}
	}

	// sysctl: configured from the files; running as the host's with the
	// configured values applied (as systemd-sysctl does at boot).
	hs, ms := asMap(host["sysctl"]), asMap(merged["sysctl"])
	sys := maps.Clone(hs)
	if sys == nil {
		sys = map[string]any{}
	}
	configured := asMap(ms["configured"])
	sys["configured"], sys["files"] = ms["configured"], ms["files"]
	running := maps.Clone(asMap(hs["running"]))
	if running == nil {
		running = map[string]any{}
	}
	for k := range sources {
		if rest, ok := strings.CutPrefix(k, "sysctl.configured."); ok && configured[rest] == nil {
			delete(sources, k)
		}
	}
	replace("sysctl.configured")
	for k, v := range configured {
		if strings.ContainsAny(k, "*?") {
			continue // a glob names no one running key
		}
		running[k] = v
		if src, ok := msrc["sysctl.configured."+k]; ok {
			sources["sysctl.running."+k] = src
		}
	}
	sys["running"] = running
	if missing, ok := hs["missing"].([]any); ok {
		sys["missing"] = slices.DeleteFunc(slices.Clone(missing), func(x any) bool { return configured[fmt.Sprint(x)] == nil })
	}
	out["sysctl"] = sys

	out["limits"] = merged["limits"]
	replace("limits")

	// logind: the repo cannot know whether logind is installed, nor the
	// distribution's default when no file sets RemoveIPC.
	lg := maps.Clone(asMap(merged["logind"]))
	hl := asMap(host["logind"])
	if lg != nil && hl != nil {
		lg["installed"] = hl["installed"]
		keep := []string{"logind.installed"}
		if lg["remove_ipc_default"] == true && hl["remove_ipc_default"] == true {
			lg["remove_ipc"] = hl["remove_ipc"]
			keep = append(keep, "logind.remove_ipc", "logind.remove_ipc_default")
		}
		out["logind"] = lg
		replace("logind", keep...)
	}

	for _, sec := range fedSections {
		if !fed[sec] {
			continue
		}
		switch sec {
		case "boot":
			hb, mb := asMap(host["boot"]), asMap(merged["boot"])
			hc, mc := asMap(hb["configured"]), asMap(mb["configured"])
			nb := maps.Clone(hb)
			if nb == nil {
				nb = map[string]any{}
			}
			switch hc["loader"] {
			case "grub-bls", "systemd-boot":
				// The entries are the host's: the repo's GRUB defaults or
				// kernel/cmdline reach them at the next kernel install.
				nc := maps.Clone(hc)
				for _, sub := range []string{"grub", "kernel_cmdline"} {
					if v, ok := mc[sub]; ok {
						nc[sub] = v
						replace("boot.configured." + sub)
					}
				}
				nb["configured"] = nc
			default:
				nb["configured"] = mc
				replace("boot.configured")
			}
			out["boot"] = nb
		case "modules":
			nm := maps.Clone(asMap(merged["modules"]))
			if nm == nil {
				nm = map[string]any{}
			}
			if v, ok := asMap(host["modules"])["loaded"]; ok {
				nm["loaded"] = v
			}
			out["modules"] = nm
			replace("modules", "modules.loaded")
		case "services":
			hu, mu := asMap(asMap(host["services"])["units"]), asMap(asMap(merged["services"])["units"])
			units := maps.Clone(hu)
			if units == nil {
				units = map[string]any{}
			}
			for name, m := range mu {
				u := maps.Clone(asMap(hu[name]))
				if u == nil {
					u = map[string]any{}
				}
				for k, v := range asMap(m) {
					if k != "file" && k != "masked" && k != "running_pid" && k != "running_memlock" {
						u[k] = v
					}
				}
				units[name] = u
			}
			ns := maps.Clone(asMap(host["services"]))
			if ns == nil {
				ns = map[string]any{}
			}
			ns["units"] = units
			out["services"] = ns
			for name := range mu {
				p := "services.units." + name
				replace(p, p+".file", p+".masked", p+".running_pid", p+".running_memlock")
			}
		default:
			out[sec] = merged[sec]
			replace(sec)
		}
	}
	return out
}

// fedBy lists the fed sections a rendered root reads a repo file for (any
// file of a render command's root, which names no layers).
func fedBy(alone map[string]any, layered bool, into map[string]bool) {
	for k, v := range asMap(alone["sources"]) {
		p := snapshot.ParseProvenance(fmt.Sprint(v))
		if layered && p.Layer == "" || p.File == "" {
			continue
		}
		sec, _, _ := strings.Cut(k, ".")
		if sec == "boot" && !strings.HasPrefix(k, "boot.configured") {
			continue
		}
		if slices.Contains(fedSections, sec) {
			into[sec] = true
		}
	}
}
