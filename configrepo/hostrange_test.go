package configrepo

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestFoldHosts(t *testing.T) {
	var gpu []string
	for i := 1; i <= 512; i++ {
		gpu = append(gpu, fmt.Sprintf("gpu-a-%03d", i))
	}
	cases := []struct {
		in   []string
		want []string
	}{
		{gpu, []string{"gpu-a-[001-512]"}},
		{[]string{"gpu-a-003", "gpu-a-001", "gpu-a-002", "gpu-a-010", "gpu-a-012", "gpu-a-011", "gpu-a-020"},
			[]string{"gpu-a-[001-003,010-012,020]"}},
		{[]string{"web-9", "web-10", "web-11", "web-1"}, []string{"web-[1,9-11]"}},
		// Padded and unpadded numbers are different hosts.
		{[]string{"n01", "n02", "n3"}, []string{"n3", "n[01-02]"}},
		// gpu-a-100 is one of the padded names.
		{[]string{"gpu-a-099", "gpu-a-100", "gpu-a-101"}, []string{"gpu-a-[099-101]"}},
		{[]string{"rack1-node7.dc", "rack1-node8.dc", "rack2-node7.dc"}, []string{"rack1-node[7-8].dc", "rack2-node7.dc"}},
		{[]string{"db", "db", "gpu-a-001"}, []string{"db", "gpu-a-001"}},
		{[]string{"odd[1]", "x,y"}, []string{"odd[1]", "x,y"}},
		{nil, nil},
	}
	for _, c := range cases {
		got := FoldHosts(c.in)
		if !slices.Equal(got, c.want) {
			t.Errorf("FoldHosts(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzFoldHosts(f *testing.F) {
	f.Add("gpu-a-001 gpu-a-002 gpu-a-004 web-9 web-10 db n01 n1 x")
	f.Add("a0 a00 a000 a1 a01 18446744073709551615 99999999999999999999")
	f.Fuzz(func(t *testing.T, s string) {
		names := strings.Fields(s)
		names = slices.DeleteFunc(names, func(n string) bool { return strings.ContainsAny(n, "[],") })
		folded := FoldHosts(names)
		want := slices.Compact(slices.Sorted(slices.Values(names)))
		if got := ExpandHosts(folded); !slices.Equal(got, want) {
			t.Fatalf("ExpandHosts(FoldHosts(%q)) = %q (folded %q)", want, got, folded)
		}
		if len(folded) > len(want) {
			t.Fatalf("folding %q gave more entries: %q", want, folded)
		}
	})
}

func TestIdentityCutsHostAndTime(t *testing.T) {
	a := []byte(`{"boot":{"host":"x","s":"a\"}"},"collected_at":"2026-12-07T00:00:00Z","host":"gpu-a-001","z":[1,{"host":"y"}]}`)
	b := []byte(`{"boot":{"host":"x","s":"a\"}"},"collected_at":"2026-12-06T00:00:00Z","host":"gpu-a-002","z":[1,{"host":"y"}]}`)
	sa, ha, ta := identity(a)
	sb, hb, _ := identity(b)
	ka := bytes.Join(sa, nil)
	if !equalSegments(ka, sb) || ha != "gpu-a-001" || hb != "gpu-a-002" || ta != "2026-12-07T00:00:00Z" {
		t.Errorf("identity: %s %q %q / %s %q", ka, ha, ta, sb, hb)
	}
	c := []byte(`{"host":"gpu-a-001","boot":{"host":"other"}}`)
	if sc, _, _ := identity(c); equalSegments(ka, sc) || !strings.Contains(string(bytes.Join(sc, nil)), `"other"`) {
		t.Errorf("a nested host member was cut: %s", sc)
	}
}

func FuzzIdentity(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"host":"x"}],"host":"h","collected_at":"t","s":"q\"\\"}`))
	f.Add([]byte(`{"host":`))
	f.Fuzz(func(t *testing.T, b []byte) {
		segs, _, _ := identity(b) // must not panic
		n := 0
		for _, s := range segs {
			n += len(s)
		}
		if n > len(b) {
			t.Fatalf("segments longer than the input")
		}
	})
}
