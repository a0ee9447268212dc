package safeio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// OpenFileOrDir is Open for walking a tree: a directory is opened too (to
// list it), anything else that is not a regular file is refused the same way
// and the open never blocks.
func OpenFileOrDir(path string) (*os.File, error) { return open(path, true) }

// ReadDir lists a directory, opened with OpenFileOrDir so that a FIFO where
// a directory was expected fails at once instead of blocking; entries are
// sorted by name as os.ReadDir sorts them.
func ReadDir(path string) ([]fs.DirEntry, error) {
	f, err := OpenFileOrDir(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// DirFS is os.DirFS(dir) that never blocks on, or reads, anything but
// regular files and directories: Open of a FIFO, socket or device fails
// with ErrNotRegular. Errors name files by their path in the FS.
func DirFS(dir string) fs.FS { return dirFS{dir: dir, fsys: os.DirFS(dir)} }

type dirFS struct {
	dir  string
	fsys fs.FS
}

func (d dirFS) local(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return filepath.Join(d.dir, filepath.FromSlash(name)), nil
}

func (d dirFS) Open(name string) (fs.File, error) {
	local, err := d.local("open", name)
	if err != nil {
		return nil, err
	}
	f, err := OpenFileOrDir(local)
	if err != nil {
		return nil, renamed(err, name)
	}
	return f, nil
}

func (d dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	local, err := d.local("readdir", name)
	if err != nil {
		return nil, err
	}
	entries, err := ReadDir(local)
	return entries, renamed(err, name)
}

func (d dirFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(d.fsys, name) }

// renamed replaces the local path in a *fs.PathError with the FS name.
func renamed(err error, name string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	return err
}
