package reports

import (
	"bytes"
	"testing"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The textfile collector parses the file with this parser; a file it
// refuses is dropped whole.
func TestPrometheusOutputParses(t *testing.T) {
	res, cat := exampleAudit(t)
	var out bytes.Buffer
	if err := (promFormat{}).Render(&out, res, goldenOptions(cat)); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses the output: %v\n%s", err, out.String())
	}
	total, waived := 0.0, 0.0
	zero := false
	for _, m := range families["fleetaudit_findings"].GetMetric() {
		if m.TimestampMs != nil {
			t.Error("a sample has a timestamp: the textfile collector refuses those")
		}
		total += m.GetGauge().GetValue()
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["fleet"] == "web-serving" && labels["rule"] == "max-map-count-low" && m.GetGauge().GetValue() != 4 {
			t.Errorf("max-map-count-low in web-serving = %v, want 4", m.GetGauge().GetValue())
		}
		if labels["rule"] == "cuda-driver-too-old" && m.GetGauge().GetValue() == 0 {
			zero = true
		}
	}
	for _, m := range families["fleetaudit_findings_waived"].GetMetric() {
		waived += m.GetGauge().GetValue()
	}
	if int(total+waived) != len(res.Findings) || waived != 3 {
		t.Errorf("findings %v + waived %v, want %d in all and 3 waived", total, waived, len(res.Findings))
	}
	if !zero {
		t.Error("a rule the fleet runs without findings has no 0 series")
	}
	if got := len(families["fleetaudit_waiver_expiry_timestamp_seconds"].GetMetric()); got != 4 {
		t.Errorf("%d waiver expiry series, want 4", got)
	}

	var gate bytes.Buffer
	if err := (promFormat{}).RenderGate(&gate, exampleGate(t), Options{}); err != nil {
		t.Fatal(err)
	}
	gf, err := parser.TextToMetricFamilies(bytes.NewReader(gate.Bytes()))
	if err != nil {
		t.Fatalf("gate output does not parse: %v\n%s", err, gate.String())
	}
	if len(gf["fleetaudit_gate_findings"].GetMetric()) == 0 || len(gf["fleetaudit_gate_findings_waived"].GetMetric()) != 1 {
		t.Errorf("gate families: %v", gf)
	}
}

// Label values from hosts and rules are escaped, never break the format.
func TestPrometheusEscapesLabelValues(t *testing.T) {
	res := sampleResult()
	res.Findings[0].Fleet = "we\"ird\\fleet\nname"
	res.Summary.Fleets = map[string]audit.FleetSummary{res.Findings[0].Fleet: {Hosts: 1}}
	var out bytes.Buffer
	if err := (promFormat{}).Render(&out, res, Options{}); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := fams["fleetaudit_findings"].GetMetric()[0].GetLabel()[0].GetValue()
	if got != res.Findings[0].Fleet {
		t.Errorf("fleet label %q, want %q", got, res.Findings[0].Fleet)
	}
}
