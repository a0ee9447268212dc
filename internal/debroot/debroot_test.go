package debroot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootUnpacksRealPackage: the package's files land under the root as
// dpkg -x lays them out, with the version its control file names, and a
// second fetch is served from the cache.
func TestRootUnpacksRealPackage(t *testing.T) {
	root, pkgs := Root(t, "ufw")
	if len(pkgs) != 1 || pkgs[0].Name != "ufw" || pkgs[0].Version == "" || !strings.HasPrefix(filepath.Base(pkgs[0].Deb), "ufw_") {
		t.Fatalf("packages %+v", pkgs)
	}
	if fi, err := os.Stat(filepath.Join(root, "usr/sbin/ufw")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("usr/sbin/ufw: %v", err)
	}
	again, err := Fetch("ufw")
	if err != nil || again != pkgs[0] {
		t.Errorf("second fetch %+v, %v, want %+v from the cache", again, err, pkgs[0])
	}
	files := Files(t, "ufw", "usr/share/ufw/iptables/*.rules")
	if len(files) != 6 || len(files["usr/share/ufw/iptables/before6.rules"]) == 0 {
		t.Errorf("rules files %d, want ufw's six", len(files))
	}
}

// TestFetchWithoutApt: with no apt-get and an empty cache the error says
// why, naming the package.
func TestFetchWithoutApt(t *testing.T) {
	t.Setenv("FLEETAUDIT_DEB_CACHE", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	_, err := Fetch("ufw")
	if err == nil || !strings.Contains(err.Error(), "apt-get not installed") || !strings.Contains(err.Error(), "ufw") {
		t.Errorf("error %v, want one saying apt-get is not installed", err)
	}
}
