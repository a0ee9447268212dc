package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// An OS image before first boot (a real Debian 12 root, nothing mounted on
// /proc) with hazards planted in its configuration: collect says it is an
// image and reports no blind spot; audit judges the configuration (the
// findings name the planted files) and lists the rules that need a running
// host as skipped, not as passed.
func TestAuditDebianImage(t *testing.T) {
	root, _ := debroot.DebianImage(t, "gpu-image-01")
	const grubD = "/etc/default/grub.d/60-hugetlb.cfg"
	const limitsD = "/etc/security/limits.d/90-memlock.conf"
	for name, text := range map[string]string{
		grubD:   "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=6G\"\n",
		limitsD: "* - memlock 65536\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	r := runCLI(t, nil, "collect", "--root", root)
	if r.code != exitOK {
		t.Fatalf("collect: exit %d\n%s", r.code, r.stderr)
	}
	snap, err := snapshot.DecodeBytes([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Source.Image || len(snap.Errors) != 0 {
		t.Errorf("collect: image %v, errors %+v; want an image, no errors", snap.Source.Image, snap.Errors)
	}
	if !strings.Contains(r.stderr, "offline image") {
		t.Errorf("collect does not say the root is an offline image:\n%s", r.stderr)
	}

	r = runCLI(t, nil, "audit", "--root", root, "--format", "json", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("audit: exit %d\n%s", r.code, r.stderr)
	}
	var rep auditJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	cites := map[string]string{}
	for _, f := range rep.Findings {
		if f.Fleet != "gpu-training" {
			t.Errorf("%s: fleet %q, want gpu-training (host name gpu-*)", f.Rule, f.Fleet)
		}
		for _, ev := range f.Evidence {
			if ev.Source != "" && cites[f.Rule] == "" {
				cites[f.Rule] = ev.Source
			}
		}
		running := true
		for _, ev := range f.Evidence {
			running = running && snapshot.IsRunningState(ev.Fact)
		}
		if running || f.Rule == "collection-error" {
			t.Errorf("finding on the image's running state: %s: %s", f.Rule, f.Message)
		}
	}
	for rule, file := range map[string]string{"hugetlb-cma-on-gpu": grubD + ":1", "memlock-too-low": limitsD + ":1"} {
		if cites[rule] != file {
			t.Errorf("%s cites %q, want %s; findings %+v", rule, cites[rule], file, rep.Findings)
		}
	}
	// Rules that compare configuration with the running host, or read
	// only the running host, were not evaluated.
	for _, rule := range []string{"boot-config-pending", "sysctl-not-applied", "numa-balancing-enabled", "peermem-configured-not-loaded", "max-map-count-low"} {
		if rep.Summary.RulesSkipped[rule] != 1 {
			t.Errorf("%s not skipped on the image: rules_skipped %v", rule, rep.Summary.RulesSkipped)
		}
	}
}
