package strictyaml

import "fmt"

// Closest returns the known name nearest to name when it is near enough to
// be the one meant: at most a third of name's length in edits, at least one.
// Ties go to the name that sorts first.
func Closest(name string, known []string) (string, bool) {
	best, bestDist := "", 0
	for _, k := range known {
		d := editDistance(name, k)
		if best == "" || d < bestDist || d == bestDist && k < best {
			best, bestDist = k, d
		}
	}
	if best == "" || bestDist > max(1, len(name)/3) {
		return "", false
	}
	return best, true
}

// DidYouMean is ` (did you mean "prefix+closest"?)`, or "" when no known
// name is close.
func DidYouMean(name string, known []string, prefix string) string {
	if c, ok := Closest(name, known); ok {
		return fmt.Sprintf(" (did you mean %q?)", prefix+c)
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
