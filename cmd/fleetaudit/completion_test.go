package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// complete runs cobra's hidden __complete command, as the shell scripts do,
// and returns the values offered (descriptions dropped) and the directive.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	r := runCLI(t, nil, append([]string{"__complete"}, args...)...)
	if r.code != exitOK {
		t.Fatalf("__complete %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var values []string
	for _, l := range lines[:len(lines)-1] {
		values = append(values, strings.SplitN(l, "\t", 2)[0])
	}
	return values, lines[len(lines)-1]
}

func TestCompletionCompletesValues(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gpu-lab.yaml"), []byte("name: gpu-lab\nincludes: [gpu-training]\nmatch: {hostnames: [\"lab-*\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noFiles := ":4" // cobra.ShellCompDirectiveNoFileComp
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"audit formats", []string{"audit", "--format", ""}, []string{"html", "json", "junit", "markdown", "openreports", "prometheus", "sarif", "table"}},
		{"gate formats", []string{"gate", "--format", ""}, []string{"html", "json", "junit", "markdown", "prometheus", "sarif", "table"}},
		{"audit group-by", []string{"audit", "--group-by", ""}, []string{"rule", "host", "none"}},
		{"gate formats by prefix", []string{"gate", "--format", "m"}, []string{"markdown"}},
		{"policies list formats", []string{"policies", "list", "--format", ""}, []string{"json", "table"}},
		{"fail-on", []string{"audit", "--fail-on", ""}, []string{"critical", "high", "medium", "low", "none"}},
		{"gate fail-on", []string{"gate", "--fail-on", "h"}, []string{"high"}},
		{"log-level", []string{"audit", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
		{"built-in fleets", []string{"policies", "list", "--fleet", ""}, []string{"common", "gpu-training", "web-serving"}},
		{"fleets from --fleets", []string{"policies", "list", "--fleets", dir, "--fleet", "gpu-"}, []string{"gpu-lab", "gpu-training"}},
		{"rule ids", []string{"policies", "explain", "hugetlb"}, []string{"hugetlb-cma-on-gpu"}},
		{"one rule id only", []string{"policies", "explain", "hugetlb-cma-on-gpu", ""}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, directive := complete(t, tt.args...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("completions (-want +got):\n%s", diff)
			}
			if directive != noFiles {
				t.Errorf("directive %s, want %s (no file names among values)", directive, noFiles)
			}
		})
	}
}

// TestCompletionOffersEveryRule: explain completes every id list shows, the
// rules of --policies included.
func TestCompletionOffersEveryRule(t *testing.T) {
	dir := t.TempDir()
	doc, err := os.ReadFile("../../docs/writing-policies.md")
	if err != nil {
		t.Fatal(err)
	}
	rule := strings.SplitN(strings.SplitN(string(doc), "```rego\n", 2)[1], "```", 2)[0]
	if err := os.WriteFile(filepath.Join(dir, "site.rego"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := complete(t, "policies", "explain", "--policies", dir, "")
	list := runCLI(t, nil, "policies", "list", "--policies", dir, "--format", "json")
	var want []string
	for _, line := range strings.Split(list.stdout, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), `"id": "`); ok {
			want = append(want, strings.TrimSuffix(id, `",`))
		}
	}
	if len(want) == 0 || !strings.Contains(strings.Join(got, " "), "swappiness-high") {
		t.Fatalf("completions %v lack the --policies rule swappiness-high (list: %v)", got, want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("explain completes other ids than list shows (-list +completion):\n%s", diff)
	}
}

func TestCompletionScript(t *testing.T) {
	r := runCLI(t, nil, "completion", "bash")
	if r.code != exitOK || !strings.Contains(r.stdout, "__complete") {
		t.Errorf("completion bash: exit %d\n%.300s", r.code, r.stdout)
	}
}
