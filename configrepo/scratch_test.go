package configrepo

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A change held in memory is gated against the base checkout: the user's
// work tree and refs are not touched, and the copy does not alter the base.
func TestGateCheckoutsInMemory(t *testing.T) {
	r := baseRepo(t)
	r.Write("layers/base/etc/default/grub.d/60-cma.cfg", hugetlbCMA)
	r.Commit("cma in base")
	ctx := context.Background()
	base, err := CheckoutRef(ctx, r.Dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	fix := "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=0\"\n"
	head, err := base.WithFiles("proposed fix", map[string][]byte{"layers/gpu/etc/default/grub.d/99-fleetaudit.cfg": []byte(fix)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := base.Files["layers/gpu/etc/default/grub.d/99-fleetaudit.cfg"]; ok {
		t.Fatal("WithFiles changed the checkout it copied")
	}
	res, err := Run(ctx, Options{Repo: r.Dir, BaseCheckout: base, HeadCheckout: head, Fleets: testFleets(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Head.Ref != "proposed fix" || res.Base.Commit != base.Commit {
		t.Errorf("refs: base %+v head %+v", res.Base, res.Head)
	}
	gpu := fleetResult(t, res, "gpu-training")
	var resolved []string
	for _, f := range gpu.Resolved {
		resolved = append(resolved, f.Rule)
	}
	if diff := cmp.Diff([]string{"hugetlb-cma-on-gpu"}, resolved); diff != "" {
		t.Errorf("gpu-training resolved (-want +got):\n%s", diff)
	}
	if web := fleetResult(t, res, "web-serving"); web.Status != "unchanged" || len(web.Introduced)+len(web.Resolved) != 0 {
		t.Errorf("web-serving: %+v", web)
	}
	if res.Summary.Introduced != 0 {
		t.Errorf("introduced: %+v", res.Summary)
	}
}

func TestWithFilesRefusesBadPaths(t *testing.T) {
	co := &Checkout{Files: nil, Refused: map[string]string{"layers/a/link": "symlink"}}
	for _, name := range []string{"../x", "/etc/passwd", "layers/./a", "layers/a/.git/config", "layers/a/link", "layers/a/link/etc/x.conf"} {
		if _, err := co.WithFiles("fix", map[string][]byte{name: []byte("x")}); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.Contains(err.Error(), "fix") {
			t.Errorf("%s: error does not name the change: %v", name, err)
		}
	}
}
