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
	// kids indexes nodes by their directory for ReadDir; nil when a name
	// was added or removed since.
	kids map[string][]string
	// misses counts names fetched after the stream, reads of files it did
	// not carry included.
	misses atomic.Int64
	onMiss func(what string) // tests: which names missed
	// fetchErrs counts fetches that failed for the transport's sake.
	fetchErrs atomic.Int64
	// maxFetches caps misses; refused counts the names not fetched for it.
	maxFetches int64
	refused    atomic.Int64
	// cmds are the commands the stream runs after the contents (see
	// execTrailer); ran their outcomes, by commandKey.
	cmds [][]string
	ran  map[string]execResult
}

// defaultMaxFetches is how many names one host may fetch after its stream:
// a few libraries read for their version banner, a directory an
// ld.so.conf names. Each is an exec through the login shell, a second
// where that runs conda or pyenv init.
const defaultMaxFetches = 8

type node struct {
	mode       fs.FileMode
	size       int64
	target     string
	full       bool   // a directory whose entries are all known
	data       []byte // nil: not streamed
	missing    bool   // known not to exist
	err        error  // a name that could not be read (permission)
	unreadable bool   // the remote user may not read it
	inStream   bool   // listed by the snapshot script, not a fetch
}

func newTree(ctx context.Context, f fetcher, root string, capBytes int64) *tree {
	return &tree{ctx: ctx, fetch: f, root: root, cap: capBytes, lim: defaultLimits, nodes: map[string]*node{}, maxFetches: defaultMaxFetches}
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
	multiline := map[string]bool{}
	for name, n := range t.nodes {
		if first, _, ok := strings.Cut(name, "\n"); ok && n.mode.IsRegular() && n.data == nil {
			multiline["==> ./"+first+"\n"] = true
		}
	}
	contents := map[string][]byte{}
	err := sc.contents(t.expectContents, multiline, t.cap, func(name string, data []byte) {
		rel, _ := relName(name)
		contents[rel] = data
	})
	if err != nil {
		return err
	}
	t.settle(contents)
	if len(t.cmds) > 0 {
		t.ran, err = sc.execs(t.cmds)
	}
	return err
}

// expectContents says whether the contents of name (as head names it) may
// come next: a listed file not yet read, or a process's comm, which lists
// the process. t.mu is held.
func (t *tree) expectContents(name string) bool {
	rel, ok := relName(name)
	if !ok {
		return false
	}
	if n := t.nodes[rel]; n != nil {
		return n.mode.IsRegular() && n.data == nil
	}
	m := procFile.FindStringSubmatch(rel)
	if m == nil || m[2] != "comm" {
		return false
	}
	if p := t.nodes["proc"]; p == nil || !p.mode.IsDir() || p.unreadable {
		return false
	}
	d := t.nodes["proc/"+m[1]]
	return d == nil || (d.mode.IsDir() && !d.full)
}

// settle stores the streamed contents: a process is listed by its comm's,
// and a listed file the stream was to carry but did not went away between
// the listing and its read (a process that exited), so it is absent, not
// fetched. t.mu is held.
func (t *tree) settle(contents map[string][]byte) {
	for name, data := range contents {
		n := t.nodes[name]
		if n == nil {
			if dir := path.Dir(name); t.nodes[dir] == nil {
				t.nodes[dir] = &node{mode: fs.ModeDir | 0o555}
			}
			n = &node{mode: 0o644, size: int64(len(data))}
			t.nodes[name] = n
			t.kids = nil
		}
		n.data = data
	}
	for name, n := range t.nodes {
		n.inStream = true
		// A process's files at once (cheap to tell); the rest when opened.
		if n.data == nil && n.mode.IsRegular() && !n.unreadable && strings.HasPrefix(name, "proc/") && procFile.MatchString(name) {
			n.missing = true
		}
	}
}

// gone says whether n is a file the stream was to carry and did not.
func gone(name string, n *node) bool {
	return n.inStream && n.data == nil && n.mode.IsRegular() && !n.unreadable && streamed(name)
}

// errNotFetched is a name outside the stream past the host's fetch budget:
// not collected, and reported as such.
var errNotFetched = errors.New("not collected")

// spend takes one fetch after the stream from the host's budget.
func (t *tree) spend(what string) error {
	if t.misses.Add(1) > t.maxFetches {
		t.misses.Add(-1)
		t.refused.Add(1)
		return fmt.Errorf("%w: outside what the host streamed, and the host has had its %d fetches after the stream", errNotFetched, t.maxFetches)
	}
	if t.onMiss != nil {
		t.onMiss(what)
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
	} else {
		t.kids = nil
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
	if err := t.spend("list " + name); err != nil {
		return err
	}
	return t.listMeta(name)
}

// listMeta runs metaScript for name, spent from the budget already.
func (t *tree) listMeta(name string) error {
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
		t.kids = nil
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
	case gone(name, n):
		return nil, pathErr("open", name, fs.ErrNotExist)
	case n.data != nil && int64(len(n.data)) < t.cap:
		return &memFile{info: info(name, n), r: bytes.NewReader(n.data)}, nil
	}
	// Not streamed, or cut at the cap: read it now, streaming.
	if err := t.spend("read " + name); err != nil {
		return nil, pathErr("open", name, err)
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
		if err := t.spend("list " + name); err != nil {
			return nil, pathErr("readdir", name, err)
		}
		t.mu.Lock()
		delete(t.nodes, name) // list it again, with its entries
		t.kids = nil
		t.mu.Unlock()
		if err := t.listMeta(name); err != nil {
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
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kids == nil {
		// Collectors list thousands of directories: index once, not a
		// walk over every name per listing.
		t.kids = map[string][]string{}
		for k := range t.nodes {
			if k != "." {
				t.kids[path.Dir(k)] = append(t.kids[path.Dir(k)], k)
			}
		}
	}
	var out []fs.DirEntry
	for _, k := range t.kids[name] {
		if c := t.nodes[k]; c != nil && !c.missing {
			out = append(out, fs.FileInfoToDirEntry(info(k, c)))
		}
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
