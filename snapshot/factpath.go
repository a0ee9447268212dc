package snapshot

import (
	"strconv"
	"strings"
)

// Fact paths follow the JSON names of the snapshot joined with dots:
// "boot.configured.params.hugetlb_cma", "sysctl.running.vm.max_map_count",
// "limits.effective.*.memlock.soft", "logind.remove_ipc".
//
// Lookup resolves a fact path such as "sysctl.running.vm.max_map_count" in a
// snapshot's generic JSON form. A numeric part indexes a list. Map keys may
// contain dots (sysctl names, boot params), so at each level the longest key
// that matches wins.
func Lookup(doc any, path string) (any, bool) {
	if path == "" {
		return doc, true
	}
	parts := strings.Split(path, ".")
	if list, ok := doc.([]any); ok {
		i, err := strconv.Atoi(parts[0])
		if err != nil || i < 0 || i >= len(list) {
			return nil, false
		}
		return Lookup(list[i], strings.Join(parts[1:], "."))
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, false
	}
	for n := len(parts); n >= 1; n-- {
		key := strings.Join(parts[:n], ".")
		child, ok := m[key]
		if !ok {
			continue
		}
		if v, ok := Lookup(child, strings.Join(parts[n:], ".")); ok {
			return v, true
		}
	}
	return nil, false
}

// Generic returns the snapshot as the map form that Rego and Lookup see:
// its Document.
func Generic(s *Snapshot) (map[string]any, error) { return Document(s) }
