// Package docgen renders the parts of docs/ that are derived from code, so
// they cannot drift from it: the rule catalog (docs/rules.md) from the rules'
// METADATA, and the table of fleet profile parameters with the rules that
// read them (docs/fleet-profiles.md) from the Rego library itself.
package docgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/fleetaudit/fleetaudit/policies"
)

// paramsRef is where fleet profile parameters reach Rego.
var paramsRef = ast.MustParseRef("data.fleetaudit.params")

// Param is one fleet profile parameter the library reads.
type Param struct {
	// Name is the key under params ("memlock_min_kb", "baseline.nccl_version").
	Name string
	// Rules are the ids of the finding rules whose evaluation reads it.
	Rules []string
	// Default is the Rego default the rules use when the profile does not set
	// it, as JSON; "" when the library declares none (unset: the rule's
	// check is off or compares with the fleet's majority).
	Default string
}

// Params reads the Rego library under lib (the policies/lib tree, _test.rego
// files skipped) and returns every data.fleetaudit.params.<name> it reads,
// sorted by name, with the finding rules (METADATA custom.id) whose
// evaluation reaches the read through any chain of helper rules.
func Params(lib fs.FS) ([]Param, error) {
	mods := map[string]*ast.Module{}
	err := fs.WalkDir(lib, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		src, err := fs.ReadFile(lib, p)
		if err != nil {
			return err
		}
		m, err := ast.ParseModuleWithOpts(p, string(src), ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
		if err != nil {
			return err
		}
		mods[p] = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("policy library: %w", err)
	}
	defaults := regoDefaults(mods)

	c := ast.NewCompiler().WithCapabilities(ast.CapabilitiesForThisVersion())
	if c.Compile(mods); c.Failed() {
		return nil, fmt.Errorf("policy library: %w", c.Errors)
	}
	readers := map[string]map[string]bool{}
	for _, name := range slices.Sorted(mapKeys(c.Modules)) {
		for _, r := range c.Modules[name].Rules {
			id := ruleID(r)
			if id == "" {
				continue
			}
			for _, p := range reachableParams(c.Graph, r) {
				if readers[p] == nil {
					readers[p] = map[string]bool{}
				}
				readers[p][id] = true
			}
		}
	}
	out := make([]Param, 0, len(readers))
	for _, name := range slices.Sorted(mapKeys(readers)) {
		out = append(out, Param{Name: name, Rules: slices.Sorted(mapKeys(readers[name])), Default: defaults[name]})
	}
	return out, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ruleID is the custom.id of a rule's METADATA, "" for helpers.
func ruleID(r *ast.Rule) string {
	for _, a := range r.Annotations {
		if id, ok := a.Custom["id"].(string); ok {
			return id
		}
	}
	return ""
}

// reachableParams lists the params read by r or any rule it depends on.
func reachableParams(g *ast.Graph, r *ast.Rule) []string {
	seen := map[util.T]bool{r: true}
	queue := []util.T{r}
	found := map[string]bool{}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, p := range paramsReadBy(n.(*ast.Rule)) {
			found[p] = true
		}
		for dep := range g.Dependencies(n) {
			if !seen[dep] {
				seen[dep] = true
				queue = append(queue, dep)
			}
		}
	}
	return slices.Sorted(mapKeys(found))
}

// paramsReadBy lists the params a rule's own body and head refer to. The
// baseline mapping is one level deeper: baseline.<fact> is the parameter.
func paramsReadBy(r *ast.Rule) []string {
	var out []string
	ast.WalkRefs(r, func(ref ast.Ref) bool {
		if name := paramName(ref); name != "" {
			out = append(out, name)
		}
		return false
	})
	return out
}

func paramName(ref ast.Ref) string {
	if !ref.HasPrefix(paramsRef) || len(ref) <= len(paramsRef) {
		return ""
	}
	key, ok := ref[len(paramsRef)].Value.(ast.String)
	if !ok {
		return ""
	}
	name := string(key)
	if name == "baseline" && len(ref) > len(paramsRef)+1 {
		if sub, ok := ref[len(paramsRef)+1].Value.(ast.String); ok {
			name += "." + string(sub)
		}
	}
	return name
}

// regoDefaults finds the library's defaults for params: a helper
// `x := data.fleetaudit.params.p` beside `default x := v` makes v the value
// rules use when a profile leaves p unset.
func regoDefaults(mods map[string]*ast.Module) map[string]string {
	out := map[string]string{}
	for _, m := range mods {
		defaults := map[string]*ast.Term{}
		for _, r := range m.Rules {
			if r.Default && r.Head.Value != nil {
				defaults[r.Head.Ref().String()] = r.Head.Value
			}
		}
		for _, r := range m.Rules {
			if r.Default || r.Head.Value == nil || !r.Body.Equal(ast.NewBody(ast.NewExpr(ast.BooleanTerm(true)))) {
				continue
			}
			ref, ok := r.Head.Value.Value.(ast.Ref)
			if !ok {
				continue
			}
			if name := paramName(ref); name != "" {
				// A null default means no value: the rule falls back (a
				// baseline to the fleet's majority).
				if d, ok := defaults[r.Head.Ref().String()]; ok && ast.NullTerm().Value.Compare(d.Value) != 0 {
					out[name] = d.String()
				}
			}
		}
	}
	return out
}

// family is the rule's package below fleetaudit.rules or
// fleetaudit.fleet_rules: "boot" for data.fleetaudit.rules.boot.x.
func family(r policies.Rule) string {
	ref := ast.MustParseRef(r.Ref)
	if len(ref) < 5 {
		return ""
	}
	s, _ := ref[3].Value.(ast.String)
	return string(s)
}

// file is the rule's file without the line, which moves with every edit.
func file(r policies.Rule) string {
	f, _, _ := strings.Cut(r.Location, ":")
	return f
}

// Catalog writes docs/rules.md: every rule, grouped by scope and family,
// one section per rule with its id as the anchor. params (from Params) adds
// the parameters each rule reads.
func Catalog(w io.Writer, rules []policies.Rule, params []Param) error {
	reads := map[string][]string{}
	for _, p := range params {
		for _, id := range p.Rules {
			reads[id] = append(reads[id], p.Name)
		}
	}
	rules = slices.Clone(rules)
	scopeOrder := map[policies.Scope]int{policies.ScopeHost: 0, policies.ScopeFleet: 1}
	sort.SliceStable(rules, func(i, j int) bool {
		a, b := rules[i], rules[j]
		if a.Scope != b.Scope {
			return scopeOrder[a.Scope] < scopeOrder[b.Scope]
		}
		if family(a) != family(b) {
			return family(a) < family(b)
		}
		return a.ID < b.ID
	})

	var b bytes.Buffer
	b.WriteString(`# Rule catalog

<!-- Generated from the rules' METADATA by internal/docgen; do not edit by hand.
     Regenerate with: make docs (go test ./internal/docgen -update) -->

Every rule of the built-in library (` + "`policies/lib`" + `), generated from its METADATA block.
The **id** is a stable contract: reports, ` + "`rules.include`/`exclude`/`severity`" + ` in fleet
profiles and scripts refer to it. The severity is the rule's default: a rule may raise or lower
it per finding (the description says when) and a fleet profile may override it
(` + "`rules.severity`" + `). **Profiles** are the fleets a rule is written for (` + "`all`" + `: every fleet,
and hosts in no fleet); the built-in profiles select rules by these tags
([fleet-profiles.md](fleet-profiles.md)). **Facts** are the snapshot fact paths the rule reads
(` + "`*`" + ` matches one path element); a rule whose facts were not collected does not fire. An
offline image (` + "`source.image`" + `: a root with nothing mounted on ` + "`/proc`" + `) has no running state;
**On an offline image** says what each rule that reads some does there.
` + "`fleetaudit policies list`" + ` and ` + "`fleetaudit policies explain ID`" + ` print the same.

`)
	fmt.Fprintf(&b, "%d rules: %d host rules (one snapshot each), %d fleet-wide rules (the hosts of one fleet).\n\n",
		len(rules), countScope(rules, policies.ScopeHost), countScope(rules, policies.ScopeFleet))

	b.WriteString("| id | scope: family | severity | profiles | title |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range rules {
		fmt.Fprintf(&b, "| [%s](#%s) | %s: %s | %s | %s | %s |\n", r.ID, r.ID, r.Scope, family(r), r.Severity, strings.Join(r.Profiles, ", "), cell(r.Title))
	}

	var lastScope policies.Scope
	lastFamily := ""
	for _, r := range rules {
		if r.Scope != lastScope {
			lastScope, lastFamily = r.Scope, ""
			if r.Scope == policies.ScopeHost {
				b.WriteString("\n## Host rules\n\nEach sees one host's snapshot as `input` (`data.fleetaudit.rules.<family>`).\n")
			} else {
				b.WriteString("\n## Fleet-wide rules\n\nEach sees the hosts of one fleet (`data.fleetaudit.fleet_rules.<family>`) and compares them with\nthe profile's `baseline` parameters, else with the value at least 60% of the hosts share.\n")
			}
		}
		if f := family(r); f != lastFamily {
			lastFamily = f
			fmt.Fprintf(&b, "\n### %s: %s\n", scopeTitle(r.Scope), f)
		}
		fmt.Fprintf(&b, "\n<a id=\"%s\"></a>\n#### %s\n\n**%s**\n\n", r.ID, r.ID, paragraph(r.Title))
		fmt.Fprintf(&b, "severity **%s** · profiles %s · `%s`\n\n", r.Severity, codeList(r.Profiles), file(r))
		fmt.Fprintf(&b, "%s\n\n", paragraph(r.Description))
		fmt.Fprintf(&b, "**Remediation.** %s\n\n", paragraph(r.Remediation))
		fmt.Fprintf(&b, "**Facts:** %s\n", codeList(r.Facts))
		switch {
		case r.Image:
			b.WriteString("\n**On an offline image:** judges the configuration alone; running facts are absent.\n")
		case r.ReadsRunningState():
			b.WriteString("\n**On an offline image:** not evaluated (it reads running state), listed as skipped.\n")
		}
		if ps := reads[r.ID]; len(ps) > 0 {
			links := make([]string, len(ps))
			for i, p := range ps {
				links[i] = fmt.Sprintf("[`%s`](fleet-profiles.md#%s)", p, ParamAnchor(p))
			}
			fmt.Fprintf(&b, "\n**Parameters:** %s\n", strings.Join(links, ", "))
		}
		b.WriteString("\n**References:**\n")
		for _, ref := range r.References {
			fmt.Fprintf(&b, "- <%s>\n", ref)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func countScope(rules []policies.Rule, s policies.Scope) int {
	n := 0
	for _, r := range rules {
		if r.Scope == s {
			n++
		}
	}
	return n
}

func scopeTitle(s policies.Scope) string {
	if s == policies.ScopeFleet {
		return "Fleet"
	}
	return "Host"
}

// ParamAnchor is the anchor of a parameter's section in docs/fleet-profiles.md.
func ParamAnchor(name string) string {
	return "param-" + strings.ReplaceAll(name, ".", "-")
}

func codeList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = "`" + s + "`"
	}
	return strings.Join(out, ", ")
}

// paragraph joins METADATA text (folded YAML, possibly with line breaks)
// into one Markdown paragraph. METADATA is plain text: "rdma/*, */efa"
// must not turn into emphasis, nor "libnvidia-ml.so.<version>" into a tag.
func paragraph(s string) string {
	return markdownEscaper.Replace(strings.Join(strings.Fields(s), " "))
}

var markdownEscaper = strings.NewReplacer(`*`, `\*`, `<`, `&lt;`, `\`, `\\`)

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(paragraph(s), "|", `\|`)
}

// ParamsTable writes the generated table of docs/fleet-profiles.md: each
// parameter, the rules that read it, the library's default and the value
// each built-in profile sets (profiles maps a profile name to its resolved
// params, includes merged).
func ParamsTable(w io.Writer, params []Param, profiles map[string]map[string]any) error {
	names := slices.Sorted(mapKeys(profiles))
	var b bytes.Buffer
	b.WriteString("| parameter | read by | library default |")
	for _, n := range names {
		fmt.Fprintf(&b, " `%s` |", n)
	}
	b.WriteString("\n| --- | --- | --- |" + strings.Repeat(" --- |", len(names)) + "\n")
	for _, p := range params {
		links := make([]string, len(p.Rules))
		for i, id := range p.Rules {
			links[i] = fmt.Sprintf("[%s](rules.md#%s)", id, id)
		}
		def := "unset"
		if p.Default != "" {
			def = "`" + p.Default + "`"
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |", p.Name, ParamAnchor(p.Name), strings.Join(links, ", "), def)
		for _, n := range names {
			v, ok := lookup(profiles[n], p.Name)
			if !ok {
				b.WriteString(" |")
				continue
			}
			js, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("profile %s: param %s: %w", n, p.Name, err)
			}
			fmt.Fprintf(&b, " `%s` |", cell(string(js)))
		}
		b.WriteString("\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

func lookup(params map[string]any, name string) (any, bool) {
	head, rest, nested := strings.Cut(name, ".")
	v, ok := params[head]
	if !ok || !nested {
		return v, ok
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	v, ok = m[rest]
	return v, ok
}
