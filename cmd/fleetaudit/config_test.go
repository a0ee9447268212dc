package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
		{"top-level flag", "hostname: top\n", "top", nil},
		{"a flag of another command is fine at the top", "hostname: top\nfail-on: critical\nfleets: [a, b]\n", "top", nil},
		{"the command's section wins", "hostname: top\ncollect:\n  hostname: section\naudit:\n  fail-on: critical\n", "section", nil},
		{"another command's section is not applied", "gate:\n  base: main\n", "gpu-a-001", nil},
		{"unknown top-level key", "log-level: info\nhostnme: x\n", "",
			[]string{`CONFIG:2: unknown key "hostnme" in the top level (did you mean "hostname"?)`}},
		{"unknown key in a section", "audit:\n  fail-on: high\n  fail_on: high\n", "",
			[]string{`CONFIG:3: unknown key "fail_on" in the audit section (did you mean "fail-on"?)`}},
		{"a key of another command in a section", "collect:\n  fail-on: high\n", "",
			[]string{`CONFIG:2: unknown key "fail-on" in the collect section`}},
		{"every unknown key", "colour: never\nlog_level: debug\n", "",
			[]string{`CONFIG:1: unknown key "colour" in the top level`, `CONFIG:2: unknown key "log_level" in the top level (did you mean "log-level"?)`}},
		{"a mapping where a value goes", "hostname: {a: 1}\n", "", []string{`CONFIG:1: hostname: want a value or a list, got a mapping`}},
		{"not a mapping", "- hostname\n", "", []string{"want a mapping at the top level"}},
		{"empty file", "", "gpu-a-001", nil},
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
