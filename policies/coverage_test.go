package policies

import (
	"context"
	"testing"
)

// Fleet-wide findings cite facts like host findings do, with the file they
// were read from: boot.running.params has no source of its own, each param
// has one.
func TestFleetFindingsCarrySource(t *testing.T) {
	e := newEngine(t, Options{Fleets: gpuFleets()})
	var projs []map[string]any
	for i, name := range []string{"gpu-1", "gpu-2", "gpu-3", "gpu-4"} {
		h := host{Name: name}
		if i == 3 {
			h.HugetlbCMA = "6G"
		}
		doc := h.Doc(t)
		sources := doc["sources"].(map[string]any)
		delete(sources, "boot.running")
		for p := range doc["boot"].(map[string]any)["running"].(map[string]any)["params"].(map[string]any) {
			sources["boot.running.params."+p] = "/proc/cmdline"
		}
		projs = append(projs, e.Project(doc))
	}
	fs, err := e.EvalFleet(context.Background(), "gpu-training", projs)
	if err != nil {
		t.Fatal(err)
	}
	var skew []Finding
	for _, f := range fs {
		if f.Rule == "boot-cmdline-skew" {
			skew = append(skew, f)
		}
	}
	if len(skew) != 1 || skew[0].Host != "gpu-4" {
		t.Fatalf("boot-cmdline-skew findings = %+v", skew)
	}
	for _, ev := range skew[0].Evidence {
		if ev.Source != "/proc/cmdline" {
			t.Errorf("evidence %s has source %q, want /proc/cmdline", ev.Fact, ev.Source)
		}
	}
}

func TestCommonDir(t *testing.T) {
	for _, tc := range []struct {
		sources []string
		want    string
	}{
		{[]string{"/sys/class/infiniband/mlx5_0/ports/1/rate", "/sys/class/infiniband/mlx5_1/device", "/sys/class/infiniband/mlx5_0"}, "/sys/class/infiniband"},
		{[]string{"/etc/sysctl.d/60-net.conf:6", "/etc/sysctl.conf:12"}, "/etc"},
		{[]string{"/sys/class/net/ib0/mtu", "/proc/net/dev"}, "/"},
		{[]string{"/sys/class/net/ib0/mtu", "nvidia-smi -q"}, ""},
		{[]string{"/sys/class/net/ib0/mtu"}, "/sys/class/net/ib0"},
		{[]string{"/sys/class/netx/a", "/sys/class/net/b"}, "/sys/class"},
	} {
		if got := commonDir(tc.sources); got != tc.want {
			t.Errorf("commonDir(%q) = %q, want %q", tc.sources, got, tc.want)
		}
	}
}
