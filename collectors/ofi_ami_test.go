package collectors

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// ofiRules are the rules a missing NCCL net plugin fires on efa-node.
var ofiRules = []string{"efa-ofi-plugin-missing", "nccl-topology-hidden"}

// ofiAMIRoot is efa-node with the testdata/ofi-ubuntu-ami overlay on it.
func ofiAMIRoot(t *testing.T) string {
	t.Helper()
	root := copyFixture(t, "efa-node")
	if err := os.CopyFS(root, os.DirFS("testdata/ofi-ubuntu-ami")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "README.md")); err != nil {
		t.Fatal(err)
	}
	return root
}

// firedRules collects root and returns which of rules fire on it.
func firedRules(t *testing.T, root string, rules []string) (*snapshot.Snapshot, []string) {
	t.Helper()
	ctx := context.Background()
	target := Target{Origin: snapshot.Origin{Kind: "local", Root: root}, Files: Dir(root)}
	snap := collectGuarded(t, ctx, target, fixtureOptions("efa-node"))
	var fired []string
	for _, f := range evalRules(t, snap, nil, rules...) {
		if !slices.Contains(fired, f.Rule) {
			fired = append(fired, f.Rule)
		}
	}
	slices.Sort(fired)
	return snap, fired
}

// TestOFIPluginUbuntuAMI: aws-ofi-nccl in the multiarch directory of the
// Ubuntu GPU AMIs is found however NCCL would reach it, with the setting
// that put it on the path, and the rules about a missing plugin stay quiet;
// without the plugin they fire.
func TestOFIPluginUbuntuAMI(t *testing.T) {
	const dir = "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu"
	const plugin = dir + "/libnccl-net-ofi.so"
	for _, tc := range []struct {
		name    string
		change  func(t *testing.T, root string)
		kind    string
		via     string // the setting that put the plugin on NCCL's path
		missing bool
	}{
		{name: "ld.so.conf.d", kind: "system", via: "/etc/ld.so.conf.d/aws-ofi-nccl.conf:1"},
		{name: "installer directory", kind: "other", change: func(t *testing.T, root string) {
			remove(t, root, "etc/ld.so.conf.d/aws-ofi-nccl.conf")
		}},
		{name: "LD_LIBRARY_PATH in /etc/environment", kind: "other", via: "/etc/environment:3", change: func(t *testing.T, root string) {
			remove(t, root, "etc/ld.so.conf.d/aws-ofi-nccl.conf")
			// Out of the installer's directory, so only the variable finds it.
			mustRename(t, root, "opt/amazon/ofi-nccl", "opt/ofi")
			appendFile(t, root, "etc/environment", "LD_LIBRARY_PATH=\"/usr/local/cuda/lib64:/opt/ofi/lib/x86_64-linux-gnu\"\n")
		}},
		{name: "LD_LIBRARY_PATH prepended in profile.d", kind: "other", via: "/etc/profile.d/dlami.sh:2", change: func(t *testing.T, root string) {
			remove(t, root, "etc/ld.so.conf.d/aws-ofi-nccl.conf")
			mustRename(t, root, "opt/amazon/ofi-nccl", "opt/ofi")
			appendFile(t, root, "etc/environment", "LD_LIBRARY_PATH=/usr/local/cuda/lib64\n")
			writeFile(t, root, "etc/profile.d/dlami.sh", "# prepends, as AMI scripts do\n"+
				"export LD_LIBRARY_PATH=/opt/ofi/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n")
		}},
		{name: "NCCL_NET_PLUGIN path in /etc/nccl.conf", kind: "other", via: "/etc/nccl.conf:", change: func(t *testing.T, root string) {
			remove(t, root, "etc/ld.so.conf.d/aws-ofi-nccl.conf")
			mustRename(t, root, "opt/amazon/ofi-nccl", "opt/ofi")
			appendFile(t, root, "etc/nccl.conf", "NCCL_NET_PLUGIN=/opt/ofi/lib/x86_64-linux-gnu/libnccl-net-ofi.so\n")
		}},
		{name: "plugin absent", missing: true, change: func(t *testing.T, root string) {
			remove(t, root, dir[1:]+"/libnccl-net.so")
			remove(t, root, dir[1:]+"/libnccl-net-ofi.so")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := ofiAMIRoot(t)
			if tc.change != nil {
				tc.change(t, root)
			}
			snap, fired := firedRules(t, root, ofiRules)
			if len(snap.Errors) != 0 {
				t.Errorf("collection errors: %+v", snap.Errors)
			}
			if tc.missing {
				if len(snap.Libraries.NCCLNet) != 0 {
					t.Errorf("net plugins %+v, want none", snap.Libraries.NCCLNet)
				}
				if !slices.Equal(fired, ofiRules) {
					t.Errorf("fired %v, want %v", fired, ofiRules)
				}
				return
			}
			if len(snap.Libraries.NCCLNet) != 1 {
				t.Fatalf("net plugins %+v, want one", snap.Libraries.NCCLNet)
			}
			got := snap.Libraries.NCCLNet[0]
			want := plugin
			if tc.via != "" && tc.kind == "other" {
				want = "/opt/ofi/lib/x86_64-linux-gnu/libnccl-net-ofi.so"
			}
			if got.Path != want || got.Kind != tc.kind {
				t.Errorf("net plugin %s (%s), want %s (%s)", got.Path, got.Kind, want, tc.kind)
			}
			src := snap.Sources["libraries.nccl_net"].String()
			if tc.via != "" && !strings.Contains(src, tc.via) {
				t.Errorf("libraries.nccl_net source %q does not name %s", src, tc.via)
			}
			if len(fired) != 0 {
				t.Errorf("fired %v on a host with the plugin", fired)
			}
		})
	}
}

func remove(t *testing.T, root, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(root, name)); err != nil {
		t.Fatal(err)
	}
}

func mustRename(t *testing.T, root, from, to string) {
	t.Helper()
	if err := os.Rename(filepath.Join(root, from), filepath.Join(root, to)); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, root, name, text string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, name), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, root, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
