package policies

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// loadGuarded runs userPolicies, failing the test if it does not return: a
// blocked open cannot be cancelled, so the timeout is only a hang guard.
func loadGuarded(t *testing.T, paths ...string) ([]string, map[string]any, error) {
	t.Helper()
	type result struct {
		mods []string
		docs map[string]any
		err  error
	}
	done := make(chan result, 1)
	go func() {
		mods, docs, err := userPolicies(paths, capabilities(), false)
		var names []string
		for name := range mods {
			names = append(names, name)
		}
		slices.Sort(names)
		done <- result{names, docs, err}
	}()
	select {
	case r := <-done:
		return r.mods, r.docs, r.err
	case <-time.After(2 * time.Minute):
		t.Fatal("loading policies did not return")
		return nil, nil, nil
	}
}

const loadTestRule = "package fleetaudit.user.x\n\nimport rego.v1\n\nok := true\n"

// TestUserPoliciesRefuseNonRegularFiles: a .rego or data file in --policies
// that is a FIFO or a device is an error naming it (a FIFO blocked the load
// forever); a FIFO the loader would not load anyway is skipped unread.
func TestUserPoliciesRefuseNonRegularFiles(t *testing.T) {
	mkfifo := func(t *testing.T, p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the --policies path
		err   string                                // "" when the load succeeds
	}{
		{"FIFO .rego in a directory", func(t *testing.T, dir string) string {
			mkfifo(t, filepath.Join(dir, "b.rego"))
			return dir
		}, "b.rego: not a regular file (FIFO)"},
		{"FIFO data.json in a directory", func(t *testing.T, dir string) string {
			mkfifo(t, filepath.Join(dir, "data.json"))
			return dir
		}, "data.json: not a regular file (FIFO)"},
		{"FIFO given as the file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "only.rego")
			mkfifo(t, p)
			return p
		}, "only.rego: not a regular file (FIFO)"},
		{"link to /dev/zero as data.yaml", func(t *testing.T, dir string) string {
			if err := os.Symlink("/dev/zero", filepath.Join(dir, "data.yaml")); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "data.yaml: not a regular file (character device)"},
		{"FIFO the loader does not load", func(t *testing.T, dir string) string {
			mkfifo(t, filepath.Join(dir, "notes"))
			return dir
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.rego"), []byte(loadTestRule), 0o644); err != nil {
				t.Fatal(err)
			}
			p := tc.setup(t, dir)
			mods, _, err := loadGuarded(t, p)
			if tc.err == "" {
				if err != nil || len(mods) != 1 {
					t.Fatalf("load = %v, %v; want a.rego loaded", mods, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("load = %v, want an error saying %q", err, tc.err)
			}
		})
	}
}

// TestUserPoliciesDataCap: a data file over the cap is refused, naming the
// file and the cap; a small one loads.
func TestUserPoliciesDataCap(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "small.json"), []byte(`{"allowed": ["a"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, docs, err := loadGuarded(t, dir)
	if err != nil || !cmp.Equal(docs, map[string]any{"allowed": []any{"a"}}) {
		t.Fatalf("small data file: %v, %v", docs, err)
	}
	big := filepath.Join(dir, "data.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, maxPolicyFileSize+1); err != nil { // sparse
		t.Fatal(err)
	}
	_, _, err = loadGuarded(t, dir)
	if err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "limited to 64 MiB") {
		t.Fatalf("load = %v, want %s refused over the 64 MiB cap", err, big)
	}
}

// TestUserPoliciesLinkLoops: links to a parent directory are not followed,
// so two of them do not make the walk run away (2^40 directories).
func TestUserPoliciesLinkLoops(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.rego"), []byte(loadTestRule), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"up1", "up2"} {
		if err := os.Symlink("..", filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	mods, _, err := loadGuarded(t, dir)
	// Modules are keyed by path without the leading "/", as OPA keys them.
	if err != nil || !cmp.Equal(mods, []string{strings.TrimPrefix(filepath.Join(dir, "a.rego"), "/")}) {
		t.Fatalf("load = %v, %v; want only a.rego", mods, err)
	}
}

// TestNewRefusesFIFOPolicy: the error reaches the engine's caller.
func TestNewRefusesFIFOPolicy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.rego")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := New(context.Background(), Options{PolicyDirs: []string{p}})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), p+": not a regular file (FIFO)") {
			t.Fatalf("New = %v, want the FIFO refused by name", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("New did not return")
	}
}

// ReadCatalog, from the parsed modules, gives the engine's rules and
// params: the built-in library, user host and fleet rules, helpers and
// rules spread over several definitions. A user rule that does not
// compile is listed by the catalog and refused by New; a METADATA problem
// is an error of both.
func TestCatalogIsTheEngines(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "site.rego", `package fleetaudit.rules.site

import data.fleetaudit.params as p

# METADATA
# title: Swappiness above the site's limit
# description: Swapping stalls training steps.
# related_resources:
#   - ref: https://docs.kernel.org/admin-guide/sysctl/vm.html
# custom:
#   id: swappiness
#   severity: medium
#   profiles: [gpu-training]
#   remediation: Set vm.swappiness to 10.
#   facts: [sysctl.running]
swappiness contains f if {
	to_number(input.sysctl.running["vm.swappiness"]) > p.swappiness_max
	f := {"msg": "high"}
}

swappiness contains f if {
	not input.sysctl.running["vm.swappiness"]
	f := {"msg": "unset"}
}

limit := p.swappiness_max
`)
	writeFile(t, dir, "fleet.rego", `package fleetaudit.fleet_rules.site

# METADATA
# title: Kernels differ
# description: One fleet, one kernel.
# related_resources:
#   - ref: https://docs.kernel.org/
# custom:
#   id: kernel-skew
#   severity: low
#   profiles: [gpu-training]
#   remediation: Upgrade the stragglers.
#   facts: [kernel.release]
kernel_skew contains f if {
	count({g.kernel.release | some g in input.groups}) > 1
	some g in input.groups
	f := {"msg": "skew", "group": g.group}
}
`)
	eng := newEngine(t, Options{PolicyDirs: []string{dir}})
	cat, err := ReadCatalog([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(eng.Rules(), cat.Rules(), cmpopts.IgnoreUnexported(Rule{})); diff != "" {
		t.Errorf("rules (-engine +catalog):\n%s", diff)
	}
	if diff := cmp.Diff(eng.Params(), cat.Params()); diff != "" {
		t.Errorf("params (-engine +catalog):\n%s", diff)
	}
	if !slices.ContainsFunc(cat.Rules(), func(r Rule) bool { return r.ID == "swappiness" }) ||
		!slices.Contains(cat.Params(), "swappiness_max") {
		t.Fatalf("the user rule or its param is missing: %v", cat.Params())
	}

	broken := t.TempDir()
	writeFile(t, broken, "broken.rego", `package fleetaudit.rules.broken

# METADATA
# title: Never compiles
# description: Calls a function nobody defined.
# related_resources:
#   - ref: https://docs.kernel.org/
# custom:
#   id: never-compiles
#   severity: low
#   profiles: [gpu-training]
#   remediation: None.
#   facts: [kernel.release]
never_compiles contains f if {
	f := {"msg": no_such_function(input.kernel.release)}
}
`)
	if _, err := New(t.Context(), Options{PolicyDirs: []string{broken}}); err == nil || !strings.Contains(err.Error(), "broken.rego:") {
		t.Errorf("New of a rule that does not compile: %v, want the compile error naming the file", err)
	}
	if cat, err := ReadCatalog([]string{broken}); err != nil || !slices.ContainsFunc(cat.Rules(), func(r Rule) bool { return r.ID == "never-compiles" }) {
		t.Errorf("catalog of a rule that does not compile: %v", err)
	}

	noMeta := t.TempDir()
	writeFile(t, noMeta, "bare.rego", "package fleetaudit.rules.bare\n\nbare contains f if {\n\tf := {\"msg\": \"x\"}\n}\n")
	_, engErr := New(t.Context(), Options{PolicyDirs: []string{noMeta}})
	_, catErr := ReadCatalog([]string{noMeta})
	if engErr == nil || catErr == nil || engErr.Error() != catErr.Error() {
		t.Errorf("a rule without METADATA: engine %v, catalog %v; want the same error", engErr, catErr)
	}
}
