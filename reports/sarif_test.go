package reports

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
	if err := (sarifRenderer{}).Render(&audit, res, goldenOptions(cat)); err != nil {
		t.Fatal(err)
	}
	if err := validateSARIF(t, sch, audit.Bytes()); err != nil {
		t.Errorf("audit SARIF does not validate:\n%v", err)
	}
	// Without a catalog the rules come from the findings alone.
	var bare bytes.Buffer
	if err := (sarifRenderer{}).Render(&bare, res, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := validateSARIF(t, sch, bare.Bytes()); err != nil {
		t.Errorf("audit SARIF without catalog does not validate:\n%v", err)
	}
	var gate bytes.Buffer
	if err := (sarifGate{}).RenderGate(&gate, exampleGate(t), goldenOptions(cat)); err != nil {
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
	if err := (sarifGate{}).RenderGate(&gate, exampleGate(t), Options{}); err != nil {
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
	if err := (sarifRenderer{}).Render(&audit, res, Options{}); err != nil {
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
