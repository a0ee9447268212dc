package snapshot

import (
	"bytes"
	"slices"
)

// A fleet's snapshots repeat most of their sections from host to host even
// when no two files are equal (one sysctl differs, the collection time
// always does). SplitMembers, Decoder.Member and Assemble let a reader
// decode each distinct section once and share it between the documents
// that hold it, with the same outcome as Decoder.Document on the whole
// file: values, validation, and the errors it adds.

// RawMember is one top-level member of a snapshot file, undecoded.
type RawMember struct {
	Name string
	// Value is the member's JSON value as it is in the file, at Offset.
	Value  []byte
	Offset int
	// Known: Value is the bytes known gave for Name (SplitKnown).
	Known bool
}

// SplitMembers appends the top-level members of a snapshot file to into,
// in file order, without decoding them. ok is false unless b is one JSON
// object whose member names are unique and spelled plainly (printable
// ASCII, no escapes), followed by nothing but white space; only structure
// is checked (brackets balance, strings close). Decode a file that does not
// split with Decoder.Document, which judges it whole.
func SplitMembers(b []byte, into []RawMember) (members []RawMember, ok bool) {
	return SplitKnown(b, into, nil)
}

// SplitKnown is SplitMembers where known, when not nil, may give for a
// member name the bytes of an object, list or string value seen before
// (one SplitMembers took whole): a file whose value there starts with
// them holds that value, taken without scanning it again and marked
// Known. Most members of a fleet's files repeat one another's.
func SplitKnown(b []byte, into []RawMember, known func(name string) []byte) (members []RawMember, ok bool) {
	members = into[:0]
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return members, SkipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		kEnd := StringEnd(b, i)
		if kEnd < 0 {
			return nil, false
		}
		key := b[i+1 : kEnd-1]
		for _, c := range key {
			if c < 0x20 || c > 0x7e || c == '\\' {
				return nil, false
			}
		}
		i = SkipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = SkipSpace(b, i+1)
		if slices.ContainsFunc(members, func(m RawMember) bool { return m.Name == string(key) }) {
			return nil, false
		}
		m := RawMember{Name: string(key), Offset: i}
		if known != nil {
			// A value that is an object, list or string ends where it
			// did in the file known's bytes came from.
			if v := known(m.Name); len(v) > 0 && (v[0] == '{' || v[0] == '[' || v[0] == '"') && bytes.HasPrefix(b[i:], v) {
				m.Value, m.Known = b[i:i+len(v)], true
			}
		}
		if !m.Known {
			vEnd := ValueEnd(b, i)
			if vEnd < 0 {
				return nil, false
			}
			m.Value = b[i:vEnd]
		}
		vEnd := i + len(m.Value)
		members = append(members, m)
		i = SkipSpace(b, vEnd)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case '}':
			return members, SkipSpace(b, i+1) == len(b)
		case ',':
			i = SkipSpace(b, i+1)
		default:
			return nil, false
		}
	}
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// StringEnd returns the index after the JSON string starting at b[i] == '"', or
// -1 when it does not close.
func StringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		// An odd run of backslashes escapes the quote.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// endsValue reports whether c ends a number or literal (ValueEnd).
func endsValue(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\n', '\t', '\r':
		return true
	}
	return false
}

// ValueEnd returns the index after the JSON value starting at b[i], or
// -1. Only structure is checked; the decoder judges the rest.
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := StringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	for j := i; j < len(b); j++ {
		if endsValue(b[j]) {
			if j == i {
				return -1
			}
			return j
		}
	}
	return -1
}

// Member is one top-level member of a snapshot decoded as Decoder.Document
// decodes it.
type Member struct {
	// Value is the decoded value, members of the wrong type below it
	// removed. Documents share it: it must not be changed.
	Value any
	// Removed: the value itself has the wrong type for this build; the
	// document leaves it out.
	Removed bool
	// Bad are the members of the wrong type, Value's own included when
	// Removed, as Validate reports them.
	Bad []CollectionError
}

// Member decodes the raw value of the top-level member name, and
// validates it, as Document does within the whole file. ok is false when
// the value is not one this fast path reads (malformed, or anything the
// parser leaves to encoding/json): decode the whole file with Document,
// whose values and errors are then exactly encoding/json's.
func (d *Decoder) Member(name string, raw []byte) (m Member, ok bool) {
	// Depth 1: the member sits in the file's object, and the nesting limit
	// counts from there.
	p := parser{b: raw, strs: &d.strs}
	v, ok := p.value(1)
	if ok {
		p.space()
		ok = p.i == len(raw)
	}
	if !ok {
		return Member{}, false
	}
	m.Value = v
	if n := docSchema().fields[name]; n != nil {
		m.Removed = !validate(n, v, append(make([]string, 0, 16), name), &m.Bad)
	}
	return m, true
}

// Assemble makes the document of n members (member(i) is the name and the
// decoded value of the i-th, in file order) as Document makes it from the
// file: the schema checked, members removed by validation left out and
// reported in errors, in the order of their paths as Validate reports them. Values are shared with the members, not copied.
func Assemble(n int, member func(i int) (string, *Member)) (map[string]any, error) {
	doc := make(map[string]any, n)
	var bad []CollectionError
	for i := range n {
		name, m := member(i)
		if name == "schema" {
			s, _ := m.Value.(string)
			if err := CheckSchema(s); err != nil {
				return nil, err
			}
		}
		bad = append(bad, m.Bad...)
		if !m.Removed {
			doc[name] = m.Value
		}
	}
	if _, ok := doc["schema"]; !ok {
		// Document checks the schema of every file, named or not.
		if err := CheckSchema(""); err != nil {
			return nil, err
		}
	}
	if len(bad) > 0 {
		sortByPath(bad)
		errs, _ := doc["errors"].([]any)
		// A copy: the decoded errors list is shared.
		errs = slices.Clip(errs)
		for _, e := range bad {
			errs = append(errs, map[string]any{"collector": e.Collector, "path": e.Path, "reason": e.Reason})
		}
		doc["errors"] = errs
	}
	return doc, nil
}
