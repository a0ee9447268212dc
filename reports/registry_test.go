package reports

import (
	"bytes"
	"testing"
)

// The capabilities a format declares are what the commands act on: a
// format that says it needs no catalog must render the same without one
// (the audit then builds none), and one that streams must read the
// findings through audit.Result.All (TestStreamedReportsMatchCollected).
func TestFormatsDeclareTheirCapabilities(t *testing.T) {
	want := map[string][3]bool{ // streams, needs the catalog, compliance
		"table":       {true, false, false},
		"json":        {true, false, false},
		"markdown":    {true, false, true},
		"sarif":       {false, true, false},
		"junit":       {false, true, false},
		"prometheus":  {false, true, false},
		"html":        {false, true, true},
		"openreports": {false, true, false},
	}
	if got := len(Formats()); got != len(want) {
		t.Fatalf("Formats() = %v, want the %d of the table", Formats(), len(want))
	}
	for name, caps := range want {
		f, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := [3]bool{f.Streams(), f.NeedsCatalog(), f.Compliance()}; got != caps {
			t.Errorf("%s: streams, needs catalog, compliance = %v, want %v", name, got, caps)
		}
		if _, err := GetGate(name); (err == nil) != (name != "openreports") {
			t.Errorf("%s: gate format: %v", name, err)
		}
	}
	if got := ComplianceFormats(); len(got) != 2 || got[0] != "html" || got[1] != "markdown" {
		t.Errorf("ComplianceFormats() = %v, want [html markdown]", got)
	}
	if _, err := Get("csv"); err == nil || err.Error() != `unknown format "csv": want one of html, json, junit, markdown, openreports, prometheus, sarif, table` {
		t.Errorf("Get(csv): %v", err)
	}

	res, cat := exampleAudit(t)
	gate := exampleGate(t)
	for _, f := range formats {
		if f.NeedsCatalog() {
			continue
		}
		with, without := goldenOptions(cat), goldenOptions(cat)
		without.Catalog = nil
		var a, b bytes.Buffer
		if err := f.Render(&a, res, with); err != nil {
			t.Fatal(err)
		}
		if err := f.Render(&b, res, without); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s says it needs no catalog, but renders differently without one", f.Name())
		}
		a.Reset()
		b.Reset()
		g := f.(GateFormat)
		if err := g.RenderGate(&a, gate, with); err != nil {
			t.Fatal(err)
		}
		if err := g.RenderGate(&b, gate, without); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s gate says it needs no catalog, but renders differently without one", f.Name())
		}
	}
}
