package policies

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"sync"
)

// classTable finds the class of a snapshot file (see dedup.go): a keyed
// hash of its bytes less the host name picks the candidates, and the bytes
// themselves are compared with the class's first file, so two files share
// an evaluation only when they are equal: no hash collision, chanced or
// crafted, can make them. Hashing is then a fraction of SHA-256's cost,
// and a class keeps a copy of its first file, within classBytes: two
// generations, the older dropped (its buffers reused) when the current one
// is full, a class found again moving to the current one. A fleet of
// distinct hosts so keeps the latest of them, and a fleet of few
// configurations all of its own.
type classTable struct {
	seed maphash.Seed

	mu        sync.Mutex
	cur, prev map[uint64][]*class
	curBytes  int
	// free are the buffers of dropped classes, for new ones.
	free      [][]byte
	freeBytes int
}

// classBytes bounds the copies of first files the table keeps.
const classBytes = 32 << 20

func newClassTable() *classTable {
	return &classTable{seed: maphash.MakeSeed()}
}

// find returns the class of raw, whose host name's JSON value spans
// raw[start:end], and whether it was there before. It returns nil for a
// file too large to keep, which is then evaluated alone.
func (t *classTable) find(raw []byte, start, end int) (c *class, seen bool) {
	k := maphash.Bytes(t.seed, raw[:start]) ^ bits.RotateLeft64(maphash.Bytes(t.seed, raw[end:]), 29)
	n := start + len(raw) - end
	t.mu.Lock()
	defer t.mu.Unlock()
	// Compared under the lock: a dropped class's buffer is reused.
	for _, c := range t.cur[k] {
		if c.same(raw, start, end) {
			return c, true
		}
	}
	for i, c := range t.prev[k] {
		if c.same(raw, start, end) {
			l := t.prev[k]
			t.prev[k] = append(l[:i:i], l[i+1:]...)
			t.add(k, c)
			return c, true
		}
	}
	if n > classBytes/2 {
		return nil, false
	}
	c = &class{ready: make(chan struct{}), split: start}
	c.rep = t.buffer(n)
	c.rep = append(append(c.rep, raw[:start]...), raw[end:]...)
	t.add(k, c)
	return c, false
}

func (t *classTable) add(k uint64, c *class) {
	if t.cur == nil || t.curBytes+len(c.rep) > classBytes/2 {
		for _, l := range t.prev {
			for _, old := range l {
				if t.freeBytes+cap(old.rep) <= classBytes/2 {
					t.free = append(t.free, old.rep[:0])
					t.freeBytes += cap(old.rep)
				}
				old.rep = nil
			}
		}
		t.prev, t.cur, t.curBytes = t.cur, map[uint64][]*class{}, 0
	}
	t.cur[k] = append(t.cur[k], c)
	t.curBytes += len(c.rep)
}

// buffer returns an empty buffer of capacity n or more.
func (t *classTable) buffer(n int) []byte {
	for i, b := range t.free {
		if cap(b) >= n {
			t.free[i] = t.free[len(t.free)-1]
			t.free = t.free[:len(t.free)-1]
			t.freeBytes -= cap(b)
			return b
		}
	}
	return make([]byte, 0, n)
}

// same reports whether raw, less its host name's value at [start:end], is
// the class's first file less its own.
func (c *class) same(raw []byte, start, end int) bool {
	return c.rep != nil && c.split == start && len(c.rep)-c.split == len(raw)-end &&
		bytes.Equal(c.rep[:c.split], raw[:start]) && bytes.Equal(c.rep[c.split:], raw[end:])
}
