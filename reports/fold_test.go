package reports

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestFoldHosts(t *testing.T) {
	seq := func(prefix string, width int, ns ...int) []string {
		var out []string
		for _, n := range ns {
			out = append(out, fmt.Sprintf("%s%0*d", prefix, width, n))
		}
		return out
	}
	span := func(lo, hi int) []int {
		var out []int
		for n := lo; n <= hi; n++ {
			out = append(out, n)
		}
		return out
	}
	tests := []struct {
		name  string
		hosts []string
		limit int
		want  string
	}{
		{"none", nil, 6, ""},
		{"one", []string{"gpu-a-001"}, 6, "gpu-a-001"},
		{"example fleet", append(seq("gpu-a-", 3, span(1, 8)...), "gpu-k-001", "gpu-b-007"), 6,
			"gpu-a-[001-008], gpu-k-001, gpu-b-007"},
		{"ranges and singles", seq("gpu-", 3, 1, 2, 3, 5, 7, 8, 9, 12), 6, "gpu-[001-003,005,007-009,012]"},
		{"cut inside a group", seq("gpu-", 3, 1, 2, 3, 5, 7, 8, 9, 12), 2, "gpu-[001-003,005], and 4 more hosts"},
		{"cut leaves one host", seq("gpu-", 3, 1, 2, 3, 5, 7), 2, "gpu-[001-003,005], and 1 more host"},
		{"cut at the end says nothing", seq("gpu-", 3, 1, 2, 3, 5, 7), 3, "gpu-[001-003,005,007]"},
		{"a group shown in part keeps its brackets", seq("gpu-", 3, 1, 2, 3, 5), 1, "gpu-[001-003], and 1 more host"},
		{"cut between groups", append(seq("a-", 1, 1, 2), seq("b-", 1, 1, 2)...), 1, "a-[1-2], and 2 more hosts"},
		{"cut before the plain names", []string{"login", "gpu-1", "head", "gpu-2"}, 2, "gpu-[1-2], head, and 1 more host"},
		{"no limit", seq("gpu-", 2, 1, 3, 5, 7, 9, 11, 13, 15), 0, "gpu-[01,03,05,07,09,11,13,15]"},
		{"widths apart", []string{"n1", "n01", "n2", "n001", "n02", "n3"}, 6, "n[1-3], n[01-02], n001"},
		{"prefixes in first-seen order", []string{"b-3", "a-2", "b-1", "a-1", "b-2"}, 6, "b-[1-3], a-[1-2]"},
		{"out of order within a group", seq("gpu-", 3, 9, 1, 8, 2, 7, 3), 6, "gpu-[001-003,007-009]"},
		{"duplicates count once", []string{"x-1", "x-1", "x-2", "plain", "plain", "x-2"}, 1, "x-[1-2], and 1 more host"},
		{"duplicates shown once", []string{"x-1", "x-1", "plain", "plain"}, 6, "x-1, plain"},
		{"plain names sorted after", []string{"zeta", "gpu-7", "alpha"}, 6, "gpu-7, alpha, zeta"},
		{"ten digits are a name", []string{"h1234567890", "h1234567891"}, 6, "h1234567890, h1234567891"},
		{"nine digits fold", []string{"h123456789", "h123456790"}, 6, "h[123456789-123456790]"},
		{"all digits", []string{"2", "1", "3"}, 6, "[1-3]"},
		{"zero", []string{"gpu-000", "gpu-001"}, 6, "gpu-[000-001]"},
		{"dotted names", []string{"gpu-1.dc1", "gpu-2.dc1"}, 6, "gpu-1.dc1, gpu-2.dc1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := foldHosts(tt.hosts, tt.limit); got != tt.want {
				t.Errorf("foldHosts(%q, %d)\n got %q\nwant %q", tt.hosts, tt.limit, got, tt.want)
			}
			if got := foldOracle(tt.hosts, tt.limit); got != tt.want {
				t.Errorf("foldOracle(%q, %d)\n got %q\nwant %q", tt.hosts, tt.limit, got, tt.want)
			}
		})
	}
}

// A large fleet's cell is as short as a small one's: the limit counts
// ranges, not prefixes.
func TestFoldHostsBoundsALargeFleet(t *testing.T) {
	var hosts []string
	for n := range 100_000 {
		if n%20 < 17 { // as bench/gen's rules fire: 17 of every 20
			hosts = append(hosts, fmt.Sprintf("gpu-%05d", n))
		}
	}
	got := foldHosts(hosts, 6)
	want := "gpu-[00000-00016,00020-00036,00040-00056,00060-00076,00080-00096,00100-00116], and 84898 more hosts"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// foldedRE reads one piece of foldHosts' output back.
var foldedRE = regexp.MustCompile(`^([a-z-]*)(?:\[([0-9,-]+)\]|([0-9]+))?$`)

// unfold lists the hosts a foldHosts output names, and the number it says
// it left out.
func unfold(t *testing.T, s string) (hosts []string, more int) {
	t.Helper()
	if s == "" {
		return nil, 0
	}
	pieces := strings.Split(s, ", ")
	if last := pieces[len(pieces)-1]; strings.HasPrefix(last, "and ") {
		n, err := strconv.Atoi(strings.Fields(last)[1])
		if err != nil {
			t.Fatalf("bad count in %q", last)
		}
		more, pieces = n, pieces[:len(pieces)-1]
	}
	for _, p := range pieces {
		m := foldedRE.FindStringSubmatch(p)
		switch {
		case m == nil:
			t.Fatalf("cannot read %q in %q", p, s)
		case m[3] != "" || m[2] == "":
			hosts = append(hosts, p)
		default:
			for _, r := range strings.Split(m[2], ",") {
				lo, hi, found := strings.Cut(r, "-")
				if !found {
					hi = lo
				}
				a, _ := strconv.Atoi(lo)
				b, _ := strconv.Atoi(hi)
				if len(lo) != len(hi) || a >= b && found {
					t.Fatalf("bad range %q in %q", r, s)
				}
				for n := a; n <= b; n++ {
					hosts = append(hosts, fmt.Sprintf("%s%0*d", m[1], len(lo), n))
				}
			}
		}
	}
	return hosts, more
}

// Whatever the hosts and the limit, the output names distinct hosts of the
// input, at most limit ranges or names, and counts the rest exactly.
func TestFoldHostsCountsWhatItLeavesOut(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	prefixes := []string{"gpu-a-", "gpu-b-", "login", "n"}
	for i := range 500 {
		var hosts []string
		for range r.IntN(200) {
			p := prefixes[r.IntN(len(prefixes))]
			switch r.IntN(10) {
			case 0:
				hosts = append(hosts, p) // no number
			case 1:
				hosts = append(hosts, fmt.Sprintf("%s%d", p, r.IntN(30))) // unpadded
			default:
				hosts = append(hosts, fmt.Sprintf("%s%03d", p, r.IntN(60)))
			}
		}
		limit := r.IntN(10)
		got := foldHosts(hosts, limit)
		shown, more := unfold(t, got)
		distinct := slices.Compact(slices.Sorted(slices.Values(hosts)))
		if len(shown)+more != len(distinct) {
			t.Fatalf("case %d: %q shows %d and counts %d more of %d hosts", i, got, len(shown), more, len(distinct))
		}
		seen := map[string]bool{}
		for _, h := range shown {
			if seen[h] || !slices.Contains(distinct, h) {
				t.Fatalf("case %d: %q names %q twice or not in the input", i, got, h)
			}
			seen[h] = true
		}
		// Ranges and names are what commas separate, "and N more" aside.
		pieces := strings.Count(got, ",") + 1
		if more > 0 {
			pieces--
		}
		if limit > 0 && len(shown) > 0 && pieces > limit {
			t.Fatalf("case %d: %q has %d ranges or names, limit %d", i, got, pieces, limit)
		}
		if limit == 0 && more != 0 {
			t.Fatalf("case %d: no limit, yet %q leaves hosts out", i, got)
		}
	}
}

// foldOracle is foldHosts written plainly: every host parsed, every group
// sorted, every range formatted, then cut.
func foldOracle(hosts []string, limit int) string {
	type key struct {
		prefix string
		width  int
	}
	nums := map[key][]int{}
	var order []key
	var plain []string
	for _, h := range hosts {
		i := len(h)
		for i > 0 && h[i-1] >= '0' && h[i-1] <= '9' {
			i--
		}
		if i == len(h) || len(h)-i > 9 {
			plain = append(plain, h)
			continue
		}
		n, _ := strconv.Atoi(h[i:])
		k := key{h[:i], len(h) - i}
		if _, ok := nums[k]; !ok {
			order = append(order, k)
		}
		nums[k] = append(nums[k], n)
	}
	type piece struct {
		text  string
		hosts int
		group int
	}
	var pieces []piece
	total := 0
	for gi, k := range order {
		ns := slices.Compact(slices.Sorted(slices.Values(nums[k])))
		total += len(ns)
		for i := 0; i < len(ns); {
			j := i
			for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
				j++
			}
			text := fmt.Sprintf("%0*d", k.width, ns[i])
			if j > i {
				text += fmt.Sprintf("-%0*d", k.width, ns[j])
			}
			pieces = append(pieces, piece{text, j - i + 1, gi})
			i = j + 1
		}
	}
	plain = slices.Compact(slices.Sorted(slices.Values(plain)))
	total += len(plain)
	for _, h := range plain {
		pieces = append(pieces, piece{h, 1, -1})
	}
	if limit > 0 && len(pieces) > limit {
		pieces = pieces[:limit]
	}
	var parts []string
	shown := 0
	for i := 0; i < len(pieces); {
		p := pieces[i]
		shown += p.hosts
		if p.group < 0 {
			parts = append(parts, p.text)
			i++
			continue
		}
		k := order[p.group]
		if len(slices.Compact(slices.Sorted(slices.Values(nums[k])))) == 1 {
			parts = append(parts, k.prefix+p.text)
			i++
			continue
		}
		texts := []string{p.text}
		for i++; i < len(pieces) && pieces[i].group == p.group; i++ {
			texts = append(texts, pieces[i].text)
			shown += pieces[i].hosts
		}
		parts = append(parts, k.prefix+"["+strings.Join(texts, ",")+"]")
	}
	if rest := total - shown; rest > 0 {
		parts = append(parts, fmt.Sprintf("and %d more %s", rest, plural(rest, "host", "hosts")))
	}
	return strings.Join(parts, ", ")
}

// Large fleets in any order, with gaps and repeats, fold as the plain
// algorithm does: the ranges kept as hosts come (and merged when they come
// out of order) are the sorted hosts' ranges.
func TestFoldHostsIsThePlainFold(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 40 {
		var hosts []string
		n := 1 + r.IntN(20_000)
		for h := range n {
			if r.IntN(5) == 0 {
				continue // a gap
			}
			hosts = append(hosts, fmt.Sprintf("gpu-%05d", h))
			if r.IntN(10) == 0 {
				hosts = append(hosts, fmt.Sprintf("gpu-%05d", h)) // a repeat
			}
			if r.IntN(50) == 0 {
				hosts = append(hosts, fmt.Sprintf("web-%d", h), "login")
			}
		}
		switch i % 4 {
		case 1:
			slices.Reverse(hosts)
		case 2:
			r.Shuffle(len(hosts), func(a, b int) { hosts[a], hosts[b] = hosts[b], hosts[a] })
		case 3: // in order, then again shuffled (a rule of two severities)
			more := slices.Clone(hosts)
			r.Shuffle(len(more), func(a, b int) { more[a], more[b] = more[b], more[a] })
			hosts = append(hosts, more...)
		}
		for _, limit := range []int{0, 1, 6, 8} {
			if got, want := foldHosts(hosts, limit), foldOracle(hosts, limit); got != want {
				t.Fatalf("case %d, limit %d: %d hosts\n got %.300s\nwant %.300s", i, limit, len(hosts), got, want)
			}
		}
	}
}
