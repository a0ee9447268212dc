package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pam_limits (parse_config_file) logs "invalid line N in FILE - skipped"
// for a line without four fields and applies the others, so the host's
// memlock is what the remaining lines set: the bad lines are reported and
// memlock-too-low is decided from what pam_limits applies, not withheld.
func TestAuditLimitsLinesPamLimitsSkips(t *testing.T) {
	const rdma = "/etc/security/limits.d/90-rdma.conf"
	const bad = "* soft memlock\n\x89PNG\x1a\xff\xfe\x01\n"
	tests := []struct {
		name, file  string
		wantMemlock bool
	}{
		{"no memlock line left", bad, true},
		{"a valid memlock line after them", bad + "* - memlock unlimited\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "gpu-node")
			if err := os.CopyFS(root, os.DirFS(gpuRoot)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, rdma), []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, nil, "audit", "--root", root, "--format", "json", "--fail-on", "none")
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			findings := reportFindings(t, r.stdout)
			var errLines []string
			memlock := false
			for _, f := range findings {
				switch f.Rule {
				case "collection-error":
					if strings.Contains(f.Message, rdma) {
						errLines = append(errLines, f.Message)
					}
				case "memlock-too-low":
					memlock = true
				}
			}
			for _, line := range []string{"line 1:", "line 2:"} {
				if !slices.ContainsFunc(errLines, func(m string) bool { return strings.Contains(m, line) }) {
					t.Errorf("no collection-error for %s %s in %q", rdma, line, errLines)
				}
			}
			if memlock != tt.wantMemlock {
				t.Errorf("memlock-too-low fired: %v, want %v; findings %+v", memlock, tt.wantMemlock, findings)
			}
		})
	}
}
