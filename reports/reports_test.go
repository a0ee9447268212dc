package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
)

func TestGetRefusesUnknownFormats(t *testing.T) {
	for _, name := range Formats() {
		if _, err := Get(name); err != nil {
			t.Errorf("Get(%q): %v", name, err)
		}
	}
	if _, err := Get("sarif-ish"); err == nil || !strings.Contains(err.Error(), "sarif, table") {
		t.Errorf("unknown format: err = %v", err)
	}
}

func sampleResult() *audit.Result {
	f := policies.Finding{
		Rule: "hugetlb-cma-on-gpu", Severity: "critical", Host: "gpu-a-001", Fleet: "gpu-training",
		Message: "hugetlb_cma=6G on the running and configured kernel command line",
		Evidence: []policies.Evidence{
			{Fact: "boot.running.params.hugetlb_cma", Value: "6G", Source: "/proc/cmdline"},
			{Fact: "boot.configured.params.hugetlb_cma", Value: "6G", Source: "/etc/default/grub.d/60-hugetlb.cfg:3"},
		},
	}
	return &audit.Result{
		Schema:   audit.Schema,
		Findings: []policies.Finding{f},
		Errors:   []audit.HostError{{Host: "gpu-a-009", Error: "root: no such file or directory"}},
		Summary: audit.Summary{Hosts: 2, Audited: 1, Unread: 1, Findings: 1, BySeverity: map[string]int{"critical": 1},
			Fleets: map[string]audit.FleetSummary{"gpu-training": {Hosts: 2, BySeverity: map[string]int{"critical": 1}}}},
	}
}

func TestTableCitesTheConfiguringFile(t *testing.T) {
	var plain, color bytes.Buffer
	r, _ := Get("table")
	if err := r.Render(&plain, sampleResult(), Options{}); err != nil {
		t.Fatal(err)
	}
	out := plain.String()
	for _, want := range []string{
		"== gpu-training: 2 hosts, 1 critical",
		"at /etc/default/grub.d/60-hugetlb.cfg:3", // the file, not /proc/cmdline
		"gpu-a-009: root: no such file or directory",
		"1 host audited, 1 not read (see errors), 1 finding: 1 critical",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("plain table has colour codes")
	}
	if err := r.Render(&color, sampleResult(), Options{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(color.String(), "\x1b[1;31mcritical\x1b[0m") {
		t.Errorf("coloured table lacks a red severity:\n%q", color.String())
	}
}

func TestTableSaysWhenAProfileSetTheSeverity(t *testing.T) {
	res := sampleResult()
	res.Findings[0].Severity = "info"
	res.Findings[0].SeverityOverride = &policies.SeverityOverride{RuleSeverity: "critical", Profile: "gpu-lab"}
	r, _ := Get("table")
	var out bytes.Buffer
	if err := r.Render(&out, res, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "severity set by profile gpu-lab (rule: critical)") {
		t.Errorf("table hides the override:\n%s", out.String())
	}
	j, _ := Get("json")
	out.Reset()
	if err := j.Render(&out, res, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"severity_override": {`) || !strings.Contains(out.String(), `"rule_severity": "critical"`) {
		t.Errorf("json hides the override:\n%s", out.String())
	}
}
