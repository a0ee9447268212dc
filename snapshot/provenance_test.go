package snapshot

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProvenanceText(t *testing.T) {
	tests := []struct {
		name string
		p    Provenance
		text string
	}{
		{"file and line", FileAt("/etc/default/grub.d/60-hugetlb.cfg", 3), "/etc/default/grub.d/60-hugetlb.cfg:3"},
		{"whole file", FileAt("/proc/cmdline", 0), "/proc/cmdline"},
		{"pci directory with colons", FileAt("/sys/bus/pci/devices/0000:00:01.0", 0), "/sys/bus/pci/devices/0000:00:01.0"},
		{"default", Defaulted("not set in the GRUB defaults"), "default: not set in the GRUB defaults"},
		{"default with a comma", Defaulted("no hypervisor flag in /proc/cpuinfo, and no x"), "default: no hypervisor flag in /proc/cpuinfo, and no x"},
		{"command", FromCommand("nvidia-smi --query-gpu=pci.bus_id,persistence_mode --format=csv,noheader"), "command: nvidia-smi --query-gpu=pci.bus_id,persistence_mode --format=csv,noheader"},
		{"config-repo layer", Provenance{Layer: "base", File: "/etc/default/grub.d/60-hugetlb.cfg", Line: 3}, "layers/base/etc/default/grub.d/60-hugetlb.cfg:3"},
		{"repo file outside the layers", FileAt("k8s/training/job.yaml", 12), "k8s/training/job.yaml:12"},
		{"several files", Provenance{File: "/usr/lib/libnccl.so.2.18.3", More: []Provenance{FileAt("/opt/x/METADATA", 3)}}, "/usr/lib/libnccl.so.2.18.3, /opt/x/METADATA:3"},
		{"from a config repo's baseline", Provenance{File: "/proc/driver/nvidia/version", Line: 1, Baseline: "baselines/gpu.json"}, "/proc/driver/nvidia/version:1 (baseline baselines/gpu.json)"},
		{"several files from a baseline", Provenance{File: "/usr/lib/a.so", More: []Provenance{FileAt("/opt/b.so", 0)}, Baseline: "b.json"}, "/usr/lib/a.so, /opt/b.so (baseline b.json)"},
		{"a default from a baseline", Provenance{Default: "systemd's, default", Baseline: "b.json"}, "default: systemd's, default (baseline b.json)"},
		{"nothing", Provenance{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.p.MarshalText()
			if err != nil || string(b) != tt.text {
				t.Fatalf("MarshalText = %q, %v; want %q", b, err, tt.text)
			}
			var got Provenance
			if err := got.UnmarshalText([]byte(tt.text)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.p, got); diff != "" {
				t.Errorf("UnmarshalText(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

// TestProvenanceInJSON: a sources map and a limits entry read and write
// the same JSON strings they did as plain strings.
func TestProvenanceInJSON(t *testing.T) {
	in := `{"sources":{"a":"/etc/x.conf:3","b":"default: why"},"entry":{"domain":"*","type":"soft","item":"nofile","value":"1","source":"layers/gpu/etc/security/limits.conf:2"}}`
	var v struct {
		Sources map[string]Provenance `json:"sources"`
		Entry   LimitEntry            `json:"entry"`
	}
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	if v.Entry.Source.Layer != "gpu" || v.Sources["a"].Line != 3 || v.Sources["b"].Default != "why" {
		t.Errorf("decoded %+v", v)
	}
	out, err := json.Marshal(v)
	if err != nil || string(out) != in {
		t.Errorf("re-encoded:\n%s\nwant\n%s (%v)", out, in, err)
	}
}

// FuzzProvenanceText: any text reads back to a value that writes the same
// text, so a snapshot's bytes survive a decode and encode. The seeds are
// every source in the collectors' golden snapshots.
func FuzzProvenanceText(f *testing.F) {
	goldens, _ := filepath.Glob("../collectors/testdata/golden/*.json")
	for _, name := range goldens {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var doc struct{ Sources map[string]string }
		if err := json.Unmarshal(data, &doc); err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		for _, v := range doc.Sources {
			f.Add(v)
		}
	}
	for _, s := range []string{"", "x:0", "x:03", "a, , b", "layers/", "layers/a/", "layers//x", "layers/a//x:2", "/f:99999999999", "default: ", "command: a, b", "x, default: y, z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var p Provenance
		if err := p.UnmarshalText([]byte(s)); err != nil {
			t.Fatal(err)
		}
		if got := p.String(); got != s {
			t.Errorf("%q read back as %+v, which writes %q", s, p, got)
		}
	})
}

// TestSnapshotsRoundTripByteForByte: every golden and example snapshot
// decodes (sources and limits entries as Provenance) and encodes to the
// bytes it was read from.
func TestSnapshotsRoundTripByteForByte(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../collectors/testdata/golden/*.json", "../examples/fleet/snapshots/*.json"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	if len(files) < 10 {
		t.Fatalf("found %d snapshots: %v", len(files), files)
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			s, err := DecodeBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Encode(&buf, s); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(data), buf.String()); diff != "" {
				t.Errorf("re-encoded (-read +written):\n%s", diff)
			}
		})
	}
}
