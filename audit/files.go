package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// fileList is the snapshot files of a run, kept compact: a directory's
// names are one byte string, so a 100,000-host directory's listing costs
// a few bytes per file, not a string each.
type fileList struct {
	parts []fileListPart
	n     int
}

// fileListPart is one --snapshots argument: a file (dir is the path, no
// names) or a directory's *.json files, sorted, their names kept without
// the extension.
type fileListPart struct {
	dir   string
	names []byte
	ends  []uint32
}

func (l *fileList) Len() int { return l.n }

// All yields each file's path: a directory's as filepath.Join(dir, name).
func (l *fileList) All() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, p := range l.parts {
			if p.ends == nil {
				if !yield(p.dir) {
					return
				}
				continue
			}
			start := uint32(0)
			for _, end := range p.ends {
				if !yield(filepath.Join(p.dir, string(p.names[start:end])+snapshotExt)) {
					return
				}
				start = end
			}
		}
	}
}

// snapshotFiles expands files and directories (their *.json, sorted by
// name). A path that does not exist is a usage error; so is a directory
// that cannot be listed, or lists no *.json.
func snapshotFiles(paths []string) (*fileList, error) {
	l := &fileList{}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--snapshots %s: %w", p, err)
		}
		if !info.IsDir() {
			l.parts = append(l.parts, fileListPart{dir: p})
			l.n++
			continue
		}
		part, err := listSnapshots(p)
		if err != nil {
			return nil, fmt.Errorf("--snapshots %s: %w", p, err)
		}
		if len(part.ends) == 0 {
			return nil, fmt.Errorf("--snapshots %s: %w", p, ErrNoSnapshots)
		}
		l.parts = append(l.parts, part)
		l.n += len(part.ends)
	}
	return l, nil
}

// snapshotExt ends a snapshot file's name in a directory.
const snapshotExt = ".json"

// listSnapshots reads dir's names in batches and keeps those ending in
// ".json" (the names filepath.Glob(dir/*.json) matches), sorted.
func listSnapshots(dir string) (fileListPart, error) {
	part := fileListPart{dir: dir}
	d, err := os.Open(dir)
	if err != nil {
		return part, err
	}
	defer d.Close()
	var starts []uint32
	for {
		names, err := d.Readdirnames(1024)
		for _, name := range names {
			name, ok := strings.CutSuffix(name, snapshotExt)
			if !ok || strings.ContainsRune(name, filepath.Separator) {
				continue
			}
			if len(part.names)+len(name) > math.MaxUint32 {
				return part, errors.New("too many names in the directory")
			}
			starts = append(starts, uint32(len(part.names)))
			part.names = append(part.names, name...)
			part.ends = append(part.ends, uint32(len(part.names)))
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return part, err
		}
	}
	// Sort the (start, end) pairs by the names they delimit, then rebuild
	// the names in that order.
	idx := make([]int32, len(starts))
	for i := range idx {
		idx[i] = int32(i)
	}
	name := func(i int32) []byte { return part.names[starts[i]:part.ends[i]] }
	slices.SortFunc(idx, func(a, b int32) int { return compareFileNames(name(a), name(b)) })
	sorted := make([]byte, 0, len(part.names))
	ends := make([]uint32, len(idx))
	for k, i := range idx {
		sorted = append(sorted, name(i)...)
		ends[k] = uint32(len(sorted))
	}
	part.names, part.ends = sorted, ends
	return part, nil
}

// compareFileNames orders names as their file names, extension included,
// compare: "a-b.json" before "a.json".
func compareFileNames(a, b []byte) int {
	n := min(len(a), len(b))
	if c := bytes.Compare(a[:n], b[:n]); c != 0 || len(a) == len(b) {
		return c
	}
	return strings.Compare(string(a[n:])+snapshotExt, string(b[n:])+snapshotExt)
}
