package configrepo

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// FoldHosts folds host names into ranges: gpu-a-001 to gpu-a-512 become
// "gpu-a-[001-512]", with gaps as "gpu-a-[001-010,012]". Names are
// deduplicated and the result sorted. A name whose last run of digits is
// zero-padded folds only with names of the same width; one with a '[', ']'
// or ',' is listed as it is (it would read as a range).
func FoldHosts(names []string) []string {
	type key struct {
		prefix, suffix string
		width          int // 0: unpadded numbers
	}
	type num struct {
		n      uint64
		digits string
	}
	parse := func(name string) (prefix, digits, suffix string, ok bool) {
		if strings.ContainsAny(name, "[],") {
			return "", "", "", false
		}
		end := len(name)
		for end > 0 && !isDigit(name[end-1]) {
			end--
		}
		start := end
		for start > 0 && isDigit(name[start-1]) {
			start--
		}
		if start == end || end-start > 18 {
			return "", "", "", false
		}
		return name[:start], name[start:end], name[end:], true
	}
	padded := map[[2]string]map[int]bool{}
	for _, n := range names {
		if p, d, s, ok := parse(n); ok && len(d) > 1 && d[0] == '0' {
			k := [2]string{p, s}
			if padded[k] == nil {
				padded[k] = map[int]bool{}
			}
			padded[k][len(d)] = true
		}
	}
	groups := map[key]map[uint64]string{}
	var out []string
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		p, d, s, ok := parse(name)
		if !ok {
			out = append(out, name)
			continue
		}
		k := key{prefix: p, suffix: s}
		if padded[[2]string{p, s}][len(d)] {
			k.width = len(d)
		} else if len(d) > 1 && d[0] == '0' {
			k.width = len(d)
		}
		n, _ := strconv.ParseUint(d, 10, 64)
		if k.width == 0 && d != strconv.FormatUint(n, 10) {
			out = append(out, name)
			continue
		}
		if groups[k] == nil {
			groups[k] = map[uint64]string{}
		}
		groups[k][n] = d
	}
	for k, members := range groups {
		nums := make([]num, 0, len(members))
		for n, d := range members {
			nums = append(nums, num{n, d})
		}
		slices.SortFunc(nums, func(a, b num) int { return cmp.Compare(a.n, b.n) })
		if len(nums) == 1 {
			out = append(out, k.prefix+nums[0].digits+k.suffix)
			continue
		}
		var parts []string
		for i := 0; i < len(nums); {
			j := i
			for j+1 < len(nums) && nums[j+1].n == nums[j].n+1 {
				j++
			}
			if j == i {
				parts = append(parts, nums[i].digits)
			} else {
				parts = append(parts, nums[i].digits+"-"+nums[j].digits)
			}
			i = j + 1
		}
		out = append(out, k.prefix+"["+strings.Join(parts, ",")+"]"+k.suffix)
	}
	slices.Sort(out)
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// ExpandHosts is FoldHosts undone: each "prefix[a-b,c]suffix" entry is its
// hosts again, numbered with the width the bounds were written with.
func ExpandHosts(folded []string) []string {
	var out []string
	for _, f := range folded {
		open, close := strings.IndexByte(f, '['), strings.LastIndexByte(f, ']')
		if open < 0 || close < open {
			out = append(out, f)
			continue
		}
		prefix, suffix := f[:open], f[close+1:]
		for _, part := range strings.Split(f[open+1:close], ",") {
			lo, hi, isRange := strings.Cut(part, "-")
			if !isRange {
				hi = lo
			}
			a, errA := strconv.ParseUint(lo, 10, 64)
			b, errB := strconv.ParseUint(hi, 10, 64)
			if errA != nil || errB != nil || b < a {
				out = append(out, f)
				break
			}
			for n := a; ; n++ {
				d := strconv.FormatUint(n, 10)
				if len(d) < len(lo) && lo[0] == '0' {
					d = strings.Repeat("0", len(lo)-len(d)) + d
				}
				out = append(out, prefix+d+suffix)
				if n == b {
					break
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
