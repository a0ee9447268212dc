package snapshot

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Document builds, without the bytes, exactly the document a round trip
// through encoding/json and DecodeJSON gives: for what encoding/json
// treats specially (invalid UTF-8 in values and keys, nil and empty maps
// and lists, omitempty members, the zero time, floats, numbers of every Go
// type in a pod) as for real snapshots.
func TestDocumentIsTheRoundTrip(t *testing.T) {
	latin1 := "# caf\xe9 \xff\xfe ok"
	tricky := New("h\xe9")
	tricky.Labels = map[string]string{"k\xe9": latin1}
	tricky.Boot.Running.Cmdline = latin1
	tricky.Sources["boot.running"] = FileAt("/etc/x\xe9.conf", 3)
	tricky.Sources["libraries.nccl"] = Provenance{File: "/a", More: []Provenance{FileAt("/b", 2)}, Baseline: "b.json"}
	tricky.RDMA.Devices = map[string]RDMADevice{"mlx5_0": {Driver: "mlx5_core", Ports: map[string]RDMAPort{"1": {RateGbps: 0.1}}}}
	tricky.Pods = []Pod{{
		"kind": "Pod",
		"spec": map[string]any{"n": json.Number("9007199254740993"), "f": 1e21, "g": 0.000001, "i": 8, "u": uint8(3), "neg": -2.5,
			"nil": nil, "empty": map[string]any{}, "list": []any{}, "b": true, "s": "\xe9"},
	}}
	collected := New("h")
	collected.Normalize()
	collected.CollectedAt = time.Date(2026, 11, 30, 17, 0, 0, 123456789, time.FixedZone("x", 3600))

	snaps := map[string]*Snapshot{"tricky": tricky, "empty": {}, "new": New(""), "normalized": collected}
	files, _ := filepath.Glob(filepath.Join("..", "collectors", "testdata", "golden", "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := DecodeBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		snaps[filepath.Base(f)] = s
	}
	for name, s := range snaps {
		t.Run(name, func(t *testing.T) {
			want, err := roundTrip(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Document(s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Document differs from the round trip (-round trip +Document):\n%s", diff)
			}
		})
	}

	// What encoding/json cannot write, Document refuses too.
	bad := New("h")
	bad.Pods = []Pod{{"x": math.NaN()}}
	if _, err := Document(bad); err == nil {
		t.Error("a NaN in a pod: no error")
	}
}

// A snapshot holding fields of a newer schema keeps them in its document.
func TestDocumentKeepsUnknownFields(t *testing.T) {
	s, err := DecodeBytes([]byte(`{"schema":"fleetaudit.snapshot/v1.1","host":"h","kernel":{"release":"6.8.0","livepatch":"lp-3"},"x_site":"r12"}`))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Document(s)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := Lookup(doc, "kernel.livepatch"); v != "lp-3" || doc["x_site"] != "r12" {
		t.Errorf("document = %v", doc)
	}
}

// BenchmarkDocument compares the direct conversion with the round trip
// through JSON bytes, on the GPU node's golden snapshot.
func BenchmarkDocument(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "collectors", "testdata", "golden", "gpu-node.json"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := DecodeBytes(data)
	if err != nil {
		b.Fatal(err)
	}
	for name, f := range map[string]func(*Snapshot) (map[string]any, error){"direct": Document, "round-trip": roundTrip} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
