package sshsource

import (
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/collectors"
)

// TestStreamCoversFirewallPaths: the firewall collector's files are read
// and its directories listed, with the directories above them, whether or
// not a fixture root has them; so are its units and the DMI attributes.
func TestStreamCoversFirewallPaths(t *testing.T) {
	d := regexp.MustCompile(`^` + alternation(descend) + `$`)
	r := regexp.MustCompile(`^` + alternation(read) + `$`)
	paths := collectors.FirewallPaths()
	for _, u := range collectors.FirewallUnits() {
		paths = append(paths, "/usr/lib/systemd/system/"+u, "/lib/systemd/system/"+u, "/etc/systemd/system/"+u)
	}
	paths = append(paths, "/sys/devices/virtual/dmi/id/sys_vendor", "/sys/devices/virtual/dmi/id/product_name",
		"/etc/firewalld/zones/trusted.xml", "/usr/lib/firewalld/zones/public.xml", "/etc/nftables/main.nft")
	for _, p := range paths {
		name := strings.TrimPrefix(p, "/")
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if !d.MatchString("./" + dir) {
				t.Errorf("%s: its directory /%s is not listed", p, dir)
			}
		}
		if !d.MatchString("./"+name) && !r.MatchString("./"+name) {
			t.Errorf("%s is neither read nor listed", p)
		}
	}
	// /sys/class/dmi/id is a link into /sys/devices/virtual/dmi: its
	// directory is listed so the link is known.
	if !d.MatchString("./sys/class/dmi") {
		t.Errorf("/sys/class/dmi is not listed")
	}
}
