package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A root without /proc/modules (a mounted image, a copied tree) has no
// known loaded modules: the collector says so, and no rule reports a module
// as not loaded. The same root with the file gets the finding.
func TestMissingProcModulesIsNotNoModules(t *testing.T) {
	rules := func(withModules bool) []string {
		t.Helper()
		root := filepath.Join(t.TempDir(), "root")
		if err := os.CopyFS(root, os.DirFS("../../testdata/hosts/rocky9-bls")); err != nil {
			t.Fatal(err)
		}
		if !withModules {
			if err := os.Remove(filepath.Join(root, "proc", "modules")); err != nil {
				t.Fatal(err)
			}
		}
		snaps := t.TempDir()
		if r := runCLI(t, nil, "collect", "--root", root, "-o", filepath.Join(snaps, "gpu-k-001.json")); r.code != exitOK {
			t.Fatalf("collect: exit %d\n%s", r.code, r.stderr)
		}
		r := runCLI(t, nil, "audit", "--snapshots", snaps, "--format", "json")
		var rep struct {
			Findings []struct{ Rule, Message string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("audit json: %v\n%s", err, r.stderr)
		}
		var ids []string
		for _, f := range rep.Findings {
			ids = append(ids, f.Rule)
		}
		return ids
	}
	with, without := rules(true), rules(false)
	if !slices.Contains(with, "gpudirect-path-missing") || slices.Contains(with, "collection-error") {
		t.Errorf("with /proc/modules: %v, want gpudirect-path-missing and no collection-error", with)
	}
	if slices.Contains(without, "gpudirect-path-missing") || !slices.Contains(without, "collection-error") {
		t.Errorf("without /proc/modules: %v, want collection-error and no gpudirect-path-missing", without)
	}
	if !slices.Contains(without, "hugetlb-cma-on-gpu") {
		t.Errorf("without /proc/modules: %v: the boot finding, which needs no module, is lost", without)
	}
}
