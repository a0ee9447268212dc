package collectors

import (
	"errors"
	"fmt"
	"strings"
)

// osReleaseVar is one assignment in an os-release file.
type osReleaseVar struct {
	Value string
	Line  int
}

// parseOSRelease reads os-release(5): newline-separated shell variable
// assignments without expansion, "#" comment lines, values optionally in
// single or double quotes with shell backslash escapes. A later assignment
// of the same name wins, as when the file is sourced. Malformed lines are
// reported and skipped.
func parseOSRelease(data []byte) (map[string]osReleaseVar, []error) {
	vars := map[string]osReleaseVar{}
	var errs []error
	text := strings.TrimPrefix(string(data), "\ufeff")
	for i, raw := range strings.Split(text, "\n") {
		n := i + 1
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' {
			continue
		}
		key, rest, ok := strings.Cut(line, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%w: line %d: no '=' in %.40q", ErrParse, n, line))
			continue
		}
		key = strings.TrimSpace(key)
		if !isShellName(key) {
			errs = append(errs, fmt.Errorf("%w: line %d: invalid variable name %.40q", ErrParse, n, key))
			continue
		}
		value, err := shellWord(rest)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: line %d: %s: %v", ErrParse, n, key, err))
			continue
		}
		vars[key] = osReleaseVar{Value: value, Line: n}
	}
	return vars, errs
}

// isShellName reports whether s is a valid shell variable name.
func isShellName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// shellWord unquotes the value of a shell assignment the way sh would,
// minus expansion: quoted parts concatenate, a backslash escapes the next
// character outside quotes and only \ " $ ` inside double quotes. After
// unquoted whitespace only a comment may follow.
func shellWord(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '"':
			i++
			closed := false
			for i < len(s) {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			if !closed {
				return "", errUnterminatedDouble
			}
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return "", errUnterminatedSingle
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 2
		case '\\':
			if i+1 < len(s) {
				b.WriteByte(s[i+1])
			}
			i += 2
		case ' ', '\t':
			if tail := strings.TrimSpace(s[i:]); tail != "" && tail[0] != '#' {
				return "", fmt.Errorf("unquoted space before %.20q", tail)
			}
			return b.String(), nil
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

var (
	errUnterminatedDouble = errors.New("unterminated double quote")
	errUnterminatedSingle = errors.New("unterminated single quote")
)
