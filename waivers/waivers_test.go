package waivers

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/policies"
)

const good = `# platform waivers
waivers:
  - rule: hugetlb-cma-on-gpu
    fleet: gpu-training
    hosts: ["gpu-a-00[1-3]", "gpu-b-*"]
    owner: alice@example.com
    justification: INFRA-1234 removes it next window.
    expires: 2026-09-30
  - rule: thp-always
    paths: ["layers/web/**"]
    owner: bob
    justification: Benchmarks.
    expires: 2027-07-15T18:00:00Z
`

func TestParseGood(t *testing.T) {
	set, err := Parse("waivers.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Waivers) != 2 {
		t.Fatalf("%d waivers, want 2", len(set.Waivers))
	}
	if got := set.Waivers[0].Source; got != "waivers.yaml:3" {
		t.Errorf("first waiver's source %q, want waivers.yaml:3", got)
	}
	if got := set.Waivers[1].Source; got != "waivers.yaml:9" {
		t.Errorf("second waiver's source %q, want waivers.yaml:9", got)
	}
	// A date holds through that day (UTC).
	if got, want := set.Waivers[0].ExpiresAt(), time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("expires at %s, want %s", got, want)
	}
}

// Every problem names FILE:LINE and what is wrong; all are reported at
// once.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"unknown key", "waivers:\n  - rule: x\n    fleet: f\n    owner: o\n    justification: j\n    expires: 2026-01-01\n    expiry: 2026-01-01\n",
			[]string{`w.yaml:7: unknown key "expiry"`}},
		{"unknown top-level key", "waiver:\n  - rule: x\n", []string{`w.yaml:1: unknown key "waiver"`}},
		{"missing fields", "waivers:\n  - rule: x\n    fleet: f\n",
			[]string{"w.yaml:2: waiver 1 (x): owner is required", "w.yaml:2: waiver 1 (x): justification is required", "w.yaml:2: waiver 1 (x): expires is required"}},
		{"blank justification", "waivers:\n  - rule: x\n    fleet: f\n    owner: o\n    justification: '  '\n    expires: 2026-01-01\n",
			[]string{"w.yaml:2: waiver 1 (x): justification is required"}},
		{"no scope", "waivers:\n  - rule: x\n    owner: o\n    justification: j\n    expires: 2026-01-01\n",
			[]string{"w.yaml:2: waiver 1 (x): scope is required"}},
		{"no rule", "waivers:\n  - fleet: f\n    owner: o\n    justification: j\n    expires: 2026-01-01\n",
			[]string{"w.yaml:2: waiver 1 (no rule): rule is required"}},
		{"rule pattern", "waivers:\n  - rule: nccl-*\n    fleet: f\n    owner: o\n    justification: j\n    expires: 2026-01-01\n",
			[]string{"w.yaml:2: waiver 1 (nccl-*): rule \"nccl-*\": a waiver names one rule id"}},
		{"collection-error", "waivers:\n  - rule: collection-error\n    fleet: f\n    owner: o\n    justification: j\n    expires: 2026-01-01\n",
			[]string{"w.yaml:2: waiver 1 (collection-error): collection-error cannot be waived"}},
		{"bad expiry", "waivers:\n  - rule: x\n    fleet: f\n    owner: o\n    justification: j\n    expires: next week\n",
			[]string{`w.yaml:2: waiver 1 (x): expires "next week": want a date`}},
		{"bad glob", "waivers:\n  - rule: x\n    hosts: ['gpu-[']\n    owner: o\n    justification: j\n    expires: 2026-01-01\n",
			[]string{`hosts: "gpu-[" is not a valid glob`}},
		{"absolute path", "waivers:\n  - rule: x\n    paths: [/etc/x]\n    owner: o\n    justification: j\n    expires: 2026-01-01\n",
			[]string{`paths: "/etc/x": want a path relative to the config repo's root`}},
		{"wrong type", "waivers:\n  - rule: x\n    hosts: gpu-1\n", []string{"w.yaml:3:"}},
		{"not a list", "waivers: {}\n", []string{"w.yaml:1: want a list under waivers:"}},
		{"empty", "", []string{"empty file"}},
		{"two documents", "waivers: []\n---\nwaivers: []\n", []string{"more than one YAML document"}},
		{"second waiver", "waivers:\n  - rule: x\n    fleet: f\n    owner: o\n    justification: j\n    expires: 2026-01-01\n  - rule: y\n    fleet: f\n    owner: o\n    expires: 2026-01-01\n",
			[]string{"w.yaml:7: waiver 2 (y): justification is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("w.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

func TestLoadRefusesFIFO(t *testing.T) {
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "/dev/zero") {
		t.Errorf("Load(/dev/zero) = %v, want an error naming it", err)
	}
	if _, err := Load("does-not-exist.yaml"); err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func finding(rule, fleet, host string, sources ...string) policies.Finding {
	f := policies.Finding{Rule: rule, Severity: "high", Fleet: fleet, Host: host}
	for _, s := range sources {
		f.Evidence = append(f.Evidence, policies.Evidence{Fact: "x", Source: s})
	}
	return f
}

func TestMatches(t *testing.T) {
	set, err := Parse("w.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	hugetlb, thp := &set.Waivers[0], &set.Waivers[1]
	for _, tc := range []struct {
		w    *Waiver
		f    policies.Finding
		want bool
	}{
		{hugetlb, finding("hugetlb-cma-on-gpu", "gpu-training", "gpu-a-002"), true},
		{hugetlb, finding("hugetlb-cma-on-gpu", "gpu-training", "gpu-b-117"), true},
		{hugetlb, finding("hugetlb-cma-on-gpu", "gpu-training", "gpu-a-004"), false},  // host out of scope
		{hugetlb, finding("hugetlb-cma-on-gpu", "gpu-inference", "gpu-a-002"), false}, // fleet
		{hugetlb, finding("thp-always", "gpu-training", "gpu-a-002"), false},          // rule
		{thp, finding("thp-always", "web", "web", "layers/web/sys/kernel/mm/thp:1"), true},
		{thp, finding("thp-always", "web", "web", "layers/web/a/b/c/d:9"), true},
		{thp, finding("thp-always", "web", "web", "layers/base/sys/kernel/mm/thp:1"), false},
		{thp, finding("thp-always", "web", "web", "/sys/kernel/mm/transparent_hugepage/enabled (baseline layers/web/baseline.json)"), true},
		{thp, finding("thp-always", "web", "web", "default: the kernel's"), false},
		{thp, finding("thp-always", "web", "web"), false}, // no file cited
	} {
		if got := tc.w.Matches(&tc.f); got != tc.want {
			t.Errorf("%s matches %s/%s/%s %v: %v, want %v", tc.w.Source, tc.f.Rule, tc.f.Fleet, tc.f.Host, tc.f.Evidence, got, tc.want)
		}
	}
}

func TestMatchPath(t *testing.T) {
	for _, tc := range []struct {
		glob, name string
		want       bool
	}{
		{"layers/**", "layers/a/b", true},
		{"layers/**", "layers", true},
		{"**/grub.d/*.cfg", "layers/base/etc/default/grub.d/60.cfg", true},
		{"**/grub.d/*.cfg", "layers/base/etc/default/grub.d/x/60.cfg", false},
		{"layers/*/etc", "layers/a/etc", true},
		{"layers/*/etc", "layers/a/b/etc", false},
		{"a/**/b/**/c", "a/x/b/y/z/c", true},
	} {
		if got := matchPath(tc.glob, tc.name); got != tc.want {
			t.Errorf("matchPath(%q, %q) = %v, want %v", tc.glob, tc.name, got, tc.want)
		}
	}
}

func TestApply(t *testing.T) {
	doc := good + `  - rule: memlock-too-low
    fleet: "*"
    owner: carol
    justification: old image
    expires: 2026-01-31
  - rule: hugetlb-cma-on-gpu
    fleet: gpu-*
    owner: dave
    justification: overlapping, second in file order
    expires: 2027-01-01
`
	set, err := Parse("w.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	findings := []policies.Finding{
		finding("hugetlb-cma-on-gpu", "gpu-training", "gpu-a-001"),
		finding("hugetlb-cma-on-gpu", "gpu-training", "gpu-a-009"),
		finding("memlock-too-low", "gpu-training", "gpu-a-001"),
	}
	now := time.Date(2026, 9, 30, 23, 59, 0, 0, time.UTC) // the first waiver's last minute
	rep := set.Apply(now, findings)
	if len(findings) != 3 {
		t.Fatalf("Apply dropped findings: %d left", len(findings))
	}
	if w := findings[0].Waived; w == nil || w.Owner != "alice@example.com" || w.Source != "w.yaml:3" {
		t.Errorf("gpu-a-001 waived by %+v, want alice's waiver (first in file order)", w)
	}
	if w := findings[1].Waived; w == nil || w.Owner != "dave" {
		t.Errorf("gpu-a-009 waived by %+v, want dave's", w)
	}
	if findings[2].Waived != nil {
		t.Error("the expired waiver still applies")
	}
	states := map[string]string{}
	for _, st := range rep.Waivers {
		states[st.Rule+"/"+st.Owner] = st.State
	}
	want := map[string]string{"hugetlb-cma-on-gpu/alice@example.com": Active, "thp-always/bob": Stale,
		"memlock-too-low/carol": Expired, "hugetlb-cma-on-gpu/dave": Active}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("%s: state %q, want %q", k, states[k], v)
		}
	}
	if rep.Waived != 2 || rep.Expired != 1 || rep.Stale != 1 {
		t.Errorf("report counts waived %d expired %d stale %d, want 2 1 1", rep.Waived, rep.Expired, rep.Stale)
	}
	if rep.Waivers[2].Matched != 1 {
		t.Errorf("the expired waiver would cover %d findings, want 1", rep.Waivers[2].Matched)
	}

	// A day later alice's waiver has expired too: its finding counts again.
	rep = set.Apply(now.Add(time.Minute), findings)
	if findings[0].Waived == nil || findings[0].Waived.Owner != "dave" {
		t.Errorf("after alice's expiry gpu-a-001 is waived by %+v, want dave's", findings[0].Waived)
	}
	if rep.Expired != 2 { // memlock and alice
		t.Errorf("%d expired, want 2", rep.Expired)
	}

	var none *Set
	if none.Apply(now, findings) != nil {
		t.Error("a nil set reports")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	if data, err := os.ReadFile("../reports/testdata/waivers.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("waivers:\n  - rule: x\n    hosts: ['[']\n"))
	f.Add([]byte("a: &a [*a, *a]\nwaivers: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Parse("f.yaml", data)
		if err != nil {
			return
		}
		for _, w := range set.Waivers {
			if w.Owner == "" || w.Justification == "" || w.ExpiresAt().IsZero() || w.Rule == "" {
				t.Fatalf("accepted an incomplete waiver: %+v", w)
			}
		}
		fs := []policies.Finding{finding("x", "f", "h", "a/b:1")}
		set.Apply(time.Now(), fs)
	})
}
