package reports

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fleetaudit/fleetaudit/policies"
)

// findingEncoder appends findings in the bytes encodeIndented gives them,
// without reflection or a second indenting pass: the findings are most of
// a large fleet's report. A value of a type it does not know is encoded by
// encodeIndented in its place.
type findingEncoder struct {
	// nl is a newline, the prefix and indentation for any depth so far.
	nl     string
	prefix int
	keys   []string
}

func newFindingEncoder(prefix string) *findingEncoder {
	return &findingEncoder{nl: "\n" + prefix + strings.Repeat(" ", 32), prefix: len(prefix)}
}

// line appends a newline and the indentation of depth.
func (e *findingEncoder) line(dst []byte, depth int) []byte {
	return append(append(dst, '\n'), e.indent(depth)...)
}

// indent is the prefix and indentation of a line at depth.
func (e *findingEncoder) indent(depth int) string {
	n := 1 + e.prefix + 2*depth
	for n > len(e.nl) {
		e.nl += e.nl[1+e.prefix:]
	}
	return e.nl[1:n]
}

// field appends the separator before a field, the field's line and its
// name: `,` unless first, then `\n<indent>"name": `.
func (e *findingEncoder) field(dst []byte, depth int, name string, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = e.line(dst, depth)
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':', ' ')
}

// finding appends f at depth 0.
func (e *findingEncoder) finding(dst []byte, f *policies.Finding) ([]byte, error) {
	dst = e.head(dst, f)
	dst = appendJSONString(dst, f.Host)
	return e.tail(dst, f)
}

// head is f's encoding up to its host's value, tail the rest after it: a
// finding many hosts share is encoded once, split there.
func (e *findingEncoder) head(dst []byte, f *policies.Finding) []byte {
	dst = append(dst, '{')
	dst = e.field(dst, 1, "rule", true)
	dst = appendJSONString(dst, f.Rule)
	dst = e.field(dst, 1, "severity", false)
	dst = appendJSONString(dst, f.Severity)
	dst = e.field(dst, 1, "title", false)
	dst = appendJSONString(dst, f.Title)
	return e.field(dst, 1, "host", false)
}

func (e *findingEncoder) tail(dst []byte, f *policies.Finding) ([]byte, error) {
	var err error
	dst = e.field(dst, 1, "fleet", false)
	dst = appendJSONString(dst, f.Fleet)
	dst = e.field(dst, 1, "message", false)
	dst = appendJSONString(dst, f.Message)
	dst = e.field(dst, 1, "evidence", false)
	if f.Evidence == nil {
		dst = append(dst, "null"...)
	} else if len(f.Evidence) == 0 {
		dst = append(dst, '[', ']')
	} else {
		dst = append(dst, '[')
		for i := range f.Evidence {
			ev := &f.Evidence[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.line(dst, 2)
			dst = append(dst, '{')
			dst = e.field(dst, 3, "fact", true)
			dst = appendJSONString(dst, ev.Fact)
			dst = e.field(dst, 3, "value", false)
			if dst, err = e.value(dst, ev.Value, 3); err != nil {
				return nil, err
			}
			if ev.Source != "" {
				dst = e.field(dst, 3, "source", false)
				dst = appendJSONString(dst, ev.Source)
			}
			dst = e.line(dst, 2)
			dst = append(dst, '}')
		}
		dst = e.line(dst, 1)
		dst = append(dst, ']')
	}
	dst = e.field(dst, 1, "remediation", false)
	dst = appendJSONString(dst, f.Remediation)
	dst = e.field(dst, 1, "references", false)
	switch {
	case f.References == nil:
		dst = append(dst, "null"...)
	case len(f.References) == 0:
		dst = append(dst, '[', ']')
	default:
		dst = append(dst, '[')
		for i, r := range f.References {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.line(dst, 2)
			dst = appendJSONString(dst, r)
		}
		dst = e.line(dst, 1)
		dst = append(dst, ']')
	}
	if f.Expected != nil {
		dst = e.field(dst, 1, "expected", false)
		if dst, err = e.value(dst, f.Expected, 1); err != nil {
			return nil, err
		}
	}
	if f.Basis != "" {
		dst = e.field(dst, 1, "basis", false)
		dst = appendJSONString(dst, f.Basis)
	}
	if len(f.Fix) > 0 {
		dst = e.field(dst, 1, "fix", false)
		if dst, err = e.object(dst, f.Fix, 1); err != nil {
			return nil, err
		}
	}
	if o := f.SeverityOverride; o != nil {
		dst = e.field(dst, 1, "severity_override", false)
		dst = append(dst, '{')
		dst = e.field(dst, 2, "rule_severity", true)
		dst = appendJSONString(dst, o.RuleSeverity)
		dst = e.field(dst, 2, "profile", false)
		dst = appendJSONString(dst, o.Profile)
		dst = e.line(dst, 1)
		dst = append(dst, '}')
	}
	if w := f.Waived; w != nil {
		dst = e.field(dst, 1, "waived", false)
		dst = append(dst, '{')
		dst = e.field(dst, 2, "owner", true)
		dst = appendJSONString(dst, w.Owner)
		dst = e.field(dst, 2, "justification", false)
		dst = appendJSONString(dst, w.Justification)
		dst = e.field(dst, 2, "expires", false)
		dst = appendJSONString(dst, w.Expires)
		dst = e.field(dst, 2, "source", false)
		dst = appendJSONString(dst, w.Source)
		dst = e.line(dst, 1)
		dst = append(dst, '}')
	}
	dst = e.line(dst, 0)
	return append(dst, '}'), nil
}

// value appends v, whose first line is at depth.
func (e *findingEncoder) value(dst []byte, v any, depth int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendJSONString(dst, v), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case json.Number:
		if v == "" {
			return append(dst, '0'), nil
		}
		if isJSONNumber(string(v)) {
			return append(dst, v...), nil
		}
	case float64:
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			return appendJSONFloat(dst, v), nil
		}
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		return e.object(dst, v, depth)
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		if len(v) == 0 {
			return append(dst, '[', ']'), nil
		}
		dst = append(dst, '[')
		var err error
		for i, x := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.line(dst, depth+1)
			if dst, err = e.value(dst, x, depth+1); err != nil {
				return nil, err
			}
		}
		dst = e.line(dst, depth)
		return append(dst, ']'), nil
	}
	b, err := encodeIndented(v, e.indent(depth))
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// object appends m (not nil), keys sorted as encoding/json sorts them.
func (e *findingEncoder) object(dst []byte, m map[string]any, depth int) ([]byte, error) {
	if len(m) == 0 {
		return append(dst, '{', '}'), nil
	}
	// e.keys is shared by nested objects: each takes its keys from its end.
	base := len(e.keys)
	for k := range m {
		e.keys = append(e.keys, k)
	}
	keys := e.keys[base:]
	slices.Sort(keys)
	dst = append(dst, '{')
	var err error
	for i := base; i < base+len(m); i++ {
		k := e.keys[i]
		if i > base {
			dst = append(dst, ',')
		}
		dst = e.line(dst, depth+1)
		dst = appendJSONString(dst, k)
		dst = append(dst, ':', ' ')
		if dst, err = e.value(dst, m[k], depth+1); err != nil {
			e.keys = e.keys[:base]
			return nil, err
		}
	}
	e.keys = e.keys[:base]
	dst = e.line(dst, depth)
	return append(dst, '}'), nil
}

// appendJSONFloat appends f as encoding/json's float64 encoder does.
func appendJSONFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json writes it.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// jsonSafe is the ASCII bytes a string holds unescaped: encoding/json's
// safe set without DEL, which EscapeJSON escapes.
var jsonSafe = func() (safe [utf8.RuneSelf]bool) {
	for b := ' '; b < utf8.RuneSelf-1; b++ {
		safe[b] = b != '"' && b != '\\'
	}
	return safe
}()

// appendJSONString appends s quoted as encoding/json quotes it without
// escaping HTML, followed by EscapeJSON.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		case c <= 0x9f:
			// C1 controls, as EscapeJSON escapes them.
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// isJSONNumber reports whether s is a JSON number, as encoding/json
// checks a json.Number before writing it.
func isJSONNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}
