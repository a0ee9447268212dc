package collectors

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Output of nvidia-smi --query-gpu=pci.bus_id,persistence_mode --format=csv,noheader.
const (
	// An H200 VM (driver 580.159.04), persistence mode set with nvidia-smi
	// -pm 1 and no daemon; /proc/driver/nvidia/gpus names it 0000:00:06.0.
	smiH200 = "00000000:00:06.0, Enabled\n"
	// An 8-GPU HGX host after a reboot without nvidia-persistenced.
	smiHGX = "00000000:1B:00.0, Disabled\n00000000:43:00.0, Disabled\n00000000:52:00.0, Disabled\n00000000:61:00.0, Disabled\n" +
		"00000000:9D:00.0, Disabled\n00000000:C3:00.0, Disabled\n00000000:D1:00.0, Disabled\n00000000:DF:00.0, Disabled\n"
	// Fields nvidia-smi cannot read print in brackets.
	smiUnknown = "00000000:1B:00.0, [N/A]\n00000000:43:00.0, [Insufficient Permissions]\n00000000:52:00.0, [Unknown Error]\n"
)

const smiCommandSource = "command: nvidia-smi --query-gpu=pci.bus_id,persistence_mode --format=csv,noheader"

func TestParseNvidiaSmiPersistence(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want []gpuPersistence
		errs int
	}{
		{"H200 enabled", smiH200, []gpuPersistence{{"0000:00:06.0", "enabled", 1}}, 0},
		{"disabled, upper-case hex", "00000000:1B:00.0, Disabled\n00000000:C3:00.0, Disabled\n",
			[]gpuPersistence{{"0000:1b:00.0", "disabled", 1}, {"0000:c3:00.0", "disabled", 2}}, 0},
		{"unknown modes are left out", smiUnknown, nil, 0},
		{"blank lines and CRLF", "\n00000000:00:06.0, Enabled\r\n\n  \n00000000:00:07.0,Disabled", []gpuPersistence{
			{"0000:00:06.0", "enabled", 2}, {"0000:00:07.0", "disabled", 5}}, 0},
		{"short and long domains", "0000:4e:00.0, Enabled\n00010000:01:00.0, Disabled\n",
			[]gpuPersistence{{"0000:4e:00.0", "enabled", 1}, {"10000:01:00.0", "disabled", 2}}, 0},
		{"nvidia-smi failure text", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n", nil, 1},
		{"no devices", "No devices were found\n", nil, 1},
		{"bad bus id, bad mode, good line kept", "0000:zz:00.0, Enabled\n00000000:00:06.0, On\n00000000:00:07.0, Enabled\n",
			[]gpuPersistence{{"0000:00:07.0", "enabled", 3}}, 2},
		{"empty", "", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseNvidiaSmiPersistence([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(errs) != tt.errs {
				t.Errorf("errors %v, want %d", errs, tt.errs)
			}
			for _, err := range errs {
				if !errors.Is(err, ErrParse) {
					t.Errorf("%v does not wrap ErrParse", err)
				}
			}
		})
	}
}

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:00:06.0": "0000:00:06.0",
		"00000000:1B:00.0": "0000:1b:00.0",
		"0000:1b:00.0":     "0000:1b:00.0",
		"0001:C3:00.1":     "0001:c3:00.1",
		"0000:1b:00.8":     "",
		"1b:00.0":          "",
		"":                 "",
	} {
		got, ok := normalizeBusID(in)
		if got != want || ok != (want != "") {
			t.Errorf("normalizeBusID(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// fakeExec answers nvidia-smi with out and err and records every call.
type fakeExec struct {
	out   string
	err   error
	calls []string
}

func (f *fakeExec) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if ctx == nil {
		return nil, errors.New("no context")
	}
	f.calls = append(f.calls, strings.Join(append([]string{name}, args...), " "))
	return []byte(f.out), f.err
}

// gpuTree is a host with two GPUs in /proc/driver/nvidia/gpus.
func gpuTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	hwWriteTree(t, dir, map[string]string{
		"sys/module/nvidia/version":                        "550.90.07\n",
		"proc/driver/nvidia/gpus/0000:1b:00.0/information": "Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t 0000:1b:00.0\n",
		"proc/driver/nvidia/gpus/0000:43:00.0/information": "Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t 0000:43:00.0\n",
	})
	return dir
}

func TestCollectPersistenceMode(t *testing.T) {
	t.Run("modes from nvidia-smi", func(t *testing.T) {
		fe := &fakeExec{out: "00000000:1B:00.0, Disabled\n00000000:43:00.0, Enabled\n"}
		c := hwTestCollection(gpuTree(t))
		c.exec = fe.run
		collectNVIDIA(c)
		want := []snapshot.GPU{
			{BusID: "0000:1b:00.0", Model: "NVIDIA H100 80GB HBM3", PersistenceMode: "disabled"},
			{BusID: "0000:43:00.0", Model: "NVIDIA H100 80GB HBM3", PersistenceMode: "enabled"},
		}
		if diff := cmp.Diff(want, c.snap.NVIDIA.GPUs); diff != "" {
			t.Errorf("gpus (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"nvidia-smi --query-gpu=pci.bus_id,persistence_mode --format=csv,noheader"}, fe.calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		for _, fact := range []string{"nvidia.gpus.0.persistence_mode", "nvidia.gpus.1.persistence_mode"} {
			if got := c.snap.Sources[fact].String(); got != smiCommandSource {
				t.Errorf("source of %s = %q", fact, got)
			}
		}
		if len(c.snap.Errors) > 0 {
			t.Errorf("errors: %v", c.snap.Errors)
		}
	})
	t.Run("nil Exec", func(t *testing.T) {
		c := hwTestCollection(gpuTree(t))
		collectNVIDIA(c)
		for _, g := range c.snap.NVIDIA.GPUs {
			if g.PersistenceMode != "" {
				t.Errorf("%s: persistence mode %q without a command", g.BusID, g.PersistenceMode)
			}
		}
		for fact := range c.snap.Sources {
			if strings.HasSuffix(fact, ".persistence_mode") {
				t.Errorf("source for %s", fact)
			}
		}
	})
	t.Run("no GPU, no driver: nothing runs", func(t *testing.T) {
		fe := &fakeExec{out: smiH200}
		c := hwTestCollection(t.TempDir())
		c.exec = fe.run
		collectNVIDIA(c)
		if len(fe.calls) > 0 || len(c.snap.NVIDIA.GPUs) > 0 {
			t.Errorf("calls %v, gpus %v", fe.calls, c.snap.NVIDIA.GPUs)
		}
	})
	t.Run("nvidia-smi not installed", func(t *testing.T) {
		fe := &fakeExec{err: &exec.Error{Name: "nvidia-smi", Err: exec.ErrNotFound}}
		c := hwTestCollection(gpuTree(t))
		c.exec = fe.run
		collectNVIDIA(c)
		if len(fe.calls) != 1 || len(c.snap.Errors) > 0 || c.snap.NVIDIA.GPUs[0].PersistenceMode != "" {
			t.Errorf("calls %v, errors %v, gpus %v", fe.calls, c.snap.Errors, c.snap.NVIDIA.GPUs)
		}
	})
	t.Run("nvidia-smi fails on a GPU host", func(t *testing.T) {
		fe := &fakeExec{err: errors.New("exit status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")}
		c := hwTestCollection(gpuTree(t))
		c.exec = fe.run
		collectNVIDIA(c)
		want := []snapshot.CollectionError{{Collector: "nvidia", Path: nvidiaSmiCommand, Reason: fe.err.Error()}}
		if diff := cmp.Diff(want, c.snap.Errors); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
	})
	t.Run("driver loaded, no GPU: failure is no error", func(t *testing.T) {
		dir := t.TempDir()
		hwWriteTree(t, dir, map[string]string{"sys/module/nvidia/version": "550.90.07\n"})
		fe := &fakeExec{out: "No devices were found\n", err: errors.New("exit status 6")}
		c := hwTestCollection(dir)
		c.exec = fe.run
		collectNVIDIA(c)
		if len(fe.calls) != 1 || len(c.snap.Errors) > 0 {
			t.Errorf("calls %v, errors %v", fe.calls, c.snap.Errors)
		}
	})
	t.Run("unknown modes and a GPU /proc does not list", func(t *testing.T) {
		fe := &fakeExec{out: "00000000:1B:00.0, [N/A]\n00000000:43:00.0, [Insufficient Permissions]\n00000000:00:06.0, Enabled\n"}
		c := hwTestCollection(gpuTree(t))
		c.exec = fe.run
		collectNVIDIA(c)
		want := []snapshot.GPU{
			{BusID: "0000:00:06.0", PersistenceMode: "enabled"},
			{BusID: "0000:1b:00.0", Model: "NVIDIA H100 80GB HBM3"},
			{BusID: "0000:43:00.0", Model: "NVIDIA H100 80GB HBM3"},
		}
		if diff := cmp.Diff(want, c.snap.NVIDIA.GPUs); diff != "" {
			t.Errorf("gpus (-want +got):\n%s", diff)
		}
		if got := c.snap.Sources["nvidia.gpus.0.persistence_mode"].String(); got != smiCommandSource {
			t.Errorf("source = %q", got)
		}
		if _, ok := c.snap.Sources["nvidia.gpus.1.persistence_mode"]; ok || len(c.snap.Errors) > 0 {
			t.Errorf("sources %v, errors %v", c.snap.Sources, c.snap.Errors)
		}
	})
	t.Run("malformed output", func(t *testing.T) {
		fe := &fakeExec{out: "00000000:1B:00.0, Disabled\ngarbage\n"}
		c := hwTestCollection(gpuTree(t))
		c.exec = fe.run
		collectNVIDIA(c)
		if len(c.snap.Errors) != 1 || c.snap.Errors[0].Path != nvidiaSmiCommand || c.snap.NVIDIA.GPUs[0].PersistenceMode != "disabled" {
			t.Errorf("errors %v, gpus %v", c.snap.Errors, c.snap.NVIDIA.GPUs)
		}
	})
}

// TestCollectWithExec collects the gpu-node fixture with a fake nvidia-smi:
// every GPU gets its mode, the provenance resolves, and the rest of the
// snapshot is the golden one.
func TestCollectWithExec(t *testing.T) {
	fe := &fakeExec{out: smiHGX}
	opts := fixtureOptions("gpu-node")
	target := fixtureTarget("gpu-node")
	target.Exec = fe.run
	snap, err := Collect(context.Background(), target, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(fe.calls) != 1 {
		t.Errorf("calls %v", fe.calls)
	}
	plain, err := Collect(context.Background(), fixtureTarget("gpu-node"), fixtureOptions("gpu-node"))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.NVIDIA.GPUs) != 8 || len(plain.NVIDIA.GPUs) != 8 {
		t.Fatalf("gpus %v", snap.NVIDIA.GPUs)
	}
	doc, err := snapshot.Generic(snap)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range snap.NVIDIA.GPUs {
		fact := fmt.Sprintf("nvidia.gpus.%d.persistence_mode", i)
		if v, ok := snapshot.Lookup(doc, fact); !ok || v != "disabled" || snap.Sources[fact].String() != smiCommandSource {
			t.Errorf("%s (%s) = %v from %q", fact, g.BusID, v, snap.Sources[fact].String())
		}
		snap.NVIDIA.GPUs[i].PersistenceMode = ""
		delete(snap.Sources, fact)
	}
	if diff := cmp.Diff(plain, snap, cmp.AllowUnexported(snapshot.Snapshot{})); diff != "" {
		t.Errorf("besides persistence modes (-nil Exec +Exec):\n%s", diff)
	}
	if slices.ContainsFunc(snap.Errors, func(e snapshot.CollectionError) bool { return e.Path == nvidiaSmiCommand }) {
		t.Errorf("errors %v", snap.Errors)
	}
}

func FuzzNvidiaSmiPersistence(f *testing.F) {
	for _, s := range []string{smiH200, smiHGX, smiUnknown, "\n\n00000000:00:06.0, Enabled\r\n\n",
		"00000000:1B:00.0, [Not Supported]\n00000000:43:00.0, Disabled", "No devices were found\n",
		"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "Field \"bogus\" is not a valid field to query.\n\n",
		"ffffffff:ff:1f.7, enabled\n", ","} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, errs := parseNvidiaSmiPersistence(data)
		lines := strings.Split(string(data), "\n")
		for _, g := range got {
			if g.Mode != "enabled" && g.Mode != "disabled" {
				t.Errorf("mode %q", g.Mode)
			}
			if g.Line < 1 || g.Line > len(lines) {
				t.Fatalf("line %d outside 1..%d", g.Line, len(lines))
			}
			if again, ok := normalizeBusID(g.BusID); !ok || again != g.BusID || g.BusID != strings.ToLower(g.BusID) {
				t.Errorf("bus id %q is not normal (%q, %v)", g.BusID, again, ok)
			}
		}
		for _, err := range errs {
			if !errors.Is(err, ErrParse) {
				t.Errorf("%v does not wrap ErrParse", err)
			}
		}
	})
}
