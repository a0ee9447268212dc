package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// TestCollectAndAuditSeeTheSameHost: collect --root R and audit --root R
// build the same target, so they see the same facts with the same
// provenance and origin, section by section (only the time differs). Before
// the transport seam, audit built its own directory source without the
// collect command's exec policy.
func TestCollectAndAuditSeeTheSameHost(t *testing.T) {
	r := runCLI(t, nil, "collect", "--root", gpuRoot)
	if r.code != exitOK {
		t.Fatalf("collect: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	collected := decodeSections(t, []byte(r.stdout))

	// audit --root is audit.Run with Roots: the document the engine
	// received for the host, as the rules see it.
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	var mu sync.Mutex
	loaded := func(_ fleetrun.HostInput, doc, _ map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		docs = append(docs, doc)
	}
	if _, err := audit.Run(context.Background(), audit.Options{Fleets: set, Roots: []string{gpuRoot}, Version: version, Loaded: loaded}); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("the engine received %d documents, want one", len(docs))
	}
	data, err := json.Marshal(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	audited := decodeSections(t, data)
	if len(collected) < 15 {
		t.Fatalf("collect wrote %d sections: %v", len(collected), collected)
	}
	if diff := cmp.Diff(collected, audited); diff != "" {
		t.Errorf("collect --root and audit --root see different hosts (-collect +audit):\n%s", diff)
	}

	// And through the CLI: auditing collect's snapshot finds what auditing
	// the root finds.
	snapFile := filepath.Join(t.TempDir(), "snap.json")
	if err := os.WriteFile(snapFile, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	fromSnap := runCLI(t, nil, "audit", "--snapshots", snapFile, "--format", "json", "--fail-on", "none")
	fromRoot := runCLI(t, nil, "audit", "--root", gpuRoot, "--format", "json", "--fail-on", "none")
	if fromSnap.code != exitOK || fromRoot.code != exitOK {
		t.Fatalf("audit exits %d and %d, stderr:\n%s\n%s", fromSnap.code, fromRoot.code, fromSnap.stderr, fromRoot.stderr)
	}
	if diff := cmp.Diff(decodeSections(t, []byte(fromSnap.stdout)), decodeSections(t, []byte(fromRoot.stdout))); diff != "" {
		t.Errorf("findings differ (-audit --snapshots +audit --root):\n%s", diff)
	}
}

// decodeSections decodes a JSON document's top-level members, less the
// time it was collected.
func decodeSections(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	delete(doc, "collected_at")
	return doc
}

// audit has collect's --no-exec (audit.Options.NoExec), as a flag, in its
// config section and in the environment.
func TestAuditNoExec(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("audit:\n  no-exec: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]result{
		"flag":   runCLI(t, nil, "audit", "--no-exec", "--root", gpuRoot, "--format", "json", "--fail-on", "none"),
		"config": runCLI(t, nil, "--config", cfg, "audit", "--root", gpuRoot, "--format", "json", "--fail-on", "none"),
		"env":    runCLI(t, map[string]string{"FLEETAUDIT_AUDIT_NO_EXEC": "true"}, "audit", "--root", gpuRoot, "--format", "json", "--fail-on", "none"),
	} {
		if r.code != exitOK {
			t.Errorf("%s: exit %d, stderr:\n%s", name, r.code, r.stderr)
		}
	}
}
