package docgen

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
)

var update = flag.Bool("update", false, "rewrite the generated parts of docs/")

const (
	repoRoot      = "../.."
	rulesDoc      = repoRoot + "/docs/rules.md"
	profilesDoc   = repoRoot + "/docs/fleet-profiles.md"
	libraryDir    = repoRoot + "/policies/lib"
	beginParams   = "<!-- BEGIN GENERATED: parameters (go test ./internal/docgen -run TestFleetProfileParams -update) -->\n"
	endParams     = "<!-- END GENERATED: parameters -->\n"
	regenerateMsg = "make docs (go test ./internal/docgen -update)"
)

func libraryParams(t *testing.T) []Param {
	t.Helper()
	params, err := Params(os.DirFS(libraryDir))
	if err != nil {
		t.Fatal(err)
	}
	return params
}

// docs/rules.md is the rule catalog rendered from the METADATA the engine
// loads: changing a rule's metadata without regenerating it fails here.
func TestRuleCatalog(t *testing.T) {
	e, err := policies.New(context.Background(), policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Catalog(&buf, e.Rules(), libraryParams(t)); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(rulesDoc, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(rulesDoc)
	if err != nil {
		t.Fatalf("%v (create it with %s)", err, regenerateMsg)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("docs/rules.md is not what the rules' METADATA renders; run %s and review the diff (-file +generated):\n%s", regenerateMsg, diff)
	}
	for _, r := range e.Rules() {
		if !strings.Contains(buf.String(), "\n#### "+r.ID+"\n") {
			t.Errorf("rule %s has no section of its own", r.ID)
		}
	}
}

func builtinProfileParams(t *testing.T) map[string]map[string]any {
	t.Helper()
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, name := range set.Names() {
		p, err := set.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = p.Params
	}
	return out
}

// The parameter table of docs/fleet-profiles.md is generated from what the
// library reads and what the built-in profiles set; every parameter also has
// a hand-written section saying its type and meaning.
func TestFleetProfileParams(t *testing.T) {
	params := libraryParams(t)
	profiles := builtinProfileParams(t)
	var table bytes.Buffer
	if err := ParamsTable(&table, params, profiles); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(profilesDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	before, rest, ok := strings.Cut(doc, beginParams)
	if !ok {
		t.Fatalf("docs/fleet-profiles.md has no line %q", beginParams)
	}
	current, after, ok := strings.Cut(rest, endParams)
	if !ok {
		t.Fatalf("docs/fleet-profiles.md has no line %q", endParams)
	}
	if *update {
		doc = before + beginParams + table.String() + endParams + after
		if err := os.WriteFile(profilesDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		current = table.String()
	}
	if diff := cmp.Diff(current, table.String()); diff != "" {
		t.Errorf("the parameter table of docs/fleet-profiles.md is stale; run %s (-file +generated):\n%s", regenerateMsg, diff)
	}

	handWritten := before + after
	documented := func(name string) bool {
		return strings.Contains(handWritten, `<a id="`+ParamAnchor(name)+`"></a>`)
	}
	for _, p := range params {
		if !documented(p.Name) {
			t.Errorf("param %s (read by %s) has no section <a id=%q></a> in docs/fleet-profiles.md", p.Name, strings.Join(p.Rules, ", "), ParamAnchor(p.Name))
		}
	}
	// Keys the built-in profiles set are documented too, even one no rule
	// reads any more (then the table shows no reader, which is the bug).
	for name, ps := range profiles {
		for key := range ps {
			if _, nested := ps[key].(map[string]any); nested && key == "baseline" {
				continue
			}
			if !documented(key) {
				t.Errorf("profile %s sets param %s, which docs/fleet-profiles.md does not describe", name, key)
			}
		}
	}
}

// Every data.fleetaudit.params.<name> in the library source appears in the
// generated list: the AST walk misses none of the plain references.
func TestParamsCoverLibrarySource(t *testing.T) {
	got := map[string]bool{}
	for _, p := range libraryParams(t) {
		got[p.Name] = true
	}
	re := regexp.MustCompile(`data\.fleetaudit\.params\.([a-z_][a-z0-9_]*)(\.[a-z_][a-z0-9_]*)?`)
	err := filepath.WalkDir(libraryDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".rego") || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				name := m[1]
				if name == "baseline" && m[2] != "" {
					name += m[2]
				}
				if !got[name] {
					t.Errorf("%s reads data.fleetaudit.params.%s, which Params does not list", p, name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestParams(t *testing.T) {
	lib := fstest.MapFS{
		"rules/a.rego": {Data: []byte(`package fleetaudit.rules.a

default limit := 10

limit := data.fleetaudit.params.limit_min

over(v) if v > limit

# METADATA
# title: t
# custom:
#   id: direct
direct contains f if {
	data.fleetaudit.params.flag
	f := {"msg": "x"}
}

# METADATA
# title: t
# custom:
#   id: through-helpers
through_helpers contains f if {
	over(input.n)
	f := {"msg": "y"}
}
`)},
		"fleet_rules/b.rego": {Data: []byte(`package fleetaudit.fleet_rules.b

import data.fleetaudit.rules.a

# METADATA
# title: t
# custom:
#   id: other-package
other_package contains f if {
	a.over(count(input.hosts))
	v := data.fleetaudit.params.baseline.nccl_version
	f := {"msg": v}
}
`)},
		"rules/a_test.rego": {Data: []byte(`package fleetaudit.rules.a_test

test_x if data.fleetaudit.params.only_in_tests
`)},
	}
	got, err := Params(lib)
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{
		{Name: "baseline.nccl_version", Rules: []string{"other-package"}},
		{Name: "flag", Rules: []string{"direct"}},
		{Name: "limit_min", Rules: []string{"other-package", "through-helpers"}, Default: "10"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Params (-want +got):\n%s", diff)
	}
}

// A rule whose METADATA changes renders differently: the catalog test above
// cannot pass on a stale file.
func TestCatalogFollowsMetadata(t *testing.T) {
	r := policies.Rule{
		ID: "x-y", Title: "Title", Description: "Line one\n  line two: rdma/*, */efa, lib.so.<version>.", Severity: "high",
		Profiles: []string{"gpu-training"}, Remediation: "Fix | it.", References: []string{"https://example.com/a"},
		Facts: []string{"boot.running.params"}, Scope: policies.ScopeHost,
		Ref: "data.fleetaudit.rules.boot.x_y", Location: "policies/lib/rules/boot.rego:12",
	}
	render := func(r policies.Rule) string {
		var b bytes.Buffer
		if err := Catalog(&b, []policies.Rule{r}, []Param{{Name: "p", Rules: []string{"x-y"}}}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	base := render(r)
	for _, want := range []string{
		"| [x-y](#x-y) | host: boot | high | gpu-training | Title |",
		"### Host: boot\n",
		"<a id=\"x-y\"></a>\n#### x-y\n",
		"`policies/lib/rules/boot.rego`\n",
		"Line one line two: rdma/\\*, \\*/efa, lib.so.&lt;version>.\n",
		"**Remediation.** Fix | it.\n",
		"**Facts:** `boot.running.params`\n",
		"**Parameters:** [`p`](fleet-profiles.md#param-p)\n",
		"- <https://example.com/a>\n",
	} {
		if !strings.Contains(base, want) {
			t.Errorf("catalog lacks %q:\n%s", want, base)
		}
	}
	moved := r
	moved.Location = "policies/lib/rules/boot.rego:99"
	if render(moved) != base {
		t.Error("a rule moving within its file changed the catalog; line numbers churn with every edit")
	}
	for name, change := range map[string]func(*policies.Rule){
		"title":       func(r *policies.Rule) { r.Title = "Other" },
		"severity":    func(r *policies.Rule) { r.Severity = "low" },
		"profiles":    func(r *policies.Rule) { r.Profiles = []string{"all"} },
		"description": func(r *policies.Rule) { r.Description = "Other." },
		"remediation": func(r *policies.Rule) { r.Remediation = "Other." },
		"references":  func(r *policies.Rule) { r.References = []string{"https://example.com/b"} },
		"facts":       func(r *policies.Rule) { r.Facts = []string{"sysctl.running"} },
	} {
		changed := r
		change(&changed)
		if render(changed) == base {
			t.Errorf("changing the %s does not change the catalog", name)
		}
	}
}

// The documented parameters are the ones the engine checks profiles
// against (Engine.Params, which makes any other key an error).
func TestParamsAgreeWithEngine(t *testing.T) {
	e, err := policies.New(context.Background(), policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range libraryParams(t) {
		top, _, _ := strings.Cut(p.Name, ".")
		if len(got) == 0 || got[len(got)-1] != top {
			got = append(got, top)
		}
	}
	if diff := cmp.Diff(e.Params(), got); diff != "" {
		t.Errorf("parameters (-engine +docs):\n%s", diff)
	}
}
