package offheap

import (
	"runtime"
	"strings"
	"testing"
)

func TestBytesAreOutsideTheHeap(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b := Bytes(64 << 20)
	defer b.Free()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Errorf("the heap grew by %d bytes for a 64 MiB block", grew)
	}
	m := b.Bytes()
	if len(m) != 64<<20 {
		t.Fatalf("len %d", len(m))
	}
	for i := 0; i < len(m); i += 4096 {
		if m[i] != 0 {
			t.Fatalf("byte %d is %d, want zero", i, m[i])
		}
		m[i] = byte(i >> 12)
	}
	runtime.GC()
	for i := 0; i < len(m); i += 4096 {
		if m[i] != byte(i>>12) {
			t.Fatalf("byte %d changed across a GC", i)
		}
	}
	b.Free()
	if b.Bytes() != nil {
		t.Error("a freed block still has its memory")
	}
	b.Free() // twice does nothing
	var nilBlock *Block
	nilBlock.Free()
}

func TestSlice(t *testing.T) {
	type rec struct {
		A uint32
		B int32
		C [2]int64
	}
	b, s := Slice[rec](1000)
	defer b.Free()
	if len(s) != 1000 {
		t.Fatalf("len %d", len(s))
	}
	for i := range s {
		s[i] = rec{A: uint32(i), B: -int32(i), C: [2]int64{int64(i), 7}}
	}
	runtime.GC()
	for i := range s {
		if s[i].A != uint32(i) || s[i].B != -int32(i) || s[i].C[1] != 7 {
			t.Fatalf("record %d is %+v", i, s[i])
		}
	}
	if b, s := Slice[rec](0); len(s) != 0 || b.Bytes() != nil {
		t.Error("an empty slice holds memory")
	}
}

func TestSliceRefusesPointers(t *testing.T) {
	type withString struct {
		N    int
		Name string
	}
	for name, f := range map[string]func(){
		"string field":    func() { Slice[withString](1) },
		"pointer":         func() { Slice[*int](1) },
		"array of slices": func() { Slice[[2][]byte](1) },
	} {
		func() {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, "holds a Go pointer") {
					t.Errorf("%s: recovered %v, want a panic naming the pointer", name, r)
				}
			}()
			f()
		}()
	}
}
