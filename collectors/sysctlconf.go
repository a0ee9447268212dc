package collectors

import (
	"path"
	"strings"
)

// sysctlAssignment is one meaningful line of a sysctl.d(5) file.
type sysctlAssignment struct {
	Line int
	// Key is the dotted name ("net.ipv4.conf.enp3s0/200.forwarding"), the
	// form sysctl(8) prints; it may hold glob characters.
	Key   string
	Value string
	// Exclude is a "-key" line without "=": it only keeps the key out of
	// glob assignments, and it cancels an earlier explicit assignment.
	Exclude bool
	// IgnoreFailure is the "-" prefix of "-key = value".
	IgnoreFailure bool
}

// sysctlWhitespace is systemd's WHITESPACE, what strstrip() removes.
const sysctlWhitespace = " \t\n\r"

// parseSysctlConf parses a sysctl.d(5) file as systemd-sysctl does: blank
// lines and lines starting with "#" or ";" are skipped, "key = value" with
// whitespace around both trimmed, a leading "-" marks a failure to ignore
// (or, without "=", a glob exclusion). Every error is a line systemd-sysctl
// skips while the rest of the file still applies: a line without "=" is
// logged "Line is not an assignment, ignoring" (src/sysctl/sysctl.c:280
// parse_file, v252), a name outside /proc/sys fails only its own write.
// Lines end as read_line() ends them.
func parseSysctlConf(data []byte) ([]sysctlAssignment, []error) {
	var out []sysctlAssignment
	var errs []error
	for i, raw := range systemdLines(data) {
		n := i + 1
		line := strings.Trim(raw, sysctlWhitespace)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		a := sysctlAssignment{Line: n}
		key, value, found := strings.Cut(line, "=")
		switch {
		case found && strings.HasPrefix(key, "-"):
			a.IgnoreFailure = true
			key = key[1:]
		case !found && strings.HasPrefix(line, "-"):
			a.Exclude = true
			key = line[1:]
		case !found:
			errs = append(errs, confLineErrorf(n, "not an assignment (no \"=\"): %q", line))
			continue
		}
		a.Key = sysctlName(strings.Trim(key, sysctlWhitespace))
		a.Value = strings.Trim(value, sysctlWhitespace)
		if msg := sysctlKeyProblem(a.Key); msg != "" {
			errs = append(errs, confLineErrorf(n, "%s: %q", msg, line))
			continue
		}
		out = append(out, a)
	}
	return out, errs
}

// sysctlKeyProblem says why a normalised key can name no /proc/sys file.
func sysctlKeyProblem(name string) string {
	if name == "" {
		return "empty sysctl name"
	}
	for _, part := range strings.Split(sysctlProcPath(name), "/") {
		if part == ".." {
			return "sysctl name leaves /proc/sys"
		}
	}
	return ""
}

// sysctlName normalises a key written with "." or "/" separators to the
// dotted form, following sysctl.d(5): if the first separator is a slash,
// slashes separate and dots are part of names; if it is a dot, the two swap
// roles. systemd also collapses repeated slashes, drops "." components and a
// leading or trailing slash (sysctl_normalize with path_simplify).
func sysctlName(key string) string {
	p := key
	if i := strings.IndexAny(key, "./"); i >= 0 && key[i] == '.' {
		p = swapDotsAndSlashes(key)
	}
	return swapDotsAndSlashes(simplifyPath(p))
}

// sysctlProcPath is the path of a dotted name under /proc/sys.
func sysctlProcPath(name string) string { return swapDotsAndSlashes(name) }

func swapDotsAndSlashes(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, s)
}

// simplifyPath is systemd's path_simplify without its root: "a//b/./c/" is
// "a/b/c". Unlike path.Clean it keeps "..", which the caller rejects.
func simplifyPath(p string) string {
	var parts []string
	for _, part := range strings.Split(p, "/") {
		if part != "" && part != "." {
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, "/")
}

// isSysctlGlob reports whether a key is a glob(7) pattern (systemd ≥ 246
// expands those against /proc/sys at apply time).
func isSysctlGlob(name string) bool { return strings.ContainsAny(name, "*?[") }

// sysctlFile is the path of a sysctl's file under root.
func sysctlFile(name string) string { return path.Join("/proc/sys", sysctlProcPath(name)) }
