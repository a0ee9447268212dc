package configrepo

import (
	"context"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/gittest"
)

// TestCheckoutIndexReadsStagedBlobsOnly: the index's content, not the work
// tree's, for a config repo that is a directory of a larger repo too.
func TestCheckoutIndexReadsStagedBlobsOnly(t *testing.T) {
	r := gittest.New(t)
	r.Write("infra/fleetaudit.yaml", "fleets: {}\n")
	r.Write("infra/layers/base/etc/sysctl.d/10.conf", "vm.swappiness = 10\n")
	r.Write("other/notes.txt", "not the config repo\n")
	head := r.Commit("start")
	r.Write("infra/layers/base/etc/sysctl.d/10.conf", "vm.swappiness = 1\n")
	r.Git("add", "infra/layers/base/etc/sysctl.d/10.conf")
	r.Write("infra/layers/base/etc/sysctl.d/10.conf", "vm.swappiness = 99\n") // unstaged
	r.Write("infra/layers/base/etc/sysctl.d/20.conf", "vm.x = 1\n")           // untracked

	co, err := CheckoutIndex(context.Background(), r.Dir+"/infra", "")
	if err != nil {
		t.Fatal(err)
	}
	if co.Commit != head || co.Label() != "index" {
		t.Errorf("commit %s label %q, want %s and index", co.Commit, co.Label(), head)
	}
	var names []string
	for n := range co.Files {
		names = append(names, n)
	}
	if len(names) != 2 || co.Files["fleetaudit.yaml"] == nil {
		t.Fatalf("files %q, want fleetaudit.yaml and the staged layer file, relative to the config repo", names)
	}
	if got := string(co.Files["layers/base/etc/sysctl.d/10.conf"].Data); got != "vm.swappiness = 1\n" {
		t.Errorf("10.conf = %q, want the staged content", got)
	}
}

func FuzzParseStageLine(f *testing.F) {
	for _, s := range []string{
		"100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\tfleetaudit.yaml",
		"100755 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\trender.sh",
		"120000 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\tlink",
		"160000 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\tsub",
		"100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 2\tinventory.yaml",
		"100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\tname\twith tab",
		"garbage",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		e, err := parseStageLine(line)
		if err != nil {
			return
		}
		if !isHex(e.oid) || len(e.mode) != 6 || !strings.HasSuffix(line, "\t"+e.path) && !strings.Contains(line, "\t"+e.path) {
			t.Errorf("parseStageLine(%q) = %+v", line, e)
		}
	})
}
