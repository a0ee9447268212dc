package collectors

import (
	"errors"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/google/go-cmp/cmp"
)

func TestParseIBPortState(t *testing.T) {
	tests := []struct {
		in   string
		code int
		name string
		err  bool
	}{
		{in: "4: ACTIVE\n", code: 4, name: "ACTIVE"},
		{in: "1: DOWN", code: 1, name: "DOWN"},
		{in: "5: ACTIVE_DEFER", code: 5, name: "ACTIVE_DEFER"},
		{in: "7: UNKNOWN", code: 7, name: "UNKNOWN"},
		{in: "garbage", err: true},
		{in: "x: ACTIVE", err: true},
		{in: "4:", err: true},
		{in: "", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			code, name, err := parseIBPortState(tt.in)
			if tt.err {
				if err == nil || !errors.Is(err, ErrParse) {
					t.Fatalf("error = %v, want a parse error", err)
				}
				return
			}
			if err != nil || code != tt.code || name != tt.name {
				t.Fatalf("= %d, %q, %v; want %d, %q", code, name, err, tt.code, tt.name)
			}
		})
	}
}

func TestParseIBPortRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		err  bool
	}{
		{in: "400 Gb/sec (4X NDR)\n", want: 400},
		{in: "200 Gb/sec (4X HDR)", want: 200},
		{in: "100 Gb/sec (4X EDR)", want: 100},
		{in: "2.5 Gb/sec (1X)", want: 2.5},
		{in: "13.5 Gb/sec (1X FDR)", want: 13.5},
		{in: "fast", err: true},
		{in: " Gb/sec (4X)", err: true},
		{in: "-1 Gb/sec (4X)", err: true},
		{in: "", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseIBPortRate(tt.in)
			if tt.err {
				if err == nil || !errors.Is(err, ErrParse) {
					t.Fatalf("error = %v, want a parse error", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("= %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// An EFA device as on a p5 instance: rdma-core's udev rules rename efa_0 to
// rdmap<bus>s<slot>, and the port reports no link layer.
func TestCollectRDMAEFA(t *testing.T) {
	dir := t.TempDir()
	fn := "sys/devices/pci0000:10/0000:10:1c.0/0000:16:00.0"
	hwWriteTree(t, dir, map[string]string{
		fn + "/driver":                                  "-> ../../../../bus/pci/drivers/efa",
		fn + "/infiniband/rdmap22s0/device":             "-> ../../../0000:16:00.0",
		fn + "/infiniband/rdmap22s0/ports/1/state":      "4: ACTIVE\n",
		fn + "/infiniband/rdmap22s0/ports/1/link_layer": "Unknown\n",
		fn + "/infiniband/rdmap22s0/ports/1/rate":       "100 Gb/sec (4X EDR)\n",
		"sys/class/infiniband/rdmap22s0":                "-> ../../devices/pci0000:10/0000:10:1c.0/0000:16:00.0/infiniband/rdmap22s0",
		"dev/infiniband/uverbs0":                        "",
	})
	c := hwTestCollection(dir)
	collectRDMA(c)
	want := snapshot.RDMA{
		Devices: map[string]snapshot.RDMADevice{"rdmap22s0": {
			Driver: "efa", PCIAddress: "0000:16:00.0",
			Ports: map[string]snapshot.RDMAPort{"1": {
				State: "ACTIVE", StateCode: 4, LinkLayer: "Unknown", Rate: "100 Gb/sec (4X EDR)", RateGbps: 100,
			}},
		}},
		DevFiles: []string{"uverbs0"},
	}
	if diff := cmp.Diff(want, c.snap.RDMA); diff != "" {
		t.Errorf("rdma (-want +got):\n%s", diff)
	}
	if len(c.snap.Errors) > 0 {
		t.Errorf("errors: %v", c.snap.Errors)
	}
	for fact, src := range map[string]string{
		"rdma.devices.rdmap22s0.driver":        "/sys/class/infiniband/rdmap22s0/device/driver",
		"rdma.devices.rdmap22s0.ports.1.state": "/sys/class/infiniband/rdmap22s0/ports/1/state",
		"rdma.dev_files":                       "/dev/infiniband",
	} {
		if got := c.snap.Sources[fact].String(); got != src {
			t.Errorf("source of %s = %q, want %q", fact, got, src)
		}
	}
}
