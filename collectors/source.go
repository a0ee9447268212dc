package collectors

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Source is where collectors read from. Names are slash-separated and
// relative to the source's root ("proc/cmdline"), as in io/fs; helpers in this
// package also accept a leading "/".
type Source interface {
	fs.ReadDirFS
	fs.StatFS
	fs.ReadLinkFS
}

// Describer is implemented by sources whose files come from elsewhere than
// their path on the host (a config-repo layer). Provenance and error entries
// name a file through it.
type Describer interface {
	// Describe returns where the file name (as in io/fs: "etc/default/grub")
	// came from, without a line; ok is false for a file it does not know,
	// which is then named by its path on the host.
	Describe(name string) (origin snapshot.Provenance, ok bool)
}

// Dir returns a Source over a directory tree treated as a host's "/": symbolic
// links resolve inside the tree, absolute targets included, the way they would
// after chroot (it is Chroot over the bare tree). Nothing outside root is ever
// opened through a link, and nothing but a regular file or directory is
// opened at all: a FIFO or device under root is an error wrapping
// safeio.ErrNotRegular, never waited on or read (/dev/null, which reads as
// empty, aside).
//
// A Dir remembers which path components are links for its lifetime (sysfs
// reads walk the same deep prefixes thousands of times), so use a new one for
// each collection of a live host.
func Dir(root string) Source {
	return Chroot(localTree{root: filepath.Clean(root)})
}

// FS adapts an fs.FS (fstest.MapFS in tests, a config repo's files) to a
// Source, through Chroot: links are followed only when fsys reports them
// (fs.ReadLinkFS), and then as after chroot.
func FS(fsys fs.FS) Source { return Chroot(fsSource{fsys}) }

// Chroot returns a Source in which every name of tree resolves as after
// chroot to tree's root: the symbolic links in each component are followed
// by the one resolver every source shares (an absolute target restarts at
// the root, ".." never climbs above it), and tree is asked to open, list or
// stat only names with no link left in them. tree's Lstat and ReadLink must
// not follow a final link. A transport whose file access does not confine
// links (a remote tree under a directory other than "/") wraps it in Chroot.
//
// The Source remembers which components are links for its lifetime.
func Chroot(tree Source) Source {
	return chroot{tree: tree, links: &linkCache{entries: map[string]linkEntry{}}}
}

type chroot struct {
	tree  Source
	links *linkCache
}

type linkCache struct {
	mu      sync.Mutex
	entries map[string]linkEntry
}

// linkEntry is what one lstat and readlink of a resolved name found.
type linkEntry struct {
	isLink bool
	target string
	err    error
}

func (c chroot) lookupLink(name string) linkEntry {
	c.links.mu.Lock()
	e, ok := c.links.entries[name]
	c.links.mu.Unlock()
	if ok {
		return e
	}
	info, err := c.tree.Lstat(name)
	if err == nil && info.Mode()&fs.ModeSymlink != 0 {
		e.isLink = true
		e.target, e.err = c.tree.ReadLink(name)
	}
	c.links.mu.Lock()
	c.links.entries[name] = e
	c.links.mu.Unlock()
	return e
}

const maxSymlinks = 40

var errTooManyLinks = errors.New("too many levels of symbolic links")

// readLinkFunc says whether name (slash-separated, relative to the root) is
// a symbolic link, and its target. What a missing component means is the
// caller's choice: an error, or "not a link" (left to the final open).
type readLinkFunc func(name string) (target string, isLink bool, err error)

// resolveLinks is the one chroot-style resolver every source shares: it
// follows the symbolic links in every component of name (the last one too
// when followLast) inside the root, as the kernel would after chroot. An
// absolute target restarts at the root and ".." never climbs above it, so
// nothing outside the root is ever reached. ".." after a link climbs from
// the link's target, so name is not cleaned lexically first. The result is
// relative to the root ("." for the root itself).
func resolveLinks(name string, followLast bool, readLink readLinkFunc) (string, error) {
	pending := strings.Split(name, "/")
	var resolved []string
	links := 0
	for len(pending) > 0 {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(resolved) > 0 {
				resolved = resolved[:len(resolved)-1]
			}
			continue
		}
		candidate := append(resolved[:len(resolved):len(resolved)], part)
		if len(pending) == 0 && !followLast {
			resolved = candidate
			break
		}
		target, isLink, err := readLink(strings.Join(candidate, "/"))
		if err != nil {
			return "", err
		}
		if !isLink {
			resolved = candidate
			continue
		}
		if links++; links > maxSymlinks {
			return "", &fs.PathError{Op: "open", Path: name, Err: errTooManyLinks}
		}
		if strings.HasPrefix(target, "/") {
			resolved = nil
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	if len(resolved) == 0 {
		return ".", nil
	}
	return strings.Join(resolved, "/"), nil
}

// resolve maps a source name to a name in the tree with no link left in it
// (but the last component, unless followLast).
func (c chroot) resolve(name string, followLast bool) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return resolveLinks(name, followLast, func(p string) (string, bool, error) {
		link := c.lookupLink(p)
		if link.isLink && link.err != nil {
			return "", false, &fs.PathError{Op: "readlink", Path: name, Err: link.err}
		}
		// A missing component is reported by the final open.
		return link.target, link.isLink, nil
	})
}

func (c chroot) Open(name string) (fs.File, error) {
	resolved, err := c.resolve(name, true)
	if err != nil {
		return nil, err
	}
	f, err := c.tree.Open(resolved)
	return f, rename(err, "", name)
}

func (c chroot) ReadDir(name string) ([]fs.DirEntry, error) {
	resolved, err := c.resolve(name, true)
	if err != nil {
		return nil, err
	}
	entries, err := c.tree.ReadDir(resolved)
	return entries, rename(err, "", name)
}

func (c chroot) Stat(name string) (fs.FileInfo, error) {
	resolved, err := c.resolve(name, true)
	if err != nil {
		return nil, err
	}
	info, err := c.tree.Stat(resolved)
	return info, rename(err, "", name)
}

func (c chroot) Lstat(name string) (fs.FileInfo, error) {
	resolved, err := c.resolve(name, false)
	if err != nil {
		return nil, err
	}
	info, err := c.tree.Lstat(resolved)
	return info, rename(err, "", name)
}

func (c chroot) ReadLink(name string) (string, error) {
	resolved, err := c.resolve(name, false)
	if err != nil {
		return "", err
	}
	target, err := c.tree.ReadLink(resolved)
	return target, rename(err, "", name)
}

// RealPath resolves every symbolic link in name inside src, as realpath(3)
// would after chroot, so that two names of one file or directory compare
// equal. Missing components are errors (fs.ErrNotExist).
func RealPath(src Source, name string) (string, error) {
	resolved, err := resolveLinks(name, true, func(p string) (string, bool, error) {
		info, err := src.Lstat(p)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			return "", false, err
		}
		target, err := src.ReadLink(p)
		return target, true, err
	})
	if err != nil {
		return "", err
	}
	return path.Clean("/" + resolved), nil
}

// localTree is a directory of this machine with no link resolution of its
// own: Chroot does that.
type localTree struct{ root string }

func (d localTree) local(name string) string {
	return filepath.Join(d.root, filepath.FromSlash(name))
}

func (d localTree) Open(name string) (fs.File, error) {
	local := d.local(name)
	// Never os.Open: a FIFO under the root would block it forever.
	f, err := safeio.OpenFileOrDir(local)
	if errors.Is(err, safeio.ErrNotRegular) && isDevNull(local) {
		// The masking idiom (a config file linked to /dev/null) on a live
		// host: it reads as empty and never blocks.
		return os.Open(os.DevNull)
	}
	if err != nil {
		return nil, rename(err, "open", name)
	}
	return f, nil
}

// isDevNull tells whether local is this machine's /dev/null.
func isDevNull(local string) bool {
	a, err := os.Stat(local)
	if err != nil {
		return false
	}
	b, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(a, b)
}

func (d localTree) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := safeio.ReadDir(d.local(name))
	return entries, rename(err, "readdir", name)
}

func (d localTree) Stat(name string) (fs.FileInfo, error) {
	info, err := os.Stat(d.local(name))
	return info, rename(err, "stat", name)
}

func (d localTree) Lstat(name string) (fs.FileInfo, error) {
	info, err := os.Lstat(d.local(name))
	return info, rename(err, "lstat", name)
}

func (d localTree) ReadLink(name string) (string, error) {
	target, err := os.Readlink(d.local(name))
	return target, rename(err, "readlink", name)
}

// rename reports errors with the source name, never the local or resolved
// path, so messages read the same for a fixture tree and a live host. An
// empty op keeps the error's own.
func rename(err error, op, name string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if op == "" {
			op = pe.Op
		}
		return &fs.PathError{Op: op, Path: "/" + strings.TrimPrefix(name, "/"), Err: pe.Err}
	}
	return err
}

type fsSource struct{ fsys fs.FS }

func (s fsSource) Open(name string) (fs.File, error)          { return s.fsys.Open(name) }
func (s fsSource) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(s.fsys, name) }
func (s fsSource) Stat(name string) (fs.FileInfo, error)      { return fs.Stat(s.fsys, name) }
func (s fsSource) Lstat(name string) (fs.FileInfo, error)     { return fs.Lstat(s.fsys, name) }
func (s fsSource) ReadLink(name string) (string, error)       { return fs.ReadLink(s.fsys, name) }

// ErrTooLarge is returned when a file exceeds the read cap.
var ErrTooLarge = errors.New("file exceeds the size cap")

// tooLargeError names the file it is about, so a collection error can name
// it as provenance does.
type tooLargeError struct {
	name string
	max  int64
}

func (e *tooLargeError) cause() string { return fmt.Sprintf("%v (%d bytes)", ErrTooLarge, e.max) }
func (e *tooLargeError) Error() string { return e.name + ": " + e.cause() }
func (e *tooLargeError) Unwrap() error { return ErrTooLarge }

// checkRegular refuses an open file that is not a regular file (a device
// or FIFO a Source other than Dir let through), except /dev/null, which
// reads as empty. A directory passes: its read fails at once, "is a
// directory".
func checkRegular(f fs.File, name string) error {
	info, err := f.Stat()
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if m := info.Mode(); !m.IsRegular() && !m.IsDir() && !(m&fs.ModeCharDevice != 0 && isOpenDevNull(info)) {
		return &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (%s)", safeio.ErrNotRegular, safeio.Kind(m))}
	}
	return nil
}

func isOpenDevNull(info fs.FileInfo) bool {
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(info, null)
}

// rel turns "/proc/cmdline" into the io/fs name "proc/cmdline".
func rel(name string) string {
	name = path.Clean("/" + name)
	if name == "/" {
		return "."
	}
	return name[1:]
}

// readCapped reads a file to EOF, up to max bytes. Sizes reported by stat are
// not trusted: /proc and /sys files claim 0 or 4096 bytes. Only a regular
// file is read, whatever the Source lets Open return.
func readCapped(src Source, name string, max int64) ([]byte, error) {
	f, err := src.Open(rel(name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := checkRegular(f, name); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		// The file's own error names the local path; keep only its cause.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if int64(len(data)) > max {
		return nil, &tooLargeError{name: name, max: max}
	}
	return data, nil
}
