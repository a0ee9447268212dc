package collectors

import (
	"strings"
)

// This file follows kmod's libkmod/libkmod-config.c (kmod_config_parse,
// underscores) for the modprobe.d(5) commands that decide whether a module
// can load: "blacklist" and "install". The other commands are checked for
// the syntax kmod requires and otherwise ignored.

// modprobeDirs in kmod's precedence order: a file in an earlier directory
// hides one of the same name in a later one, and the winners are read in
// file-name order whatever their directory (modprobe.d(5)). /usr/lib is
// kmod's DISTCONFDIR; /lib is read on split-/usr systems.
var modprobeDirs = []string{
	"/etc/modprobe.d",
	"/run/modprobe.d",
	"/usr/local/lib/modprobe.d",
	"/usr/lib/modprobe.d",
	"/lib/modprobe.d",
}

// modprobeDirective is a valid "blacklist" or "install" line.
type modprobeDirective struct {
	Cmd string // "blacklist" or "install"
	// Module is the name, normalised as kmod does ("nv-peer-mem" is
	// nv_peer_mem); for install, possibly an fnmatch pattern.
	Module string
	// Command is install's shell command, blanks around it trimmed.
	Command string
	// Line is the first physical line of the (possibly continued) line.
	Line int
}

// parseModprobeConf reads a modprobe.d file. A line ending in a backslash
// continues on the next; a line whose first non-blank character is '#' is a
// comment; words are separated by blanks and tabs. A line kmod ignores as
// bad ("ignoring bad line starting with ...") is an error naming its line.
func parseModprobeConf(data []byte) ([]modprobeDirective, []error) {
	var dirs []modprobeDirective
	var errs []error
	lines := confFileLines(data)
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := lines[i]
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + lines[i]
		}
		line = strings.TrimSuffix(line, `\`)
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		cmd := fields[0]
		bad := func(format string, args ...any) {
			errs = append(errs, confLineErrorf(n, "%s: "+format, append([]any{cmd}, args...)...))
		}
		// rest is what follows the module name, as kmod's strtok_r(NULL, "")
		// sees it.
		rest := func() string {
			after := line
			for range 2 { // the command, then the module name
				after = strings.TrimLeft(after, " \t")
				if j := strings.IndexAny(after, " \t"); j >= 0 {
					after = after[j:]
				} else {
					after = ""
				}
			}
			return strings.Trim(after, " \t")
		}
		switch cmd {
		case "blacklist", "install", "remove", "options", "softdep", "weakdep", "alias":
		case "include", "config":
			bad("kmod no longer reads this command; the line is ignored")
			continue
		default:
			bad("unknown command; kmod ignores the line")
			continue
		}
		if len(fields) < 2 {
			bad("no module name")
			continue
		}
		name, ok := kmodUnderscores(fields[1])
		if !ok {
			bad("unbalanced brackets in %.40q", fields[1])
			continue
		}
		switch cmd {
		case "alias":
			if len(fields) < 3 {
				bad("no module for alias %.40q", fields[1])
				continue
			}
			if _, ok := kmodUnderscores(fields[2]); !ok {
				bad("unbalanced brackets in %.40q", fields[2])
			}
		case "blacklist":
			// kmod compares a blacklist entry with module names as they
			// are: a pattern or a bad name matches nothing.
			if !isModuleName(name) {
				bad("%.40q is not a module name; it blocks nothing", fields[1])
				continue
			}
			dirs = append(dirs, modprobeDirective{Cmd: cmd, Module: name, Line: n})
		default:
			command := rest()
			if command == "" {
				bad("nothing after the module name %.40q", fields[1])
				continue
			}
			if cmd == "install" {
				dirs = append(dirs, modprobeDirective{Cmd: cmd, Module: name, Command: command, Line: n})
			}
		}
	}
	return dirs, errs
}

// kmodUnderscores is kmod's underscores(): '-' becomes '_' except inside a
// bracket expression of a pattern; an unclosed '[' or a stray ']' is an
// error.
func kmodUnderscores(s string) (string, bool) {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '-':
			b[i] = '_'
		case ']':
			return "", false
		case '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return "", false
			}
			i += j
		}
	}
	return string(b), true
}
