package collectors

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/google/go-cmp/cmp"
)

func TestParseNetInt(t *testing.T) {
	for text, want := range map[string]int{"1500\n": 1500, "9000": 9000, " 4092 \n": 4092, "0\n": 0, "65536\n": 65536} {
		if got, err := parseNetInt(text); err != nil || got != want {
			t.Errorf("parseNetInt(%q) = %d, %v; want %d", text, got, err, want)
		}
	}
	for _, text := range []string{"", "\n", "-1\n", "+9000", "9000 bytes", "0x2328", "1e3", "99999999999999999999999"} {
		if _, err := parseNetInt(text); !errors.Is(err, ErrParse) {
			t.Errorf("parseNetInt(%q): error %v, want ErrParse", text, err)
		}
	}
}

func TestParseOperState(t *testing.T) {
	for _, s := range []string{"up", "down", "unknown", "dormant", "lowerlayerdown", "notpresent", "testing"} {
		if got, err := parseOperState(s + "\n"); err != nil || got != s {
			t.Errorf("parseOperState(%q) = %q, %v", s, got, err)
		}
	}
	for _, text := range []string{"", "UP", "up down", "running"} {
		if _, err := parseOperState(text); !errors.Is(err, ErrParse) {
			t.Errorf("parseOperState(%q): error %v, want ErrParse", text, err)
		}
	}
}

// An interface on the PCI function of an RDMA device faces the fabric; a
// malformed attribute is an error naming its file, the rest still read.
func TestCollectNet(t *testing.T) {
	pci := "sys/devices/pci0000:17/0000:17:00.0/0000:18:00.0"
	root := versionsHostTree(t, map[string]string{
		pci + "/net/ib0/operstate":                       "up\n",
		pci + "/net/ib0/mtu":                             "2044\n",
		pci + "/net/ib0/type":                            "32\n",
		pci + "/net/ib0/device":                          "-> ../../../0000:18:00.0",
		"sys/class/net/ib0":                              "-> ../../devices/pci0000:17/0000:17:00.0/0000:18:00.0/net/ib0",
		"sys/devices/virtual/net/bond0/operstate":        "down\n",
		"sys/devices/virtual/net/bond0/mtu":              "9000 bytes\n",
		"sys/devices/virtual/net/bond0/type":             "1\n",
		"sys/class/net/bond0":                            "-> ../../devices/virtual/net/bond0",
		"sys/class/infiniband/mlx5_0/device":             "-> ../../../devices/pci0000:17/0000:17:00.0/0000:18:00.0",
		"sys/class/infiniband/mlx5_0/ports/1/state":      "4: ACTIVE\n",
		"sys/class/infiniband/mlx5_0/ports/1/rate":       "400 Gb/sec (4X NDR)\n",
		"sys/class/infiniband/mlx5_0/ports/1/link_layer": "InfiniBand\n",
	})
	c := versionsTestCollection(Dir(root))
	collectRDMA(c)
	collectNet(c)
	want := snapshot.Net{Present: true, Interfaces: map[string]snapshot.NetInterface{
		"ib0":   {OperState: "up", MTU: 2044, Type: 32, PCIAddress: "0000:18:00.0", RDMA: []string{"mlx5_0"}},
		"bond0": {OperState: "down", Type: 1},
	}}
	if diff := cmp.Diff(want, c.snap.Net); diff != "" {
		t.Errorf("net (-want +got):\n%s", diff)
	}
	if got := c.snap.Sources["net.interfaces.ib0.rdma"].String(); got != "/sys/class/net/ib0/device" {
		t.Errorf("rdma source %q", got)
	}
	if len(c.snap.Errors) != 1 || c.snap.Errors[0].Path != "/sys/class/net/bond0/mtu" || !strings.Contains(c.snap.Errors[0].Reason, "want a non-negative integer") {
		t.Errorf("errors: %+v", c.snap.Errors)
	}
	if _, ok := c.snap.Sources["net.interfaces.bond0.mtu"]; ok {
		t.Error("an mtu that was not read has a source")
	}

	// No /sys/class/net (a rendered config repo): not present, no error.
	c = versionsTestCollection(Dir(versionsHostTree(t, map[string]string{"etc/hostname": "x\n"})))
	collectNet(c)
	if c.snap.Net.Present || len(c.snap.Net.Interfaces) != 0 || len(c.snap.Errors) != 0 {
		t.Errorf("no sysfs: %+v, errors %v", c.snap.Net, c.snap.Errors)
	}
}

// FuzzNetAttrs: the /sys/class/net attribute parsers never panic, and what
// they accept is what the kernel could print.
func FuzzNetAttrs(f *testing.F) {
	for _, s := range []string{"1500\n", "9000\n", "65536\n", "up\n", "unknown\n", "lowerlayerdown\n", "32\n", "772\n", "", "-1", "+5", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if n, err := parseNetInt(text); err == nil && n < 0 {
			t.Errorf("parseNetInt(%q) = %d", text, n)
		}
		if s, err := parseOperState(text); err == nil && (s == "" || strings.ToLower(s) != s || strings.ContainsAny(s, " \n")) {
			t.Errorf("parseOperState(%q) = %q", text, s)
		}
	})
}
