package configrepo

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing/fstest"
)

// IndexRef labels a checkout of the index: the change git commit would
// record.
const IndexRef = "index"

// CheckoutIndex reads the repo's index (the staged change) as git commit
// would record it: entries listed with git ls-files --stage and blobs read
// with git cat-file, like CheckoutRef, so unstaged edits in the work tree,
// attributes and filters never change what is read. indexFile is the index
// to read ("" for the repo's own): git sets GIT_INDEX_FILE for a hook of
// git commit -a or git commit PATH, whose index is a temporary one; a
// relative path is taken from the current directory, as git does. An
// unmerged path is an error.
func CheckoutIndex(ctx context.Context, repo, indexFile string) (*Checkout, error) {
	return checkoutIndex(ctx, repo, indexFile, limits{files: maxRepoFiles, bytes: maxRepoBytes})
}

func checkoutIndex(ctx context.Context, repo, indexFile string, lim limits) (*Checkout, error) {
	c := &Checkout{Files: fstest.MapFS{}, Ref: IndexRef, Refused: map[string]string{}, lim: lim}
	if head, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "HEAD"); err == nil {
		c.Commit = strings.TrimSpace(string(head))
	}
	var env []string
	if indexFile != "" {
		abs, err := filepath.Abs(indexFile)
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", indexFile, err)
		}
		env = append(env, "GIT_INDEX_FILE="+abs)
	}
	var entries []treeEntry
	err := gitRecordsEnv(ctx, repo, env, func(line string) error {
		if len(entries) == lim.files {
			return fmt.Errorf("the repo holds more than %d files", lim.files)
		}
		e, err := parseStageLine(line)
		if err != nil {
			return err
		}
		entries = append(entries, e)
		return nil
	}, "ls-files", "--stage", "-z")
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	if err := c.readBlobs(ctx, repo, entries); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	return c, nil
}

// parseStageLine parses a git ls-files --stage record, "<mode> SP <object>
// SP <stage> TAB <path>", as the tree entry it stands for; a path at a
// stage other than 0 is unmerged.
func parseStageLine(line string) (treeEntry, error) {
	meta, name, ok := strings.Cut(line, "\t")
	f := strings.Fields(meta)
	if !ok || len(f) != 3 || !isHex(f[1]) || len(f[0]) != 6 {
		return treeEntry{}, fmt.Errorf("git ls-files: unexpected line %q", line)
	}
	if f[2] != "0" {
		return treeEntry{}, fmt.Errorf("%s is unmerged: resolve the conflict and stage the result", name)
	}
	typ := "blob"
	if f[0] == "160000" {
		typ = "commit"
	}
	return treeEntry{mode: f[0], typ: typ, oid: f[1], path: name}, nil
}
