package sshsource

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// fetcher runs a script on the host and returns its standard output; a
// script that exits non-zero is an error with the first line it printed
// on standard error.
type fetcher interface {
	output(ctx context.Context, script string) ([]byte, error)
	stream(ctx context.Context, script string) (io.ReadCloser, error)
}

// tree is the host's file tree as the stream described it, relative to the
// remote root, with no link resolution of its own (collectors.Chroot does
// that). A name the stream did not cover is fetched on first use.
type tree struct {
	ctx   context.Context
	fetch fetcher
	root  string
	cap   int64 // contents longer than this were cut: read again when opened
	lim   limits

	mu    sync.Mutex
	nodes map[string]*node
	// misses counts names fetched after the stream, reads of files it did
	// not carry included.
	misses atomic.Int64
	onMiss func(what string) // tests: which names missed
	// fetchErrs counts fetches that failed for the transport's sake.
	fetchErrs atomic.Int64
}

type node struct {
	mode       fs.FileMode
	size       int64
	target     string
	full       bool   // a directory whose entries are all known
	data       []byte // nil: not streamed
	missing    bool   // known not to exist
	err        error  // a name that could not be read (permission)
	unreadable bool   // the remote user may not read it
}

func newTree(ctx context.Context, f fetcher, root string, capBytes int64) *tree {
	return &tree{ctx: ctx, fetch: f, root: root, cap: capBytes, lim: defaultLimits, nodes: map[string]*node{}}
}

// load builds the tree from a snapshot script's output.
func (t *tree) load(out []byte) error { return t.loadFrom(bytes.NewReader(out)) }

// loadFrom builds the tree from a snapshot script's output as it arrives,
// in one pass, within t.lim.
func (t *tree) loadFrom(r io.Reader) error {
	sc := newScanner(t.ctx, r, t.lim)
	if err := sc.skipStart(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := sc.listing(t.add); err != nil {
		return err
	}
	expect := func(name string) bool {
		rel, ok := relName(name)
		if !ok {
			return false
		}
		n := t.nodes[rel]
		return n != nil && n.mode.IsRegular() && n.data == nil
	}
	multiline := map[string]bool{}
	for name, n := range t.nodes {
		if first, _, ok := strings.Cut(name, "\n"); ok && n.mode.IsRegular() && n.data == nil {
			multiline["==> ./"+first+"\n"] = true
		}
	}
	contents := map[string][]byte{}
	err := sc.contents(expect, multiline, t.cap, func(name string, data []byte) {
		rel, _ := relName(name)
		contents[rel] = data
	})
	if err != nil {
		return err
	}
	for name, data := range contents {
		t.nodes[name].data = data
	}
	return nil
}

// add records a listing entry; t.mu is held.
func (t *tree) add(e entry) {
	n := &node{size: e.size, target: e.target, full: e.full, unreadable: e.unreadable}
	perm := fs.FileMode(e.mode & 0o777)
	if e.mode&0o4000 != 0 {
		perm |= fs.ModeSetuid
	}
	if e.mode&0o2000 != 0 {
		perm |= fs.ModeSetgid
	}
	if e.mode&0o1000 != 0 {
		perm |= fs.ModeSticky
	}
	switch e.typ {
	case 'd':
		n.mode = fs.ModeDir | perm
	case 'l':
		n.mode = fs.ModeSymlink | perm
	case 'c':
		n.mode = fs.ModeDevice | fs.ModeCharDevice | perm
	case 'b':
		n.mode = fs.ModeDevice | perm
	case 'p':
		n.mode = fs.ModeNamedPipe | perm
	case 's':
		n.mode = fs.ModeSocket | perm
	default:
		n.mode = perm
	}
	if old := t.nodes[e.name]; old != nil {
		// Keep what an earlier record knew (contents, a full listing).
		n.full = n.full || old.full
		if n.mode.IsRegular() {
			n.data = old.data
		}
	}
	t.nodes[e.name] = n
}

// lookup returns name's node, fetching it when the stream did not say.
func (t *tree) lookup(name string) (*node, error) {
	if name == "." || name == "" {
		name = "."
	}
	t.mu.Lock()
	n, known := t.nodes[name]
	if !known {
		if err := t.absent(name); err != nil {
			t.mu.Unlock()
			return nil, err
		}
	}
	t.mu.Unlock()
	if known {
		if n.missing {
			return nil, fs.ErrNotExist
		}
		return n, n.err
	}
	if err := t.fetchMeta(name); err != nil {
		return nil, err
	}
	t.mu.Lock()
	n = t.nodes[name]
	t.mu.Unlock()
	if n == nil || n.missing {
		return nil, fs.ErrNotExist
	}
	return n, n.err
}

// absent says whether the tree already knows that an unknown name does not
// exist: its nearest known ancestor is missing, not a directory, or a
// directory whose entries are all known. t.mu is held.
func (t *tree) absent(name string) error {
	for dir := path.Dir(name); ; dir = path.Dir(dir) {
		if a, ok := t.nodes[dir]; ok {
			switch {
			case a.missing:
				return fs.ErrNotExist
			case !a.mode.IsDir():
				return syscall.ENOTDIR
			case a.full:
				return fs.ErrNotExist
			}
			return nil
		}
		if dir == "." {
			return nil
		}
	}
}

// fetchMeta lists one name the stream did not cover.
func (t *tree) fetchMeta(name string) error {
	t.misses.Add(1)
	if t.onMiss != nil {
		t.onMiss("list " + name)
	}
	out, err := t.fetch.output(t.ctx, metaScript(t.root, name))
	var exit *remoteExit
	if err != nil && !errors.As(err, &exit) {
		t.fetchErrs.Add(1)
		return err
	}
	out, err = afterStart(out)
	if err != nil {
		return err
	}
	entries, _, err := parseMeta(out)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	found := false
	for _, e := range entries {
		t.add(e)
		found = found || e.name == name
	}
	if !found {
		t.nodes[name] = &node{missing: true}
	}
	return nil
}

func (t *tree) Open(name string) (fs.File, error) {
	n, err := t.lookup(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	switch {
	case n.unreadable:
		return nil, pathErr("open", name, fs.ErrPermission)
	case n.mode.IsDir():
		return &memFile{info: info(name, n)}, nil
	case n.mode&fs.ModeCharDevice != 0 && name == "dev/null":
		// The masking idiom: reads as empty, as Dir's /dev/null does.
		return &memFile{info: info(name, &node{mode: 0o666}), r: bytes.NewReader(nil)}, nil
	case !n.mode.IsRegular():
		// Never read remotely: a FIFO or device would block or never end.
		return &memFile{info: info(name, n)}, nil
	case n.data != nil && int64(len(n.data)) < t.cap:
		return &memFile{info: info(name, n), r: bytes.NewReader(n.data)}, nil
	}
	// Not streamed, or cut at the cap: read it now, streaming.
	t.misses.Add(1)
	if t.onMiss != nil {
		t.onMiss("read " + name)
	}
	rc, err := t.fetch.stream(t.ctx, readScript(t.root, name, maxLibraryRead))
	if err != nil {
		t.fetchErrs.Add(1)
		return nil, pathErr("open", name, err)
	}
	return &memFile{info: info(name, n), r: &skipToStart{r: bufio.NewReader(rc)}, closer: rc}, nil
}

// skipToStart reads past the start marker first.
type skipToStart struct {
	r       *bufio.Reader
	started bool
}

func (s *skipToStart) Read(p []byte) (int, error) {
	if !s.started {
		matched := 0
		for matched < len(startMarker) {
			b, err := s.r.ReadByte()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = fmt.Errorf("%w: no start marker", errStream)
				}
				return 0, err
			}
			switch {
			case b == startMarker[matched]:
				matched++
			case b == startMarker[0]:
				matched = 1
			default:
				matched = 0
			}
		}
		s.started = true
	}
	return s.r.Read(p)
}

// maxLibraryRead is the most a collector reads of one file (a library
// scanned for its version banner).
const maxLibraryRead = 1<<30 + 1

func (t *tree) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := t.lookup(name)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	if !n.mode.IsDir() {
		return nil, pathErr("readdir", name, syscall.ENOTDIR)
	}
	if n.unreadable {
		return nil, pathErr("readdir", name, fs.ErrPermission)
	}
	if !n.full {
		t.mu.Lock()
		delete(t.nodes, name) // list it again, with its entries
		t.mu.Unlock()
		if err := t.fetchMeta(name); err != nil {
			return nil, pathErr("readdir", name, err)
		}
		t.mu.Lock()
		n = t.nodes[name]
		t.mu.Unlock()
		if n == nil || n.missing {
			return nil, pathErr("readdir", name, fs.ErrNotExist)
		}
		if !n.full {
			return nil, pathErr("readdir", name, fs.ErrPermission)
		}
	}
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []fs.DirEntry
	for k, c := range t.nodes {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok || k == "." || rest == "" || strings.Contains(rest, "/") || c.missing {
			continue
		}
		out = append(out, fs.FileInfoToDirEntry(info(k, c)))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

func (t *tree) Stat(name string) (fs.FileInfo, error) {
	// Chroot has resolved every link but a last one, which Stat follows:
	// a tree without resolution of its own can only answer for non-links.
	n, err := t.lookup(name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	return info(name, n), nil
}

func (t *tree) Lstat(name string) (fs.FileInfo, error) {
	n, err := t.lookup(name)
	if err != nil {
		return nil, pathErr("lstat", name, err)
	}
	return info(name, n), nil
}

func (t *tree) ReadLink(name string) (string, error) {
	n, err := t.lookup(name)
	if err != nil {
		return "", pathErr("readlink", name, err)
	}
	if n.mode&fs.ModeSymlink == 0 {
		return "", pathErr("readlink", name, syscall.EINVAL)
	}
	return n.target, nil
}

func pathErr(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: name, Err: pe.Err}
	}
	if errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOENT) {
		err = syscall.ENOENT // as a local read words it
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

type fileInfo struct {
	name string
	n    *node
}

func info(name string, n *node) fileInfo { return fileInfo{name: path.Base(name), n: n} }

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.n.size }
func (i fileInfo) Mode() fs.FileMode  { return i.n.mode }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.n.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }

type memFile struct {
	info   fileInfo
	r      io.Reader
	closer io.Closer
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }

func (f *memFile) Read(p []byte) (int, error) {
	if f.info.IsDir() {
		return 0, &fs.PathError{Op: "read", Path: f.info.name, Err: syscall.EISDIR}
	}
	if f.r == nil {
		return 0, &fs.PathError{Op: "read", Path: f.info.name, Err: fmt.Errorf("not a regular file (%s)", f.info.Mode().Type())}
	}
	return f.r.Read(p)
}

func (f *memFile) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}
