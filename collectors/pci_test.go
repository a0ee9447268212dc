package collectors

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/google/go-cmp/cmp"
)

func TestParsePCIConfig(t *testing.T) {
	bridgeWithACS := func(ctrl uint16) []byte {
		return fxConfigSpace(0x1000, 0xc030, 0x060400, fxDownstreamPort, fxACS(ctrl))
	}
	loop := fxConfigSpace(0x8086, 0xa110, 0x060400, fxRootPort, nil)
	binary.LittleEndian.PutUint32(loop[0x100:], 0x0001|2<<16|0x100<<20)
	intoHeader := fxConfigSpace(0x8086, 0xa110, 0x060400, fxRootPort, nil)
	binary.LittleEndian.PutUint32(intoHeader[0x100:], 0x0001|2<<16|0x040<<20)
	allOnes := make([]byte, pciCfgSpaceExpSize)
	for i := range allOnes {
		allOnes[i] = 0xff
	}
	acsOnly := make([]byte, pciCfgSpaceExpSize)
	copy(acsOnly, bridgeWithACS(fxACSRedirect)[:0x100])
	binary.LittleEndian.PutUint32(acsOnly[0x100:], pciExtCapIDACS|1<<16)
	binary.LittleEndian.PutUint16(acsOnly[0x106:], pciACSRR|pciACSCR)
	cutACS := bridgeWithACS(0)
	binary.LittleEndian.PutUint32(cutACS[0x100:], 0x0001|2<<16|0xffc<<20)
	binary.LittleEndian.PutUint32(cutACS[0xffc:], pciExtCapIDACS|1<<16)
	conventional := fxConfigSpace(0x1af4, 0x1000, 0x020000, fxEndpoint, nil)[:pciCfgSpaceSize]
	conventional[0x40] = 0x09 // a vendor capability instead of PCI Express

	tests := []struct {
		name string
		data []byte
		want pciConfig
		err  string
	}{
		{
			name: "switch port with redirect on",
			data: bridgeWithACS(fxACSRedirect),
			want: pciConfig{Readable: true, ACS: &snapshot.ACSControl{
				SourceValidation: true, RequestRedirect: true, CompletionRedirect: true, UpstreamForwarding: true,
			}},
		},
		{
			name: "every bit",
			data: bridgeWithACS(0x7f),
			want: pciConfig{Readable: true, ACS: &snapshot.ACSControl{
				SourceValidation: true, TranslationBlock: true, RequestRedirect: true, CompletionRedirect: true,
				UpstreamForwarding: true, EgressControl: true, DirectTranslated: true,
			}},
		},
		{name: "ACS present, all off", data: bridgeWithACS(0), want: pciConfig{Readable: true, ACS: &snapshot.ACSControl{}}},
		{name: "ACS as the only capability", data: acsOnly, want: pciConfig{Readable: true, ACS: &snapshot.ACSControl{RequestRedirect: true, CompletionRedirect: true}}},
		{name: "endpoint without ACS", data: fxConfigSpace(0x10de, 0x2330, 0x030200, fxEndpoint, nil), want: pciConfig{Readable: true}},
		{name: "unprivileged read", data: bridgeWithACS(fxACSRedirect)[:64], want: pciConfig{}},
		{name: "CardBus unprivileged read", data: bridgeWithACS(0)[:128], want: pciConfig{}},
		{name: "PCI Express cut at 256 bytes", data: bridgeWithACS(fxACSRedirect)[:256], want: pciConfig{}},
		{name: "conventional PCI", data: conventional, want: pciConfig{Readable: true}},
		{name: "no extended capabilities", data: append(bridgeWithACS(0)[:256], make([]byte, 3840)...), want: pciConfig{Readable: true}},
		{name: "truncated", data: []byte{0xb3, 0x15, 0x1b, 0x10}, err: "parse error: config space is 4 bytes, shorter than the 64-byte header"},
		{name: "all ones", data: allOnes, err: "parse error: vendor ID reads 0xffff: the function did not answer"},
		{name: "loop", data: loop, err: "parse error: extended capability list at 0x100 does not end (loop)"},
		{name: "next into header", data: intoHeader, err: "parse error: extended capability at 0x100 points to 0x40, inside the conventional header"},
		{name: "ACS cut off", data: cutACS, err: "parse error: ACS capability at 0xffc is cut off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePCIConfig(tt.data)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || !errors.Is(err, ErrParse) {
					t.Fatalf("error = %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPCIUpstream(t *testing.T) {
	tests := []struct {
		target string
		want   []string
		err    bool
	}{
		{
			target: "../../../devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0",
			want:   []string{"0000:02:00.0", "0000:01:00.0", "0000:00:01.1"},
		},
		{target: "../../../devices/pci0000:00/0000:00:03.0"},
		// Hyper-V and VMD domains are longer than four digits.
		{
			target: "../../../devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/7870d8c0-4f52-4d2f-8a1c-1d0d6c4d6d3e/pci7870:00/7870:00:00.0",
		},
		{
			target: "../../../devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:06.0/10000:e1:00.0",
			want:   []string{"10000:e0:06.0", "0000:00:0e.0"},
		},
		{target: "../../../devices/platform/foo", err: true},
		{target: "", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			got, err := pciUpstream(tt.target)
			if (err != nil) != tt.err || (err != nil && !errors.Is(err, ErrParse)) {
				t.Fatalf("error = %v, want error %v", err, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPCIKind(t *testing.T) {
	tests := []struct {
		class, vendor uint64
		want          string
	}{
		{0x030200, 0x10de, "gpu"},      // H100 SXM: 3D controller
		{0x030000, 0x10de, "gpu"},      // VGA controller
		{0x068000, 0x10de, "nvswitch"}, // bridge, other
		{0x020700, 0x15b3, "network"},  // ConnectX in InfiniBand mode
		{0x020000, 0x1d0f, "network"},  // EFA
		{0x030000, 0x1a03, ""},         // BMC VGA
		{0x060400, 0x10de, ""},         // a bridge is added only when upstream
		{0x010802, 0x144d, ""},         // NVMe
	}
	for _, tt := range tests {
		if got := pciKind(tt.class, tt.vendor); got != tt.want {
			t.Errorf("pciKind(%#x, %#x) = %q, want %q", tt.class, tt.vendor, got, tt.want)
		}
	}
}

func FuzzPCIConfig(f *testing.F) {
	f.Add(fxConfigSpace(0x1000, 0xc030, 0x060400, fxDownstreamPort, fxACS(fxACSRedirect)))
	f.Add(fxConfigSpace(0x10de, 0x2330, 0x030200, fxEndpoint, nil))
	f.Add(fxConfigSpace(0x1000, 0xc030, 0x060400, fxUpstreamPort, nil)[:64])
	f.Add(fxConfigSpace(0x1af4, 0x1000, 0x020000, fxEndpoint, nil)[:256])
	for _, p := range []string{
		"gpu-node/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/config",
		"garbage/sys/devices/pci0000:00/0000:00:1c.0/config",
	} {
		if data, err := os.ReadFile(filepath.Join("..", "testdata", "hosts", filepath.FromSlash(p))); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parsePCIConfig(data)
		if err != nil {
			if !errors.Is(err, ErrParse) || cfg != (pciConfig{}) {
				t.Fatalf("= %+v, %v: want nothing and an ErrParse", cfg, err)
			}
			return
		}
		express := pciIsExpress(data)
		if cfg.Readable && (len(data) < pciCfgSpaceSize || express && len(data) < pciCfgSpaceExpSize) {
			t.Fatalf("Readable from %d bytes (express %v)", len(data), express)
		}
		if cfg.ACS != nil && (!cfg.Readable || !express) {
			t.Fatalf("ACS from a config that cannot hold one: %d bytes, express %v", len(data), express)
		}
	})
}
