package snapshot

import (
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeAny decodes one JSON value as DecodeJSON does into an any
// (objects as map[string]any, numbers as json.Number). A snapshot is
// mostly short strings and small objects; encoding/json scans every byte
// twice and allocates each key anew, which made decoding the largest cost
// of auditing a fleet of distinct hosts. This parser takes one pass and
// shares repeated short strings. It handles what snapshots hold; anything
// else (an escape JSON does not allow, invalid UTF-8, a malformed number,
// trailing data, any error) falls back to DecodeJSON, so values and
// errors are always exactly encoding/json's. FuzzDecodeAny checks that.
func decodeAny(b []byte, strs *stringTable) (any, error) {
	p := parser{b: b, strs: strs}
	v, ok := p.value(0)
	if ok {
		p.space()
		ok = p.i == len(b)
	}
	if !ok {
		var out any
		err := DecodeJSON(b, &out)
		return out, err
	}
	return v, nil
}

// stringTable shares the text of short strings (keys, enum-like values)
// between the documents one worker decodes.
type stringTable struct {
	m map[string]string
}

// maxShared bounds the strings a table keeps and the length of each.
const (
	maxShared    = 1 << 16
	maxSharedLen = 48
)

func (t *stringTable) get(b []byte) string {
	if t == nil || len(b) > maxSharedLen {
		return string(b)
	}
	if s, ok := t.m[string(b)]; ok {
		return s
	}
	if t.m == nil || len(t.m) >= maxShared {
		t.m = make(map[string]string, 1024)
	}
	s := string(b)
	t.m[s] = s
	return s
}

type parser struct {
	b    []byte
	i    int
	strs *stringTable
}

// maxDepth is encoding/json's nesting limit; deeper input falls back and
// gets its error.
const maxDepth = 10000

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	p.space()
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			p.space()
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false
			}
			p.i++
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			if end, ok := p.next('}'); !ok {
				return nil, false
			} else if end {
				return m, true
			}
		}
	case c == '[':
		p.i++
		l := []any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return l, true
		}
		for {
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
			if end, ok := p.next(']'); !ok {
				return nil, false
			} else if end {
				return l, true
			}
		}
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.word("true")
	case c == 'f':
		return false, p.word("false")
	case c == 'n':
		return nil, p.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, false
}

// next consumes what follows an item of an object or list: a comma, or
// the closing byte (end). Anything else is not ok.
func (p *parser) next(closing byte) (end, ok bool) {
	p.space()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case closing:
		p.i++
		return true, true
	case ',':
		p.i++
		return false, true
	}
	return false, false
}

func (p *parser) word(w string) bool {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return false
	}
	p.i += len(w)
	return true
}

// str reads a string of valid UTF-8 with no control characters, decoding
// escapes as encoding/json does; any other string falls back.
func (p *parser) str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start := p.i + 1
	ascii, escaped := true, false
	j := start
	for ; j < len(p.b); j++ {
		c := p.b[j]
		if c == '"' {
			break
		}
		switch {
		case c == '\\':
			escaped = true
			j++ // the escaped byte is never the closing quote
		case c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
	}
	if j >= len(p.b) {
		return "", false
	}
	raw := p.b[start:j]
	if !ascii && !utf8.Valid(raw) {
		return "", false
	}
	p.i = j + 1
	if !escaped {
		return p.strs.get(raw), true
	}
	out, ok := unescape(raw)
	if !ok {
		return "", false
	}
	return p.strs.get(out), true
}

// unescape decodes a string's escapes as encoding/json's unquote does,
// including its handling of surrogates; false for an escape JSON does not
// allow.
func unescape(s []byte) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for r := 0; r < len(s); {
		c := s[r]
		if c != '\\' {
			out = append(out, c)
			r++
			continue
		}
		if r+1 >= len(s) {
			return nil, false
		}
		switch e := s[r+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
			r += 2
		case 'b':
			out, r = append(out, '\b'), r+2
		case 'f':
			out, r = append(out, '\f'), r+2
		case 'n':
			out, r = append(out, '\n'), r+2
		case 'r':
			out, r = append(out, '\r'), r+2
		case 't':
			out, r = append(out, '\t'), r+2
		case 'u':
			rr := getu4(s[r:])
			if rr < 0 {
				return nil, false
			}
			r += 6
			if utf16.IsSurrogate(rr) {
				rr1 := getu4(s[r:])
				if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
					out = utf8.AppendRune(out, dec)
					r += 6
					break
				}
				rr = unicode.ReplacementChar
			}
			out = utf8.AppendRune(out, rr)
		default:
			return nil, false
		}
	}
	return out, true
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// number reads a number of JSON's grammar as its literal.
func (p *parser) number() (any, bool) {
	b, i := p.b, p.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
	}
	p.i = i
	return json.Number(p.strs.get(b[start:i])), true
}
