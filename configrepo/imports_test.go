package configrepo

import (
	"go/build"
	"slices"
	"testing"
)

// The gate builds its engine and decides fleets through package fleets, as
// audit does; it never reaches into audit, which orchestrates another
// command's run.
func TestDoesNotImportAudit(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Imports) == 0 {
		t.Fatal("no imports read")
	}
	for _, imports := range [][]string{pkg.Imports, pkg.TestImports} {
		if slices.Contains(imports, "github.com/fleetaudit/fleetaudit/audit") {
			t.Errorf("configrepo imports audit: %v", imports)
		}
	}
}
