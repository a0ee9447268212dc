package policies

import (
	"bytes"
	"iter"
	"strings"
	"sync"
)

// hostRecord is what a run keeps of one host after evaluating it: indexes
// into what hosts share (its name in the names arena, its fleet, the
// directory of its snapshot file, the evaluation's outcome). The rest of
// its HostRun is its template's. A 100,000-host run keeps 100,000 of
// these: 20 bytes each, holding no pointer.
type hostRecord struct {
	// name is a nameRef.
	name uint32
	// tmpl is 1 + the index of the host's template in hostNames.tmpls;
	// 0 when the host was not evaluated.
	tmpl int32
	// fleet indexes hostNames.fleets.
	fleet int32
	// file >= 0 indexes hostNames.dirs: the file is that prefix + host +
	// ".json", as a snapshot directory names its files. Else the file is
	// hostNames.files[-file-1].
	file int32
	// group is 1 + the index of the host's fleet-wide group in
	// Audit.groups; 0 for none.
	group int32
}

// hostNames holds what host records point into. Workers add to it at
// once: each writes names into an arena chunk of its own, and keeps the
// last fleet and directory it saw, so the lock is taken about once per
// distinct value or chunk, not per host. Records are read only once the
// workers are done.
type hostNames struct {
	mu     sync.Mutex
	chunks [][]byte // names, each a length byte and the name
	long   []string // names too long for a chunk
	tmpls  []*template
	fleets []string
	dirs   []string
	files  []string
	index  map[string]int32 // fleets by "f" + name, dirs by "d" + prefix
}

// A nameRef is a chunk index and offset, or with longName set an index
// into hostNames.long.
const (
	nameChunk    = 64 << 10
	nameChunkBit = 16 // offsets within a chunk
	longName     = 1 << 31
	maxChunks    = longName >> nameChunkBit
	maxArenaName = 255
)

// namesCache is one worker's arena chunk and its last interned fleet and
// directory.
type namesCache struct {
	chunk          []byte
	chunkID        int
	fleet, dir     string
	fleetID, dirID int32
	ok             [2]bool
}

const snapshotExt = ".json"

// record makes host run's record, interning its fleet, file and template.
func (n *hostNames) record(run HostRun, t *template, c *namesCache) hostRecord {
	r := hostRecord{name: n.addName(run.Host, c), tmpl: n.template(t)}
	if c.ok[0] && c.fleet == run.Fleet {
		r.fleet = c.fleetID
	} else {
		r.fleet = n.intern('f', run.Fleet, &n.fleets)
		c.fleet, c.fleetID, c.ok[0] = run.Fleet, r.fleet, true
	}
	if dir, ok := fileDir(run.File, run.Host); ok {
		if c.ok[1] && c.dir == dir {
			r.file = c.dirID
		} else {
			r.file = n.intern('d', dir, &n.dirs)
			c.dir, c.dirID, c.ok[1] = dir, r.file, true
		}
		return r
	}
	n.mu.Lock()
	n.files = append(n.files, run.File)
	r.file = -int32(len(n.files))
	n.mu.Unlock()
	return r
}

func (n *hostNames) addName(name string, c *namesCache) uint32 {
	if len(name) <= maxArenaName {
		if c.chunk == nil || len(c.chunk)+1+len(name) > cap(c.chunk) {
			n.mu.Lock()
			if len(n.chunks) < maxChunks {
				c.chunk = make([]byte, 0, nameChunk)
				c.chunkID = len(n.chunks)
				n.chunks = append(n.chunks, c.chunk)
			} else {
				c.chunk = nil
			}
			n.mu.Unlock()
		}
		if c.chunk != nil {
			off := len(c.chunk)
			c.chunk = append(append(c.chunk, byte(len(name))), name...)
			return uint32(c.chunkID)<<nameChunkBit | uint32(off)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.long = append(n.long, name)
	return longName | uint32(len(n.long)-1)
}

// nameBytes is the name ref points to, in the arena: not to be changed.
func (n *hostNames) nameBytes(ref uint32) []byte {
	if ref&longName != 0 {
		return []byte(n.long[ref&^longName])
	}
	ch := n.chunks[ref>>nameChunkBit]
	ch = ch[:cap(ch)]
	off := ref & (1<<nameChunkBit - 1)
	return ch[off+1 : off+1+uint32(ch[off])]
}

// name is the name ref points to, copied out of the arena.
func (n *hostNames) name(ref uint32) string {
	if ref&longName != 0 {
		return n.long[ref&^longName]
	}
	return string(n.nameBytes(ref))
}

// template is t's index + 1 in n.tmpls (0 for nil), adding it when new.
func (n *hostNames) template(t *template) int32 {
	if t == nil {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	// A template of another run's names (Audit.Append) is added anew.
	if t.id == 0 || int(t.id) > len(n.tmpls) || n.tmpls[t.id-1] != t {
		n.tmpls = append(n.tmpls, t)
		t.id = int32(len(n.tmpls))
	}
	return t.id
}

func (n *hostNames) intern(kind byte, s string, list *[]string) int32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.index == nil {
		n.index = map[string]int32{}
	}
	key := string(kind) + s
	if id, ok := n.index[key]; ok {
		return id
	}
	id := int32(len(*list))
	*list = append(*list, s)
	n.index[key] = id
	return id
}

// fileDir returns the prefix of file before host + ".json", when file is
// named so and the prefix is a directory ("" or ending in a separator).
func fileDir(file, host string) (string, bool) {
	dir, ok := strings.CutSuffix(file, snapshotExt)
	if !ok || host == "" {
		return "", false
	}
	dir, ok = strings.CutSuffix(dir, host)
	if !ok || (dir != "" && !strings.HasSuffix(dir, "/")) {
		return "", false
	}
	return dir, true
}

// run is the HostRun of record r.
func (n *hostNames) run(r *hostRecord) HostRun {
	h := HostRun{Host: n.name(r.name), Fleet: n.fleets[r.fleet]}
	if r.file >= 0 {
		h.File = n.dirs[r.file] + h.Host + snapshotExt
	} else {
		h.File = n.files[-r.file-1]
	}
	if t := n.tmpl(r); t != nil {
		h.Unread, h.Skipped, h.TimedOut, h.Image, h.PodsUnread = t.unread, t.skipped, t.timedOut, t.image, t.podsUnread
	}
	return h
}

// tmpl is r's template, or nil.
func (n *hostNames) tmpl(r *hostRecord) *template {
	if r.tmpl == 0 {
		return nil
	}
	return n.tmpls[r.tmpl-1]
}

// Host is host i's record, in the order the inputs came.
func (a *Audit) Host(i int) HostRun {
	return a.names.run(&a.hosts[i])
}

// Hosts yields each host's record in input order. Each is made as it is
// yielded: a large fleet's records are never all held as HostRuns.
func (a *Audit) Hosts() iter.Seq[HostRun] {
	return func(yield func(HostRun) bool) {
		for i := range a.hosts {
			if !yield(a.names.run(&a.hosts[i])) {
				return
			}
		}
	}
}

// newAudit makes an Audit with room for hint host records.
func newAudit(hint int) *Audit {
	return &Audit{names: &hostNames{}, hosts: make([]hostRecord, hint)}
}

// host is host i's name, copied; sameHost and compareHosts compare names
// in place.
func (a *Audit) host(i int32) string { return a.names.name(a.hosts[i].name) }
func (a *Audit) sameHost(i, j int32) bool {
	return bytes.Equal(a.names.nameBytes(a.hosts[i].name), a.names.nameBytes(a.hosts[j].name))
}
func (a *Audit) compareHosts(i, j int32) int {
	return bytes.Compare(a.names.nameBytes(a.hosts[i].name), a.names.nameBytes(a.hosts[j].name))
}

// fleet and tmpl read host i's record.
func (a *Audit) fleet(i int32) string   { return a.names.fleets[a.hosts[i].fleet] }
func (a *Audit) tmpl(i int32) *template { return a.names.tmpl(&a.hosts[i]) }
