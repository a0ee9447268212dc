package audit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// fileList is the snapshot files of a run, kept compact: a directory's
// sorted names are front-coded in one byte string (each name as the
// length it shares with the one before, and the rest), so a 100,000-host
// directory's listing costs a few bytes per file, not a string each.
type fileList struct {
	parts []fileListPart
	n     int
}

// fileListPart is one --snapshots argument: a file (dir is the path, n 0)
// or a directory's n *.json files, sorted, their names front-coded in
// names without the extension.
type fileListPart struct {
	dir   string
	names []byte
	n     int
}

func (l *fileList) Len() int { return l.n }

// All yields each file's path: a directory's as filepath.Join(dir, name).
func (l *fileList) All() iter.Seq[string] {
	return func(yield func(string) bool) {
		var name []byte
		for _, p := range l.parts {
			if p.n == 0 {
				if !yield(p.dir) {
					return
				}
				continue
			}
			for rest := p.names; len(rest) > 0; {
				shared, n1 := binary.Uvarint(rest)
				size, n2 := binary.Uvarint(rest[n1:])
				rest = rest[n1+n2:]
				name = append(name[:shared], rest[:size]...)
				rest = rest[size:]
				if !yield(filepath.Join(p.dir, string(name)+snapshotExt)) {
					return
				}
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
		if part.n == 0 {
			return nil, fmt.Errorf("--snapshots %s: %w", p, ErrNoSnapshots)
		}
		l.parts = append(l.parts, part)
		l.n += part.n
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
	var names []byte
	var ends []int
	for {
		batch, err := d.Readdirnames(1024)
		for _, name := range batch {
			name, ok := strings.CutSuffix(name, snapshotExt)
			if !ok || strings.ContainsRune(name, filepath.Separator) {
				continue
			}
			names = append(names, name...)
			ends = append(ends, len(names))
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return part, err
		}
	}
	name := func(i int) []byte {
		if i == 0 {
			return names[:ends[0]]
		}
		return names[ends[i-1]:ends[i]]
	}
	idx := make([]int, len(ends))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return compareFileNames(name(a), name(b)) })
	var prev []byte
	for _, i := range idx {
		cur := name(i)
		shared := 0
		for shared < min(len(prev), len(cur)) && prev[shared] == cur[shared] {
			shared++
		}
		part.names = binary.AppendUvarint(part.names, uint64(shared))
		part.names = binary.AppendUvarint(part.names, uint64(len(cur)-shared))
		part.names = append(part.names, cur[shared:]...)
		prev = cur
	}
	part.names = slices.Clip(part.names)
	part.n = len(idx)
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
