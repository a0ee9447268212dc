package main

import (
	"context"
	"fmt"

	"github.com/fleetaudit/fleetaudit/configrepo"
)

// stagedHead makes the index the head of the gate when --staged is given:
// what git commit would record, never the work tree's unstaged files. For a
// hook of git commit -a or git commit PATH, git names a temporary index in
// GIT_INDEX_FILE: that one is read.
func (a *app) stagedHead(ctx context.Context, opts *configrepo.Options) error {
	if !a.v.GetBool("staged") {
		return nil
	}
	if opts.Head != "" {
		return usageError{fmt.Errorf("--staged and --head both name the head of the change: give one")}
	}
	co, err := configrepo.CheckoutIndex(ctx, opts.Repo, a.getenv("GIT_INDEX_FILE"))
	if err != nil {
		return fmt.Errorf("%s: %w", opts.Repo, err)
	}
	opts.HeadCheckout = co
	return nil
}
