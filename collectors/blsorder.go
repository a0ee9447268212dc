package collectors

import (
	"strings"
)

// The menu order of boot entries decides which one boots when nothing names
// one (GRUB's default 0, systemd-boot's first entry), and what a numeric
// GRUB_DEFAULT points at. Both loaders put the newest first, with different
// comparisons.

// grubVercmp is blscfg's vercmp(): rpm's version comparison with "+"
// handled. 1 when a is newer, -1 when b is, 0 when equal.
func grubVercmp(a, b string) int {
	if a == b {
		return 0
	}
	one, two := a, b
	for one != "" || two != "" {
		one = strings.TrimLeftFunc(one, func(r rune) bool { return r > 0x7f || !isASCIIAlnum(byte(r)) && r != '~' && r != '+' })
		two = strings.TrimLeftFunc(two, func(r rune) bool { return r > 0x7f || !isASCIIAlnum(byte(r)) && r != '~' && r != '+' })
		// "~" sorts before everything.
		if strings.HasPrefix(one, "~") || strings.HasPrefix(two, "~") {
			if !strings.HasPrefix(one, "~") {
				return 1
			}
			if !strings.HasPrefix(two, "~") {
				return -1
			}
			one, two = one[1:], two[1:]
			continue
		}
		// "+": the one that ended is older.
		if strings.HasPrefix(one, "+") || strings.HasPrefix(two, "+") {
			if one == "" {
				return -1
			}
			if two == "" {
				return 1
			}
			if !strings.HasPrefix(one, "+") {
				return 1
			}
			if !strings.HasPrefix(two, "+") {
				return -1
			}
			one, two = one[1:], two[1:]
			continue
		}
		if one == "" || two == "" {
			break
		}
		var seg1, seg2 string
		isnum := isDigit(one[0])
		if isnum {
			seg1, seg2 = leading(one, isDigit), leading(two, isDigit)
		} else {
			seg1, seg2 = leading(one, isAlpha), leading(two, isAlpha)
		}
		one, two = one[len(seg1):], two[len(seg2):]
		if seg2 == "" {
			// Different kinds: numeric is newer.
			if isnum {
				return 1
			}
			return -1
		}
		if isnum {
			seg1, seg2 = strings.TrimLeft(seg1, "0"), strings.TrimLeft(seg2, "0")
			if len(seg1) != len(seg2) {
				return cmpInt(len(seg1), len(seg2))
			}
		}
		if r := strings.Compare(seg1, seg2); r != 0 {
			return r
		}
	}
	if one == "" && two == "" {
		return 0
	}
	if one == "" {
		return -1
	}
	return 1
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func leading(s string, f func(byte) bool) string {
	i := 0
	for i < len(s) && f(s[i]) {
		i++
	}
	return s[:i]
}

func cmpInt(a, b int) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

// splitNVR is blscfg's split_package_string with a name: the release after
// the last "-", the version after the one before, the name before that;
// missing parts bubble up from release to name.
func splitNVR(s string) (name, version, release string, hasV, hasR bool) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return s, "", "", false, false
	}
	rest, release := s[:i], s[i+1:]
	j := strings.LastIndexByte(rest, '-')
	if j < 0 {
		// name missing: it takes the version (here rest), version the release.
		return rest, release, "", true, false
	}
	return rest[:j], rest[j+1:], release, true, true
}

// grubBLSCmp is blscfg's bls_cmp on entry ids (file names without .conf):
// name, then version, then release, each with grubVercmp.
func grubBLSCmp(id0, id1 string) int {
	n0, v0, r0, _, _ := splitNVR(id0)
	n1, v1, r1, _, _ := splitNVR(id1)
	if r := grubVercmp(n0, n1); r != 0 {
		return r
	}
	if r := grubVercmp(v0, v1); r != 0 {
		return r
	}
	return grubVercmp(r0, r1)
}

// sdVerscmp is systemd's strverscmp_improved(): segments of digits or
// letters, each possibly led by "~" (oldest), "-", "^" or "."; other
// characters separate segments.
func sdVerscmp(a, b string) int {
	valid := func(c byte) bool {
		return isDigit(c) || isAlpha(c) || c == '~' || c == '-' || c == '^' || c == '.'
	}
	at := func(s string) byte {
		if s == "" {
			return 0
		}
		return s[0]
	}
	prefixed := func(a, b *string, p byte) (int, bool) {
		ca, cb := at(*a), at(*b)
		if ca != p && cb != p {
			return 0, false
		}
		if r := cmpBool(ca != p, cb != p); r != 0 {
			return r, true
		}
		*a, *b = (*a)[1:], (*b)[1:]
		return 0, false
	}
	for {
		for a != "" && !valid(a[0]) {
			a = a[1:]
		}
		for b != "" && !valid(b[0]) {
			b = b[1:]
		}
		if r, done := prefixed(&a, &b, '~'); done {
			return r
		}
		if a == "" || b == "" {
			return cmpInt(int(at(a)), int(at(b)))
		}
		for _, p := range []byte{'-', '^', '.'} {
			if r, done := prefixed(&a, &b, p); done {
				return r
			}
		}
		if isDigit(at(a)) || isDigit(at(b)) {
			sa, sb := leading(a, isDigit), leading(b, isDigit)
			if r := cmpBool(sa != "", sb != ""); r != 0 {
				return r
			}
			a, b = a[len(sa):], b[len(sb):]
			sa, sb = strings.TrimLeft(sa, "0"), strings.TrimLeft(sb, "0")
			if r := cmpInt(len(sa), len(sb)); r != 0 {
				return r
			}
			if r := strings.Compare(sa, sb); r != 0 {
				return r
			}
		} else {
			sa, sb := leading(a, isAlpha), leading(b, isAlpha)
			n := min(len(sa), len(sb))
			if r := strings.Compare(sa[:n], sb[:n]); r != 0 {
				return r
			}
			if r := cmpInt(len(sa), len(sb)); r != 0 {
				return r
			}
			a, b = a[len(sa):], b[len(sb):]
		}
	}
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// sdBootEntryCmp is systemd-boot's boot_entry_compare without boot
// counting: entries with a sort-key first, by sort-key, machine-id, then
// version newest first; then by id, newest first.
func sdBootEntryCmp(a, b sdSortable) int {
	if r := cmpBool(a.sortKey == "", b.sortKey == ""); r != 0 {
		return r
	}
	if a.sortKey != "" && b.sortKey != "" {
		if r := strings.Compare(a.sortKey, b.sortKey); r != 0 {
			return r
		}
		if r := strings.Compare(a.machineID, b.machineID); r != 0 {
			return r
		}
		if r := -sdVerscmp(a.version, b.version); r != 0 {
			return r
		}
	}
	return -sdVerscmp(a.id, b.id)
}

type sdSortable struct {
	sortKey, machineID, version, id string
}
