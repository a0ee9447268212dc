package policies

import (
	"io/fs"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The built-in library's params are the names its source writes after
// data.fleetaudit.params., test files aside.
func TestParamsOfTheLibrary(t *testing.T) {
	re := regexp.MustCompile(`data\.fleetaudit\.params\.([a-z_][a-z0-9_]*)`)
	var want []string
	err := fs.WalkDir(library, "lib", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || isTestFile(p) {
			return err
		}
		src, err := library.ReadFile(p)
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			if !slices.Contains(want, m[1]) {
				want = append(want, m[1])
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if len(want) < 10 || !slices.Contains(want, "memlock_min_kb") {
		t.Fatalf("library source lists too few params: %v", want)
	}
	if diff := cmp.Diff(want, newEngine(t, Options{}).Params()); diff != "" {
		t.Errorf("Params (-want +got):\n%s", diff)
	}
}

func TestParamsOfUserPolicies(t *testing.T) {
	tests := []struct {
		name, src string
		extra     []string // beyond the library's; nil: the list is not complete
	}{
		{"through an import", "package site\n\nimport data.fleetaudit.params\n\nslack := params.team_slack\n", []string{"team_slack"}},
		{"full ref with a nested key", "package site\n\nowner := data.fleetaudit.params.owners.primary\n", []string{"owners"}},
		{"computed key", "package site\n\nread(k) := data.fleetaudit.params[k]\n", nil},
		{"as a whole", "package site\n\nn := count(data.fleetaudit.params)\n", nil},
		{"through an alias", "package site\n\nimport data.fleetaudit.params as p\n\nslack := p.team_slack\n", []string{"team_slack"}},
		{"through an import of one", "package site\n\nimport data.fleetaudit.params.owners\n\nprimary := owners.primary\n", []string{"owners"}},
	}
	base := newEngine(t, Options{}).Params()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "site.rego", tt.src)
			got := newEngine(t, Options{PolicyDirs: []string{dir}}).Params()
			var want []string
			if tt.extra != nil {
				want = slices.Sorted(slices.Values(slices.Concat(base, tt.extra)))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Params (-want +got):\n%s", diff)
			}
			cat, err := ReadCatalog([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, cat.Params()); diff != "" {
				t.Errorf("Catalog.Params, from the parsed modules (-want +got):\n%s", diff)
			}
		})
	}
}
