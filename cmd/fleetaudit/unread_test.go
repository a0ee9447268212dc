package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

type unreadSummary struct {
	Findings []struct {
		Rule    string `json:"rule"`
		Host    string `json:"host"`
		Message string `json:"message"`
	} `json:"findings"`
	Summary struct {
		Hosts   int `json:"hosts"`
		Audited int `json:"audited"`
		Unread  int `json:"unread"`
	} `json:"summary"`
}

// `audit --snapshots DIR` of three unreadable files said "3 hosts audited"
// and exited 0: nothing was audited, so it is an error (exit 2), and the
// report saying why each file could not be read is still written.
func TestAuditNothingReadExits2(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"a.json": "x", "b.json": "{}"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "c.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("table", func(t *testing.T) {
		r := runCLIGuarded(t, "audit", "--snapshots", dir, "--fail-on", "none")
		if r.code != exitError || !strings.Contains(r.stderr, "no host could be audited: 3 of 3 could not be read") {
			t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "0 hosts audited, 3 not read (see errors)") || !strings.Contains(r.stdout, "not a regular file (FIFO)") {
			t.Errorf("report:\n%s", r.stdout)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := runCLIGuarded(t, "audit", "--snapshots", dir, "--format", "json", "--fail-on", "none")
		var doc unreadSummary
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("exit %d, not a findings document: %v\n%s", r.code, err, r.stdout)
		}
		if r.code != exitError || doc.Summary.Hosts != 3 || doc.Summary.Audited != 0 || doc.Summary.Unread != 3 || len(doc.Findings) != 3 {
			t.Errorf("exit %d, summary %+v, %d findings", r.code, doc.Summary, len(doc.Findings))
		}
	})
	t.Run("empty directory", func(t *testing.T) {
		empty := t.TempDir()
		r := runCLIGuarded(t, "audit", "--snapshots", empty)
		if r.code != exitError || !strings.Contains(r.stderr, empty+": the directory is empty") {
			t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
	})
}

// The inventory example reads two hosts of fourteen: the summary says so.
func TestAuditInventoryExampleSummary(t *testing.T) {
	r := runCLIGuarded(t, "audit", "--inventory", exampleInventory, "--fail-on", "none")
	if r.code != exitOK || !strings.Contains(r.stdout, "2 hosts audited, 12 not read (see errors),") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "is unset") {
		t.Errorf("findings on hosts that were never read:\n%s", r.stdout)
	}
}

// A user rule that never ends is stopped by --rule-timeout and reported for
// each host; the other findings and hosts are still there.
func TestAuditRuleTimeout(t *testing.T) {
	dir := slowPolicyDir(t)
	snaps := []string{filepath.Join(exampleSnapshots, "gpu-a-001.json"), filepath.Join(exampleSnapshots, "web-01.json")}
	r := runCLIGuarded(t, "audit", "--snapshots", strings.Join(snaps, ","), "--policies", dir,
		"--rule-timeout", "1s", "--format", "json", "--fail-on", "none")
	var doc unreadSummary
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("exit %d, not a findings document: %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	timedOut := map[string]bool{}
	others := 0
	for _, f := range doc.Findings {
		if f.Rule == "collection-error" && f.Message == "rule slow-rule did not finish within 1s; its findings for this host are unknown" {
			timedOut[f.Host] = true
		} else {
			others++
		}
	}
	if r.code != exitOK || !timedOut["gpu-a-001"] || !timedOut["web-01"] || others == 0 || doc.Summary.Audited != 2 {
		t.Errorf("exit %d, timed out on %v, %d other findings, summary %+v\n%s", r.code, timedOut, others, doc.Summary, r.stderr)
	}
	if r := runCLI(t, nil, "audit", "--snapshots", snaps[0], "--rule-timeout", "-1s"); r.code != exitError || !strings.Contains(r.stderr, "--rule-timeout") {
		t.Errorf("negative --rule-timeout: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
