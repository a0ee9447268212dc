package configrepo

import (
	"fmt"
	"slices"
	"testing"
)

// A 512-host fleet with gaps, a differently padded host of the same
// prefix, unpadded numbers across a width change, and names without
// numbers or with range characters.
func TestFoldHostsBigFleet(t *testing.T) {
	var names []string
	for i := 512; i >= 1; i-- {
		if i == 100 || i >= 257 && i <= 260 {
			continue
		}
		names = append(names, fmt.Sprintf("gpu-a-%03d", i))
	}
	names = append(names, "gpu-a-0001", "gpu-11", "gpu-9", "gpu-10", "login", "[odd]-1", "gpu-a-001")
	want := []string{"[odd]-1", "gpu-[9-11]", "gpu-a-0001", "gpu-a-[001-099,101-256,261-512]", "login"}
	got := FoldHosts(names)
	if !slices.Equal(got, want) {
		t.Errorf("FoldHosts = %q, want %q", got, want)
	}
	back := slices.Compact(slices.Sorted(slices.Values(names)))
	if exp := ExpandHosts(got); !slices.Equal(exp, back) {
		t.Errorf("ExpandHosts gives %d names, want the %d folded", len(exp), len(back))
	}
}
