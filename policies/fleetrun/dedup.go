package fleetrun

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Three levels of reuse keep a fleet's cost with its distinct
// configurations, not its hosts:
//
//  1. A snapshot file is compared as bytes with its top-level "host"
//     member's value left out (classTable: a keyed hash finds the class,
//     the bytes are compared with its first file). Hosts whose files are
//     equal so differ only in name: the first one's findings, skipped
//     rules and fleet projection serve them all with the name put back,
//     and the others are never decoded. This holds in a fleet only when no
//     rule enabled there reads the host name (policies.Queries.Shareable).
//  2. A file that must be decoded is decoded by its top-level members,
//     each distinct member once per run and shared with what is derived
//     from it alone (sections.go).
//  3. Each rule's result is looked up by the input that rule reads
//     (policies.RuleReads): only rules whose facts are new to the run are
//     evaluated. The key is the SHA-256 digest of each path's value in a
//     canonical form, so a collision (two different inputs sharing a
//     result) is not a practical concern. The rule's raw result is
//     reused; evidence, coverage and severity are applied to each host's
//     own document, so provenance is always the host's.

type digest = [sha256.Size]byte

// hostMember finds the first top-level "host" member of a JSON object:
// its value as a string and the byte span of that value. ok is false when
// the document is not an object whose first "host" (no escaped name before
// it) is a string, or is malformed up to it: such a file is decoded, never
// shared. It does not look past that member: whether the file holds no
// other "host" (the decoder keeps the last) is settled when a class's first
// file is decoded (docSections.hostAt), and the rest of the bytes is the
// same in every file of the class.
func hostMember(b []byte) (host string, start, end int, ok bool) {
	i := snapshot.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return "", 0, 0, false
	}
	i++
	for {
		i = snapshot.SkipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return "", 0, 0, false
		}
		kEnd := snapshot.StringEnd(b, i)
		if kEnd < 0 {
			return "", 0, 0, false
		}
		key := b[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			// An escaped key might spell "host".
			return "", 0, 0, false
		}
		i = snapshot.SkipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return "", 0, 0, false
		}
		i = snapshot.SkipSpace(b, i+1)
		vEnd := snapshot.ValueEnd(b, i)
		if vEnd < 0 {
			return "", 0, 0, false
		}
		if string(key) == "host" {
			if b[i] != '"' {
				return "", 0, 0, false
			}
			host, ok = plainString(b[i+1 : vEnd-1])
			if !ok && json.Unmarshal(b[i:vEnd], &host) != nil {
				return "", 0, 0, false
			}
			return host, i, vEnd, true
		}
		i = snapshot.SkipSpace(b, vEnd)
		if i >= len(b) || b[i] != ',' {
			return "", 0, 0, false
		}
		i++
	}
}

// plainString is the text of a JSON string's content when it needs no
// decoding: printable ASCII without escapes.
func plainString(b []byte) (string, bool) {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return "", false
		}
	}
	return string(b), true
}

// valueHasher writes a canonical form of document values (type-tagged,
// length-prefixed, object keys sorted) into a buffer that is hashed once.
type valueHasher struct {
	buf  []byte
	keys []string
	// bad is set by a value that is not a document value (a typed
	// provenance a caller put in a document): its key is not trusted.
	bad bool
}

func (h *valueHasher) str(s string) {
	h.buf = binary.AppendUvarint(h.buf, uint64(len(s)))
	h.buf = append(h.buf, s...)
}

func (h *valueHasher) value(v any) {
	switch v := v.(type) {
	case nil:
		h.buf = append(h.buf, 'z')
	case bool:
		if v {
			h.buf = append(h.buf, 't')
		} else {
			h.buf = append(h.buf, 'f')
		}
	case string:
		h.buf = append(h.buf, 's')
		h.str(v)
	case json.Number:
		h.buf = append(h.buf, 'n')
		h.str(string(v))
	case []any:
		h.buf = append(h.buf, '[')
		h.buf = binary.AppendUvarint(h.buf, uint64(len(v)))
		for _, x := range v {
			h.value(x)
		}
	case map[string]any:
		h.object(v, nil)
	default:
		h.bad = true
	}
}

// object writes m less the keys in less (sorted), as object.remove leaves
// it.
func (h *valueHasher) object(m map[string]any, less []string) {
	start := len(h.keys)
	for k := range m {
		if _, left := slices.BinarySearch(less, k); !left {
			h.keys = append(h.keys, k)
		}
	}
	keys := h.keys[start:]
	slices.Sort(keys)
	h.buf = append(h.buf, '{')
	h.buf = binary.AppendUvarint(h.buf, uint64(len(keys)))
	for _, k := range keys {
		h.str(k)
		h.value(m[k])
	}
	h.keys = h.keys[:start]
}

// at is the value at an input path of a rule's input (the document less
// sources), and whether it exists.
func at(doc map[string]any, p policies.InputPath) (any, bool) {
	var cur any = doc
	for i, t := range p {
		switch k := t.Value.(type) {
		case ast.String:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if i == 0 && string(k) == "sources" {
				return nil, false
			}
			if cur, ok = m[string(k)]; !ok {
				return nil, false
			}
		case ast.Number:
			l, ok := cur.([]any)
			n, isInt := k.Int()
			if !ok || !isInt || n < 0 || n >= len(l) {
				return nil, false
			}
			cur = l[n]
		default:
			return nil, false
		}
	}
	return cur, true
}

// ruleKeys computes, for one host document, the key of each rule's result:
// the fleet, the rule and the values of every path it reads. Paths several
// rules read are hashed once.
type ruleKeys struct {
	h     valueHasher
	memo  map[string]digest
	whole *digest
}

func (k *ruleKeys) reset() {
	clear(k.memo)
	k.whole = nil
	k.h.bad = false
}

func (k *ruleKeys) path(doc map[string]any, p policies.InputPath, less []string, name string, secs *docSections) digest {
	if d, ok := k.memo[name]; ok {
		return d
	}
	var d digest
	shared := false
	if len(p) > 0 && less == nil {
		if s, ok := p[0].Value.(ast.String); ok {
			if sec := secs.of(string(s)); sec != nil {
				d, shared = sec.pathDigest(p, name, &k.h)
				if !shared {
					k.h.bad = true
				}
			}
		}
	}
	if !shared {
		k.h.buf = k.h.buf[:0]
		if v, ok := at(doc, p); ok {
			k.h.buf = append(k.h.buf, 'y')
			if m, isMap := v.(map[string]any); isMap && less != nil {
				k.h.object(m, less)
			} else {
				k.h.value(v)
			}
		} else {
			k.h.buf = append(k.h.buf, 'u')
		}
		d = sha256.Sum256(k.h.buf)
	}
	if k.memo == nil {
		k.memo = map[string]digest{}
	}
	k.memo[name] = d
	return d
}

func (k *ruleKeys) all(doc map[string]any) digest {
	if k.whole != nil {
		return *k.whole
	}
	k.h.buf = k.h.buf[:0]
	k.h.buf = append(k.h.buf, '{')
	names := make([]string, 0, len(doc))
	for n := range doc {
		if n != "sources" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		k.h.str(n)
		k.h.value(doc[n])
	}
	d := sha256.Sum256(k.h.buf)
	k.whole = &d
	return d
}

// appendKey appends the key of rule r's input in fleet to b: the fleet,
// the rule and the digest of each path it reads (or of all of the input),
// length-prefixed, so equal keys mean equal inputs. ok is false when the
// input holds a value the hasher cannot read (the rule is then evaluated).
func (k *ruleKeys) appendKey(b []byte, doc map[string]any, fleet string, r *policies.Rule, reads policies.RuleReads, secs *docSections) (_ []byte, ok bool) {
	b = binary.AppendUvarint(b, uint64(len(fleet)))
	b = append(b, fleet...)
	b = binary.AppendUvarint(b, uint64(len(r.ID)))
	b = append(b, r.ID...)
	if reads.Whole() {
		d := k.all(doc)
		b = append(b, d[:]...)
	} else {
		for i, p := range reads.Paths() {
			d := k.path(doc, p, reads.Less(i), reads.Names()[i], secs)
			b = append(b, d[:]...)
		}
	}
	return b, !k.h.bad
}
