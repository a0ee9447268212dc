package reports

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// crdSchemas compiles the openAPIV3Schema of the vendored OpenReports CRDs
// (testdata/openreports, see its README) by kind. An object the CRD
// declares no field of is closed (additionalProperties false): the API
// server would prune a field the schema lacks, so the output has none.
func crdSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	out := map[string]*jsonschema.Schema{}
	for kind, file := range map[string]string{"Report": "openreports.io_reports.yaml", "ClusterReport": "openreports.io_clusterreports.yaml"} {
		data, err := os.ReadFile("../testdata/openreports/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Names    struct{ Kind string }
				Versions []struct {
					Name   string
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					}
				}
			}
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		if crd.Spec.Names.Kind != kind || len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" {
			t.Fatalf("%s: kind %s, versions %v; want %s v1alpha1", file, crd.Spec.Names.Kind, crd.Spec.Versions, kind)
		}
		schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		closeObjects(schema)
		c := jsonschema.NewCompiler()
		if err := c.AddResource(file, schema); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile(file)
		if err != nil {
			t.Fatal(err)
		}
		out[kind] = sch
	}
	return out
}

func closeObjects(s map[string]any) {
	if props, ok := s["properties"].(map[string]any); ok {
		if _, open := s["additionalProperties"]; !open {
			s["additionalProperties"] = false
		}
		for _, p := range props {
			closeObjects(p.(map[string]any))
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		closeObjects(items)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		closeObjects(ap)
	}
}

// validateOpenReports checks a rendered List: each item against its
// kind's CRD schema, with a valid object name, Reports in a namespace and
// ClusterReports in none.
func validateOpenReports(t *testing.T, schemas map[string]*jsonschema.Schema, data []byte) []OpenReport {
	t.Helper()
	var list struct {
		APIVersion, Kind string
		Items            []json.RawMessage
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("openreports output is not JSON: %v", err)
	}
	if list.APIVersion != "v1" || list.Kind != "List" {
		t.Errorf("output is %s %s, want a v1 List", list.APIVersion, list.Kind)
	}
	var reps []OpenReport
	for _, raw := range list.Items {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		var rep OpenReport
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatal(err)
		}
		sch := schemas[rep.Kind]
		if sch == nil || rep.APIVersion != "openreports.io/v1alpha1" {
			t.Errorf("%s: %s %s is no OpenReports kind", rep.Metadata.Name, rep.APIVersion, rep.Kind)
			continue
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s %s does not match the CRD schema: %v", rep.Kind, rep.Metadata.Name, err)
		}
		if errs := validation.IsDNS1123Subdomain(rep.Metadata.Name); len(errs) > 0 {
			t.Errorf("%s: not an object name: %v", rep.Metadata.Name, errs)
		}
		if (rep.Kind == "Report") != (rep.Metadata.Namespace != "") {
			t.Errorf("%s %s in namespace %q", rep.Kind, rep.Metadata.Name, rep.Metadata.Namespace)
		}
		reps = append(reps, rep)
	}
	return reps
}

// The example audit's reports, and those of hostile content, parse
// against the CRDs' schemas; a report that breaks the schema is caught.
func TestOpenReportsMatchTheCRDSchema(t *testing.T) {
	schemas := crdSchemas(t)
	res, cat := exampleAudit(t)
	var out bytes.Buffer
	if err := (openReportsFormat{}).Render(&out, res, goldenOptions(cat)); err != nil {
		t.Fatal(err)
	}
	reps := validateOpenReports(t, schemas, out.Bytes())
	if len(reps) != 15 || reps[len(reps)-1].Metadata.Name != "fleetaudit-waivers" {
		t.Errorf("%d reports, want one per host of the example fleet (14) and the waivers'", len(reps))
	} else if w := reps[len(reps)-1]; w.Summary != (OpenReportSummary{Warn: 3}) {
		// An expired waiver and two stale ones (testdata/waivers.yaml).
		t.Errorf("waivers report: %+v", w)
	}

	const evil = "Gpu_\x1b]0;x\x07\u202e<script>\"\n"
	hostile := sampleResult()
	f := &hostile.Findings[0]
	f.Host, f.Message, f.Evidence[1].Value = evil, "msg "+evil, evil
	f.Waived = &policies.Waived{Owner: evil, Justification: evil, Expires: "2099-01-01", Source: "w.yaml:2"}
	out.Reset()
	if err := (openReportsFormat{}).Render(&out, hostile, Options{OpenReports: OpenReportsOptions{Node: func(h string) string { return h }}}); err != nil {
		t.Fatal(err)
	}
	validateOpenReports(t, schemas, out.Bytes())

	// The check has teeth: a result the enum lacks, a field the CRD lacks.
	for _, bad := range []string{`"result": "waived"`, `"severity": "warning"`, `"scored": "yes"`} {
		doc := strings.Replace(out.String(), `"source": "fleetaudit",`, bad+`, "source": "fleetaudit",`, 1)
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		item := inst.(map[string]any)["items"].([]any)[0]
		if err := schemas["Report"].Validate(item); err == nil {
			t.Errorf("a report with %s passes the schema", bad)
		}
	}
}

// One result per rule and host, its outcome as the brief and the spec
// say: collection errors and unread hosts error, uncollected facts skip,
// waived findings skip with their waiver, the rest fail or pass; nodes get
// a namespaced Report scoped to the Node, other hosts a ClusterReport.
func TestOpenReportsResults(t *testing.T) {
	rule := func(id, sev string) policies.Rule {
		return policies.Rule{ID: id, Title: id + " title", Severity: sev, Ref: "data.fleetaudit.rules.boot." + strings.ReplaceAll(id, "-", "_")}
	}
	// A rule that reads nothing but pods judges no host whose pods were not read.
	podRule := rule("r-pods", "high")
	podRule.Facts = []string{"pods"}
	cat := &Catalog{
		Rules:      map[string]policies.Rule{"r-crit": rule("r-crit", "critical"), "r-low": rule("r-low", "low"), "r-skip": rule("r-skip", "high"), "r-slow": rule("r-slow", "medium"), "r-pods": podRule},
		FleetRules: map[string][]string{"gpu": {"r-crit", "r-low", "r-skip", "r-slow", "r-pods"}},
	}
	fail := policies.Finding{Rule: "r-crit", Severity: "high", Host: "node-a", Fleet: "gpu", Message: "hugetlb_cma=6G",
		Remediation:      "drop it",
		Evidence:         []policies.Evidence{{Fact: "boot.configured.params.hugetlb_cma", Value: "6G", Source: "/etc/default/grub:3"}},
		SeverityOverride: &policies.SeverityOverride{RuleSeverity: "critical", Profile: "gpu"}}
	waived := fail
	waived.Host, waived.Rule = "bare-1", "r-low"
	waived.Waived = &policies.Waived{Owner: "alice@example.com", Justification: "INFRA-1", Expires: "2099-01-01", Source: "waivers.yaml:3"}
	collErr := policies.Finding{Rule: policies.CollectionErrorRule, Severity: "medium", Host: "node-a", Fleet: "gpu", Message: "sysctl: permission denied"}
	unread := policies.Finding{Rule: policies.CollectionErrorRule, Severity: "medium", Host: "gone", Fleet: "gpu", Message: "ssh: connection refused"}
	res := &audit.Result{
		Findings: []policies.Finding{fail, waived, collErr, unread},
		Hosts: []fleetrun.HostRun{
			{Host: "node-a", Fleet: "gpu", Skipped: []string{"r-skip"}},
			{Host: "bare-1", Fleet: "gpu", TimedOut: []string{"r-slow"}, Skipped: []string{"r-skip"}, Image: true, PodsUnread: true},
			{Host: "gone", Fleet: "gpu", Unread: "ssh: connection refused"},
		},
	}
	at := time.Date(2026, 12, 7, 2, 30, 0, 5, time.UTC)
	reps := OpenReports(res, Options{Catalog: cat, Run: RunInfo{At: at},
		OpenReports: OpenReportsOptions{Namespace: "audit", Node: func(h string) string {
			if h == "node-a" {
				return "ip-10-0-0-1.ec2.internal"
			}
			return ""
		}}})
	byName := map[string]OpenReport{}
	for _, r := range reps {
		byName[r.Metadata.Name] = r
	}
	if len(reps) != 3 {
		t.Fatalf("%d reports, want 3: %v", len(reps), byName)
	}
	node, ok := byName["fleetaudit-node-ip-10-0-0-1.ec2.internal"]
	if !ok || node.Kind != "Report" || node.Metadata.Namespace != "audit" || node.Scope == nil || *node.Scope != (OpenReportRef{APIVersion: "v1", Kind: "Node", Name: "ip-10-0-0-1.ec2.internal"}) {
		t.Fatalf("node-a's report: %+v", node)
	}
	if reps[0].Metadata.Name != node.Metadata.Name {
		t.Errorf("Reports do not come first: %s", reps[0].Metadata.Name)
	}
	if node.Source != "fleetaudit" || node.Metadata.Labels["app.kubernetes.io/managed-by"] != "fleetaudit" || node.Metadata.Annotations["fleetaudit.io/host"] != "node-a" {
		t.Errorf("node-a: source %q, metadata %+v", node.Source, node.Metadata)
	}
	type want struct{ result, severity, message string }
	check := func(rep OpenReport, exp map[string]want, sum OpenReportSummary) map[string]OpenReportResult {
		t.Helper()
		got := map[string]OpenReportResult{}
		for _, r := range rep.Results {
			if _, dup := got[r.Policy]; dup {
				t.Errorf("%s: two results for %s", rep.Metadata.Name, r.Policy)
			}
			got[r.Policy] = r
			if r.Source != "fleetaudit" || r.Timestamp == nil || r.Timestamp.Seconds != at.Unix() || r.Timestamp.Nanos != 5 {
				t.Errorf("%s %s: source %q, timestamp %+v", rep.Metadata.Name, r.Policy, r.Source, r.Timestamp)
			}
		}
		if len(got) != len(exp) {
			t.Errorf("%s: results for %d rules, want %d", rep.Metadata.Name, len(got), len(exp))
		}
		for id, w := range exp {
			r := got[id]
			if r.Result != w.result || r.Severity != w.severity || !strings.Contains(r.Message, w.message) {
				t.Errorf("%s %s: %s %s %q, want %s %s %q", rep.Metadata.Name, id, r.Result, r.Severity, r.Message, w.result, w.severity, w.message)
			}
		}
		if rep.Summary != sum {
			t.Errorf("%s: summary %+v, want %+v", rep.Metadata.Name, rep.Summary, sum)
		}
		return got
	}
	got := check(node, map[string]want{
		"r-crit":                     {"fail", "high", "hugetlb_cma=6G"}, // the profile's severity
		"r-low":                      {"pass", "low", "r-low title"},
		"r-skip":                     {"skip", "high", "facts not collected"},
		"r-slow":                     {"pass", "medium", "r-slow title"},
		"r-pods":                     {"pass", "high", "r-pods title"},
		policies.CollectionErrorRule: {"error", "medium", "sysctl: permission denied"},
	}, OpenReportSummary{Pass: 3, Fail: 1, Error: 1, Skip: 1})
	p := got["r-crit"].Properties
	for k, v := range map[string]string{
		"evidence.boot.configured.params.hugetlb_cma": "6G (at /etc/default/grub:3)",
		"provenance":       "/etc/default/grub:3",
		"remediation":      "drop it",
		"severity.rule":    "critical",
		"severity.profile": "gpu",
	} {
		if p[k] != v {
			t.Errorf("r-crit property %s = %q, want %q", k, p[k], v)
		}
	}
	if got["r-crit"].Category != "boot" || !got["r-crit"].Scored {
		t.Errorf("r-crit: category %q, scored %v", got["r-crit"].Category, got["r-crit"].Scored)
	}

	bare := byName["fleetaudit-host-bare-1"]
	if bare.Kind != "ClusterReport" || bare.Metadata.Namespace != "" || bare.Scope != nil {
		t.Fatalf("bare-1's report: %+v", bare)
	}
	got = check(bare, map[string]want{
		"r-crit": {"pass", "critical", "r-crit title"},
		"r-low":  {"skip", "high", "waived: hugetlb_cma=6G"},
		"r-skip": {"skip", "high", "offline image"},
		"r-slow": {"error", "medium", "ran past its budget"},
		"r-pods": {"skip", "high", "no pods were read"},
	}, OpenReportSummary{Pass: 1, Error: 1, Skip: 3})
	if p := got["r-low"].Properties; p["waiver.owner"] != "alice@example.com" || p["waiver.justification"] != "INFRA-1" ||
		p["waiver.expires"] != "2099-01-01" || p["waiver.source"] != "waivers.yaml:3" {
		t.Errorf("waived result's properties %v", p)
	}

	check(byName["fleetaudit-host-gone"], map[string]want{
		"r-crit":                     {"error", "critical", "could not be read: ssh: connection refused"},
		"r-low":                      {"error", "low", "could not be read"},
		"r-skip":                     {"error", "high", "could not be read"},
		"r-slow":                     {"error", "medium", "could not be read"},
		"r-pods":                     {"error", "high", "could not be read"},
		policies.CollectionErrorRule: {"error", "medium", "ssh: connection refused"},
	}, OpenReportSummary{Error: 6})
}

// Host names that are no object names get one that is, and two such hosts
// never share it.
func TestOpenReportsObjectNames(t *testing.T) {
	seen := map[string]string{}
	for _, h := range []string{"gpu-a-001", "GPU_A_001", "gpu_a_001", "a..b", "-x-", strings.Repeat("n", 300), strings.Repeat("n", 301), "", "ünï"} {
		name := objectName("fleetaudit-host-", h)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("%q: %q is no object name: %v", h, name, errs)
		}
		if other, ok := seen[name]; ok {
			t.Errorf("%q and %q share %q", h, other, name)
		}
		seen[name] = h
	}
	if got := objectName("fleetaudit-host-", "gpu-a-001"); got != "fleetaudit-host-gpu-a-001" {
		t.Errorf("a valid name is changed: %s", got)
	}
}
