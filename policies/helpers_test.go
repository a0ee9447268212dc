package policies

import (
	"context"
	"github.com/fleetaudit/fleetaudit/policies/internal/testhost"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/storage"
)

func storageRead(t *testing.T, ctx context.Context, store storage.Store) storage.Transaction {
	t.Helper()
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Abort(ctx, txn) })
	return txn
}

// host is the shared synthetic snapshot of the engine's and the runner's tests.
type host = testhost.Host

// writeFile writes name under dir, creating directories.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func newEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// gpuFleets is the fleet configuration most tests use: what the built-in
// profiles of those names select.
func gpuFleets() map[string]FleetConfig {
	return map[string]FleetConfig{
		"gpu-training": {Select: ruleProfiles("gpu-training")},
		"web-serving":  {Select: ruleProfiles("web-serving")},
	}
}

// ruleProfiles selects, as a built-in fleet profile does (include
// "tag:all" and "tag:NAME"), the rules for every fleet and those whose
// custom.profiles name one of names. fleets_test checks the built-in
// profiles select the same (this package cannot import fleets).
func ruleProfiles(names ...string) func(Rule) bool {
	return func(r Rule) bool {
		for _, p := range r.Profiles {
			if p == ProfileAll || slices.Contains(names, p) {
				return true
			}
		}
		return false
	}
}

func ruleIDs(fs []Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.Rule)
	}
	return ids
}
