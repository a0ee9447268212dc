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

// parseModprobeConf reads a modprobe.d file. Lines are joined as
// kmodLines joins them; a line whose first character is '#' is a comment
// (an indented '#' is a bad command to kmod); words are separated by blanks
// and tabs. Every error is a line kmod_config_parse ignores and goes on
// after (libkmod/libkmod-config.c:711, v30: "ignoring bad line starting
// with", :708 "command %s is deprecated and not parsed anymore"), named by
// its first physical line.
func parseModprobeConf(data []byte) ([]modprobeDirective, []error) {
	var dirs []modprobeDirective
	var errs []error
	for _, kl := range kmodLines(data) {
		n, line := kl.first, kl.text
		// The line is a C string from here on: it ends at a NUL.
		if j := strings.IndexByte(line, 0); j >= 0 {
			line = line[:j]
		}
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(fields) == 0 || strings.HasPrefix(line, "#") {
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
		case "allow_unsupported_modules":
			// SUSE's kmod reads it (suse-module-tools ships it in
			// 10-unsupported-modules.conf, "can be overriden using the
			// --allow-unsupported-modules commandline switch", a SUSE
			// modprobe option): no bad line where it exists. Whether an
			// unsupported module may load is not modelled.
			continue
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

// kmodLine is a logical line of a modprobe.d file and the physical line
// it starts on.
type kmodLine struct {
	first int
	text  string
}

// kmodLines splits a file as kmod's freadline_wrapped (shared/util.c, v30)
// does: a backslash before a newline joins the next line; before any other
// byte it is dropped and the byte kept; a backslash at the very end of the
// file reads as the byte 0xff (getc's EOF stored in a char).
func kmodLines(data []byte) []kmodLine {
	var out []kmodLine
	var buf []byte
	first := 1
	n := 0
	for i := 0; i < len(data); i++ {
		switch ch := data[i]; ch {
		case '\n':
			n++
			out = append(out, kmodLine{first, string(buf)})
			buf, first = buf[:0:0], n+1
		case '\\':
			if i+1 == len(data) {
				buf = append(buf, 0xff)
				continue
			}
			i++
			if data[i] == '\n' {
				n++
				continue
			}
			buf = append(buf, data[i])
		default:
			buf = append(buf, ch)
		}
	}
	if len(buf) > 0 {
		out = append(out, kmodLine{first, string(buf)})
	}
	return out
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
