package sshsource

import (
	"path"
	"regexp"
	"strings"

	"github.com/fleetaudit/fleetaudit/collectors"
)

// The stream's rules for what collector families declare they read
// (collectors.Families): each declared file is streamed and each declared
// directory listed, with every directory above them, so a family added
// later is read in the first round trip without a rule written here. A
// path the written rules already carry adds no rule: find matches every
// entry against them all.
var familyDescend, familyRead = familyRules(collectors.Families(), descendRules, readRules)

// resolvedByLinks are sysfs directories whose entries are links into
// /sys/devices: the stream carries what they resolve to, which the names
// below them cannot say (the rules written in remote.go do).
var resolvedByLinks = []string{"sys/class/net/", "sys/class/infiniband/", "sys/class/dmi/", "sys/bus/pci/devices/"}

// familyRules turns the families' reads (path.Match patterns, "/" ending a
// listed directory, "/**" a scanned tree) into descend and read rules. A
// process's files are the script's own pass over /proc.
func familyRules(families []collectors.Family, descendRules, readRules []string) (descend, read []string) {
	hasDir := regexp.MustCompile(`^` + alternation(descendRules) + `$`)
	hasFile := regexp.MustCompile(`^` + alternation(readRules) + `$`)
	covered := func(re *regexp.Regexp, glob string) bool {
		for _, s := range globSamples(glob) {
			if !re.MatchString("./" + s) {
				return false
			}
		}
		return true
	}
	seenDir, seenFile := map[string]bool{}, map[string]bool{}
	dir := func(d string) {
		for ; d != "." && d != "/" && !seenDir[d]; d = path.Dir(d) {
			seenDir[d] = true
			if !covered(hasDir, d) {
				descend = append(descend, `\./`+globRegexp(d))
			}
		}
	}
	for _, f := range families {
		for _, p := range f.Reads {
			name := strings.TrimPrefix(p, "/")
			if strings.HasPrefix(name, "proc/[0-9]*/") || viaLinks(name) {
				continue
			}
			if base, ok := strings.CutSuffix(name, "/**"); ok {
				dir(base)
				continue
			}
			if d, ok := strings.CutSuffix(name, "/"); ok {
				dir(d)
				continue
			}
			dir(path.Dir(name))
			if !seenFile[name] {
				seenFile[name] = true
				if !covered(hasFile, name) {
					read = append(read, `\./`+globRegexp(name))
				}
			}
		}
	}
	return descend, read
}

// globSamples are names a path.Match pattern matches, its wildcards filled
// in two ways, for telling whether a written rule carries it.
func globSamples(glob string) []string {
	var out []string
	for _, fill := range []string{"x", "fleetaudit-sample.d.conf"} {
		var b strings.Builder
		for i := 0; i < len(glob); i++ {
			switch c := glob[i]; c {
			case '*':
				b.WriteString(fill)
			case '?':
				b.WriteString(fill[:1])
			case '[':
				j := strings.IndexByte(glob[i+1:], ']')
				if j < 0 {
					b.WriteString(glob[i:])
					i = len(glob)
					continue
				}
				class := glob[i+1 : i+1+j]
				if strings.HasPrefix(class, "^") || strings.HasPrefix(class, "!") {
					b.WriteString(fill[:1]) // a guess; a written rule seldom matches a negated class
				} else {
					b.WriteByte(class[0])
				}
				i += j + 1
			case '\\':
				if i+1 < len(glob) {
					i++
				}
				b.WriteByte(glob[i])
			default:
				b.WriteByte(c)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// viaLinks reports whether name lies below one of resolvedByLinks.
func viaLinks(name string) bool {
	for _, v := range resolvedByLinks {
		if strings.HasPrefix(name, v) && len(name) > len(v) {
			return true
		}
	}
	return false
}

// globRegexp is a path.Match pattern as a POSIX extended regular
// expression: a wildcard never crosses "/".
func globRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			b.WriteString(`[^/]*`)
		case '?':
			b.WriteString(`[^/]`)
		case '[':
			j := strings.IndexByte(glob[i+1:], ']')
			if j < 0 {
				b.WriteString(regexp.QuoteMeta(glob[i:]))
				return b.String()
			}
			b.WriteString(glob[i : i+j+2])
			i += j + 1
		case '\\':
			if i+1 < len(glob) {
				i++
			}
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}
