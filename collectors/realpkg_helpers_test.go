package collectors

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// realpkgCollect collects a root built from real packages, as a local
// host read without running commands.
func realpkgCollect(t *testing.T, root string) *snapshot.Snapshot {
	t.Helper()
	target, err := Local(root, LocalOptions{NoExec: true})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := Collect(context.Background(), target, fixtureOptions("realpkg"))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// realpkgNoErrors fails on every collection error of snap but one: a root
// unpacked from packages has no /proc, and the modules collector says so
// for /proc/modules. Issue 25 item 7 (an image is not a broken host) takes
// that error away; until then it is not the packages' doing.
func realpkgNoErrors(t *testing.T, snap *snapshot.Snapshot) {
	t.Helper()
	for _, e := range snap.Errors {
		if e.Collector == "modules" && e.Path == procModules {
			continue // issue 25 item 7
		}
		t.Errorf("collection error: %s: %s: %s", e.Collector, e.Path, e.Reason)
	}
}

// realpkgFindings evaluates rule on snap in a fleet with params.
func realpkgFindings(t *testing.T, snap *snapshot.Snapshot, rule string, params map[string]any) []policies.Finding {
	t.Helper()
	return evalRules(t, snap, params, rule)
}

// lineOf is the 1-based number of the first line of root's file that
// matches pattern: where a test expects a fact to come from, read from the
// package's file rather than from the collector.
func lineOf(t *testing.T, root, file, pattern string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(pattern)
	for i, l := range confFileLines(data) {
		if re.MatchString(l) {
			return i + 1
		}
	}
	t.Fatalf("%s: no line matches %q", file, pattern)
	return 0
}

// enableUnit does what "systemctl enable" does for a unit whose [Install]
// section says WantedBy=target: a link in /etc/systemd/system/<target>.wants.
func enableUnit(t *testing.T, root, target, unitFile string) {
	t.Helper()
	wants := filepath.Join(root, "etc/systemd/system", target+".wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(unitFile, filepath.Join(wants, filepath.Base(unitFile))); err != nil {
		t.Fatal(err)
	}
}

// realpkgSeeds are the files of package pkg matching patterns, in path
// order: fuzz seeds from a real package (none where it cannot be fetched
// outside CI; see debroot.Files).
func realpkgSeeds(f *testing.F, pkg string, patterns ...string) [][]byte {
	f.Helper()
	files := debroot.Files(f, pkg, patterns...)
	var out [][]byte
	for _, name := range slices.Sorted(maps.Keys(files)) {
		out = append(out, files[name])
	}
	return out
}
