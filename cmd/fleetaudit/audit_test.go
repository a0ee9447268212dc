package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden report files in testdata")

const (
	exampleInventory = "../../examples/fleet/inventory.yaml"
	exampleSnapshots = "../../examples/fleet/snapshots"
)

type findingsDoc struct {
	Schema   string `json:"schema"`
	Findings []struct {
		Rule     string `json:"rule"`
		Severity string `json:"severity"`
		Host     string `json:"host"`
		Fleet    string `json:"fleet"`
		Title    string `json:"title"`
		Message  string `json:"message"`
		Evidence []struct {
			Fact   string `json:"fact"`
			Value  any    `json:"value"`
			Source string `json:"source"`
		} `json:"evidence"`
		Remediation string `json:"remediation"`
	} `json:"findings"`
	Errors []struct {
		Host  string `json:"host"`
		Error string `json:"error"`
	} `json:"errors"`
	Summary struct {
		Hosts      int            `json:"hosts"`
		Findings   int            `json:"findings"`
		BySeverity map[string]int `json:"by_severity"`
	} `json:"summary"`
}

func decodeFindings(t *testing.T, data string) findingsDoc {
	t.Helper()
	var doc findingsDoc
	if err := json.Unmarshal([]byte(data), &doc); err != nil {
		t.Fatalf("not a findings document: %v\n%s", err, data)
	}
	return doc
}

func TestAuditExampleFleetJSONContract(t *testing.T) {
	r := runCLI(t, nil, "audit", "--inventory", exampleInventory, "--snapshots", exampleSnapshots, "--format", "json", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	doc := decodeFindings(t, r.stdout)
	if doc.Schema != "fleetaudit.findings/v1" || doc.Summary.Hosts != 14 || len(doc.Errors) != 0 {
		t.Fatalf("schema %q, %d hosts, errors %v", doc.Schema, doc.Summary.Hosts, doc.Errors)
	}
	hugetlb := map[string]string{}
	for _, f := range doc.Findings {
		if f.Rule == "" || f.Severity == "" || f.Host == "" || f.Title == "" || f.Message == "" || f.Remediation == "" {
			t.Errorf("finding missing a contract field: %+v", f)
		}
		if strings.HasPrefix(f.Host, "web-") && f.Fleet != "web-serving" {
			t.Errorf("%s is in fleet %q, want web-serving (matched by hostname)", f.Host, f.Fleet)
		}
		if f.Rule != "hugetlb-cma-on-gpu" {
			continue
		}
		hugetlb[f.Host] = f.Severity + " running only"
		for _, e := range f.Evidence {
			if e.Fact == "boot.configured.params.hugetlb_cma" {
				hugetlb[f.Host] = f.Severity + " " + e.Source
			}
		}
	}
	want := map[string]string{}
	for _, h := range []string{"gpu-a-001", "gpu-a-002", "gpu-a-003", "gpu-a-004", "gpu-a-005", "gpu-a-006", "gpu-a-007", "gpu-a-008"} {
		want[h] = "critical /etc/default/grub.d/60-hugetlb.cfg:3"
	}
	// gpu-b-007 runs hugetlb_cma=2G, but its own grub.d file already sets
	// hugetlb_cma=0 for the next boot; no RDMA-pinning driver: high.
	want["gpu-b-007"] = "high running only"
	// gpu-k-001 (Rocky 9) does not run it yet: grubby put it in the
	// default boot entry, which the finding cites.
	want["gpu-k-001"] = "critical /boot/loader/entries/e4b5a6c7d8e94f0a8b1c2d3e4f5a6b7c-5.14.0-427.13.1.el9_4.x86_64.conf:5"
	if diff := cmp.Diff(want, hugetlb); diff != "" {
		t.Errorf("hugetlb-cma-on-gpu by host (-want +got); web hosts must not appear:\n%s", diff)
	}
}

func TestAuditFailOnExitCodes(t *testing.T) {
	for _, tt := range []struct {
		failOn string
		want   int
	}{{"critical", exitFindings}, {"high", exitFindings}, {"low", exitFindings}, {"none", exitOK}} {
		r := runCLI(t, nil, "audit", "--snapshots", exampleSnapshots, "--fail-on", tt.failOn, "-o", filepath.Join(t.TempDir(), "out.txt"))
		if r.code != tt.want {
			t.Errorf("--fail-on %s: exit %d, want %d\n%s", tt.failOn, r.code, tt.want, r.stderr)
		}
	}
	// Web servers alone carry no hazard at or above high.
	r := runCLI(t, nil, "audit", "--snapshots", filepath.Join(exampleSnapshots, "web-01.json"), "--fail-on", "high")
	if r.code != exitOK {
		t.Errorf("web-01 alone: exit %d\n%s", r.code, r.stdout)
	}
}

func TestAuditBadInputs(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(exampleSnapshots, "web-01.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	snaps := filepath.Join(dir, "snaps")
	write("snaps/web-01.json", string(good))
	write("snaps/broken.json", `{"schema": "fleetaudit.snapshot/v1", "host": `)

	t.Run("malformed snapshot among good ones", func(t *testing.T) {
		r := runCLI(t, nil, "audit", "--snapshots", snaps, "--format", "json", "--fail-on", "none")
		if r.code != exitOK {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		doc := decodeFindings(t, r.stdout)
		if doc.Summary.Hosts != 2 || len(doc.Errors) != 1 || doc.Errors[0].Host != "broken" || !strings.Contains(doc.Errors[0].Error, "could not read "+filepath.Join(snaps, "broken.json")+": not a JSON snapshot") {
			t.Errorf("hosts %d, errors %+v", doc.Summary.Hosts, doc.Errors)
		}
	})
	t.Run("root that does not exist", func(t *testing.T) {
		r := runCLI(t, nil, "audit", "--snapshots", filepath.Join(snaps, "web-01.json"), "--root", filepath.Join(dir, "nope"), "--format", "json", "--fail-on", "none")
		doc := decodeFindings(t, r.stdout)
		if r.code != exitOK || doc.Summary.Hosts != 2 || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0].Error, "no such file or directory") {
			t.Errorf("exit %d, hosts %d, errors %+v", r.code, doc.Summary.Hosts, doc.Errors)
		}
	})
	t.Run("inventory host nobody supplied", func(t *testing.T) {
		inv := write("inv.yaml", "hosts:\n  web-01: {}\n  web-09: {labels: {rack: r1}}\n")
		r := runCLI(t, nil, "audit", "--inventory", inv, "--snapshots", filepath.Join(snaps, "web-01.json"), "--format", "json", "--fail-on", "none")
		doc := decodeFindings(t, r.stdout)
		if r.code != exitOK || doc.Summary.Hosts != 2 || len(doc.Errors) != 1 || doc.Errors[0].Host != "web-09" {
			t.Errorf("exit %d, hosts %d, errors %+v", r.code, doc.Summary.Hosts, doc.Errors)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"inventory with an unknown key", []string{"--inventory", write("bad-inv.yaml", "hosts:\n  web-01: {flet: web-serving}\n")}, []string{"bad-inv.yaml", `unknown key "flet"`}},
		{"policy with a syntax error", []string{"--snapshots", snaps, "--policies", filepath.Dir(write("pol/site.rego", "package site\n\nx if {\n"))}, []string{"site.rego:4", "rego_parse_error"}},
		{"unknown format", []string{"--snapshots", snaps, "--format", "xml"}, []string{`unknown format "xml"`, "sarif, table"}},
		{"bad fail-on", []string{"--snapshots", snaps, "--fail-on", "severe"}, []string{`--fail-on "severe"`}},
		{"nothing to audit", nil, []string{"nothing to audit"}},
		{"missing snapshots path", []string{"--snapshots", filepath.Join(dir, "none")}, []string{"--snapshots", "no such file"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, append([]string{"audit"}, tt.args...)...)
			if r.code != exitError {
				t.Errorf("exit %d, want %d", r.code, exitError)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

// TestAuditReportGolden pins both report formats for the example fleet; the
// table must read at 80 columns.
func TestAuditReportGolden(t *testing.T) {
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			r := runCLI(t, map[string]string{"COLUMNS": "80"}, "audit", "--inventory", exampleInventory, "--snapshots", exampleSnapshots, "--format", format, "--fail-on", "none")
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			got := r.stdout
			// The one host collected from a root records where it was.
			abs, _ := filepath.Abs("../../testdata/hosts/dropins")
			got = strings.ReplaceAll(got, abs, "<root>")
			checkGolden(t, "audit-example."+format, got)
			if format != "table" {
				return
			}
			for i, line := range strings.Split(got, "\n") {
				if n := utf8.RuneCountInString(line); n > 80 && !strings.HasPrefix(line, "  ") {
					t.Errorf("line %d is %d columns: %q", i+1, n, line)
				}
			}
		})
	}
}

// checkGolden compares got with testdata/name, rewriting it under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/fleetaudit -run '%s' -update)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", golden, diff)
	}
}
