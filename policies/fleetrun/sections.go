package fleetrun

import (
	"bytes"
	"crypto/sha256"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// The second of dedup.go's three levels of reuse: hosts that differ
// still share most sections (one sysctl or limit differs, the collection
// time always does). A snapshot file that must be decoded is split into
// its top-level members (snapshot.SplitMembers); each member (name and
// bytes) is decoded and validated once per run and shared by the documents
// that hold it, with what depends on it alone computed once too: its Rego
// value, the digests of the input paths rules read below it, its part of
// the fleet projection. Only a new member costs a decode. A member equal
// to the one the worker last saw under its name is found without scanning
// or hashing it (snapshot.SplitKnown). Documents built this way are the
// ones Decoder.Document makes of the file (Assemble).

// minSectionBytes: a member shorter than this (the host name, the
// collection time, the schema) is decoded for its document alone; sharing
// it would cost more than it saves.
const minSectionBytes = 64

// sectionCacheBytes bounds the raw size of the sections one generation of
// the cache holds; two generations are kept (see sectionCache).
const sectionCacheBytes = 4 << 20

// section is one member of snapshot files, decoded, with what is derived
// from it alone. Documents share Value: nothing may change it.
type section struct {
	snapshot.Member
	name string
	// raw is a copy of the member's bytes; nil for a document's own member.
	raw []byte

	astOnce sync.Once
	astVal  ast.Value
	astErr  error

	projOnce sync.Once
	proj     any
	projOK   bool
	// projDigest is proj's digest (projectionParts), made once.
	projDigestOnce sync.Once
	projDigest     digest
	projDigestOK   bool
	// projTerm is proj as Rego, converted once (projectionItems).
	projTermOnce sync.Once
	projTerm     *ast.Term

	mu    sync.Mutex
	paths map[string]digest
	// values are evidence values of facts in the section; sources, of the
	// sources section, evidence sources by fact.
	values  map[string]any
	sources map[string]string
}

// sectionCache holds the sections seen lately: a keyed hash of their
// bytes finds the candidates, and name and bytes are compared, so only
// equal members share (as classTable does for files). A generation holds
// at most sectionCacheBytes of them; the one before it is kept too, and
// its sections move to the current one when used. A fleet of distinct
// hosts so keeps the sections its hosts share, not every host's own.
type sectionCache struct {
	seed      maphash.Seed
	mu        sync.Mutex
	cur, prev map[uint64][]*section
	curBytes  int
}

func newSectionCache() *sectionCache {
	return &sectionCache{seed: maphash.MakeSeed()}
}

func (c *sectionCache) key(raw []byte) uint64 { return maphash.Bytes(c.seed, raw) }

func (c *sectionCache) get(k uint64, name string, raw []byte) *section {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.cur[k] {
		if s.is(name, raw) {
			return s
		}
	}
	for i, s := range c.prev[k] {
		if s.is(name, raw) {
			l := c.prev[k]
			c.prev[k] = append(l[:i:i], l[i+1:]...)
			c.add(k, s)
			return s
		}
	}
	return nil
}

// put adds s under k and returns the section held for its name and bytes:
// s, or one another worker decoded first.
func (c *sectionCache) put(k uint64, s *section) *section {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, old := range c.cur[k] {
		if old.is(s.name, s.raw) {
			return old
		}
	}
	c.add(k, s)
	return s
}

func (c *sectionCache) add(k uint64, s *section) {
	if c.cur == nil || c.curBytes+len(s.raw) > sectionCacheBytes {
		c.prev, c.cur, c.curBytes = c.cur, map[uint64][]*section{}, 0
	}
	c.cur[k] = append(c.cur[k], s)
	c.curBytes += len(s.raw)
}

func (s *section) is(name string, raw []byte) bool {
	return s.name == name && bytes.Equal(s.raw, raw)
}

// docSections is how the document a worker evaluates was made: by member,
// the shared section it holds unchanged (nil when it is not a shared
// section's value), or none at all when it was decoded whole.
type docSections struct {
	by map[string]*section
	// split: the document was assembled from its members; dotted: a member
	// name holds a dot (fact paths are then ambiguous between members, and
	// nothing is derived member by member).
	split, dotted bool
	// hostStart and hostEnd span the "host" member's value in the file
	// (when split; 0, 0 when it has none).
	hostStart, hostEnd int
	members            []snapshot.RawMember
	secs               []*section
	// last is the shared section this worker last found under each
	// member name: the next file most likely holds it too, and a file's
	// member equal to it is found without hashing it (SplitKnown).
	last map[string]*section
	// conv converts the sections this worker is first to need as Rego.
	conv converter
}

// maxLastSections bounds docSections.last for files of many member names.
const maxLastSections = 256

func (d *docSections) lastRaw(name string) []byte {
	if sec := d.last[name]; sec != nil {
		return sec.raw
	}
	return nil
}

func (d *docSections) reset() {
	clear(d.by)
	d.split, d.dotted = false, false
	d.hostStart, d.hostEnd = 0, 0
	clear(d.secs)
	d.secs = d.secs[:0]
}

// hostAt reports whether the document was split and holds one "host"
// member, whose value spans raw[start:end]: the file names no other host,
// so files equal to it but for that span differ only in their host's name.
func (d *docSections) hostAt(start, end int) bool {
	return d.split && d.hostStart == start && d.hostEnd == end
}

// of is the shared section doc[name] is, or nil.
func (d *docSections) of(name string) *section {
	if d == nil || !d.split {
		return nil
	}
	return d.by[name]
}

// decode makes the document of a snapshot file, from shared sections when
// it splits into members that the fast decoder reads, else as
// Decoder.Document does. w.sections says which.
func (s *runState) decode(raw []byte, w *worker) (map[string]any, error) {
	d := &w.sections
	d.reset()
	if d.last == nil || len(d.last) > maxLastSections {
		d.last = map[string]*section{}
	}
	members, ok := snapshot.SplitKnown(raw, d.members, d.lastRaw)
	if !ok {
		return w.dec.Document(raw)
	}
	d.members = members
	anyBad := false
	for _, m := range members {
		if strings.Contains(m.Name, ".") {
			d.dotted = true
		}
		if m.Name == "host" {
			d.hostStart, d.hostEnd = m.Offset, m.Offset+len(m.Value)
		}
		var sec *section
		var k uint64
		shared := len(m.Value) >= minSectionBytes
		if m.Known {
			sec = d.last[m.Name]
		} else if shared {
			k = s.sections.key(m.Value)
			sec = s.sections.get(k, m.Name, m.Value)
		}
		if sec == nil {
			dm, ok := w.dec.Member(m.Name, m.Value)
			if !ok {
				clear(d.members)
				return w.dec.Document(raw)
			}
			sec = &section{Member: dm, name: m.Name}
			if shared {
				sec.raw = bytes.Clone(m.Value)
				sec = s.sections.put(k, sec)
			}
		}
		if sec.raw != nil {
			d.last[m.Name] = sec
		}
		if len(sec.Bad) > 0 {
			anyBad = true
		}
		d.secs = append(d.secs, sec)
	}
	clear(d.members)
	doc, err := snapshot.Assemble(len(d.secs), func(i int) (string, *snapshot.Member) {
		return d.secs[i].name, &d.secs[i].Member
	})
	if err != nil {
		return nil, err
	}
	if d.by == nil {
		d.by = map[string]*section{}
	}
	for _, sec := range d.secs {
		if sec.Removed || sec.raw == nil || sec.name == "errors" && anyBad {
			// Not in the document, not shared, or not as decoded.
			continue
		}
		d.by[sec.name] = sec
	}
	d.split = true
	return doc, nil
}

// value is the section as Rego input, converted once (by c, the calling
// worker's).
func (sec *section) value(c *converter) (ast.Value, error) {
	sec.astOnce.Do(func() {
		sec.astVal, sec.astErr = c.Value(sec.Value)
		if sec.astErr == nil {
			policies.Settle(sec.astVal)
		}
	})
	return sec.astVal, sec.astErr
}

// pathDigest is ruleKeys.path's digest of input path p (p[0] is the
// section's name), computed once per section.
func (sec *section) pathDigest(p policies.InputPath, name string, h *valueHasher) (digest, bool) {
	sec.mu.Lock()
	d, ok := sec.paths[name]
	sec.mu.Unlock()
	if ok {
		return d, true
	}
	wasBad := h.bad
	h.buf, h.bad = h.buf[:0], false
	if v, ok := at(map[string]any{sec.name: sec.Value}, p); ok {
		h.buf = append(h.buf, 'y')
		h.value(v)
	} else {
		h.buf = append(h.buf, 'u')
	}
	if h.bad {
		return digest{}, false
	}
	h.bad = wasBad
	d = sha256.Sum256(h.buf)
	sec.mu.Lock()
	if sec.paths == nil {
		sec.paths = map[string]digest{}
	}
	sec.paths[name] = d
	sec.mu.Unlock()
	return d, true
}

// projection is the section's part of its host's fleet projection.
func (sec *section) projection(e *policies.Engine) (any, bool) {
	sec.projOnce.Do(func() { sec.proj, sec.projOK = projectMember(e, sec.name, sec.Value) })
	return sec.proj, sec.projOK
}

// projectionDigest is the digest of the section's projection part.
func (sec *section) projectionDigest(e *policies.Engine) (digest, bool) {
	sec.projDigestOnce.Do(func() {
		p, _ := sec.projection(e)
		h := hashers.Get().(*valueHasher)
		defer hashers.Put(h)
		sec.projDigest, sec.projDigestOK = partDigest(h, p)
	})
	return sec.projDigest, sec.projDigestOK
}

// projectMember is member name's part of Project's result for a document
// holding it: Project keeps, and takes facts from, each top-level member
// apart from the others when no member's name holds a dot.
func projectMember(e *policies.Engine, name string, v any) (any, bool) {
	switch {
	case name == "labels" || name == "errors" || name == "source" || name == "sources" || e.FactsUnder(name):
	default:
		// A name without a dot is projected only as one of these.
		return nil, false
	}
	if name == "labels" || name == "errors" {
		// Project hands these on and may project facts into them: a copy,
		// the value is shared.
		v = policies.CopyValue(v)
	}
	p := e.Project(map[string]any{name: v})
	out, ok := p[name]
	return out, ok
}

// projectSections is Project(doc) from the document's sections.
func projectSections(e *policies.Engine, doc map[string]any, d *docSections) map[string]any {
	if !d.split || d.dotted {
		return e.Project(doc)
	}
	out := make(map[string]any, len(doc))
	out["host"] = policies.CopyValue(doc["host"])
	for name, v := range doc {
		if name == "host" {
			continue
		}
		var p any
		var ok bool
		if sec := d.of(name); sec != nil {
			p, ok = sec.projection(e)
		} else {
			p, ok = projectMember(e, name, v)
		}
		if ok {
			out[name] = p
		}
	}
	return out
}

// evidence is evidence(doc, fact) with the value and source of each fact
// resolved once per section.
func (d *docSections) evidence(doc map[string]any, fact string) policies.Evidence {
	if !d.split || d.dotted || fact == "" {
		return policies.EvidenceOf(doc, fact)
	}
	ev := policies.Evidence{Fact: fact}
	name, rest, _ := strings.Cut(fact, ".")
	if sec := d.of(name); sec != nil {
		ev.Value = sec.evidenceValue(fact, rest)
	} else {
		// No member name holds a dot: the fact is in this member or
		// nowhere, as Lookup finds it in the document.
		v, _ := snapshot.Lookup(doc, fact)
		ev.Value = policies.CopyValue(policies.CitedValue(fact, v))
	}
	if src := d.of("sources"); src != nil {
		ev.Source = src.evidenceSource(fact)
	} else {
		sources, _ := doc["sources"].(map[string]any)
		ev.Source = policies.EvidenceSource(sources, fact)
	}
	return ev
}

// evidenceValue is a copy of the value at fact (rest: fact below the
// section), computed once.
func (sec *section) evidenceValue(fact, rest string) any {
	sec.mu.Lock()
	v, ok := sec.values[fact]
	sec.mu.Unlock()
	if ok {
		return v
	}
	v, _ = snapshot.Lookup(sec.Value, rest)
	v = policies.CopyValue(policies.CitedValue(fact, v))
	sec.mu.Lock()
	if sec.values == nil {
		sec.values = map[string]any{}
	}
	sec.values[fact] = v
	sec.mu.Unlock()
	return v
}

// evidenceSource is evidence's source of fact in the sources section,
// computed once.
func (sec *section) evidenceSource(fact string) string {
	sec.mu.Lock()
	s, ok := sec.sources[fact]
	sec.mu.Unlock()
	if ok {
		return s
	}
	sources, _ := sec.Value.(map[string]any)
	s = policies.EvidenceSource(sources, fact)
	sec.mu.Lock()
	if sec.sources == nil {
		sec.sources = map[string]string{}
	}
	sec.sources[fact] = s
	sec.mu.Unlock()
	return s
}

// projectionItems are the members of proj (a projection less "host", made
// by projectSections) as the fleet pass's Rego input holds them
// (ruleInput: all but sources), each shared section's part converted once
// for every host that holds it. Nil when proj was not made from sections
// or a part has no Rego value: the fleet pass then converts proj itself.
func projectionItems(e *policies.Engine, proj map[string]any, d *docSections) [][2]*ast.Term {
	if !d.split || d.dotted {
		return nil
	}
	items := make([][2]*ast.Term, 0, len(proj))
	for k, v := range proj {
		if k == "sources" {
			continue
		}
		var t *ast.Term
		if sec := d.of(k); sec != nil {
			t = sec.projectionTerm(&d.conv)
		} else if x, err := d.conv.Value(v); err == nil {
			t = ast.NewTerm(x)
		}
		if t == nil {
			return nil
		}
		key, ok := e.SectionTerm(k)
		if !ok {
			key = ast.InternedTerm(k)
		}
		items = append(items, [2]*ast.Term{key, t})
	}
	return items
}

// projectionTerm is the section's projection part as Rego, or nil.
func (sec *section) projectionTerm(c *converter) *ast.Term {
	sec.projTermOnce.Do(func() {
		if x, err := c.Value(sec.proj); err == nil {
			policies.Settle(x)
			sec.projTerm = ast.NewTerm(x)
		}
	})
	return sec.projTerm
}

// ConvertedMember is the value of member name when it is a shared section,
// converted once per run (policies.ConvertedMembers).
func (d *docSections) ConvertedMember(name string) (ast.Value, bool, error) {
	sec := d.of(name)
	if sec == nil {
		return nil, false, nil
	}
	v, err := sec.value(&d.conv)
	return v, true, err
}
