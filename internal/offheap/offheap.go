// Package offheap holds pointer-free bulk data outside the Go heap.
//
// A run keeps some data for its whole length that holds no pointer: the
// copies that confirm two snapshot files are equal, and a record per
// host. On the heap, the garbage collector's headroom (GOGC) comes on top
// of what they hold, so they cost twice their size at the peak; mapped
// outside the heap, they cost their size. The price is manual lifetime:
// nothing may use a Block's memory after Free, and nothing that holds a Go
// pointer (a pointer, string, slice, map, interface, channel or func) may
// be stored in it, which Slice checks.
package offheap

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Block is memory from Bytes or Slice.
type Block struct {
	b      []byte
	mapped bool
}

// Bytes returns a block of n zeroed bytes, mapped outside the heap, or on
// the heap where mapping is not available or fails.
func Bytes(n int) *Block {
	if n <= 0 {
		return &Block{}
	}
	if b, err := mmap(n); err == nil {
		return &Block{b: b, mapped: true}
	}
	return &Block{b: make([]byte, n)}
}

// Bytes is the block's memory.
func (b *Block) Bytes() []byte { return b.b }

// Free gives the block's memory back; it must not be used after. Free of
// nil or of a freed block does nothing.
func (b *Block) Free() {
	if b == nil || b.b == nil {
		return
	}
	if b.mapped {
		// Only a mapping Bytes made is unmapped, whole: an error would
		// mean the address space is already gone.
		_ = munmap(b.b)
	}
	b.b = nil
}

// Slice returns a block holding n zeroed values of T, and them as a
// slice. T must hold no Go pointer: the garbage collector does not look
// into the block.
func Slice[T any](n int) (*Block, []T) {
	t := reflect.TypeFor[T]()
	if err := pointerFree(t); err != nil {
		panic(fmt.Sprintf("offheap.Slice[%s]: %v", t, err))
	}
	size := int(t.Size())
	if n <= 0 || size == 0 {
		return &Block{}, make([]T, n)
	}
	b := Bytes(n * size)
	p := unsafe.Pointer(unsafe.SliceData(b.b))
	if uintptr(p)%uintptr(t.Align()) != 0 {
		// Mappings are page-aligned and make's bytes word-aligned; a
		// stricter alignment takes the heap.
		b.Free()
		return &Block{}, make([]T, n)
	}
	return b, unsafe.Slice((*T)(p), n)
}

// pointerFree reports a field of t that holds a Go pointer.
func pointerFree(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return nil
	case reflect.Array:
		return pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if err := pointerFree(t.Field(i).Type); err != nil {
				return fmt.Errorf("field %s: %w", t.Field(i).Name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%s holds a Go pointer", t)
}
