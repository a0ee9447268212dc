package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

const gpuRoot = "../../testdata/hosts/gpu-node"

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code := run(context.Background(), args, streams{in: strings.NewReader(""), out: &out, err: &errb}, getenv)
	return result{code, out.String(), errb.String()}
}

func TestCollectToStdout(t *testing.T) {
	r := runCLI(t, nil, "collect", "--root", gpuRoot)
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	snap, err := snapshot.DecodeBytes([]byte(r.stdout))
	if err != nil {
		t.Fatalf("stdout is not a snapshot: %v", err)
	}
	if snap.Host != "gpu-a-001" {
		t.Errorf("host = %q, want gpu-a-001 (from the root's hostname file)", snap.Host)
	}
	abs, _ := filepath.Abs(gpuRoot)
	if snap.Source.Kind != "local" || snap.Source.Root != abs {
		t.Errorf("source = %+v, want local %s", snap.Source, abs)
	}
	if !strings.Contains(r.stderr, "msg=collected") || !strings.Contains(r.stderr, "host=gpu-a-001") {
		t.Errorf("stderr lacks the summary log line:\n%s", r.stderr)
	}
}

func TestCollectToFileWithFlagsFromEnvAndConfig(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "snap.json")
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("log-level: warn\ncollect:\n  hostname: from-config\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FLEETAUDIT_COLLECT_ROOT": gpuRoot, "XDG_CONFIG_HOME": dir}
	// The config file is not in $XDG_CONFIG_HOME/fleetaudit, so pass it explicitly.
	r := runCLI(t, env, "--config", cfg, "collect", "-o", out)
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout = %q, want nothing with -o", r.stdout)
	}
	if strings.Contains(r.stderr, "msg=collected") {
		t.Errorf("log-level warn from the config file not honoured:\n%s", r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.DecodeBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Host != "from-config" {
		t.Errorf("host = %q, want from-config", snap.Host)
	}
	// A flag wins over the config file.
	r = runCLI(t, env, "--config", cfg, "collect", "-o", out, "--hostname", "from-flag")
	data, _ = os.ReadFile(out)
	if snap, err := snapshot.DecodeBytes(data); err != nil || snap.Host != "from-flag" || r.code != 0 {
		t.Errorf("flag did not win over config: exit %d, %v, %+v", r.code, err, snap)
	}
}

func TestCollectUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing root", []string{"collect", "--root", "/does/not/exist"}, "--root /does/not/exist"},
		{"root is a file", []string{"collect", "--root", "main.go"}, "not a directory"},
		{"unknown flag", []string{"collect", "--bogus"}, "unknown flag: --bogus"},
		{"extra argument", []string{"collect", "extra"}, "unknown command"},
		{"bad log level", []string{"--log-level", "loud", "collect", "--root", gpuRoot}, "invalid --log-level"},
		{"no hostname", []string{"collect", "--root", "."}, "pass --hostname"},
		{"unwritable output", []string{"collect", "--root", gpuRoot, "-o", "/does/not/exist/x.json"}, "writing /does/not/exist/x.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, tt.args...)
			if r.code != exitError {
				t.Errorf("exit %d, want %d", r.code, exitError)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr does not mention %q:\n%s", tt.want, r.stderr)
			}
		})
	}
}

func TestHelpShowsExamples(t *testing.T) {
	r := runCLI(t, nil, "collect", "--help")
	if r.code != exitOK || !strings.Contains(r.stdout, "fleetaudit collect --root testdata/hosts/gpu-node") {
		t.Errorf("collect --help (exit %d) lacks an example:\n%s", r.code, r.stdout)
	}
}

// TestBinaryExitCodes runs the real binary: main must turn errors into exit 2.
func TestBinaryExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "fleetaudit")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "collect", "--root", "/does/not/exist")
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != exitError {
		t.Errorf("missing root: %v, want exit %d", err, exitError)
	}
	out, err := exec.Command(bin, "collect", "--root", gpuRoot).Output()
	if err != nil {
		t.Fatalf("collect: %v", err)
	}
	if _, err := snapshot.DecodeBytes(out); err != nil {
		t.Errorf("binary output is not a snapshot: %v", err)
	}
	// The example fleet has critical findings: the default --fail-on high
	// exits 1, --fail-on none exits 0, and both print the report.
	audit := exec.Command(bin, "audit", "--inventory", exampleInventory, "--snapshots", exampleSnapshots)
	out, err = audit.Output()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != exitFindings || !strings.Contains(string(out), "hugetlb-cma-on-gpu") {
		t.Errorf("audit of the example fleet: %v, want exit %d and a report\n%s", err, exitFindings, out)
	}
	if err := exec.Command(bin, "audit", "--snapshots", exampleSnapshots, "--fail-on", "none", "-o", filepath.Join(t.TempDir(), "r.txt")).Run(); err != nil {
		t.Errorf("audit --fail-on none: %v", err)
	}
}

// reportFindings reads the findings of a JSON report.
func reportFindings(t *testing.T, report string) []policies.Finding {
	t.Helper()
	var doc struct {
		Findings []policies.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(report), &doc); err != nil {
		t.Fatalf("the report is not JSON: %v", err)
	}
	return doc.Findings
}
