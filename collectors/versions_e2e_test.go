package collectors

import (
	"context"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/google/go-cmp/cmp"
)

// versionFacts is what the os, kernel, nvidia, modules and libraries
// collectors put in a snapshot.
type versionFacts struct {
	Kernel    snapshot.Kernel
	OS        snapshot.OSRelease
	NVIDIA    snapshot.NVIDIA
	Modules   snapshot.Modules
	Libraries snapshot.Libraries
	Sources   map[string]string
}

var versionCollectors = map[string]bool{"os": true, "kernel": true, "nvidia": true, "modules": true, "libraries": true}

func versionFactsOf(s *snapshot.Snapshot) versionFacts {
	f := versionFacts{Kernel: s.Kernel, OS: s.OS, NVIDIA: s.NVIDIA, Modules: s.Modules, Libraries: s.Libraries, Sources: map[string]string{}}
	f.NVIDIA.Persistenced = false // the processes collector's
	f.Kernel.Installed = nil      // an image's only (TestRealDebianImageInstalledKernels)
	// NCCL net plugins and libibverbs have their own test (TestCollectLibraries)
	// and the goldens; these wants pin NCCL and CUDA.
	f.Libraries.NCCLNet, f.Libraries.Verbs = nil, nil
	for k, v := range s.Sources {
		family, _, _ := strings.Cut(k, ".")
		if k == "libraries.nccl_net" || k == "libraries.verbs" {
			continue
		}
		if versionCollectors[family] && k != "nvidia.persistenced" {
			f.Sources[k] = v.String()
		}
	}
	return f
}

type wantError struct{ collector, path, reason string }

func TestVersionFamiliesEndToEnd(t *testing.T) {
	ubuntuSources := map[string]string{
		"os.id": "/etc/os-release:6", "os.id_like": "/etc/os-release:7",
		"os.pretty_name": "/etc/os-release:1", "os.version_id": "/etc/os-release:3",
		"kernel.release": "/proc/sys/kernel/osrelease", "kernel.version": "/proc/sys/kernel/version",
		"modules.loaded": "/proc/modules",
	}
	with := func(base map[string]string, more map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range []map[string]string{base, more} {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	jammy := snapshot.OSRelease{ID: "ubuntu", IDLike: "debian", VersionID: "22.04", PrettyName: "Ubuntu 22.04.4 LTS"}
	h100s := func(buses ...string) []snapshot.GPU {
		var gpus []snapshot.GPU
		for _, b := range buses {
			gpus = append(gpus, snapshot.GPU{BusID: b, Model: "NVIDIA H100 80GB HBM3"})
		}
		return gpus
	}

	tests := []struct {
		root       string
		host       string
		want       versionFacts
		wantErrors []wantError
	}{
		{
			root: "gpu-node", host: "gpu-a-001",
			want: versionFacts{
				Kernel: snapshot.Kernel{Release: "5.15.0-105-generic", Version: "#115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024", Arch: "x86_64"},
				OS:     jammy,
				NVIDIA: snapshot.NVIDIA{
					Present: true, DriverVersion: "535.104.05", Flavor: "proprietary", ModuleVersion: "535.104.05",
					NVMLVersions:  []string{"535.104.05"},
					GPUs:          h100s("0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"),
					FabricManager: "535.104.05", NVSwitches: 4,
				},
				Modules: snapshot.Modules{
					Loaded:      []string{"drm", "drm_kms_helper", "ib_core", "ib_ipoib", "ib_umad", "ib_uverbs", "mlx5_core", "mlx5_ib", "nvidia", "nvidia_drm", "nvidia_modeset", "nvidia_peermem", "nvidia_uvm", "rdma_ucm"},
					Configured:  map[string]bool{"nvidia_peermem": true},
					Blacklisted: map[string]bool{},
					Install:     map[string]string{},
				},
				Libraries: snapshot.Libraries{
					NCCL: []snapshot.Library{
						{Version: "2.18.3", Path: "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3", Kind: "system", How: "file-name", Source: snapshot.ParseProvenance("/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3")},
						{Version: "2.20.5", Path: "/usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2", Kind: "wheel", How: "dist-info", Source: snapshot.ParseProvenance("/usr/local/lib/python3.10/dist-packages/nvidia_nccl_cu12-2.20.5.dist-info/METADATA:3")},
					},
					CUDA: []snapshot.Library{
						{Version: "12.1.105", Path: "/usr/local/lib/python3.10/dist-packages/nvidia/cuda_runtime/lib/libcudart.so.12", Kind: "wheel", How: "dist-info", Source: snapshot.ParseProvenance("/usr/local/lib/python3.10/dist-packages/nvidia_cuda_runtime_cu12-12.1.105.dist-info/METADATA:3")},
						{Version: "12.2.140", Path: "/usr/local/cuda-12.2/targets/x86_64-linux/lib/libcudart.so.12.2.140", Kind: "system", How: "file-name", Source: snapshot.ParseProvenance("/usr/local/cuda-12.2/targets/x86_64-linux/lib/libcudart.so.12.2.140")},
					},
				},
				Sources: with(ubuntuSources, map[string]string{
					"kernel.arch":                       "/proc/driver/nvidia/version:1",
					"nvidia.present":                    "/sys/module/nvidia",
					"nvidia.driver_version":             "/proc/driver/nvidia/version:1",
					"nvidia.flavor":                     "/proc/driver/nvidia/version:1",
					"nvidia.module_version":             "/sys/module/nvidia/version",
					"nvidia.gpus":                       "/proc/driver/nvidia/gpus",
					"nvidia.fabric_manager":             "/var/lib/dpkg/status:54",
					"nvidia.nvswitches":                 "/proc/driver/nvidia-nvswitch/devices",
					"nvidia.nvml_versions":              "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05",
					"modules.configured.nvidia_peermem": "/etc/modules-load.d/nvidia-peermem.conf:2",
					"libraries.nccl":                    "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3, /usr/local/lib/python3.10/dist-packages/nvidia_nccl_cu12-2.20.5.dist-info/METADATA:3",
					"libraries.cuda":                    "/usr/local/lib/python3.10/dist-packages/nvidia_cuda_runtime_cu12-12.1.105.dist-info/METADATA:3, /usr/local/cuda-12.2/targets/x86_64-linux/lib/libcudart.so.12.2.140",
				}),
			},
		},
		{
			root: "web-node", host: "web-01",
			want: versionFacts{
				Kernel: snapshot.Kernel{Release: "5.15.0-105-generic", Version: "#115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024"},
				OS:     jammy,
				NVIDIA: snapshot.NVIDIA{NVMLVersions: []string{}, GPUs: []snapshot.GPU{}},
				Modules: snapshot.Modules{
					Loaded:      []string{"crct10dif_pclmul", "ghash_clmulni_intel", "kvm", "kvm_intel", "nf_conntrack", "nf_defrag_ipv4", "nf_defrag_ipv6", "qemu_fw_cfg", "tls", "virtio_rng", "xt_conntrack"},
					Configured:  map[string]bool{},
					Blacklisted: map[string]bool{},
					Install:     map[string]string{},
				},
				Libraries: snapshot.Libraries{NCCL: []snapshot.Library{}, CUDA: []snapshot.Library{}},
				Sources:   with(ubuntuSources, map[string]string{"kernel.arch": "default: unknown: no /proc/sys/kernel/arch before Linux 6.1", "nvidia.nvswitches": "/sys/bus/pci/devices"}),
			},
		},
		{
			root: "dropins", host: "gpu-b-007",
			want: versionFacts{
				Kernel: snapshot.Kernel{Release: "6.8.0-45-generic", Version: "#45-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug 30 12:02:04 UTC 2024", Arch: "x86_64"},
				OS:     snapshot.OSRelease{ID: "ubuntu", IDLike: "debian", VersionID: "24.04", PrettyName: "Ubuntu 24.04.1 LTS"},
				NVIDIA: snapshot.NVIDIA{
					Present: true, DriverVersion: "550.90.07", Flavor: "open", ModuleVersion: "550.90.07",
					NVMLVersions: []string{"550.90.07"}, GPUs: h100s("0000:1b:00.0", "0000:43:00.0"),
				},
				Modules: snapshot.Modules{
					Loaded:      []string{"ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib", "nvidia", "nvidia_drm", "nvidia_modeset", "nvidia_peermem", "nvidia_uvm"},
					Configured:  map[string]bool{"nvidia_peermem": true, "rdma_ucm": true},
					Blacklisted: map[string]bool{},
					Install:     map[string]string{},
				},
				Libraries: snapshot.Libraries{
					NCCL: []snapshot.Library{{Version: "2.21.5", Path: "/opt/train/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2", Kind: "wheel", How: "dist-info", Source: snapshot.ParseProvenance("/opt/train/venv/lib/python3.12/site-packages/nvidia_nccl_cu12-2.21.5.dist-info/METADATA:3")}},
					CUDA: []snapshot.Library{{Version: "12.4.127", Path: "/opt/train/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12", Kind: "wheel", How: "dist-info", Source: snapshot.ParseProvenance("/opt/train/venv/lib/python3.12/site-packages/nvidia_cuda_runtime_cu12-12.4.127.dist-info/METADATA:3")}},
				},
				Sources: map[string]string{
					"os.id": "/usr/lib/os-release:6", "os.id_like": "/usr/lib/os-release:7",
					"os.pretty_name": "/usr/lib/os-release:1", "os.version_id": "/usr/lib/os-release:3",
					"kernel.release": "/proc/sys/kernel/osrelease", "kernel.version": "/proc/sys/kernel/version", "kernel.arch": "/proc/sys/kernel/arch",
					"modules.loaded":                    "/proc/modules",
					"modules.configured.nvidia_peermem": "/etc/modules-load.d/nvidia-peermem.conf:2",
					"modules.configured.rdma_ucm":       "/usr/local/lib/modules-load.d/rdma.conf:2",
					"nvidia.present":                    "/sys/module/nvidia",
					"nvidia.driver_version":             "/proc/driver/nvidia/version:1",
					"nvidia.flavor":                     "/proc/driver/nvidia/version:1",
					"nvidia.module_version":             "/sys/module/nvidia/version",
					"nvidia.gpus":                       "/proc/driver/nvidia/gpus",
					"nvidia.nvml_versions":              "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.90.07",
					"nvidia.nvswitches":                 "/sys/bus/pci/devices",
					"libraries.nccl":                    "/opt/train/venv/lib/python3.12/site-packages/nvidia_nccl_cu12-2.21.5.dist-info/METADATA:3",
					"libraries.cuda":                    "/opt/train/venv/lib/python3.12/site-packages/nvidia_cuda_runtime_cu12-12.4.127.dist-info/METADATA:3",
				},
			},
		},
		{
			root: "rhel-node", host: "gpu-r-001",
			want: versionFacts{
				Kernel: snapshot.Kernel{Release: "5.14.0-427.13.1.el9_4.x86_64", Version: "#1 SMP PREEMPT_DYNAMIC Wed May 1 19:11:28 UTC 2024", Arch: "x86_64"},
				OS:     snapshot.OSRelease{ID: "rocky", IDLike: "rhel centos fedora", VersionID: "9.4", PrettyName: "Rocky Linux 9.4 (Blue Onyx)"},
				NVIDIA: snapshot.NVIDIA{
					Present: true, DriverVersion: "550.54.15", Flavor: "proprietary", ModuleVersion: "550.54.15",
					NVMLVersions: []string{"550.90.07"},
					GPUs: []snapshot.GPU{
						{BusID: "0000:07:00.0", Model: "NVIDIA A100-SXM4-80GB"}, {BusID: "0000:0f:00.0", Model: "NVIDIA A100-SXM4-80GB"},
						{BusID: "0000:47:00.0", Model: "NVIDIA A100-SXM4-80GB"}, {BusID: "0000:4e:00.0", Model: "NVIDIA A100-SXM4-80GB"},
					},
				},
				Modules: snapshot.Modules{
					Loaded:      []string{"drm_kms_helper", "nvidia", "nvidia_drm", "nvidia_modeset", "nvidia_uvm", "xfs"},
					Configured:  map[string]bool{"nvidia_peermem": true},
					Blacklisted: map[string]bool{},
					Install:     map[string]string{},
				},
				Libraries: snapshot.Libraries{
					NCCL: []snapshot.Library{{Version: "2.21.5", Path: "/usr/lib64/libnccl.so.2.21.5", Kind: "system", How: "file-name", Source: snapshot.ParseProvenance("/usr/lib64/libnccl.so.2.21.5")}},
					CUDA: []snapshot.Library{{Version: "12.4.127", Path: "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127", Kind: "other", How: "file-name", Source: snapshot.ParseProvenance("/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127")}},
				},
				Sources: map[string]string{
					"os.id": "/etc/os-release:3", "os.id_like": "/etc/os-release:4",
					"os.pretty_name": "/etc/os-release:7", "os.version_id": "/etc/os-release:5",
					"kernel.release": "/proc/sys/kernel/osrelease", "kernel.version": "/proc/sys/kernel/version", "kernel.arch": "/proc/sys/kernel/osrelease",
					"modules.loaded":                    "/proc/modules",
					"modules.configured.nvidia_peermem": "/etc/modules-load.d/nvidia-peermem.conf:2",
					"nvidia.present":                    "/sys/module/nvidia",
					"nvidia.driver_version":             "/proc/driver/nvidia/version:1",
					"nvidia.flavor":                     "/proc/driver/nvidia/version:1",
					"nvidia.module_version":             "/sys/module/nvidia/version",
					"nvidia.gpus":                       "/proc/driver/nvidia/gpus",
					"nvidia.nvml_versions":              "/usr/lib64/libnvidia-ml.so.550.90.07",
					"libraries.nccl":                    "/usr/lib64/libnccl.so.2.21.5",
					"libraries.cuda":                    "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127",
				},
			},
		},
		{
			root: "garbage", host: "junk-01",
			want: versionFacts{
				Kernel: snapshot.Kernel{Release: "6.1.0-18-amd64", Version: "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)", Arch: "x86_64"},
				OS:     snapshot.OSRelease{ID: "junk", PrettyName: "Junk Linux"},
				NVIDIA: snapshot.NVIDIA{
					Present: true, ModuleVersion: "535.104.05", NVMLVersions: []string{},
					GPUs: []snapshot.GPU{{BusID: "0000:18:00.0", Model: "NVIDIA H100 80GB HBM3"}},
				},
				Modules: snapshot.Modules{Loaded: []string{"mlx5_core", "nvidia_uvm"}, Configured: map[string]bool{}, Blacklisted: map[string]bool{}, Install: map[string]string{}},
				Libraries: snapshot.Libraries{
					NCCL: []snapshot.Library{
						{Version: "2.19.3", Path: "/usr/local/lib/python3.11/dist-packages/nvidia/nccl/lib/libnccl.so.2", Kind: "wheel", How: "embedded-string", Source: snapshot.ParseProvenance("/usr/local/lib/python3.11/dist-packages/nvidia/nccl/lib/libnccl.so.2")},
						{Version: "unknown", Path: "/usr/lib/x86_64-linux-gnu/libnccl.so", Kind: "system", How: "none", Source: snapshot.ParseProvenance("/usr/lib/x86_64-linux-gnu/libnccl.so")},
					},
					CUDA: []snapshot.Library{},
				},
				Sources: map[string]string{
					"os.id": "/etc/os-release:1", "os.pretty_name": "/etc/os-release:4",
					"kernel.release": "/proc/sys/kernel/osrelease", "kernel.version": "/proc/sys/kernel/version", "kernel.arch": "/proc/sys/kernel/arch",
					"modules.loaded":        "/proc/modules",
					"nvidia.present":        "/sys/module/nvidia",
					"nvidia.module_version": "/sys/module/nvidia/version",
					"nvidia.nvswitches":     "/sys/bus/pci/devices",
					"nvidia.gpus":           "/proc/driver/nvidia/gpus",
					"libraries.nccl":        "/usr/local/lib/python3.11/dist-packages/nvidia/nccl/lib/libnccl.so.2, /usr/lib/x86_64-linux-gnu/libnccl.so",
				},
			},
			wantErrors: []wantError{
				{"libraries", "/etc/ld.so.conf", "parse error: line 2: \"lib/relative\" is not an absolute directory"},
				{"libraries", "/etc/ld.so.conf.d/loop.conf", "parse error: line 1: /etc/ld.so.conf.d/loop.conf includes itself"},
				{"libraries", "/usr/lib64", "readdir: not a directory"},
				{"libraries", "/usr/local/lib/python3.11/dist-packages/nvidia_nccl_cu12-2.19.3.dist-info/METADATA", "parse error: no Version field"},
				{"modules", "/etc/modules-load.d/bad.conf", "is a directory"},
				{"modules", "/etc/modules-load.d/two-words.conf", "parse error: line 1: \"nvidia peermem\" is not one module name"},
				{"modules", "/proc/modules", "parse error: line 2: 2 fields, want at least 6"},
				{"modules", "/proc/modules", "parse error: line 4: 2 fields, want at least 6"},
				{"nvidia", "/proc/driver/nvidia/gpus/0000:18:00.0/information", "parse error: line 2: bad bus location \"0000:zz:00.0\""},
				{"nvidia", "/proc/driver/nvidia/gpus/0000:18:00.0/information", "parse error: line 3: no ':'"},
				{"nvidia", "/proc/driver/nvidia/gpus/0000:2a:00.0/information", "is a directory"},
				{"nvidia", "/proc/driver/nvidia/version", "parse error: line 1: unrecognised NVRM version"},
				{"nvidia", "/var/lib/dpkg/status", "parse error: line 1: continuation line outside a field"},
				{"nvidia", "/var/lib/dpkg/status", "parse error: line 4: not a \"Field: value\" line"},
				{"nvidia", "/var/lib/dpkg/status", "parse error: line 7: stanza without a Package field"},
				{"os", "/etc/os-release", "parse error: line 2: no '='"},
				{"os", "/etc/os-release", "parse error: line 3: VERSION_ID: unterminated double quote"},
				{"os", "/etc/os-release", "parse error: line 5: ID_LIKE: unquoted space before \"ubuntu\""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.root, func(t *testing.T) {
			snap, err := Collect(context.Background(), Target{Files: Dir("../testdata/hosts/" + tt.root)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if snap.Host != tt.host {
				t.Errorf("host %q, want %q", snap.Host, tt.host)
			}
			if diff := cmp.Diff(tt.want, versionFactsOf(snap)); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}

			var got []snapshot.CollectionError
			for _, e := range snap.Errors {
				if versionCollectors[e.Collector] {
					got = append(got, e)
				}
			}
			if len(got) != len(tt.wantErrors) {
				t.Fatalf("%d errors, want %d:\n%v", len(got), len(tt.wantErrors), got)
			}
			for i, w := range tt.wantErrors {
				if got[i].Collector != w.collector || got[i].Path != w.path || !strings.Contains(got[i].Reason, w.reason) {
					t.Errorf("error %d: %+v, want %+v", i, got[i], w)
				}
			}

			// Every provenance key names a fact the policy engine can find.
			doc, err := snapshot.Generic(snap)
			if err != nil {
				t.Fatal(err)
			}
			for fact := range versionFactsOf(snap).Sources {
				if _, ok := snapshot.Lookup(doc, fact); !ok {
					t.Errorf("source key %q does not resolve", fact)
				}
			}
		})
	}
}
