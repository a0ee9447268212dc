package sshsource

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/collectors"
)

// sampleOf is a name a read pattern matches: "1" for a PID glob, "x" for
// any other wildcard.
func sampleOf(pattern string) string {
	s := strings.ReplaceAll(pattern, "[0-9]*", "1")
	return strings.NewReplacer("*", "x", "?", "x").Replace(s)
}

// TestStreamCoversFamilyReads: every path a collector family declares it
// reads (collectors.Families) is in the stream, whether or not a fixture
// root has it: its directories are listed, and it is streamed (a file) or
// listed (a directory, or a tree the family scans as it finds it). A
// family that reads a new path fails here until a rule in remote.go
// carries it: the prefetch list can no longer drift from the families.
func TestStreamCoversFamilyReads(t *testing.T) {
	d := regexp.MustCompile(`^` + alternation(descend) + `$`)
	listed := func(dir string) bool { return dir == "." || d.MatchString("./"+dir) }
	n := 0
	for _, f := range collectors.Families() {
		for _, p := range f.Reads {
			n++
			pat, tree := strings.CutSuffix(p, "/**")
			name := strings.TrimPrefix(sampleOf(pat), "/")
			base := name
			dir, isDir := strings.CutSuffix(base, "/")
			if strings.HasPrefix(name, "proc/1/") {
				// A process's files: the script's own pass over /proc.
				if !streamed(name) {
					t.Errorf("%s: %s (%s) is not streamed", f.Name, p, name)
				}
				continue
			}
			if viaLinks(name) {
				continue // TestFixtureRootsNeedNoMiss reads these on real layouts
			}
			if tree {
				dir = base
			} else if !isDir {
				dir = path.Dir(base)
			}
			for a := dir; ; a = path.Dir(a) {
				if !listed(a) {
					t.Errorf("%s: %s (%s): directory /%s is not listed", f.Name, p, name, a)
				}
				if a == "." {
					break
				}
			}
			if !tree && !isDir && !streamed(base) {
				t.Errorf("%s: %s (%s) is not streamed", f.Name, p, name)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d declared reads: is collectors.Families filled?", n)
	}
}

// A family added later is carried by the rules derived from its reads,
// with no rule written in remote.go; a path the written rules carry
// already adds none.
func TestFamilyRulesDerived(t *testing.T) {
	fam := collectors.Family{Name: "newfam", Reads: []string{"/etc/os-release", "/var/lib/newfam/", "/srv/newfam/conf.d/*.conf", "/srv/newfam/state"}}
	dRules, rRules := familyRules([]collectors.Family{fam}, descendRules, readRules)
	d := regexp.MustCompile(`^` + alternation(append(slices.Clip(descendRules), dRules...)) + `$`)
	r := regexp.MustCompile(`^` + alternation(append(slices.Clip(readRules), rRules...)) + `$`)
	for _, dir := range []string{".", "./var", "./var/lib/newfam", "./srv", "./srv/newfam", "./srv/newfam/conf.d"} {
		if dir != "." && !d.MatchString(dir) {
			t.Errorf("%s is not listed", dir)
		}
	}
	for _, f := range []string{"./srv/newfam/conf.d/10-a.conf", "./srv/newfam/state"} {
		if !r.MatchString(f) {
			t.Errorf("%s is not streamed", f)
		}
	}
	for _, f := range []string{"./srv/newfam/conf.d/10-a.txt", "./srv/newfam/conf.d/sub/a.conf", "./srv/newfam/other"} {
		if r.MatchString(f) {
			t.Errorf("%s is streamed, though no family declares it", f)
		}
	}
	for _, rule := range rRules {
		if strings.Contains(rule, "os-release") {
			t.Errorf("a rule for /etc/os-release, which remote.go's rules carry: %q", rule)
		}
	}
}
