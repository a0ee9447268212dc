package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A manifest that cannot be read or parsed fails audit --manifests with
// exit 2 under the default --fail-on high, naming the file and what is
// wrong with it (it exited 0 with nothing audited); the report of what
// could be read is still written.
func TestAuditManifestsThatCannotBeRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	syntax := write("syntax.yaml", "kind: Pod\nmetadata:\n  name: a: b\n")
	dup := write("dup.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\nspec: {}\n")
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory of one good job spec (a medium finding only, under the
	// default --fail-on high) and one broken file.
	good := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ok\nspec:\n  containers:\n  - name: c\n    image: i\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
	write("jobs/good.yaml", good)
	write("jobs/zz-broken.yaml", "kind: Pod\nmetadata:\n  name: [\n")
	jobs := filepath.Join(dir, "jobs")

	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"syntax error", syntax, []string{syntax + ": line 3:", "mapping values are not allowed"}},
		{"duplicate key", dup, []string{dup + ": ", `mapping key "name" already defined at line 4`}},
		{"FIFO", fifo, []string{fifo + ": ", "not a regular file (FIFO)"}},
		{"directory with one broken file", jobs, []string{filepath.Join(jobs, "zz-broken.yaml") + ": line ", "1 manifest could not be read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "report.json")
			r := runCLIGuarded(t, "audit", "--manifests", tc.path, "--fleet", "gpu-training", "--format", "json", "-o", out)
			if r.code != exitError {
				t.Errorf("exit %d, want %d\n%s", r.code, exitError, r.stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("no report written: %v", err)
			}
			doc := decodeFindings(t, string(data))
			if len(doc.Errors) != 1 || doc.Errors[0].Host != tc.path {
				t.Errorf("report errors %+v: want one for %s", doc.Errors, tc.path)
			}
			if tc.path == jobs {
				found := false
				for _, f := range doc.Findings {
					found = found || f.Rule == "pod-memory-limit-missing"
				}
				if !found {
					t.Errorf("the good file of the directory was not audited: %+v", doc.Findings)
				}
			}
		})
	}

	// Two paths, one good: still an error.
	r := runCLIGuarded(t, "audit", "--manifests", filepath.Join(jobs, "good.yaml"), "--manifests", dup, "--fleet", "gpu-training")
	if r.code != exitError || !strings.Contains(r.stderr, dup) {
		t.Errorf("a good and a broken manifest: exit %d\n%s", r.code, r.stderr)
	}
	// The good file alone passes under --fail-on high.
	if r := runCLIGuarded(t, "audit", "--manifests", filepath.Join(jobs, "good.yaml"), "--fleet", "gpu-training"); r.code != exitOK {
		t.Errorf("the good manifest: exit %d\n%s", r.code, r.stderr)
	}
}
