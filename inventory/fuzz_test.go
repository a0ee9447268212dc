package inventory

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

func FuzzAnsibleINI(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "hosts.ini"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(seed))
	for _, s := range []string{
		"gpu-a-[001:128]\n",
		"[a:children]\nb\n[b]\nh k='v # x' ; z\n[a:vars]\nfleetaudit_fleet=x # c\n",
		"[fe80::1]:22\nh:2222 ansible_port=22\n",
		"h fleetaudit_labels=\"{'a': 'b'}\"\n",
		"[a]\nh\n[b]\nh\n[a:vars]\nfleetaudit_fleet=x\n[b:vars]\nfleetaudit_fleet=y\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkInvariants(t, "/inv/hosts.ini", []byte(src))
	})
}

func FuzzInventoryYAML(f *testing.F) {
	for _, name := range []string{"native.yaml", "ansible.yaml"} {
		seed, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(seed))
	}
	for _, s := range []string{
		"hosts:\n  a: {root: r, port: 22, groups: [g]}\ngroups: {h: [a]}\n",
		"all:\n  children:\n    g: &g {hosts: {'h[1:3]': {fleetaudit_labels: {a: b}}}}\n    k: *g\n",
		"all: &x\n  children:\n    g: *x\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkInvariants(t, "/inv/inventory.yaml", []byte(src))
	})
}

// checkInvariants parses src twice and checks what every inventory must
// satisfy, whatever the input.
func checkInvariants(t *testing.T, path string, src []byte) {
	inv, err := Parse(path, src)
	again, err2 := Parse(path, src)
	if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
		t.Fatalf("not deterministic: %v / %v", err, err2)
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), path+": ") {
			t.Fatalf("error does not name the file: %v", err)
		}
		return
	}
	if diff := cmp.Diff(inv, again); diff != "" {
		t.Fatalf("not deterministic (-first +second):\n%s", diff)
	}
	if !slices.IsSortedFunc(inv.Hosts, func(a, b Host) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("hosts not sorted")
	}
	seen := map[string]bool{}
	for _, h := range inv.Hosts {
		if h.Name == "" || strings.ContainsAny(h.Name, " \t\n") || snapshot.CheckHostName(h.Name) != nil || seen[h.Name] {
			t.Fatalf("bad or duplicate host name %q", h.Name)
		}
		seen[h.Name] = true
		if h.Port < 0 || h.Port > 65535 {
			t.Fatalf("host %s: port %d", h.Name, h.Port)
		}
		if h.Root != "" && !filepath.IsAbs(h.Root) {
			t.Fatalf("host %s: root %q not resolved against %s", h.Name, h.Root, path)
		}
		if !slices.IsSorted(h.Groups) || len(slices.Compact(slices.Clone(h.Groups))) != len(h.Groups) {
			t.Fatalf("host %s: groups %v not sorted and unique", h.Name, h.Groups)
		}
		for _, g := range h.Groups {
			if g == groupAll || g == groupUngrouped {
				t.Fatalf("host %s: implicit group %s listed", h.Name, g)
			}
			if !slices.Contains(inv.Groups[g], h.Name) {
				t.Fatalf("host %s in group %s, but Groups[%s] = %v", h.Name, g, g, inv.Groups[g])
			}
		}
	}
	for g, members := range inv.Groups {
		if !slices.IsSorted(members) {
			t.Fatalf("group %s members not sorted", g)
		}
		for _, m := range members {
			if !seen[m] {
				t.Fatalf("group %s lists unknown host %s", g, m)
			}
		}
	}
}
