package collectors

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// Real /proc/driver/nvidia/version files (and NVRM banners quoted in bug
// reports) for each flavor and architecture.
const (
	nvidiaVersion535 = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n" +
		"GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04) \n"
	nvidiaVersionOpen550 = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build  (dvs-builder@U16-I3-B14-4-1)  Fri May 31 09:34:39 UTC 2024\n" +
		"GCC version:  gcc version 13.2.0 (Ubuntu 13.2.0-23ubuntu4) \n"
	nvidiaVersionOpenArm = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.173.02  Release Build  (dvs-builder@U22-I3-AE18-23-3)  Wed Jan 14 10:00:00 UTC 2026\n"
	nvidiaVersionArm     = "NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.120  Fri Sep 13 11:01:10 UTC 2024\n"
	nvidiaVersionAkmods  = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.82.09  Release Build  (akmods@fedora)  Wed Oct  8 00:02:31 CEST 2025\n" +
		"GCC version:  gcc version 15.2.1 20250808 (Red Hat 15.2.1-1) (GCC)\n"

	h100Information = "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 18\nGPU UUID: \t GPU-2f6b3c1e-8a4d-2c71-5e09-b3d4a6c7e810\n" +
		"Video BIOS: \t 96.00.74.00.0D\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\n" +
		"Bus Location: \t 0000:18:00.0\nDevice Minor: \t 0\nGPU Firmware: \t 535.104.05\nGPU Excluded:\t No\n"
)

func TestParseNvidiaVersion(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    nvidiaModuleVersion
		wantErr string
	}{
		{"proprietary x86_64", nvidiaVersion535, nvidiaModuleVersion{"535.104.05", "proprietary", "x86_64", 1}, ""},
		{"open x86_64", nvidiaVersionOpen550, nvidiaModuleVersion{"550.90.07", "open", "x86_64", 1}, ""},
		{"open aarch64", nvidiaVersionOpenArm, nvidiaModuleVersion{"580.173.02", "open", "aarch64", 1}, ""},
		{"proprietary aarch64, two-part version", nvidiaVersionArm, nvidiaModuleVersion{"550.120", "proprietary", "aarch64", 1}, ""},
		{"distribution build", nvidiaVersionAkmods, nvidiaModuleVersion{"580.82.09", "open", "x86_64", 1}, ""},
		{"NVRM line not first", "\n" + nvidiaVersion535, nvidiaModuleVersion{"535.104.05", "proprietary", "x86_64", 2}, ""},
		{"version at end of line", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05", nvidiaModuleVersion{"535.104.05", "proprietary", "x86_64", 1}, ""},
		{"garbled version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  5x5.1?4  garbage\n", nvidiaModuleVersion{}, "line 1: unrecognised NVRM version"},
		{"version glued to text", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05beta\n", nvidiaModuleVersion{}, "line 1: unrecognised"},
		{"no NVRM line", "GCC version:  gcc version 11.4.0\n", nvidiaModuleVersion{}, "no \"NVRM version:\" line"},
		{"empty", "", nvidiaModuleVersion{}, "no \"NVRM version:\" line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseNvidiaVersion([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			var wantErrs []string
			if tt.wantErr != "" {
				wantErrs = []string{tt.wantErr}
			}
			var errs []error
			if err != nil {
				errs = []error{err}
			}
			versionsCheckErrors(t, errs, wantErrs)
		})
	}
}

func TestParseGPUInformation(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    gpuInformation
		wantErr []string
	}{
		{"H100 with GSP firmware", h100Information, gpuInformation{"NVIDIA H100 80GB HBM3", 1, "0000:18:00.0", 8}, nil},
		{"upper-case bus id is normalised", "Model: \t\t NVIDIA A100-SXM4-80GB\nBus Location: \t 0000:4E:00.0\n", gpuInformation{"NVIDIA A100-SXM4-80GB", 1, "0000:4e:00.0", 2}, nil},
		{
			"garbled lines",
			"Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t 0000:zz:00.0\nno separator\n",
			gpuInformation{Model: "NVIDIA H100 80GB HBM3", ModelLine: 1},
			[]string{"line 2: bad bus location", "line 3: no ':'"},
		},
		{"no model", "Bus Location: \t 0000:18:00.0\n", gpuInformation{BusID: "0000:18:00.0", BusLine: 1}, []string{"no Model line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseGPUInformation([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			versionsCheckErrors(t, errs, tt.wantErr)
		})
	}
}

const dpkgStatusSample = `Package: libnccl2
Status: install ok installed
Priority: optional
Section: libs
Installed-Size: 244213
Maintainer: cudatools <cudatools@nvidia.com>
Architecture: amd64
Source: nccl
Version: 2.18.3-1+cuda12.2
Description: NVIDIA Collective Communication Library (NCCL) Runtime
 NCCL (pronounced "Nickel") is a stand-alone library of standard collective
 communication routines for GPUs.
Homepage: https://developer.nvidia.com/nccl

Package: nvidia-fabricmanager-535
Status: hold ok installed
Architecture: amd64
Version: 535.104.05-1
Conffiles:
 /usr/share/nvidia/nvswitch/fabricmanager.cfg 7d6c9f5ef5e2c1a3b8f0e4d2a6c9b1e3

Package: nvidia-fabricmanager-550
Status: deinstall ok config-files
Version: 550.90.07-1
`

func TestParseDpkgStatus(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []dpkgPackage
		wantErr []string
	}{
		{
			name: "real stanzas",
			in:   dpkgStatusSample,
			want: []dpkgPackage{
				{"libnccl2", "install ok installed", "2.18.3-1+cuda12.2", 1, 9},
				{"nvidia-fabricmanager-535", "hold ok installed", "535.104.05-1", 15, 18},
				{"nvidia-fabricmanager-550", "deinstall ok config-files", "550.90.07-1", 22, 24},
			},
		},
		{
			name: "CRLF, several blank lines, lower-case field names",
			in:   "\r\n\r\npackage: a\r\nversion: 1.0-1\r\n\r\n\r\n\r\nPackage: b\r\n",
			want: []dpkgPackage{{"a", "", "1.0-1", 3, 4}, {"b", "", "", 8, 0}},
		},
		{
			name: "malformed lines and stanzas",
			in:   " orphan\nPackage: fm\nStatus: install ok installed\nVersion 1\n\nDescription: x\n",
			want: []dpkgPackage{{"fm", "install ok installed", "", 2, 0}},
			wantErr: []string{
				"line 1: continuation line outside a field",
				"line 4: not a \"Field: value\" line",
				"line 6: stanza without a Package field",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseDpkgStatus([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			versionsCheckErrors(t, errs, tt.wantErr)
		})
	}
}

func TestDpkgPackageVersions(t *testing.T) {
	tests := []struct {
		status, version string
		installed       bool
		upstream        string
	}{
		{"install ok installed", "535.104.05-1", true, "535.104.05"},
		{"hold ok installed", "535.183.01-0ubuntu0.22.04.1", true, "535.183.01"},
		{"install ok installed", "1:2.0-3-4", true, "2.0-3"},
		{"install ok installed", "550.90.07", true, "550.90.07"},
		{"deinstall ok config-files", "550.90.07-1", false, "550.90.07"},
		{"install ok unpacked", "550.90.07-1", false, "550.90.07"},
		{"", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.status+" "+tt.version, func(t *testing.T) {
			p := dpkgPackage{Status: tt.status, Version: tt.version}
			if p.Installed() != tt.installed || p.UpstreamVersion() != tt.upstream {
				t.Errorf("installed %v upstream %q, want %v %q", p.Installed(), p.UpstreamVersion(), tt.installed, tt.upstream)
			}
		})
	}
}

func TestCollectNVIDIAFallbacks(t *testing.T) {
	pciFunction := func(addr, vendor, class string) fstest.MapFS {
		return fstest.MapFS{
			"sys/bus/pci/devices/" + addr + "/vendor": {Data: []byte(vendor + "\n")},
			"sys/bus/pci/devices/" + addr + "/class":  {Data: []byte(class + "\n")},
		}
	}
	tests := []struct {
		name      string
		fsys      fstest.MapFS
		wantFM    string
		wantFMSrc string
		wantSw    int
		wantSwSrc string
	}{
		{
			name: "fabric manager binary without a dpkg entry",
			fsys: fstest.MapFS{
				"usr/bin/nv-fabricmanager": {Data: []byte("\x7fELF")},
				"var/lib/dpkg/status":      {Data: []byte("Package: bash\nStatus: install ok installed\nVersion: 5.1-6\n")},
			},
			wantFM: "unknown", wantFMSrc: "/usr/bin/nv-fabricmanager",
		},
		{
			name: "the unversioned package name, and -dev ignored",
			fsys: fstest.MapFS{"var/lib/dpkg/status": {Data: []byte(
				"Package: nvidia-fabricmanager-dev\nStatus: install ok installed\nVersion: 999.1-1\n\n" +
					"Package: nvidia-fabricmanager\nStatus: install ok installed\nVersion: 580.95.05-1\n")}},
			wantFM: "580.95.05", wantFMSrc: "/var/lib/dpkg/status:7",
		},
		{
			name:   "NVSwitches from the PCI bus without the nvswitch driver",
			fsys:   versionsMergeFS(pciFunction("0000:05:00.0", "0x10de", "0x068000"), pciFunction("0000:18:00.0", "0x10de", "0x030200")),
			wantSw: 1, wantSwSrc: "/sys/bus/pci/devices",
		},
		{
			name:   "a bridge of another vendor is no NVSwitch",
			fsys:   pciFunction("0000:05:00.0", "0x15b3", "0x068000"),
			wantSw: 0, wantSwSrc: "/sys/bus/pci/devices",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := versionsTestCollection(FS(tt.fsys))
			collectNVIDIA(c)
			nv := c.snap.NVIDIA
			if nv.FabricManager != tt.wantFM || c.snap.Sources["nvidia.fabric_manager"].String() != tt.wantFMSrc {
				t.Errorf("fabric manager %q from %q, want %q from %q", nv.FabricManager, c.snap.Sources["nvidia.fabric_manager"].String(), tt.wantFM, tt.wantFMSrc)
			}
			if nv.NVSwitches != tt.wantSw || c.snap.Sources["nvidia.nvswitches"].String() != tt.wantSwSrc {
				t.Errorf("nvswitches %d from %q, want %d from %q", nv.NVSwitches, c.snap.Sources["nvidia.nvswitches"].String(), tt.wantSw, tt.wantSwSrc)
			}
			if nv.Present {
				t.Error("present without the module")
			}
			if len(c.snap.Errors) != 0 {
				t.Errorf("errors: %v", c.snap.Errors)
			}
		})
	}
}

func versionsMergeFS(maps ...fstest.MapFS) fstest.MapFS {
	out := fstest.MapFS{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestNVIDIAArchFillsKernelArch(t *testing.T) {
	fsys := fstest.MapFS{
		"proc/sys/kernel/osrelease":  {Data: []byte("5.15.0-1063-nvidia-64k\n")},
		"proc/driver/nvidia/version": {Data: []byte(nvidiaVersionOpenArm)},
	}
	c := versionsTestCollection(FS(fsys))
	collectKernel(c)
	if got := c.snap.Sources["kernel.arch"].String(); !strings.HasPrefix(got, "default: ") {
		t.Fatalf("kernel.arch source before nvidia = %q, want a default note", got)
	}
	collectNVIDIA(c)
	if c.snap.Kernel.Arch != "aarch64" || c.snap.Sources["kernel.arch"].String() != "/proc/driver/nvidia/version:1" {
		t.Errorf("kernel.arch %q from %q", c.snap.Kernel.Arch, c.snap.Sources["kernel.arch"].String())
	}
}

func TestKernelArch(t *testing.T) {
	tests := []struct {
		name       string
		fsys       fstest.MapFS
		want, from string
	}{
		{"arch file", fstest.MapFS{"proc/sys/kernel/osrelease": {Data: []byte("6.8.0-45-generic\n")}, "proc/sys/kernel/arch": {Data: []byte("x86_64\n")}}, "x86_64", "/proc/sys/kernel/arch"},
		{"RPM release suffix", fstest.MapFS{"proc/sys/kernel/osrelease": {Data: []byte("5.14.0-427.13.1.el9_4.aarch64\n")}}, "aarch64", "/proc/sys/kernel/osrelease"},
		{"unknown", fstest.MapFS{"proc/sys/kernel/osrelease": {Data: []byte("5.15.0-105-generic\n")}}, "", "default: unknown: no /proc/sys/kernel/arch before Linux 6.1"},
		{"nothing", fstest.MapFS{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := versionsTestCollection(FS(tt.fsys))
			collectKernel(c)
			if c.snap.Kernel.Arch != tt.want || c.snap.Sources["kernel.arch"].String() != tt.from {
				t.Errorf("arch %q from %q, want %q from %q", c.snap.Kernel.Arch, c.snap.Sources["kernel.arch"].String(), tt.want, tt.from)
			}
		})
	}
}

func FuzzNvidiaVersion(f *testing.F) {
	for _, s := range []string{nvidiaVersion535, nvidiaVersionOpen550, nvidiaVersionOpenArm, nvidiaVersionArm, nvidiaVersionAkmods,
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  5x5.1?4  \x00\x00\xff\xfe\n", "NVRM version:", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseNvidiaVersion(data)
		if err != nil {
			if !errors.Is(err, ErrParse) || v != (nvidiaModuleVersion{}) {
				t.Fatalf("error %v with result %+v", err, v)
			}
			return
		}
		lines := strings.Split(string(data), "\n")
		if v.Line < 1 || v.Line > len(lines) {
			t.Fatalf("line %d outside the input", v.Line)
		}
		if !strings.Contains(lines[v.Line-1], v.Version) || !strings.Contains(lines[v.Line-1], "NVRM version:") {
			t.Errorf("version %q not on its NVRM line %q", v.Version, lines[v.Line-1])
		}
		if v.Flavor != "open" && v.Flavor != "proprietary" {
			t.Errorf("flavor %q", v.Flavor)
		}
	})
}

func FuzzGPUInformation(f *testing.F) {
	for _, s := range []string{h100Information, "Model: \t\t NVIDIA A100-SXM4-80GB\nBus Location: \t 0000:4E:00.0\n", "Bus Location: 0000:zz:00.0\nx\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, errs := parseGPUInformation(data)
		lines := strings.Count(string(data), "\n") + 1
		if info.ModelLine > lines || info.BusLine > lines || info.ModelLine < 0 || info.BusLine < 0 {
			t.Errorf("lines %d, %d outside 1..%d", info.ModelLine, info.BusLine, lines)
		}
		if info.BusID != "" && !isGPUBusLocation(info.BusID) {
			t.Errorf("bus id %q", info.BusID)
		}
		for _, err := range errs {
			if !errors.Is(err, ErrParse) {
				t.Errorf("%v does not wrap ErrParse", err)
			}
		}
	})
}

func FuzzDpkgStatus(f *testing.F) {
	for _, s := range []string{dpkgStatusSample, " orphan\nPackage: fm\nVersion 1\n\nDescription: x\n", "Package:\n\n\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pkgs, errs := parseDpkgStatus(data)
		lines := strings.Count(string(data), "\n") + 1
		for _, p := range pkgs {
			if p.Line < 1 || p.Line > lines || p.VersionLine < 0 || p.VersionLine > lines {
				t.Errorf("%+v: lines outside 1..%d", p, lines)
			}
			if p.Package == "" {
				t.Errorf("package without a name: %+v", p)
			}
			_ = p.UpstreamVersion()
		}
		for _, err := range errs {
			if !errors.Is(err, ErrParse) {
				t.Errorf("%v does not wrap ErrParse", err)
			}
		}
	})
}
