package collectors

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestCollectBootFixtures(t *testing.T) {
	const (
		grubMain = "/etc/default/grub"
		hugetlb  = "/etc/default/grub.d/60-hugetlb.cfg"
	)
	// GRUB's linux command wrote BOOT_IMAGE= on each fixture's /proc/cmdline.
	grubEvidence := []string{"BOOT_IMAGE= in /proc/cmdline", "GRUB defaults: /etc/default/grub"}
	tests := []struct {
		root    string
		boot    snapshot.Boot
		sources map[string]string
		errors  []snapshot.CollectionError
	}{
		{
			root: "gpu-node",
			boot: snapshot.Boot{
				Running: snapshot.Cmdline{
					Present: true,
					Cmdline: "BOOT_IMAGE=/boot/vmlinuz-5.15.0-105-generic root=UUID=7c3e1a52-9b1f-4d7e-a0c4-2f6b8e91d3a5 ro hugetlb_cma=6G iommu=pt",
					Params: map[string]string{
						"BOOT_IMAGE": "/boot/vmlinuz-5.15.0-105-generic", "root": "UUID=7c3e1a52-9b1f-4d7e-a0c4-2f6b8e91d3a5",
						"ro": "", "hugetlb_cma": "6G", "iommu": "pt",
					},
				},
				Configured: snapshot.BootConfig{
					Loader:         "grub",
					LoaderEvidence: grubEvidence,
					Cmdline: snapshot.Cmdline{
						Present: true,
						Cmdline: " hugetlb_cma=6G  iommu=pt",
						Params:  map[string]string{"hugetlb_cma": "6G", "iommu": "pt"},
					},
					Grub: &snapshot.GrubDefaults{
						CmdlineLinux:        " hugetlb_cma=6G",
						CmdlineLinuxDefault: " iommu=pt",
						Cmdline:             " hugetlb_cma=6G  iommu=pt",
						Params:              map[string]string{"hugetlb_cma": "6G", "iommu": "pt"},
						Default:             "0",
						Files:               []string{grubMain, hugetlb, "/etc/default/grub.d/70-gpu.cfg", "/etc/default/grub.d/init-select.cfg"},
					},
				},
			},
			sources: map[string]string{
				"boot.configured.loader":                     "/proc/cmdline",
				"boot.running.cmdline":                       "/proc/cmdline",
				"boot.running.params.BOOT_IMAGE":             "/proc/cmdline",
				"boot.running.params.root":                   "/proc/cmdline",
				"boot.running.params.ro":                     "/proc/cmdline",
				"boot.running.params.hugetlb_cma":            "/proc/cmdline",
				"boot.running.params.iommu":                  "/proc/cmdline",
				"boot.configured.params.hugetlb_cma":         hugetlb + ":3",
				"boot.configured.params.iommu":               "/etc/default/grub.d/70-gpu.cfg:2",
				"boot.configured.grub.params.hugetlb_cma":    hugetlb + ":3",
				"boot.configured.grub.params.iommu":          "/etc/default/grub.d/70-gpu.cfg:2",
				"boot.configured.grub.cmdline_linux":         hugetlb + ":3",
				"boot.configured.grub.cmdline_linux_default": "/etc/default/grub.d/70-gpu.cfg:2",
			},
		},
		{
			root: "web-node",
			boot: snapshot.Boot{
				Running: snapshot.Cmdline{
					Present: true,
					Cmdline: "BOOT_IMAGE=/boot/vmlinuz-5.15.0-105-generic root=LABEL=cloudimg-rootfs ro hugetlb_cma=6G console=tty1 console=ttyS0",
					Params: map[string]string{
						"BOOT_IMAGE": "/boot/vmlinuz-5.15.0-105-generic", "root": "LABEL=cloudimg-rootfs",
						"ro": "", "hugetlb_cma": "6G", "console": "ttyS0",
					},
				},
				Configured: snapshot.BootConfig{
					Loader:         "grub",
					LoaderEvidence: grubEvidence,
					Cmdline: snapshot.Cmdline{
						Present: true,
						Cmdline: " hugetlb_cma=6G console=tty1 console=ttyS0",
						Params:  map[string]string{"hugetlb_cma": "6G", "console": "ttyS0"},
					},
					Grub: &snapshot.GrubDefaults{
						CmdlineLinux:        " hugetlb_cma=6G",
						CmdlineLinuxDefault: "console=tty1 console=ttyS0",
						Cmdline:             " hugetlb_cma=6G console=tty1 console=ttyS0",
						Params:              map[string]string{"console": "ttyS0", "hugetlb_cma": "6G"},
						Default:             "0",
						Files:               []string{grubMain, "/etc/default/grub.d/50-cloudimg-settings.cfg", hugetlb, "/etc/default/grub.d/init-select.cfg"},
					},
				},
			},
			sources: map[string]string{
				"boot.configured.loader":                     "/proc/cmdline",
				"boot.running.cmdline":                       "/proc/cmdline",
				"boot.running.params.BOOT_IMAGE":             "/proc/cmdline",
				"boot.running.params.root":                   "/proc/cmdline",
				"boot.running.params.ro":                     "/proc/cmdline",
				"boot.running.params.hugetlb_cma":            "/proc/cmdline",
				"boot.running.params.console":                "/proc/cmdline",
				"boot.configured.params.hugetlb_cma":         hugetlb + ":3",
				"boot.configured.params.console":             "/etc/default/grub.d/50-cloudimg-settings.cfg:11",
				"boot.configured.grub.params.console":        "/etc/default/grub.d/50-cloudimg-settings.cfg:11",
				"boot.configured.grub.params.hugetlb_cma":    hugetlb + ":3",
				"boot.configured.grub.cmdline_linux":         hugetlb + ":3",
				"boot.configured.grub.cmdline_linux_default": "/etc/default/grub.d/50-cloudimg-settings.cfg:11",
			},
		},
		{
			root: "dropins",
			boot: snapshot.Boot{
				Running: snapshot.Cmdline{
					Present: true,
					Cmdline: "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=/dev/mapper/ubuntu--vg-ubuntu--lv ro iommu=pt numa_balancing=disable hugetlb_cma=2G",
					Params: map[string]string{
						"BOOT_IMAGE": "/vmlinuz-6.8.0-45-generic", "root": "/dev/mapper/ubuntu--vg-ubuntu--lv", "ro": "",
						"iommu": "pt", "numa_balancing": "disable", "hugetlb_cma": "2G",
					},
				},
				Configured: snapshot.BootConfig{
					Loader:         "grub",
					LoaderEvidence: grubEvidence,
					Cmdline: snapshot.Cmdline{
						Present: true,
						Cmdline: "iommu=pt numa_balancing=disable hugetlb_cma=2G hugetlb_cma=0  init_on_alloc=0",
						Params:  map[string]string{"iommu": "pt", "numa_balancing": "disable", "hugetlb_cma": "0", "init_on_alloc": "0"},
					},
					Grub: &snapshot.GrubDefaults{
						CmdlineLinux:        "iommu=pt numa_balancing=disable hugetlb_cma=2G hugetlb_cma=0",
						CmdlineLinuxDefault: " init_on_alloc=0",
						Cmdline:             "iommu=pt numa_balancing=disable hugetlb_cma=2G hugetlb_cma=0  init_on_alloc=0",
						Params:              map[string]string{"iommu": "pt", "numa_balancing": "disable", "hugetlb_cma": "0", "init_on_alloc": "0"},
						Default:             "0",
						Files:               []string{grubMain, "/etc/default/grub.d/40-a.cfg", "/etc/default/grub.d/60-b.cfg"},
					},
				},
			},
			sources: map[string]string{
				"boot.configured.loader":                     "/proc/cmdline",
				"boot.running.cmdline":                       "/proc/cmdline",
				"boot.running.params.BOOT_IMAGE":             "/proc/cmdline",
				"boot.running.params.root":                   "/proc/cmdline",
				"boot.running.params.ro":                     "/proc/cmdline",
				"boot.running.params.iommu":                  "/proc/cmdline",
				"boot.running.params.numa_balancing":         "/proc/cmdline",
				"boot.running.params.hugetlb_cma":            "/proc/cmdline",
				"boot.configured.params.iommu":               grubMain + ":11",
				"boot.configured.params.numa_balancing":      grubMain + ":11",
				"boot.configured.params.hugetlb_cma":         "/etc/default/grub.d/60-b.cfg:2",
				"boot.configured.params.init_on_alloc":       "/etc/default/grub.d/40-a.cfg:3",
				"boot.configured.grub.params.iommu":          grubMain + ":11",
				"boot.configured.grub.params.numa_balancing": grubMain + ":11",
				"boot.configured.grub.params.hugetlb_cma":    "/etc/default/grub.d/60-b.cfg:2",
				"boot.configured.grub.params.init_on_alloc":  "/etc/default/grub.d/40-a.cfg:3",
				"boot.configured.grub.cmdline_linux":         "/etc/default/grub.d/60-b.cfg:2",
				"boot.configured.grub.cmdline_linux_default": "/etc/default/grub.d/40-a.cfg:3",
			},
		},
		{
			root: "rhel-node",
			boot: snapshot.Boot{
				Running: snapshot.Cmdline{
					Present: true,
					Cmdline: "BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0-427.13.1.el9_4.x86_64 root=/dev/mapper/rl-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap",
					Params: map[string]string{
						"BOOT_IMAGE": "(hd0,gpt2)/vmlinuz-5.14.0-427.13.1.el9_4.x86_64", "root": "/dev/mapper/rl-root", "ro": "",
						"crashkernel": "1G-4G:192M,4G-64G:256M,64G-:512M", "resume": "/dev/mapper/rl-swap", "rd.lvm.lv": "rl/swap",
					},
				},
				Configured: snapshot.BootConfig{
					Loader:         "grub",
					LoaderEvidence: grubEvidence,
					Cmdline: snapshot.Cmdline{
						Present: true,
						Cmdline: "crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap ",
						Params:  map[string]string{"crashkernel": "1G-4G:192M,4G-64G:256M,64G-:512M", "resume": "/dev/mapper/rl-swap", "rd.lvm.lv": "rl/swap"},
					},
					Grub: &snapshot.GrubDefaults{
						CmdlineLinux: "crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap",
						Cmdline:      "crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap ",
						Params:       map[string]string{"crashkernel": "1G-4G:192M,4G-64G:256M,64G-:512M", "resume": "/dev/mapper/rl-swap", "rd.lvm.lv": "rl/swap"},
						Default:      "saved",
						EnableBLSCfg: "true",
						Files:        []string{grubMain},
					},
					KernelCmdline: &snapshot.Cmdline{
						Present: true,
						Cmdline: "root=/dev/mapper/rl-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap",
						Params: map[string]string{
							"root": "/dev/mapper/rl-root", "ro": "",
							"crashkernel": "1G-4G:192M,4G-64G:256M,64G-:512M", "resume": "/dev/mapper/rl-swap", "rd.lvm.lv": "rl/swap",
						},
					},
				},
			},
			sources: map[string]string{
				"boot.configured.loader":                            "/proc/cmdline",
				"boot.running.cmdline":                              "/proc/cmdline",
				"boot.running.params.BOOT_IMAGE":                    "/proc/cmdline",
				"boot.running.params.root":                          "/proc/cmdline",
				"boot.running.params.ro":                            "/proc/cmdline",
				"boot.running.params.crashkernel":                   "/proc/cmdline",
				"boot.running.params.resume":                        "/proc/cmdline",
				"boot.running.params.rd.lvm.lv":                     "/proc/cmdline",
				"boot.configured.params.crashkernel":                grubMain + ":6",
				"boot.configured.params.resume":                     grubMain + ":6",
				"boot.configured.params.rd.lvm.lv":                  grubMain + ":6",
				"boot.configured.grub.params.crashkernel":           grubMain + ":6",
				"boot.configured.grub.params.resume":                grubMain + ":6",
				"boot.configured.grub.params.rd.lvm.lv":             grubMain + ":6",
				"boot.configured.grub.cmdline_linux":                grubMain + ":6",
				"boot.configured.grub.cmdline_linux_default":        "default: not set in the GRUB defaults",
				"boot.configured.kernel_cmdline.cmdline":            "/etc/kernel/cmdline",
				"boot.configured.kernel_cmdline.params.root":        "/etc/kernel/cmdline:1",
				"boot.configured.kernel_cmdline.params.ro":          "/etc/kernel/cmdline:1",
				"boot.configured.kernel_cmdline.params.crashkernel": "/etc/kernel/cmdline:1",
				"boot.configured.kernel_cmdline.params.resume":      "/etc/kernel/cmdline:1",
				"boot.configured.kernel_cmdline.params.rd.lvm.lv":   "/etc/kernel/cmdline:1",
			},
		},
		{
			root: "garbage",
			boot: snapshot.Boot{
				Running: snapshot.Cmdline{
					Present: true,
					Cmdline: `BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=/dev/sda1 ro console="ttyS0,115200n8 quiet`,
					Params: map[string]string{
						"BOOT_IMAGE": "/boot/vmlinuz-6.1.0-18-amd64", "root": "/dev/sda1", "ro": "",
						"console": "ttyS0,115200n8 quiet",
					},
				},
				Configured: snapshot.BootConfig{
					Loader:         "grub",
					LoaderEvidence: grubEvidence,
					// grub-mkconfig exits at 70-broken.cfg's unterminated
					// quote: no configured command line.
					Grub: &snapshot.GrubDefaults{
						Cmdline: " ",
						Files:   []string{grubMain, "/etc/default/grub.d/70-broken.cfg"},
						Unknown: []string{"GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT"},
						Aborted: "/etc/default/grub.d/70-broken.cfg:2",
					},
				},
			},
			sources: map[string]string{
				"boot.configured.loader":         "/proc/cmdline",
				"boot.running.cmdline":           "/proc/cmdline",
				"boot.running.params.BOOT_IMAGE": "/proc/cmdline",
				"boot.running.params.root":       "/proc/cmdline",
				"boot.running.params.ro":         "/proc/cmdline",
				"boot.running.params.console":    "/proc/cmdline",
				// Unknown values name where grub-mkconfig stops.
				"boot.configured.grub.cmdline_linux":         "/etc/default/grub.d/70-broken.cfg:2",
				"boot.configured.grub.cmdline_linux_default": "/etc/default/grub.d/70-broken.cfg:2",
			},
			errors: []snapshot.CollectionError{
				{Collector: "boot", Path: "/etc/default/grub.d/70-broken.cfg", Reason: "parse error: line 2: unterminated double quote; " + grubAborts},
				{Collector: "boot", Path: "/etc/default/grub.d/80-dir.cfg", Reason: "is a directory"},
				{Collector: "boot", Path: "/proc/cmdline", Reason: "parse error: line 1: NUL byte at offset 87"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.root, func(t *testing.T) {
			snap, err := Collect(context.Background(), Target{Files: Dir("../testdata/hosts/" + tt.root)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.boot, snap.Boot, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("boot (-want +got):\n%s", diff)
			}
			sources := map[string]string{}
			for k, v := range snap.Sources {
				if strings.HasPrefix(k, "boot.") {
					sources[k] = v.String()
				}
			}
			if diff := cmp.Diff(tt.sources, sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
			var errs []snapshot.CollectionError
			for _, e := range snap.Errors {
				if e.Collector == "boot" {
					// The reason for a read error carries the OS's wording.
					if strings.HasSuffix(e.Reason, "is a directory") {
						e.Reason = "is a directory"
					}
					errs = append(errs, e)
				}
			}
			if diff := cmp.Diff(tt.errors, errs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			doc, err := snapshot.Generic(snap)
			if err != nil {
				t.Fatal(err)
			}
			for fact := range sources {
				if _, ok := snapshot.Lookup(doc, fact); !ok {
					t.Errorf("source %q does not resolve in the snapshot", fact)
				}
			}
		})
	}
}

func TestCollectBootLoaders(t *testing.T) {
	tests := []struct {
		name    string
		files   fstest.MapFS
		loader  string
		params  map[string]string
		sources map[string]string
	}{
		{
			name:   "nothing configured",
			files:  fstest.MapFS{"proc/cmdline": {Data: []byte("ro\n")}},
			loader: "",
		},
		{
			name: "kernel-install command line",
			files: fstest.MapFS{
				"etc/kernel/cmdline":     {Data: []byte("root=UUID=1 ro\nhugetlb_cma=4G\n")},
				"usr/lib/kernel/cmdline": {Data: []byte("ignored=1\n")},
			},
			loader: "kernel-cmdline",
			params: map[string]string{"root": "UUID=1", "ro": "", "hugetlb_cma": "4G"},
			sources: map[string]string{
				"boot.configured.loader":                            "/etc/kernel/cmdline",
				"boot.configured.cmdline":                           "/etc/kernel/cmdline",
				"boot.configured.params.root":                       "/etc/kernel/cmdline:1",
				"boot.configured.params.ro":                         "/etc/kernel/cmdline:1",
				"boot.configured.params.hugetlb_cma":                "/etc/kernel/cmdline:2",
				"boot.configured.kernel_cmdline.cmdline":            "/etc/kernel/cmdline",
				"boot.configured.kernel_cmdline.params.root":        "/etc/kernel/cmdline:1",
				"boot.configured.kernel_cmdline.params.ro":          "/etc/kernel/cmdline:1",
				"boot.configured.kernel_cmdline.params.hugetlb_cma": "/etc/kernel/cmdline:2",
			},
		},
		{
			name:   "the vendor command line when /etc has none",
			files:  fstest.MapFS{"usr/lib/kernel/cmdline": {Data: []byte("quiet\n")}},
			loader: "kernel-cmdline",
			params: map[string]string{"quiet": ""},
			sources: map[string]string{
				"boot.configured.loader":                      "/usr/lib/kernel/cmdline",
				"boot.configured.cmdline":                     "/usr/lib/kernel/cmdline",
				"boot.configured.params.quiet":                "/usr/lib/kernel/cmdline:1",
				"boot.configured.kernel_cmdline.cmdline":      "/usr/lib/kernel/cmdline",
				"boot.configured.kernel_cmdline.params.quiet": "/usr/lib/kernel/cmdline:1",
			},
		},
		{
			name: "grub.d alone is grub; hidden and other files are not sourced",
			files: fstest.MapFS{
				"etc/default/grub.d/10-a.cfg":      {Data: []byte(`GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX nosmt"`)},
				"etc/default/grub.d/.20-b.cfg":     {Data: []byte(`GRUB_CMDLINE_LINUX=hidden`)},
				"etc/default/grub.d/30-c.cfg.dpkg": {Data: []byte(`GRUB_CMDLINE_LINUX=backup`)},
			},
			loader: "grub",
			params: map[string]string{"nosmt": ""},
			sources: map[string]string{
				"boot.configured.loader":                     "/etc/default/grub.d/10-a.cfg",
				"boot.configured.params.nosmt":               "/etc/default/grub.d/10-a.cfg:1",
				"boot.configured.grub.params.nosmt":          "/etc/default/grub.d/10-a.cfg:1",
				"boot.configured.grub.cmdline_linux":         "/etc/default/grub.d/10-a.cfg:1",
				"boot.configured.grub.cmdline_linux_default": "default: not set in the GRUB defaults",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := Collect(context.Background(), Target{Files: FS(tt.files)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := snap.Boot.Configured
			if cfg.Loader != tt.loader {
				t.Errorf("loader = %q, want %q", cfg.Loader, tt.loader)
			}
			if diff := cmp.Diff(tt.params, cfg.Params, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
			sources := map[string]string{}
			for k, v := range snap.Sources {
				if strings.HasPrefix(k, "boot.configured.") {
					sources[k] = v.String()
				}
			}
			if len(tt.sources) == 0 {
				tt.sources = map[string]string{}
			}
			if diff := cmp.Diff(tt.sources, sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
			for _, e := range snap.Errors {
				if e.Collector == "boot" {
					t.Errorf("unexpected error %+v", e)
				}
			}
		})
	}
}
