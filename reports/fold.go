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
	var s hostSet
	for _, h := range hosts {
		s.add(h)
	}
	return s.fold(limit)
}

// hostSet holds host names as foldHosts writes them, a range per run of
// numbered names, so a rule that fires on 100,000 hosts named in order
// keeps a few ranges, not 100,000 names.
type hostSet struct {
	groups []*hostRange // in the order their first host came
	index  map[hostKey]*hostRange
	last   *hostRange
	// Names without a numeric suffix; sorted and without repeats up to
	// plainSorted.
	plain       []string
	plainSorted int
}

type hostKey struct {
	prefix string
	width  int
}

// hostRange is the numbers of the names prefix<number of width digits>:
// ranges sorted, apart and not touching; numbers that came out of order
// wait in pending until merged.
type hostRange struct {
	hostKey
	ranges  [][2]int
	pending []int
}

func (s *hostSet) add(h string) {
	prefix, width, n, ok := hostNumber(h)
	if !ok {
		if n := len(s.plain); n == 0 || s.plain[n-1] != h {
			s.plain = append(s.plain, h)
		}
		return
	}
	// Hosts come grouped by name; look the group up only when it changes.
	if g := s.last; g == nil || g.width != width || g.prefix != prefix {
		k := hostKey{prefix, width}
		if s.last = s.index[k]; s.last == nil {
			if s.index == nil {
				s.index = map[hostKey]*hostRange{}
			}
			s.last = &hostRange{hostKey: k}
			s.index[k] = s.last
			s.groups = append(s.groups, s.last)
		}
	}
	s.last.add(n)
}

func (g *hostRange) add(n int) {
	if len(g.pending) == 0 {
		last := len(g.ranges) - 1
		switch {
		case last < 0 || n > g.ranges[last][1]+1:
			g.ranges = append(g.ranges, [2]int{n, n})
			return
		case n == g.ranges[last][1]+1:
			g.ranges[last][1] = n
			return
		case n >= g.ranges[last][0]:
			return // the host before, again
		}
	}
	g.pending = append(g.pending, n)
	if len(g.pending) > 64 && len(g.pending) > len(g.ranges) {
		g.merge()
	}
}

// merge folds the pending numbers into the ranges.
func (g *hostRange) merge() {
	if len(g.pending) == 0 {
		return
	}
	slices.Sort(g.pending)
	out := make([][2]int, 0, len(g.ranges)+len(g.pending))
	put := func(lo, hi int) {
		if last := len(out) - 1; last >= 0 && lo <= out[last][1]+1 {
			out[last][1] = max(out[last][1], hi)
			return
		}
		out = append(out, [2]int{lo, hi})
	}
	i, j := 0, 0
	for i < len(g.ranges) || j < len(g.pending) {
		if j == len(g.pending) || (i < len(g.ranges) && g.ranges[i][0] <= g.pending[j]) {
			put(g.ranges[i][0], g.ranges[i][1])
			i++
		} else {
			put(g.pending[j], g.pending[j])
			j++
		}
	}
	g.ranges, g.pending = out, nil
}

// count is the number of hosts in the range.
func (g *hostRange) count() int {
	g.merge()
	n := 0
	for _, r := range g.ranges {
		n += r[1] - r[0] + 1
	}
	return n
}

// sortPlain sorts the plain names and drops repeats.
func (s *hostSet) sortPlain() {
	if s.plainSorted < len(s.plain) {
		slices.Sort(s.plain)
		s.plain = slices.Compact(s.plain)
		s.plainSorted = len(s.plain)
	}
}

// Len is the number of distinct hosts.
func (s *hostSet) Len() int {
	s.sortPlain()
	n := len(s.plain)
	for _, g := range s.groups {
		n += g.count()
	}
	return n
}

// fold writes the set as foldHosts does.
func (s *hostSet) fold(limit int) string {
	total := s.Len()
	// Only what is shown is formatted: pieces counts ranges and names.
	var b []byte
	shown, pieces := 0, 0
	full := func() bool { return limit > 0 && pieces >= limit }
	for _, g := range s.groups {
		if full() {
			break
		}
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, g.prefix...)
		if r := g.ranges[0]; len(g.ranges) == 1 && r[0] == r[1] {
			b = appendPadded(b, r[0], g.width)
			shown++
			pieces++
			continue
		}
		b = append(b, '[')
		for i, r := range g.ranges {
			if full() {
				break
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPadded(b, r[0], g.width)
			if r[1] > r[0] {
				b = append(b, '-')
				b = appendPadded(b, r[1], g.width)
			}
			shown += r[1] - r[0] + 1
			pieces++
		}
		b = append(b, ']')
	}
	if !full() {
		for _, h := range s.plain {
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
