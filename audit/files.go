package audit

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// fileList is the snapshot files of a run, in order.
type fileList struct {
	files []string
}

func (l *fileList) Len() int { return len(l.files) }

// All yields each file's path: a directory's as filepath.Join(dir, name).
func (l *fileList) All() iter.Seq[string] { return slices.Values(l.files) }

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
			l.files = append(l.files, p)
			continue
		}
		files, err := listSnapshots(p)
		if err != nil {
			return nil, fmt.Errorf("--snapshots %s: %w", p, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("--snapshots %s: %w", p, ErrNoSnapshots)
		}
		l.files = append(l.files, files...)
	}
	return l, nil
}

// snapshotExt ends a snapshot file's name in a directory.
const snapshotExt = ".json"

// listSnapshots reads dir's names in batches and keeps those ending in
// ".json" (the names filepath.Glob(dir/*.json) matches), sorted, each
// joined to dir.
func listSnapshots(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	for {
		batch, err := d.Readdirnames(1024)
		for _, name := range batch {
			if strings.HasSuffix(name, snapshotExt) && !strings.ContainsRune(name, filepath.Separator) {
				names = append(names, name)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(names)
	for i, name := range names {
		names[i] = filepath.Join(dir, name)
	}
	return names, nil
}
