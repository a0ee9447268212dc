package collectors

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestBootLoaderEvidence: the loader is decided from what the running
// kernel's loader left, then from what is installed; GRUB defaults alone
// never outweigh systemd-boot, and evidence for the loader not chosen is
// reported as a conflict.
func TestBootLoaderEvidence(t *testing.T) {
	const (
		vendor   = "-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
		info     = "sys/firmware/efi/efivars/LoaderInfo" + vendor
		entry    = "efi/loader/entries/" + testMID + "-6.1.0-18-amd64.conf"
		sdOpts   = "root=UUID=1 ro quiet systemd.machine_id=" + testMID
		grubBoot = "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=UUID=1 ro quiet\n"
		sdBoot   = `initrd=\` + testMID + `\6.1.0-18-amd64\initrd.img-6.1.0-18-amd64 ` + sdOpts + "\n"
	)
	sd := fstest.MapFS{
		"efi/loader/loader.conf": {Data: []byte("#timeout 3\n#console-mode keep\ndefault " + testMID + "-*\n")},
		entry:                    {Data: []byte("title Debian GNU/Linux 12 (bookworm)\nversion 6.1.0-18-amd64\nmachine-id " + testMID + "\nsort-key debian\noptions " + sdOpts + "\nlinux /" + testMID + "/6.1.0-18-amd64/linux\n")},
		"etc/kernel/cmdline":     {Data: []byte("root=UUID=1 ro quiet\n")},
	}
	leftover := fstest.MapFS{"etc/default/grub": {Data: []byte("GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"\"\n")}}
	grubCfg := fstest.MapFS{"boot/grub/grub.cfg": {Data: []byte("menuentry 'Debian' {\n\tlinux /boot/vmlinuz-6.1.0-18-amd64 root=UUID=1 ro quiet\n}\n")}}
	with := func(parts ...fstest.MapFS) fstest.MapFS {
		out := fstest.MapFS{}
		for _, p := range parts {
			for k, v := range p {
				out[k] = v
			}
		}
		return out
	}
	file := func(s string) fstest.MapFS { return fstest.MapFS{"proc/cmdline": {Data: []byte(s)}} }
	loaderInfo := fstest.MapFS{info: {Data: efiVar("systemd-boot 252.39-1~deb12u2")}}
	tests := []struct {
		name     string
		files    fstest.MapFS
		loader   string
		params   string // the configured command line
		evidence []string
		conflict []string
	}{
		{
			name:   "an image with systemd-boot and a leftover /etc/default/grub: systemd-boot",
			files:  with(sd, leftover),
			loader: "systemd-boot", params: sdOpts,
			evidence: []string{"systemd-boot loader.conf: /efi/loader/loader.conf", "systemd-boot entries: /efi/loader/entries"},
		},
		{
			name:   "booted by systemd-boot: LoaderInfo and the initrd= form",
			files:  with(sd, leftover, loaderInfo, file(sdBoot)),
			loader: "systemd-boot", params: sdOpts,
			evidence: []string{
				"LoaderInfo EFI variable: systemd-boot 252.39-1~deb12u2", `initrd=\... in /proc/cmdline without BOOT_IMAGE=`,
				"systemd-boot loader.conf: /efi/loader/loader.conf", "systemd-boot entries: /efi/loader/entries",
			},
		},
		{
			name:   "booted by systemd-boot with a grub.cfg left: a conflict",
			files:  with(sd, leftover, grubCfg, loaderInfo, file(sdBoot)),
			loader: "systemd-boot", params: sdOpts,
			evidence: []string{
				"LoaderInfo EFI variable: systemd-boot 252.39-1~deb12u2", `initrd=\... in /proc/cmdline without BOOT_IMAGE=`,
				"systemd-boot loader.conf: /efi/loader/loader.conf", "systemd-boot entries: /efi/loader/entries",
			},
			conflict: []string{"GRUB config: /boot/grub/grub.cfg"},
		},
		{
			name:   "booted by GRUB while systemd-boot's entries are installed: GRUB, and a conflict",
			files:  with(sd, leftover, file(grubBoot)),
			loader: "grub", params: " quiet",
			evidence: []string{"BOOT_IMAGE= in /proc/cmdline", "GRUB defaults: /etc/default/grub"},
			conflict: []string{"systemd-boot entries: /efi/loader/entries"},
		},
		{
			name:   "systemd-boot started GRUB, which loaded the kernel",
			files:  with(leftover, grubCfg, loaderInfo, file(grubBoot)),
			loader: "grub", params: " quiet",
			evidence: []string{"BOOT_IMAGE= in /proc/cmdline", "GRUB config: /boot/grub/grub.cfg", "GRUB defaults: /etc/default/grub"},
			conflict: []string{"LoaderInfo EFI variable: systemd-boot 252.39-1~deb12u2 (it started GRUB, which loaded the kernel)"},
		},
		{
			name:   "an EFI stub boot without systemd-boot installed: GRUB's files, and the boot as a conflict",
			files:  with(leftover, grubCfg, file(`initrd=\EFI\debian\initrd.img root=UUID=1 ro`+"\n")),
			loader: "grub", params: " quiet",
			evidence: []string{"GRUB config: /boot/grub/grub.cfg", "GRUB defaults: /etc/default/grub"},
			conflict: []string{`initrd=\... in /proc/cmdline without BOOT_IMAGE=`},
		},
		{
			name: "systemd-boot with unified kernel images only: /etc/kernel/cmdline, not the GRUB defaults",
			files: with(leftover, loaderInfo, fstest.MapFS{
				"efi/loader/loader.conf": sd["efi/loader/loader.conf"],
				"etc/kernel/cmdline":     {Data: []byte("root=UUID=1 ro hugetlb_cma=6G\n")},
			}),
			loader: "kernel-cmdline", params: "root=UUID=1 ro hugetlb_cma=6G",
			evidence: []string{
				"LoaderInfo EFI variable: systemd-boot 252.39-1~deb12u2",
				"systemd-boot loader.conf: /efi/loader/loader.conf", "kernel-install command line: /etc/kernel/cmdline",
			},
		},
		{
			name:   "an image with both loaders' menus and no running kernel: GRUB, as before, and a conflict",
			files:  with(sd, leftover, grubCfg),
			loader: "grub", params: " quiet",
			evidence: []string{"GRUB config: /boot/grub/grub.cfg", "GRUB defaults: /etc/default/grub"},
			conflict: []string{"systemd-boot entries: /efi/loader/entries"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, cfg := bootOf(t, tt.files)
			if cfg.Loader != tt.loader || cfg.Cmdline.Cmdline != tt.params {
				t.Errorf("loader %q with %q, want %q with %q", cfg.Loader, cfg.Cmdline.Cmdline, tt.loader, tt.params)
			}
			if diff := cmp.Diff(tt.evidence, cfg.LoaderEvidence, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("evidence (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.conflict, cfg.LoaderConflict, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("conflict (-want +got):\n%s", diff)
			}
			if errs := bootErrors(snap); len(errs) > 0 {
				t.Errorf("errors: %s", strings.Join(errs, "\n"))
			}
		})
	}
}

// deniedUnder is a Source where everything below dir cannot be opened, as
// for an unprivileged collection of an ESP mounted with umask=0077.
type deniedUnder struct {
	Source
	dir string
}

func (d deniedUnder) denied(op, name string) error {
	if name == d.dir || strings.HasPrefix(name, d.dir+"/") {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrPermission}
	}
	return nil
}

func (d deniedUnder) Open(name string) (fs.File, error) {
	if err := d.denied("open", name); err != nil {
		return nil, err
	}
	return d.Source.Open(name)
}

func (d deniedUnder) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := d.denied("open", name); err != nil {
		return nil, err
	}
	return d.Source.ReadDir(name)
}

func (d deniedUnder) Stat(name string) (fs.FileInfo, error) {
	if err := d.denied("stat", path.Dir(name)); err != nil {
		return nil, err
	}
	return d.Source.Stat(name)
}

func (d deniedUnder) Lstat(name string) (fs.FileInfo, error) {
	if err := d.denied("lstat", path.Dir(name)); err != nil {
		return nil, err
	}
	return d.Source.Lstat(name)
}

// TestBootLoaderEvidenceUnprivileged: looking for a loader's files on an
// ESP the collection cannot enter is no error on a GRUB host (Ubuntu's
// /boot/efi is mounted with umask=0077).
func TestBootLoaderEvidenceUnprivileged(t *testing.T) {
	files := fstest.MapFS{
		"etc/default/grub":               {Data: []byte("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\n")},
		"proc/cmdline":                   {Data: []byte("BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=1 ro quiet splash\n")},
		"boot/grub/grub.cfg":             {Data: []byte("menuentry 'Ubuntu' {\n}\n")},
		"boot/efi/EFI/ubuntu/grub.cfg":   {Data: []byte("configfile $prefix/grub.cfg\n")},
		"boot/efi/loader/loader.conf":    {Data: []byte("timeout 3\n")},
		"boot/efi/loader/entries/a.conf": {Data: []byte("linux /a\noptions a=1\n")},
	}
	snap, err := Collect(context.Background(), Target{Files: deniedUnder{FS(files), "boot/efi"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := snap.Boot.Configured
	if cfg.Loader != "grub" || len(cfg.LoaderConflict) > 0 {
		t.Errorf("loader %q, conflict %q: want grub, nothing unreadable counted", cfg.Loader, cfg.LoaderConflict)
	}
	if errs := bootErrors(snap); len(errs) > 0 {
		t.Errorf("errors: %q", errs)
	}
}
