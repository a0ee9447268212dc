package policies

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestLibraryRegoTests runs every _test.rego of the embedded library, as
// `opa test` would, compiled strictly with the engine's capabilities.
func TestLibraryRegoTests(t *testing.T) {
	ctx := context.Background()
	caps := capabilities()
	mods, err := builtinModules(caps, true)
	if err != nil {
		t.Fatal(err)
	}
	compiler := ast.NewCompiler().WithCapabilities(caps).WithStrict(true).WithDefaultRegoVersion(ast.RegoV1)
	store := inmem.New()
	txn := storageRead(t, ctx, store)
	ch, err := tester.NewRunner().SetCompiler(compiler).SetStore(store).SetModules(mods).RaiseBuiltinErrors(true).RunTests(ctx, txn)
	if err != nil {
		t.Fatal(err)
	}
	perFile := map[string]int{}
	for r := range ch {
		perFile[r.Location.File]++
		switch {
		case r.Error != nil:
			t.Errorf("%s: %s.%s: error: %v", r.Location, r.Package, r.Name, r.Error)
		case r.Fail:
			t.Errorf("%s: %s.%s: failed at %v", r.Location, r.Package, r.Name, r.FailedAt)
		}
	}
	// Every library file has tests beside it.
	err = fs.WalkDir(library, "lib", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" || isTestFile(p) {
			return err
		}
		test := libraryPrefix + strings.TrimSuffix(p, ".rego") + "_test.rego"
		if perFile[test] == 0 {
			t.Errorf("%s has no tests in %s", p, test)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
