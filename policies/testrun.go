package policies

import (
	"context"
	"fmt"
	"io"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// RunTests runs the _test.rego files of the built-in library and of dirs, as
// `opa test` would, compiled with the engine's capabilities, and writes
// opa test's report to w. It reports whether every test passed; the error is
// for policies that do not load or compile.
func RunTests(ctx context.Context, w io.Writer, dirs []string, verbose bool) (bool, error) {
	caps := capabilities()
	mods, err := builtinModules(caps, true)
	if err != nil {
		return false, err
	}
	userMods, docs, err := userPolicies(dirs, caps, true)
	if err != nil {
		return false, err
	}
	for name, m := range userMods {
		mods[name] = m
	}
	if docs == nil {
		// No DIRs: inmem panics on a nil root.
		docs = map[string]any{}
	}
	store := inmem.NewFromObject(docs)
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return false, err
	}
	defer store.Abort(ctx, txn)
	compiler := ast.NewCompiler().WithCapabilities(caps).WithDefaultRegoVersion(ast.RegoV1)
	ch, err := tester.NewRunner().SetCompiler(compiler).SetStore(store).SetModules(mods).RaiseBuiltinErrors(true).RunTests(ctx, txn)
	if err != nil {
		return false, fmt.Errorf("compile policies: %w", err)
	}
	pass := true
	results := make(chan *tester.Result)
	go func() {
		defer close(results)
		for r := range ch {
			if r.Fail || r.Error != nil {
				pass = false
			}
			results <- r
		}
	}()
	if err := (tester.PrettyReporter{Output: w, Verbose: verbose, FailureLine: true}).Report(results); err != nil {
		return false, err
	}
	return pass, nil
}
