package reports

import (
	"encoding/json"
	"fmt"
	"slices"
)

// valueText is an evidence value as one line: strings bare, absent as
// "(absent)", the rest as compact JSON.
func valueText(v any) string {
	var e valueEncoder
	if b, ok := e.text(v); ok {
		return string(b)
	}
	return slowValueText(v)
}

// valueEncoder writes valueText without json.Marshal's reflection and
// allocations, for the values snapshots hold (objects, lists, strings,
// json.Number, booleans), into a buffer it reuses.
type valueEncoder struct {
	b    []byte
	keys []string // a stack of the object keys being written
}

// text returns valueText(v), valid until the next call; false for anything
// else or anything json.Marshal would escape: the caller then takes
// slowValueText, so the text is always json.Marshal's.
func (e *valueEncoder) text(v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		e.b = append(e.b[:0], "(absent)"...)
		return e.b, true
	case string:
		e.b = append(e.b[:0], v...)
		return e.b, true
	}
	var ok bool
	e.b, e.keys, ok = appendJSON(e.b[:0], v, e.keys[:0])
	return e.b, ok
}

func slowValueText(v any) string {
	switch v := v.(type) {
	case nil:
		return "(absent)"
	case string:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// appendJSON appends v as json.Marshal would, or returns false.
func appendJSON(b []byte, v any, keys []string) ([]byte, []string, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), keys, true
	case string:
		b, ok := appendPlainString(b, v)
		return b, keys, ok
	case bool:
		if v {
			return append(b, "true"...), keys, true
		}
		return append(b, "false"...), keys, true
	case json.Number:
		if !plainNumber(string(v)) {
			return b, keys, false
		}
		return append(b, v...), keys, true
	case []any:
		if v == nil {
			return append(b, "null"...), keys, true
		}
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, keys, ok = appendJSON(b, x, keys); !ok {
				return b, keys, false
			}
		}
		return append(b, ']'), keys, true
	case map[string]any:
		if v == nil {
			return append(b, "null"...), keys, true
		}
		// keys is a stack: this object's keys sit above its parents'.
		base := len(keys)
		for k := range v {
			keys = append(keys, k)
		}
		top := len(keys)
		slices.Sort(keys[base:top])
		b = append(b, '{')
		for i := base; i < top; i++ {
			if i > base {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendPlainString(b, keys[i]); !ok {
				return b, keys[:base], false
			}
			b = append(b, ':')
			// The value's own keys go above this object's and are
			// popped before the next key is read.
			if b, keys, ok = appendJSON(b, v[keys[i]], keys); !ok {
				return b, keys[:base], false
			}
		}
		return append(b, '}'), keys[:base], true
	}
	return b, keys, false
}

// appendPlainString quotes s when json.Marshal would write it as it is:
// printable ASCII without the characters it escapes.
func appendPlainString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// plainNumber reports whether s is a JSON number of the common forms
// (-?(0|[1-9][0-9]*)(\.[0-9]+)?), which json.Marshal writes as it is.
func plainNumber(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	digits := func() int {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		return n
	}
	n := digits()
	if n == 0 || (n > 1 && s[0] == '0') {
		return false
	}
	s = s[n:]
	if s == "" {
		return true
	}
	if s[0] != '.' {
		return false
	}
	s = s[1:]
	n = digits()
	return n > 0 && n == len(s)
}
