package collectors

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// confLineError is a malformed line. It wraps ErrParse and keeps the line
// number so callers (and fuzz tests) can check where it points.
type confLineError struct {
	Line int
	Msg  string
}

func (e *confLineError) Error() string {
	return fmt.Sprintf("%v: line %d: %s", ErrParse, e.Line, e.Msg)
}

func (e *confLineError) Unwrap() error { return ErrParse }

func confLineErrorf(line int, format string, args ...any) error {
	return &confLineError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// confFileLines splits a file into lines without their "\n". A final line
// without a newline counts; the empty string after a final "\n" does not.
func confFileLines(data []byte) []string {
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// systemdLines splits a file as systemd's read_line() does (fileio.c:1263,
// read_line_full): "\n", "\r" and NUL each end a line, and so does one of
// the pairs "\r\n" and "\n\r", with an optional NUL after either; a NUL
// always ends the run of line ends. Lines without their ends.
func systemdLines(data []byte) []string {
	var lines []string
	const (
		eolTen = 1 << iota
		eolThirteen
		eolZero
	)
	start, prev := 0, 0
	for i := 0; i < len(data); i++ {
		eol := 0
		switch data[i] {
		case '\n':
			eol = eolTen
		case '\r':
			eol = eolThirteen
		case 0:
			eol = eolZero
		}
		if prev != 0 && (prev&eolZero != 0 || eol == 0 || prev&eol != 0) {
			// the previous line ended before this byte
			start, prev = i, 0
		}
		if eol == 0 {
			continue
		}
		if prev == 0 {
			lines = append(lines, string(data[start:i]))
		}
		prev |= eol
	}
	if prev == 0 && start < len(data) {
		lines = append(lines, string(data[start:]))
	}
	return lines
}

// confFile is one file chosen by name from layered configuration directories.
type confFile struct {
	// Name is the base name that decides both override and order.
	Name string
	// Path is where the file was listed ("/etc/sysctl.d/99-sysctl.conf").
	Path string
	// Real is Path with symbolic links resolved inside the root; provenance
	// points there because that is the file an administrator edits.
	Real string
}

// listConfFiles implements systemd's conf_files_list(): every "*<suffix>"
// file in dirs (highest priority first), where a name found in an earlier
// directory hides the same name in later ones, then sorted by name
// regardless of directory. A winning entry that is a symlink to /dev/null
// masks the name entirely. Hidden files are skipped as systemd does.
func (c *collection) listConfFiles(collector string, dirs []string, suffix string) []confFile {
	chosen := map[string]bool{}
	var files []confFile
	for _, dir := range dirs {
		for _, entry := range c.readDir(collector, dir) {
			name := entry.Name()
			if chosen[name] || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, suffix) {
				continue
			}
			chosen[name] = true
			p := path.Join(dir, name)
			real := c.realPath(p)
			if real == "/dev/null" {
				continue
			}
			files = append(files, confFile{Name: name, Path: p, Real: real})
		}
	}
	slices.SortFunc(files, func(a, b confFile) int { return strings.Compare(a.Name, b.Name) })
	return files
}

// realPath resolves the symbolic links of p inside the root. A component
// that cannot be read as a link is taken as it is: /dev/null is not present
// in a fixture tree or a config repo, so a mask is recognised by its target,
// never by opening it.
func (c *collection) realPath(p string) string {
	resolved, err := resolveLinks(p, true, func(name string) (string, bool, error) {
		target, err := c.src.ReadLink(name)
		return target, err == nil, nil
	})
	if err != nil {
		return path.Clean("/" + p)
	}
	return path.Clean("/" + resolved)
}

// firstExisting returns the first of candidates present in the root (a
// dangling link does not count, a /dev/null link does), as systemd picks a
// daemon's main configuration file.
func (c *collection) firstExisting(candidates []string) (string, bool) {
	for _, p := range candidates {
		if c.realPath(p) == "/dev/null" {
			return p, true
		}
		// Anything but "not there" counts as found, so reading it
		// records the failure instead of silently using a lower file.
		if _, err := c.src.Stat(rel(p)); !errors.Is(err, fs.ErrNotExist) {
			return p, true
		}
	}
	return "", false
}
