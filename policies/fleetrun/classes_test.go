package fleetrun

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/bits"
	"testing"
)

func classFile(host, rest string) ([]byte, int, int) {
	b := []byte(`{"host":"` + host + `","x":` + rest + `}`)
	_, start, end, ok := hostMember(b)
	if !ok {
		panic(string(b))
	}
	return b, start, end
}

// Files equal but for the host name share a class; any other byte makes
// another, also when its hash is the same: the bytes are compared.
func TestClassTable(t *testing.T) {
	tab := newClassTable()
	a, as, ae := classFile("a", `[1,2,3]`)
	c1, seen := tab.find(a, as, ae)
	if c1 == nil || seen {
		t.Fatalf("first file: %v %v", c1, seen)
	}
	b, bs, be := classFile("bbbbbb", `[1,2,3]`)
	if c, seen := tab.find(b, bs, be); c != c1 || !seen {
		t.Errorf("same content, other host: %p %v, want %p true", c, seen, c1)
	}
	d, ds, de := classFile("a", `[1,2,4]`)
	if c, seen := tab.find(d, ds, de); c == c1 || seen {
		t.Errorf("other content shares the class")
	}
	// A collision: a class of other content filed under this file's key.
	e, es, ee := classFile("a", `[9]`)
	k := maphash.Bytes(tab.seed, e[:es]) ^ bits.RotateLeft64(maphash.Bytes(tab.seed, e[ee:]), 29)
	impostor := &class{ready: make(chan struct{}), key: k, split: as, rep: append(bytes.Clone(a[:as]), a[ae:]...)}
	tab.byKey[k] = append([]*class{impostor}, tab.byKey[k]...)
	if c, seen := tab.find(e, es, ee); c == impostor || seen {
		t.Errorf("a hash collision shares an evaluation")
	}
}

// The copies of first files stay within the ring: once it comes round,
// the oldest classes are dropped and their hosts start new ones; a file
// larger than a chunk has no class.
func TestClassTableRing(t *testing.T) {
	tab := newClassTable()
	pad := bytes.Repeat([]byte("x"), classChunk/4)
	first, fs, fe := classFile("h", `"0`+string(pad)+`"`)
	c0, _ := tab.find(first, fs, fe)
	for i := 1; i < 5*classChunks; i++ {
		b, s, e := classFile("h", fmt.Sprintf(`"%d%s"`, i, pad))
		if c, seen := tab.find(b, s, e); c == nil || seen {
			t.Fatalf("file %d: %v %v", i, c, seen)
		}
	}
	if c0.rep != nil {
		t.Error("the first class kept its copy after the ring came round")
	}
	if c, seen := tab.find(first, fs, fe); c == c0 || seen {
		t.Error("a dropped class was found again")
	}
	total := 0
	for _, ch := range tab.chunks {
		total += cap(ch.buf)
	}
	if total > classRing || total != tab.total {
		t.Errorf("ring holds %d bytes (counted %d), more than %d", total, tab.total, classRing)
	}
	// A file larger than a chunk gets a chunk of its own, room made for
	// it within the bound.
	large, ls, le := classFile("h", `"`+string(bytes.Repeat([]byte("z"), 3*classChunk))+`"`)
	if c, seen := tab.find(large, ls, le); c == nil || seen {
		t.Fatal("a file of three chunks has no class")
	}
	if c, seen := tab.find(large, ls, le); c == nil || !seen {
		t.Error("a file of three chunks was not found again")
	}
	total = 0
	for _, ch := range tab.chunks {
		total += cap(ch.buf)
	}
	if total > classRing || total != tab.total {
		t.Errorf("ring holds %d bytes (counted %d), more than %d", total, tab.total, classRing)
	}
	big, bs, be := classFile("h", `"`+string(bytes.Repeat([]byte("y"), classMax))+`"`)
	if c, _ := tab.find(big, bs, be); c != nil {
		t.Error("a file larger than classMax has a class")
	}
	// Closed, the table holds no memory and no class compares.
	kept, _ := tab.find(large, ls, le)
	tab.close()
	if tab.total != 0 || kept.rep != nil || len(tab.byKey) != 0 {
		t.Errorf("after close: %d bytes, a class with its copy: %v, %d keys", tab.total, kept.rep != nil, len(tab.byKey))
	}
}

// A section is shared only with a member of the same name and bytes,
// whatever its hash.
func TestSectionCacheComparesBytes(t *testing.T) {
	c := newSectionCache()
	raw := []byte(`{"a":1}`)
	k := c.key(raw)
	first := c.put(k, &section{name: "kernel", raw: bytes.Clone(raw)})
	if got := c.get(k, "kernel", raw); got != first {
		t.Fatalf("same member: %p, want %p", got, first)
	}
	if got := c.get(k, "os", raw); got != nil {
		t.Error("a member of another name shares the section")
	}
	// Another member filed under the same hash, as a collision would.
	if got := c.get(k, "kernel", []byte(`{"a":2}`)); got != nil {
		t.Error("other bytes under the same hash share the section")
	}
	if got := c.put(k, &section{name: "kernel", raw: bytes.Clone(raw)}); got != first {
		t.Error("a second decode of the same member replaced the first")
	}
}
