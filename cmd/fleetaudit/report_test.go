package main

import (
	"strings"
	"testing"
)

// --group-by lays out the table and Markdown; asked for with a format that
// ignores it, it is a usage error rather than silently dropped.
func TestReportGroupByWithAFormatThatIgnoresIt(t *testing.T) {
	for _, format := range []string{"json", "sarif", "junit", "prometheus", "html"} {
		r := runCLI(t, nil, "audit", "--snapshots", exampleSnapshots, "--format", format, "--group-by", "rule", "--fail-on", "none")
		want := "--group-by rule: --format " + format + " ignores it; it lays out markdown or table only"
		if r.code != exitError || !strings.Contains(r.stderr, want) {
			t.Errorf("--format %s --group-by rule: exit %d, want 2 with %q:\n%s", format, r.code, want, r.stderr)
		}
	}
	for _, format := range []string{"table", "markdown"} {
		if r := runCLI(t, nil, "audit", "--snapshots", exampleSnapshots, "--format", format, "--group-by", "rule", "--fail-on", "none"); r.code != exitOK {
			t.Errorf("--format %s --group-by rule: exit %d\n%s", format, r.code, r.stderr)
		}
	}
}
