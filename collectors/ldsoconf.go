package collectors

import (
	"fmt"
	"strings"
)

// ldSoConfEntry is one directive of an ld.so.conf file: a library directory
// or an include of glob patterns.
type ldSoConfEntry struct {
	Dir      string
	Includes []string
	Line     int
}

// parseLdSoConf reads an ld.so.conf file as glibc's ldconfig (parse_conf)
// does: '#' starts a comment anywhere on a line; "include" followed by blanks
// names glob patterns, relative ones against the including file's directory;
// "hwcap" lines are ignored; any other line is a directory, with an optional
// "=TYPE" suffix and trailing slashes dropped.
func parseLdSoConf(data []byte) ([]ldSoConfEntry, []error) {
	var entries []ldSoConfEntry
	var errs []error
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line, _, _ := strings.Cut(raw, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if rest, ok := cutDirective(line, "include", false); ok {
			if pats := strings.Fields(rest); len(pats) > 0 {
				entries = append(entries, ldSoConfEntry{Includes: pats, Line: n})
			}
			continue
		}
		if _, ok := cutDirective(line, "hwcap", true); ok {
			continue
		}
		dir, _, _ := strings.Cut(line, "=")
		dir = strings.TrimRight(strings.TrimSpace(dir), "/")
		if dir == "" {
			// "/" itself, or "=libc6" alone: ldconfig skips both.
			continue
		}
		if !strings.HasPrefix(dir, "/") {
			errs = append(errs, fmt.Errorf("%w: line %d: %.60q is not an absolute directory", ErrParse, n, dir))
			continue
		}
		entries = append(entries, ldSoConfEntry{Dir: dir, Line: n})
	}
	return entries, errs
}

// cutDirective returns what follows word and a blank at the start of line.
func cutDirective(line, word string, foldCase bool) (string, bool) {
	if len(line) <= len(word) || (line[len(word)] != ' ' && line[len(word)] != '\t') {
		return "", false
	}
	head := line[:len(word)]
	if head != word && !(foldCase && strings.EqualFold(head, word)) {
		return "", false
	}
	return line[len(word)+1:], true
}
