package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// collectHost runs collect with a config file and returns the result and
// the host name the snapshot got.
func collectHost(t *testing.T, config string, args ...string) (result, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "snap.json")
	r := runCLI(t, nil, append([]string{"--config", cfg, "collect", "--root", gpuRoot, "-o", out}, args...)...)
	r.stderr = strings.ReplaceAll(r.stderr, cfg, "CONFIG")
	if r.code != exitOK {
		return r, ""
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.DecodeBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	return r, snap.Host
}

func TestConfigFileKeys(t *testing.T) {
	tests := []struct {
		name, config string
		wantHost     string   // "" when the run must fail
		wantErr      []string // in stderr
	}{
		{"the command's section", "collect:\n  hostname: section\naudit:\n  fail-on: critical\n", "section", nil},
		{"another command's section is not applied", "gate:\n  base: main\n", "gpu-a-001", nil},
		{"a global key at the top level", "log-level: warn\n", "gpu-a-001", nil},
		// Before sections, any command's flag was a top-level key, and
		// format: markdown broke audit while meaning something to gate.
		{"a command's key at the top level", "hostname: top\n", "",
			[]string{`CONFIG:1: "hostname" is not a top-level key: it belongs under collect: (a command's settings go in its section)`}},
		{"a key of several commands at the top level", "log-level: info\nformat: markdown\n", "",
			[]string{`CONFIG:2: "format" is not a top-level key: it belongs under audit:, drift:, gate:, history:, policies:, remediate: or report: (a command's settings go in its section)`}},
		{"unknown top-level key", "log-level: info\nhostnme: x\n", "",
			[]string{`CONFIG:2: unknown key "hostnme" in the top level (did you mean "hostname" under collect:?); known: audit, collect, drift, gate, history, log-level, policies, remediate, report`}},
		{"unknown key in a section", "audit:\n  fail-on: high\n  fail_on: high\n", "",
			[]string{`CONFIG:3: unknown key "fail_on" in the audit section (did you mean "fail-on"?); known: accept-new-host-keys, connect-timeout, context, fail-on, fleet, fleets, format, group-by, host-timeout, identity, inventory, jump, known-hosts, kube, kube-host-label, kube-node-selector, kubeconfig, manifests, no-exec, output, parallel, policies, publish-reports, record, reports-namespace, retries, root, rule-timeout, run, shard, snapshots, ssh-config, ssh-user, store, store-wait, waivers`}},
		{"a key of another command in a section", "collect:\n  fail-on: high\n", "",
			[]string{`CONFIG:2: unknown key "fail-on" in the collect section (it belongs under audit: or gate:); known: accept-new-host-keys, connect-timeout, every, host-timeout, hostname, identity, inventory, jump, known-hosts, limits-domain, no-exec, out, output, parallel, pods, retries, root, shard, ssh-config, ssh-user, sysctl`}},
		{"a global key in a section", "audit:\n  log-level: debug\n", "",
			[]string{`CONFIG:2: "log-level" in the audit section: it is a top-level key (it applies to every command)`}},
		{"a section that is not a mapping", "audit: json\n", "", []string{`CONFIG:1: audit: want a mapping of the audit command's settings (known: accept-new-host-keys, connect-timeout, context, fail-on,`}},
		{"cobra's commands have no section", "completion:\n  no-descriptions: true\n", "", []string{`CONFIG:1: unknown key "completion" in the top level; known:`}},
		{"every unknown key", "colour: never\nlog_level: debug\n", "",
			[]string{`CONFIG:1: unknown key "colour" in the top level`, `CONFIG:2: unknown key "log_level" in the top level (did you mean "log-level"?)`}},
		{"a mapping where a value goes", "collect:\n  hostname: {a: 1}\n", "", []string{`CONFIG:2: hostname: want a value or a list, got a mapping`}},
		{"not a mapping", "- hostname\n", "", []string{"want a mapping at the top level"}},
		{"empty file", "", "gpu-a-001", nil},
		{"an empty section", "collect:\n# hostname: x\n", "gpu-a-001", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, host := collectHost(t, tt.config)
			if tt.wantHost != "" {
				if r.code != exitOK || host != tt.wantHost {
					t.Fatalf("exit %d, host %q; want %q\n%s", r.code, host, tt.wantHost, r.stderr)
				}
				return
			}
			if r.code != exitError {
				t.Fatalf("exit %d, want %d\n%s", r.code, exitError, r.stderr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
	// A flag still wins over the section.
	if r, host := collectHost(t, "collect:\n  hostname: section\n", "--hostname", "flag"); host != "flag" {
		t.Errorf("host = %q, want flag\n%s", host, r.stderr)
	}
}

// auditWith runs audit of one example snapshot with a config file and an
// environment, and returns the result with the config file's path replaced.
func auditWith(t *testing.T, config string, env map[string]string, args ...string) result {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"--config", cfg, "audit", "--snapshots", filepath.Join(exampleSnapshots, "gpu-a-001.json"), "--fail-on", "none"}, args...)
	r := runCLI(t, env, args...)
	r.stderr = strings.ReplaceAll(r.stderr, cfg, "CONFIG")
	return r
}

// A key or variable for one command leaves every other command alone; the
// running command's section and variables apply, flags win over the
// environment and the environment over the file.
func TestConfigIsPerCommand(t *testing.T) {
	plain := auditWith(t, "", nil)
	if plain.code != exitOK || !strings.Contains(plain.stdout, "gpu-a-001") {
		t.Fatalf("audit: exit %d\n%s%s", plain.code, plain.stdout, plain.stderr)
	}
	asJSON := auditWith(t, "", nil, "--format", "json")
	if asJSON.code != exitOK || !strings.HasPrefix(asJSON.stdout, "{") {
		t.Fatalf("audit --format json: exit %d\n%s", asJSON.code, asJSON.stderr)
	}
	tests := []struct {
		name, config string
		env          map[string]string
		args         []string
		want         result // stdout compared; stderr must contain want.stderr
	}{
		{"format under gate", "gate:\n  format: markdown\npolicies:\n  format: json\n", nil, nil, result{stdout: plain.stdout}},
		{"root and output under collect", "collect:\n  root: " + gpuRoot + "\n  output: /dev/full\n", nil, nil, result{stdout: plain.stdout}},
		{"format under audit", "audit:\n  format: json\n", nil, nil, result{stdout: asJSON.stdout}},
		{"the audit variable", "", map[string]string{"FLEETAUDIT_AUDIT_FORMAT": "json"}, nil, result{stdout: asJSON.stdout}},
		{"env wins over the file", "audit:\n  format: markdown\n", map[string]string{"FLEETAUDIT_AUDIT_FORMAT": "json"}, nil, result{stdout: asJSON.stdout}},
		{"a flag wins over env", "", map[string]string{"FLEETAUDIT_AUDIT_FORMAT": "json"}, []string{"--format", "table"}, result{stdout: plain.stdout}},
		{"another command's variables", "", map[string]string{"FLEETAUDIT_GATE_FORMAT": "markdown", "FLEETAUDIT_COLLECT_ROOT": gpuRoot}, nil, result{stdout: plain.stdout}},
		// The unsectioned form meant a flag of whichever command ran:
		// FLEETAUDIT_ROOT (which the gate sets for a render command) added
		// a host to audit. It is not read, and the log says what to use.
		{"unsectioned variables are not read", "", map[string]string{"FLEETAUDIT_FORMAT": "markdown", "FLEETAUDIT_ROOT": gpuRoot}, nil,
			result{stdout: plain.stdout, stderr: `variable=FLEETAUDIT_FORMAT use=FLEETAUDIT_AUDIT_FORMAT`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := auditWith(t, tt.config, tt.env, tt.args...)
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if diff := cmp.Diff(tt.want.stdout, r.stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if !strings.Contains(r.stderr, tt.want.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.want.stderr, r.stderr)
			}
		})
	}
	t.Run("log level", func(t *testing.T) {
		// FLEETAUDIT_LOG_LEVEL is global and wins over the file's.
		r := auditWith(t, "log-level: debug\n", map[string]string{"FLEETAUDIT_LOG_LEVEL": "warn"})
		if r.code != exitOK || strings.Contains(r.stderr, "msg=audited") {
			t.Errorf("exit %d, stderr has info lines with FLEETAUDIT_LOG_LEVEL=warn:\n%s", r.code, r.stderr)
		}
		r = auditWith(t, "log-level: warn\n", nil)
		if r.code != exitOK || strings.Contains(r.stderr, "msg=audited") {
			t.Errorf("exit %d, stderr has info lines with log-level: warn:\n%s", r.code, r.stderr)
		}
	})
	t.Run("format at the top level", func(t *testing.T) {
		r := auditWith(t, "format: markdown\n", nil)
		if want := `CONFIG:1: "format" is not a top-level key: it belongs under audit:, drift:, gate:, history:, policies:, remediate: or report:`; r.code != exitError || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", r.code, want, r.stderr)
		}
	})
}

// The policies section and variables hold the flags of its subcommands.
func TestConfigPoliciesSection(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("policies:\n  format: json\n  verbose: true\naudit:\n  format: markdown\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, nil, "--config", cfg, "policies", "list"); r.code != exitOK || !strings.HasPrefix(r.stdout, "[") {
		t.Errorf("policies list with format: json in its section: exit %d\n%.200s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, map[string]string{"FLEETAUDIT_POLICIES_FORMAT": "json"}, "policies", "list"); r.code != exitOK || !strings.HasPrefix(r.stdout, "[") {
		t.Errorf("FLEETAUDIT_POLICIES_FORMAT=json: exit %d\n%.200s%s", r.code, r.stdout, r.stderr)
	}
	// test's -v was read from the flag alone, so the file could not set it;
	// verbose output has a line per test.
	if r := runCLI(t, nil, "--config", cfg, "policies", "test"); r.code != exitOK || !strings.Contains(r.stdout, ": PASS (") {
		t.Errorf("policies test with verbose: true in its section: exit %d\n%.300s%s", r.code, r.stdout, r.stderr)
	}
}

func TestConfigFileFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- runCLI(t, nil, "--config", fifo, "policies", "list") }()
	select {
	case r := <-done:
		if r.code != exitError || !strings.Contains(r.stderr, "not a regular file") || !strings.Contains(r.stderr, fifo) {
			t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("fleetaudit blocked opening a FIFO config file")
	}
}

// The commands for fleets given as a file, and a profile with an
// unknown parameter.
func TestFleetsFlag(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "site.yaml")
	if err := os.WriteFile(good, []byte("name: site\nincludes: [gpu-training]\nmatch: {hostnames: ['trn-*']}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "policies", "list", "--fleets", good, "--fleet", "site", "--format", "json")
	if r.code != exitOK || !strings.Contains(r.stdout, `"hugetlb-cma-on-gpu"`) {
		t.Errorf("--fleets FILE: exit %d\n%s", r.code, r.stderr)
	}
	bad := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(bad, []byte("name: typo\nincludes: [gpu-training]\nparams:\n  memlock_min_kib: unlimited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "policies", "list", "--fleets", bad)
	if want := bad + `:4: invalid fleet profile: params: no rule reads "memlock_min_kib" (did you mean "memlock_min_kb"?)`; r.code != exitError || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant %s", r.code, r.stderr, want)
	}
}
