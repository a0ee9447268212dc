package kube

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
)

// Limits on what ReadManifests reads.
const (
	// maxFileSize fits kubectl get pods -A -o json of a large cluster.
	maxFileSize = 64 << 20
	maxFiles    = 10000
)

// ReadManifests reads root in fsys: one file (whatever its name), or a
// directory tree of *.yaml, *.yml and *.json files in lexical order, skipping
// hidden files and directories. Object files are named by their path in fsys.
// Each file that cannot be read or parsed adds its errors (*ManifestError) and
// the other files are still read.
func ReadManifests(fsys fs.FS, root string) ([]Object, []error) {
	info, err := fs.Stat(fsys, root)
	if err != nil {
		return nil, []error{&ManifestError{File: root, Err: err}}
	}
	if !info.IsDir() {
		return readFile(fsys, root)
	}
	var objs []Object
	var errs []error
	files := 0
	walkErr := fs.WalkDir(fsys, root, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, &ManifestError{File: name, Err: err})
			return nil
		}
		if name != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !isManifest(d.Name()) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// Read links to files (a mounted ConfigMap's entries); never
			// follow links to directories, which may loop.
			if info, err := fs.Stat(fsys, name); err == nil && info.IsDir() {
				return nil
			}
		}
		if files++; files > maxFiles {
			return fmt.Errorf("more than %d manifest files", maxFiles)
		}
		o, e := readFile(fsys, name)
		objs = append(objs, o...)
		errs = append(errs, e...)
		return nil
	})
	if walkErr != nil {
		errs = append(errs, &ManifestError{File: root, Err: walkErr})
	}
	return objs, errs
}

func isManifest(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func readFile(fsys fs.FS, name string) ([]Object, []error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, []error{&ManifestError{File: name, Err: err}}
	}
	defer f.Close()
	// Open may hand back a device (an os.DirFS does): never read one.
	if info, err := f.Stat(); err != nil {
		return nil, []error{&ManifestError{File: name, Err: err}}
	} else if m := info.Mode(); !m.IsRegular() {
		return nil, []error{&ManifestError{File: name, Err: fmt.Errorf("%w (%s)", safeio.ErrNotRegular, safeio.Kind(m))}}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, []error{&ManifestError{File: name, Err: err}}
	}
	if len(data) > maxFileSize {
		return nil, []error{&ManifestError{File: name, Err: fmt.Errorf("larger than %d MiB", maxFileSize>>20)}}
	}
	objs, err := ParseManifests(data, name)
	return objs, unjoin(err)
}

// unjoin lists the errors errors.Join combined.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
