package fleetrun

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"slices"
	"sync"
)

// classTable finds the class of a snapshot file (see dedup.go): a keyed
// hash of its bytes less the host name picks the candidates, and the bytes
// themselves are compared with the class's first file, so two files share
// an evaluation only when they are equal: no hash collision, chanced or
// crafted, can make them. Hashing is then a fraction of SHA-256's cost.
//
// A class keeps a copy of its first file in a ring of chunks of
// classChunk bytes (or one file's size, when larger), allocated as needed
// and classRing bytes in all: when the ring comes round to a chunk again,
// the classes whose copies it holds are dropped (a later host of one
// starts a new class). A fleet of few configurations so keeps them all,
// and a fleet of distinct hosts the latest of them, in memory that grows
// with the configurations, in steps of a chunk, up to a bound, and is not
// allocated again per host; close drops them.
type classTable struct {
	seed maphash.Seed

	mu     sync.Mutex
	byKey  map[uint64][]*class
	chunks [classChunks]classChunkState
	at     int // the chunk being filled
	total  int // the chunks' capacity
}

type classChunkState struct {
	buf     []byte
	classes []*class
}

const (
	classChunk  = 1 << 20
	classRing   = 32 << 20
	classChunks = classRing / classChunk // a chunk each: the ring reuses them
	// classMax is the largest file with a class; a larger one is
	// evaluated alone.
	classMax = classRing / 4
)

func newClassTable() *classTable {
	return &classTable{seed: maphash.MakeSeed(), byKey: map[uint64][]*class{}}
}

// find returns the class of raw, whose host name's JSON value spans
// raw[start:end], and whether it was there before. It returns nil for a
// file larger than classMax, which is then evaluated alone.
func (t *classTable) find(raw []byte, start, end int) (c *class, seen bool) {
	k := maphash.Bytes(t.seed, raw[:start]) ^ bits.RotateLeft64(maphash.Bytes(t.seed, raw[end:]), 29)
	n := start + len(raw) - end
	t.mu.Lock()
	defer t.mu.Unlock()
	// Compared under the lock: a dropped class's chunk is written again.
	for _, c := range t.byKey[k] {
		if c.same(raw, start, end) {
			return c, true
		}
	}
	if n > classMax {
		return nil, false
	}
	ch := &t.chunks[t.at]
	if ch.buf != nil && len(ch.buf)+n > cap(ch.buf) {
		t.at = (t.at + 1) % classChunks
		ch = &t.chunks[t.at]
		t.drop(ch)
	}
	if cap(ch.buf)-len(ch.buf) < n {
		// A chunk not allocated yet, or too small for this file: the
		// oldest chunks make room for it.
		t.free(ch)
		size := max(classChunk, n)
		for i := 1; t.total+size > classRing && i < classChunks; i++ {
			old := &t.chunks[(t.at+i)%classChunks]
			t.drop(old)
			t.free(old)
		}
		ch.buf = make([]byte, 0, size)
		t.total += size
	}
	off := len(ch.buf)
	ch.buf = append(append(ch.buf, raw[:start]...), raw[end:]...)
	c = &class{ready: make(chan struct{}), key: k, split: start, rep: ch.buf[off:len(ch.buf):len(ch.buf)]}
	ch.classes = append(ch.classes, c)
	t.byKey[k] = append(t.byKey[k], c)
	return c, false
}

// free gives up an emptied chunk's buffer.
func (t *classTable) free(ch *classChunkState) {
	t.total -= cap(ch.buf)
	ch.buf = nil
}

// close drops every class and its chunk: the run is over, no worker
// compares again.
func (t *classTable) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.chunks {
		t.drop(&t.chunks[i])
		t.free(&t.chunks[i])
	}
}

// drop forgets the classes whose copies chunk ch holds, and empties it.
func (t *classTable) drop(ch *classChunkState) {
	for _, c := range ch.classes {
		l := slices.DeleteFunc(t.byKey[c.key], func(x *class) bool { return x == c })
		if len(l) == 0 {
			delete(t.byKey, c.key)
		} else {
			t.byKey[c.key] = l
		}
		c.rep = nil
	}
	clear(ch.classes)
	ch.classes = ch.classes[:0]
	ch.buf = ch.buf[:0]
}

// same reports whether raw, less its host name's value at [start:end], is
// the class's first file less its own.
func (c *class) same(raw []byte, start, end int) bool {
	return c.rep != nil && c.split == start && len(c.rep)-c.split == len(raw)-end &&
		bytes.Equal(c.rep[:c.split], raw[:start]) && bytes.Equal(c.rep[c.split:], raw[end:])
}
