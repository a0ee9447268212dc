package collectors

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// This file follows systemd's src/shared/conf-parser.c (config_parse,
// parse_line, config_parse_bool) for the one setting fleetaudit needs.

// logindAssignment is a valid RemoveIPC= line in [Login].
type logindAssignment struct {
	Line      int
	Value     string
	RemoveIPC bool
}

// logindConf is what one logind.conf file says about RemoveIPC.
type logindConf struct {
	// RemoveIPC lists valid assignments in order: the last one counts.
	RemoveIPC []logindAssignment
	// Stopped is set when a line made systemd abandon the file (a broken
	// section header, invalid UTF-8). logind keeps what it had parsed and
	// reads no further file.
	Stopped bool
}

const logindBOM = "\xef\xbb\xbf"

// parseLogindConf parses a logind.conf or drop-in the way config_parse
// does: "#" and ";" lines are comments, a trailing backslash continues a
// line, only the [Login] section is read, keys are case-sensitive. An
// invalid RemoveIPC= value is reported and ignored, so an earlier value
// stays in force; so is an empty one (config_parse_bool has no reset).
func parseLogindConf(data []byte) (logindConf, []error) {
	var conf logindConf
	var errs []error
	p := logindParser{conf: &conf, errs: &errs}
	bomSeen := false
	continuation, hasContinuation := "", false
	lines := systemdLines(data)
	for i, buf := range lines {
		n := i + 1
		if l := strings.TrimLeft(buf, sysctlWhitespace); l != "" && (l[0] == '#' || l[0] == ';') {
			continue
		}
		if !bomSeen && strings.HasPrefix(buf, logindBOM) {
			buf, bomSeen = buf[len(logindBOM):], true
		}
		line := buf
		if hasContinuation {
			line = continuation + buf
		}
		if endsEscaped(line) {
			continuation, hasContinuation = line[:len(line)-1]+" ", true
			continue
		}
		continuation, hasContinuation = "", false
		if !p.line(n, line) {
			conf.Stopped = true
			return conf, errs
		}
	}
	if hasContinuation && !p.line(len(lines), continuation) {
		conf.Stopped = true
	}
	return conf, errs
}

// endsEscaped reports whether s ends in a backslash that is not itself
// escaped.
func endsEscaped(s string) bool {
	escaped := false
	for i := 0; i < len(s); i++ {
		if escaped {
			escaped = false
		} else if s[i] == '\\' {
			escaped = true
		}
	}
	return escaped
}

type logindParser struct {
	conf *logindConf
	errs *[]error
	// section is the current section; ignored holds an unknown one.
	section, ignored string
}

func (p *logindParser) fail(n int, format string, args ...any) {
	*p.errs = append(*p.errs, confLineErrorf(n, format, args...))
}

// line handles one logical line; false means systemd stops here.
func (p *logindParser) line(n int, l string) bool {
	l = strings.Trim(l, sysctlWhitespace)
	if l == "" {
		return true
	}
	if !utf8.ValidString(l) {
		p.fail(n, "invalid UTF-8; systemd stops reading logind configuration here")
		return false
	}
	if l[0] == '[' {
		if len(l) < 2 || l[len(l)-1] != ']' {
			p.fail(n, "invalid section header %q; systemd stops reading logind configuration here", l)
			return false
		}
		name := l[1 : len(l)-1]
		if !sectionNameIsSafe(name) {
			p.fail(n, "bad characters in section header %q; systemd stops reading logind configuration here", l)
			return false
		}
		p.section, p.ignored = "", ""
		if name == "Login" {
			p.section = name
		} else {
			p.ignored = name
		}
		return true
	}
	if p.section == "" {
		// systemd ignores these; only a RemoveIPC= lost this way matters.
		if key, _, ok := strings.Cut(l, "="); ok && strings.EqualFold(strings.Trim(key, sysctlWhitespace), "RemoveIPC") {
			where := "outside any section"
			if p.ignored != "" {
				where = "in section [" + p.ignored + "]"
			}
			p.fail(n, "RemoveIPC= %s is ignored; it belongs in [Login]", where)
		}
		return true
	}
	key, value, ok := strings.Cut(l, "=")
	switch {
	case !ok:
		p.fail(n, "missing '=' in %q", l)
		return true
	case key == "":
		p.fail(n, "missing key name before '=' in %q", l)
		return true
	}
	key, value = strings.Trim(key, sysctlWhitespace), strings.Trim(value, sysctlWhitespace)
	switch {
	case key == "RemoveIPC":
		b, ok := parseSystemdBool(value)
		if !ok {
			p.fail(n, "RemoveIPC=%s is not a boolean; systemd ignores the assignment", value)
			return true
		}
		p.conf.RemoveIPC = append(p.conf.RemoveIPC, logindAssignment{Line: n, Value: value, RemoveIPC: b})
	case strings.EqualFold(key, "RemoveIPC"):
		p.fail(n, "unknown key %q is ignored; the name is case-sensitive: RemoveIPC", key)
	}
	return true
}

// sectionNameIsSafe is systemd's string_is_safe(): no control characters,
// quotes or backslashes.
func sectionNameIsSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c > 0 && c < ' ') || strings.IndexByte("\"'\\\x7f", c) >= 0 {
			return false
		}
	}
	return true
}

// parseSystemdBool is systemd's parse_boolean().
func parseSystemdBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "1", "yes", "y", "true", "t", "on":
		return true, true
	case "0", "no", "n", "false", "f", "off":
		return false, true
	}
	return false, false
}

// rhelFamily are os-release IDs whose systemd carries Red Hat's RHEL-only
// patch "logind: set RemoveIPC to false by default" (RHEL 7.x onwards;
// logind.conf(5) of systemd-rhel8, -rhel9 and -rhel10 says "Defaults to
// no"). Fedora and the upstream-based distributions keep "yes".
var rhelFamily = []string{"rhel", "centos", "rocky", "almalinux", "ol"}

// removeIPCDefault is logind's compiled-in RemoveIPC for an OS, and why.
func removeIPCDefault(osr snapshot.OSRelease) (bool, string) {
	name := osr.PrettyName
	if name == "" {
		name = strings.TrimSpace(osr.ID + " " + osr.VersionID)
	}
	if name == "" {
		return true, "unknown OS (upstream systemd default RemoveIPC=yes)"
	}
	family := slices.Contains(rhelFamily, osr.ID)
	for _, like := range strings.Fields(osr.IDLike) {
		family = family || like == "rhel" || like == "centos"
	}
	if family {
		return false, name + " (RHEL-family systemd is patched to default RemoveIPC=no)"
	}
	return true, name + " (upstream systemd default RemoveIPC=yes)"
}
