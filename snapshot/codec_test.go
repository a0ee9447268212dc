package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCheckSchema(t *testing.T) {
	tests := []struct {
		schema  string
		wantErr string
	}{
		{"fleetaudit.snapshot/v1", ""},
		{"fleetaudit.snapshot/v1.3", ""},
		{"", "no \"schema\" field"},
		{"fleetaudit.snapshot/v2", "written by a newer fleetaudit"},
		{"fleetaudit.snapshot/v10.1", "written by a newer fleetaudit"},
		{"fleetaudit.snapshot/v0", "malformed version"},
		{"fleetaudit.snapshot/vx", "malformed version"},
		{"fleetaudit.findings/v1", "not a fleetaudit snapshot schema"},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			err := CheckSchema(tt.schema)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckSchema(%q) = %v, want nil", tt.schema, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrSchema) {
				t.Fatalf("CheckSchema(%q) = %v, want ErrSchema containing %q", tt.schema, err, tt.wantErr)
			}
		})
	}
}

func TestRoundTripKeepsUnknownFields(t *testing.T) {
	in := `{"schema":"fleetaudit.snapshot/v1.1","host":"gpu-a-001","collected_at":"2026-11-30T00:00:00Z",
	"kernel":{"release":"6.8.0","livepatch":"lp-3"},
	"rdma":{"devices":{"mlx5_0":{"driver":"mlx5_core","ports":{"1":{"state":"ACTIVE","fec":"rs"}},"numa_node":1}}},
	"libraries":{"nccl":[{"version":"2.21.5","path":"/x","build":"cuda12.4"}]},
	"sources":{"kernel.release":"/proc/sys/kernel/osrelease"},"errors":[],
	"gpu_topology":{"nvlink":[1,2,3]},"x_site":"r12"}`
	s, err := DecodeBytes([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.Host != "gpu-a-001" || s.Kernel.Release != "6.8.0" {
		t.Fatalf("decoded host=%q kernel=%q", s.Host, s.Kernel.Release)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"nvlink": []any{1.0, 2.0, 3.0}}
	if diff := cmp.Diff(want, out["gpu_topology"]); diff != "" {
		t.Errorf("unknown section lost (-want +got):\n%s", diff)
	}
	if out["x_site"] != "r12" {
		t.Errorf("x_site = %v, want r12", out["x_site"])
	}
	for path, want := range map[string]any{
		"kernel.livepatch":                  "lp-3",
		"rdma.devices.mlx5_0.numa_node":     1.0,
		"rdma.devices.mlx5_0.ports.1.fec":   "rs",
		"rdma.devices.mlx5_0.ports.1.state": "ACTIVE",
		"libraries.nccl.0.build":            "cuda12.4",
		"libraries.nccl.0.version":          "2.21.5",
	} {
		if got, ok := Lookup(out, path); !ok || got != want {
			t.Errorf("%s = %v (%v) after round trip, want %v", path, got, ok, want)
		}
	}
	wantUnknown := []string{"gpu_topology", "kernel.livepatch", "libraries.nccl.0.build", "rdma.devices.mlx5_0.numa_node", "rdma.devices.mlx5_0.ports.1.fec", "x_site"}
	if diff := cmp.Diff(wantUnknown, s.Unknown()); diff != "" {
		t.Errorf("Unknown() (-want +got):\n%s", diff)
	}
	if out["schema"] != "fleetaudit.snapshot/v1.1" {
		t.Errorf("schema rewritten to %v", out["schema"])
	}
}

func TestDecodeRefusesFutureAndTrailing(t *testing.T) {
	if _, err := DecodeBytes([]byte(`{"schema":"fleetaudit.snapshot/v2","host":"h"}`)); !errors.Is(err, ErrSchema) {
		t.Errorf("future major: err = %v, want ErrSchema", err)
	}
	if _, err := DecodeBytes([]byte(`{"schema":"fleetaudit.snapshot/v1","host":"h"} {}`)); err == nil {
		t.Error("trailing document accepted")
	}
	if _, err := DecodeBytes([]byte(`{"schema":"fleetaudit.snapshot/v1","host":5}`)); err == nil {
		t.Error("host of the wrong type accepted")
	}
}

func TestNormalizeGivesOneShape(t *testing.T) {
	s := New("h")
	s.CollectedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.RDMA.Devices = map[string]RDMADevice{"mlx5_0": {}}
	s.Normalize()
	g, err := Generic(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"sysctl.running", "boot.running.params", "limits.entries", "libraries.nccl", "memory"} {
		if _, ok := Lookup(g, path); ok {
			continue
		}
		t.Errorf("%s not present after Normalize", path)
	}
	for _, path := range []string{"sysctl.running", "libraries.nccl", "modules.configured"} {
		if v, _ := Lookup(g, path); v == nil {
			t.Errorf("%s is null", path)
		}
	}
	// Struct values inside maps are filled by their collectors, not Normalize.
	if v, ok := Lookup(g, "rdma.devices.mlx5_0.ports"); !ok || v != nil {
		t.Errorf("rdma.devices.mlx5_0.ports = %v, %v", v, ok)
	}
}

func TestLookupDottedKeys(t *testing.T) {
	doc := map[string]any{
		"sysctl": map[string]any{"running": map[string]any{
			"vm.max_map_count":        "65530",
			"net.ipv4.tcp_tw_recycle": "0",
			"net":                     map[string]any{"x": "shadow"},
		}},
		"list": []any{"a"},
	}
	tests := []struct {
		path string
		want any
		ok   bool
	}{
		{"sysctl.running.vm.max_map_count", "65530", true},
		{"sysctl.running.net.ipv4.tcp_tw_recycle", "0", true},
		{"sysctl.running.net.x", "shadow", true},
		{"sysctl.running.vm", nil, false},
		{"sysctl.missing", nil, false},
		{"list", []any{"a"}, true},
	}
	for _, tt := range tests {
		got, ok := Lookup(doc, tt.path)
		if ok != tt.ok || !cmp.Equal(got, tt.want) {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzDecode: any input either fails to decode or survives encode and a
// second decode unchanged, unknown fields included.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"schema":"fleetaudit.snapshot/v1","host":"h","kernel":{"release":"6.8.0","x":1}}`))
	f.Add([]byte(`{"schema":"fleetaudit.snapshot/v1.9","rdma":{"devices":{"a":{"ports":{"1":{"y":[1]}}}}},"z":null}`))
	f.Add([]byte(`{"schema":"fleetaudit.snapshot/v2"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeBytes(data)
		if err != nil {
			return
		}
		var first bytes.Buffer
		if err := Encode(&first, s); err != nil {
			t.Fatalf("encode after decode: %v", err)
		}
		again, err := DecodeBytes(first.Bytes())
		if err != nil {
			t.Fatalf("re-decode: %v\n%s", err, first.Bytes())
		}
		var second bytes.Buffer
		if err := Encode(&second, again); err != nil {
			t.Fatal(err)
		}
		if first.String() != second.String() {
			t.Fatalf("not stable:\n%s\n%s", first.Bytes(), second.Bytes())
		}
	})
}
