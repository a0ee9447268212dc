package configrepo

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"testing/fstest"
)

// WithFiles returns a copy of the checkout with files written over it (by
// repo path, whole content), labelled label: a change held in memory,
// gated against c through Options.BaseCheckout and HeadCheckout without
// writing to the user's repo. c itself is not changed; file contents are
// shared, never written to.
func (c *Checkout) WithFiles(label string, files map[string][]byte) (*Checkout, error) {
	out := &Checkout{
		Files:   maps.Clone(c.Files),
		Ref:     label,
		Refused: maps.Clone(c.Refused),
		size:    c.size,
		lim:     c.lim,
	}
	if out.Files == nil {
		out.Files = fstest.MapFS{}
	}
	if out.Refused == nil {
		out.Refused = map[string]string{}
	}
	if out.lim.files == 0 {
		out.lim = limits{files: maxRepoFiles, bytes: maxRepoBytes}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		clean, err := checkoutPath(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		for p := clean; p != "."; p = path.Dir(p) {
			if why, refused := out.Refused[p]; refused {
				return nil, fmt.Errorf("%s: %s: the repo holds something at %s that is not a regular file (%s)", label, clean, p, why)
			}
		}
		mode := fs.FileMode(0o644)
		if old, ok := out.Files[clean]; ok {
			mode = old.Mode
			out.size -= int64(len(old.Data))
		}
		out.size += int64(len(files[name]))
		if out.size > out.lim.bytes || len(out.Files) >= out.lim.files {
			return nil, fmt.Errorf("%s: the repo's files exceed the checkout's limits", label)
		}
		out.Files[clean] = &fstest.MapFile{Data: files[name], Mode: mode}
	}
	if err := out.checkClashes(); err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return out, nil
}
