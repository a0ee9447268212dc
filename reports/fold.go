package reports

import (
	"slices"
	"strconv"
)

// foldHosts writes host names compactly: names that differ only in a
// numeric suffix of one width become ranges, gpu-a-[001-012,015]. At most
// limit ranges and names are written, then "and N more hosts", so a cell
// stays a line or two on a fleet of any size; limit <= 0 writes them all.
// Groups come in the order their first host does, then names without a
// numeric suffix, sorted; a name given twice counts once.
func foldHosts(hosts []string, limit int) string {
	type group struct {
		prefix string
		width  int
		ns     []int
	}
	type key struct {
		prefix string
		width  int
	}
	var groups []*group
	var index map[key]*group
	var last *group
	var plain []string
	for _, h := range hosts {
		prefix, width, n, ok := hostNumber(h)
		if !ok {
			plain = append(plain, h)
			continue
		}
		// Hosts come grouped by name; look the group up only when it changes.
		if last == nil || last.width != width || last.prefix != prefix {
			k := key{prefix, width}
			if last = index[k]; last == nil {
				if index == nil {
					index = map[key]*group{}
				}
				last = &group{prefix: prefix, width: width}
				index[k] = last
				groups = append(groups, last)
			}
		}
		last.ns = append(last.ns, n)
	}
	total := 0
	for _, g := range groups {
		slices.Sort(g.ns)
		g.ns = slices.Compact(g.ns)
		total += len(g.ns)
	}
	slices.Sort(plain)
	plain = slices.Compact(plain)
	total += len(plain)

	// Only what is shown is formatted: pieces counts ranges and names.
	var b []byte
	shown, pieces := 0, 0
	full := func() bool { return limit > 0 && pieces >= limit }
	for _, g := range groups {
		if full() {
			break
		}
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, g.prefix...)
		if len(g.ns) == 1 {
			b = appendPadded(b, g.ns[0], g.width)
			shown++
			pieces++
			continue
		}
		b = append(b, '[')
		for i := 0; i < len(g.ns) && !full(); {
			j := i
			for j+1 < len(g.ns) && g.ns[j+1] == g.ns[j]+1 {
				j++
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPadded(b, g.ns[i], g.width)
			if j > i {
				b = append(b, '-')
				b = appendPadded(b, g.ns[j], g.width)
			}
			shown += j - i + 1
			pieces++
			i = j + 1
		}
		b = append(b, ']')
	}
	for _, h := range plain {
		if full() {
			break
		}
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, h...)
		shown++
		pieces++
	}
	if rest := total - shown; rest > 0 {
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, "and "...)
		b = strconv.AppendInt(b, int64(rest), 10)
		b = append(b, " more "...)
		b = append(b, plural(rest, "host", "hosts")...)
	}
	return string(b)
}

// hostNumber splits a host name into the text before its numeric suffix,
// the suffix's width and its value; ok is false without a suffix or with
// one of more than 9 digits.
func hostNumber(h string) (prefix string, width, n int, ok bool) {
	i := len(h)
	for i > 0 && h[i-1] >= '0' && h[i-1] <= '9' {
		i--
	}
	width = len(h) - i
	if width == 0 || width > 9 {
		return "", 0, 0, false
	}
	for _, c := range []byte(h[i:]) {
		n = n*10 + int(c-'0')
	}
	return h[:i], width, n, true
}

// appendPadded appends n in decimal, zero-padded to width digits.
func appendPadded(b []byte, n, width int) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(n), 10)
	for range width - len(d) {
		b = append(b, '0')
	}
	return append(b, d...)
}
