package inventory

import (
	"errors"
	"strings"
)

// shlexSplit splits an INI host line the way Ansible does, with Python's
// shlex.split(line, comments=True) in POSIX mode: whitespace separates
// tokens; single quotes are literal; in double quotes a backslash escapes
// only '"' and '\'; outside quotes it escapes any character; and '#'
// outside quotes starts a comment even in the middle of a word
// ("k=a#b" is "k=a").
func shlexSplit(line string) ([]string, error) {
	var tokens []string
	var tok strings.Builder
	inToken := false
	const (
		plain = iota
		single
		double
	)
	state := plain
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch state {
		case single:
			if c == '\'' {
				state = plain
			} else {
				tok.WriteByte(c)
			}
		case double:
			switch {
			case c == '"':
				state = plain
			case c == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\'):
				i++
				tok.WriteByte(line[i])
			default:
				tok.WriteByte(c)
			}
		default:
			switch c {
			case ' ', '\t', '\r', '\n':
				if inToken {
					tokens = append(tokens, tok.String())
					tok.Reset()
					inToken = false
				}
			case '#':
				if inToken {
					tokens = append(tokens, tok.String())
				}
				return tokens, nil
			case '\'':
				state, inToken = single, true
			case '"':
				state, inToken = double, true
			case '\\':
				if i+1 == len(line) {
					return nil, errors.New("no escaped character after '\\'")
				}
				i++
				tok.WriteByte(line[i])
				inToken = true
			default:
				tok.WriteByte(c)
				inToken = true
			}
		}
	}
	if state != plain {
		return nil, errors.New("no closing quotation")
	}
	if inToken {
		tokens = append(tokens, tok.String())
	}
	return tokens, nil
}
