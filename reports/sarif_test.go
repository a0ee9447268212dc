package reports

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
)

// sarifSchema compiles the OASIS SARIF 2.1.0 schema (errata 01, vendored
// from the OASIS TC's repository: sarif-2.1/schema/sarif-schema-2.1.0.json),
// with formats (uri, uri-reference, date-time) asserted.
func compileSARIFSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func validateSARIF(t *testing.T, sch *jsonschema.Schema, data []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("SARIF output is not JSON: %v", err)
	}
	return sch.Validate(inst)
}

func TestSARIFValidatesAgainstTheSchema(t *testing.T) {
	sch := compileSARIFSchema(t)
	res, cat := exampleAudit(t)
	var audit bytes.Buffer
	if err := (sarifFormat{}).Render(&audit, res, goldenOptions(cat)); err != nil {
		t.Fatal(err)
	}
	if err := validateSARIF(t, sch, audit.Bytes()); err != nil {
		t.Errorf("audit SARIF does not validate:\n%v", err)
	}
	// Without a catalog the rules come from the findings alone.
	var bare bytes.Buffer
	if err := (sarifFormat{}).Render(&bare, res, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := validateSARIF(t, sch, bare.Bytes()); err != nil {
		t.Errorf("audit SARIF without catalog does not validate:\n%v", err)
	}
	var gate bytes.Buffer
	if err := (sarifFormat{}).RenderGate(&gate, exampleGate(t), goldenOptions(cat)); err != nil {
		t.Fatal(err)
	}
	if err := validateSARIF(t, sch, gate.Bytes()); err != nil {
		t.Errorf("gate SARIF does not validate:\n%v", err)
	}

	// The validator does catch what the schema forbids.
	broken := strings.Replace(audit.String(), `"level": "error"`, `"level": "fatal"`, 1)
	if err := validateSARIF(t, sch, []byte(broken)); err == nil {
		t.Error("a result with level fatal validates: the schema check is not checking")
	}
}

func TestSARIFLocationsComeFromProvenance(t *testing.T) {
	var gate bytes.Buffer
	if err := (sarifFormat{}).RenderGate(&gate, exampleGate(t), Options{}); err != nil {
		t.Fatal(err)
	}
	var log sarifLog
	if err := json.Unmarshal(gate.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	byRule := map[string]sarifResult{}
	for _, r := range log.Runs[0].Results {
		byRule[r.RuleID+"/"+r.BaselineState] = r
	}
	intro, ok := byRule["hugetlb-cma-on-gpu/new"]
	if !ok {
		t.Fatalf("no new hugetlb-cma-on-gpu result in %v", byRule)
	}
	phys := intro.Locations[0].PhysicalLocation
	if phys == nil || phys.ArtifactLocation.URI != "layers/base/etc/default/grub.d/60-hugetlb.cfg" ||
		phys.ArtifactLocation.URIBaseID != "%SRCROOT%" || phys.Region == nil || phys.Region.StartLine != 2 {
		t.Errorf("introduced finding located at %+v, want layers/base/etc/default/grub.d/60-hugetlb.cfg line 2 under %%SRCROOT%%", phys)
	}
	if len(intro.Suppressions) != 1 || intro.Suppressions[0].Status != "accepted" {
		t.Errorf("the waived finding has suppressions %+v, want one accepted", intro.Suppressions)
	}
	// A fact from a fleet's baseline snapshot points at the baseline file.
	thp := byRule["thp-always/unchanged"]
	if got := thp.Locations[0].PhysicalLocation; got == nil || got.ArtifactLocation.URI != "baselines/web-serving.json" {
		t.Errorf("baseline fact located at %+v, want baselines/web-serving.json", got)
	}

	res, _ := exampleAudit(t)
	var audit bytes.Buffer
	if err := (sarifFormat{}).Render(&audit, res, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(audit.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	first := log.Runs[0].Results[0]
	if got := first.Locations[0].PhysicalLocation; got == nil || got.ArtifactLocation.URI != "file://gpu-a-001/etc/default/grub.d/60-hugetlb.cfg" || got.Region.StartLine != 3 {
		t.Errorf("host finding located at %+v, want file://gpu-a-001/etc/default/grub.d/60-hugetlb.cfg line 3", got)
	}
	levels := map[string]string{}
	for _, r := range log.Runs[0].Results {
		levels[r.Properties["severity"].(string)] = r.Level
	}
	for sev, want := range map[string]string{"critical": "error", "high": "error", "medium": "warning", "low": "note"} {
		if levels[sev] != want {
			t.Errorf("severity %s maps to level %q, want %q", sev, levels[sev], want)
		}
	}
}

// sarifURIs collects every artifactLocation.uri of a SARIF log, with the
// result it belongs to.
func sarifURIs(t *testing.T, data []byte) map[string][]string {
	t.Helper()
	var log sarifLog
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range log.Runs[0].Results {
		host, _ := r.Properties["host"].(string)
		for _, l := range append(slices.Clone(r.Locations), r.RelatedLocations...) {
			if l.PhysicalLocation != nil {
				out[host] = append(out[host], l.PhysicalLocation.ArtifactLocation.URI)
			}
		}
	}
	return out
}

// checkURI fails a uri that is no valid URI reference (RFC 3986): one Go's
// net/url cannot read, or holding what must be escaped, or two files
// joined into one.
func checkURI(t *testing.T, uri string) *url.URL {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Errorf("uri %q: %v", uri, err)
		return nil
	}
	if i := strings.IndexAny(uri, "<>\" \\^`{|}\x00\n"); i >= 0 {
		t.Errorf("uri %q holds %q unescaped", uri, uri[i])
	}
	if strings.Contains(uri, ", ") || strings.Contains(uri, ",%20") {
		t.Errorf("uri %q joins two files", uri)
	}
	return u
}

// Every file a finding cites is a location of its own, its URI encoded as
// RFC 3986 asks, whatever the host's name and the file's path hold; a host
// name no URI host can carry gets no file location (its logical location
// names it), and the log validates against the schema.
func TestSARIFURIsAreValidOnePerFile(t *testing.T) {
	nccl := "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3"
	wheel := "/opt/venv/lib/nvidia nccl/METADATA"
	odd := "/etc/odd <dir>/\"x\"#1?%41.conf"
	finding := func(host string) policies.Finding {
		return policies.Finding{Rule: "nccl-version-skew", Severity: "high", Host: host, Fleet: "gpu-training", Message: "two NCCLs",
			Evidence: []policies.Evidence{
				{Fact: "libraries.nccl", Value: "2.18.3", Source: nccl + ", " + wheel + ":3"},
				{Fact: "sysctl.x", Value: "1", Source: odd + ":4"},
				{Fact: "boot.cmdline", Value: "ro", Source: "/proc/cmdline"},
				{Fact: "memory.y", Value: "1", Source: "default: not set, so 0"},
				{Fact: "nvidia.z", Value: "1", Source: "command: nvidia-smi --query-gpu=a,b"},
			}}
	}
	hosts := map[string]string{ // name: the URI host it gets ("": none)
		"gpu-a-001":       "gpu-a-001",
		"gpu-ü":           "gpu-%C3%BC",
		"fe80::1":         "[fe80::1]",
		`gpu<"evil"> 1`:   "",
		"gpu/../../x":     "",
		"gpu@other:22":    "",
		"gpu-a-001,other": "gpu-a-001,other",
	}
	res := &audit.Result{Schema: audit.Schema, Summary: audit.Summary{Hosts: len(hosts), Audited: len(hosts)}}
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		res.Findings = append(res.Findings, finding(h))
	}
	var buf bytes.Buffer
	if err := (sarifFormat{}).Render(&buf, res, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := validateSARIF(t, compileSARIFSchema(t), buf.Bytes()); err != nil {
		t.Errorf("SARIF with hostile names does not validate:\n%v", err)
	}
	got := sarifURIs(t, buf.Bytes())
	for name, uriHost := range hosts {
		uris := got[name]
		if uriHost == "" {
			if len(uris) > 0 {
				t.Errorf("host %q: locations %q, want none", name, uris)
			}
			continue
		}
		var paths []string
		for _, uri := range uris {
			u := checkURI(t, uri)
			if u == nil {
				continue
			}
			if u.Scheme != "file" || !strings.HasPrefix(uri, "file://"+uriHost+"/") {
				t.Errorf("host %q: uri %q, want file://%s/...", name, uri, uriHost)
			}
			paths = append(paths, u.Path)
		}
		if want := []string{nccl, wheel, odd}; !slices.Equal(paths, want) {
			t.Errorf("host %q: files %q, want %q, one location each", name, paths, want)
		}
	}

	// The gate's repo paths, the same way.
	for src, want := range map[string][]string{
		"layers/base/etc/a b.cfg:2, layers/gpu/etc/c<d>.cfg": {"layers/base/etc/a%20b.cfg", "layers/gpu/etc/c%3Cd%3E.cfg"},
		"k8s:x/job.yaml:1": {"./k8s:x/job.yaml"},
		"/proc/cmdline:1 (baseline baselines/gpu, 1.json)":    {"baselines/gpu,%201.json"},
		"default: not set in layers/base/etc/x.cfg, nor here": nil,
	} {
		var uris []string
		for _, loc := range sarifFileLocations(src, "", true) {
			uri := loc.PhysicalLocation.ArtifactLocation.URI
			uris = append(uris, uri)
			if u, err := url.Parse(uri); err != nil || u.IsAbs() {
				t.Errorf("repo uri %q: %v (absolute %v)", uri, err, err == nil && u.IsAbs())
			}
		}
		if !slices.Equal(uris, want) {
			t.Errorf("repo source %q: uris %q, want %q", src, uris, want)
		}
	}
}

// The golden logs' URIs pass the same checks.
func TestSARIFGoldenURIs(t *testing.T) {
	for _, file := range []string{"testdata/audit.sarif", "testdata/gate.sarif"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, uris := range sarifURIs(t, data) {
			for _, uri := range uris {
				checkURI(t, uri)
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no uri checked", file)
		}
	}
}
