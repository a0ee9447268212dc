package snapshot

// Boot is the kernel command line, as running and as configured for the next boot.
type Boot struct {
	Running    Cmdline    `json:"running"`
	Configured BootConfig `json:"configured"`
}

// Cmdline is one kernel command line and its parameters, split as the kernel
// splits them. A flag without "=" has the value "". When a parameter repeats,
// the last occurrence wins, as in the kernel.
type Cmdline struct {
	Present bool              `json:"present"`
	Cmdline string            `json:"cmdline"`
	Params  map[string]string `json:"params"`
	// InitArgs are the words after a bare "--", which the kernel passes to
	// init and does not interpret.
	InitArgs []string `json:"init_args,omitempty"`
}

// BootConfig is the command line the boot loader configuration will pass at the
// next boot.
type BootConfig struct {
	// Loader names the configuration the params come from: "grub" (the
	// GRUB defaults, which grub-mkconfig writes into grub.cfg), "grub-bls"
	// (GRUB reading Boot Loader Specification entries: RHEL, Rocky, Alma,
	// Fedora, Amazon Linux 2023), "systemd-boot" (its entries),
	// "kernel-cmdline" (/etc/kernel/cmdline, for UKIs and kernel-install) or
	// "" when none is present. With entries, the params are the default
	// entry's, as the boot loader expands them.
	Loader string `json:"loader"`
	// LoaderEvidence is what decided Loader, strongest first: the loader
	// that started the running kernel ("LoaderInfo EFI variable:
	// systemd-boot 252.39-1~deb12u2", "BOOT_IMAGE= in /proc/cmdline",
	// "initrd=\... in /proc/cmdline without BOOT_IMAGE="), then what is
	// installed ("systemd-boot loader.conf: /efi/loader/loader.conf",
	// "GRUB config: /boot/grub/grub.cfg", "GRUB defaults:
	// /etc/default/grub", ...). The running loader's evidence wins over
	// files a previous loader or an installer left behind.
	LoaderEvidence []string `json:"loader_evidence,omitempty"`
	// LoaderConflict is evidence for a loader other than Loader: another
	// loader installed with a boot menu of its own (systemd-boot entries,
	// a grub.cfg), or a running kernel another loader started. Editing
	// that loader's configuration changes nothing at the next boot unless
	// the firmware starts it instead. Leftover defaults alone
	// (/etc/default/grub without grub.cfg) are not a conflict.
	LoaderConflict []string `json:"loader_conflict,omitempty"`
	Cmdline
	// Grub holds the GRUB variables after sourcing /etc/default/grub and grub.d.
	Grub *GrubDefaults `json:"grub,omitempty"`
	// KernelCmdline is /etc/kernel/cmdline (or /usr/lib/kernel/cmdline) when present.
	KernelCmdline *Cmdline `json:"kernel_cmdline,omitempty"`
	// Entries are the boot loader's entries in its menu order (newest
	// first), for the grub-bls and systemd-boot loaders.
	Entries []BootEntry `json:"entries,omitempty"`
	// DefaultEntry is the index in Entries of the entry the next boot
	// uses; absent when there are no entries.
	DefaultEntry *int `json:"default_entry,omitempty"`
	// DefaultBy says how the boot loader chose it: "saved_entry",
	// "next_entry", "GRUB_DEFAULT", "loader.conf default",
	// "LoaderEntryDefault", "LoaderEntryOneShot" or "first" (its first
	// entry, when nothing names one or the name matches none).
	DefaultBy string `json:"default_by,omitempty"`
	// Grubenv holds the GRUB environment block variables the entries and
	// the default choice read (kernelopts, tuned_params, saved_entry, ...);
	// other variables are left out.
	Grubenv map[string]string `json:"grubenv,omitempty"`
}

// BootEntry is one Boot Loader Specification type #1 entry
// (/boot/loader/entries/*.conf) as its boot loader reads it.
type BootEntry struct {
	// ID is the boot loader's name for it: the file name without ".conf"
	// for GRUB (saved_entry names it), the lower-cased file name for
	// systemd-boot.
	ID      string `json:"id"`
	File    string `json:"file"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
	Linux   string `json:"linux,omitempty"`
	// Options is the options text as written, before expansion.
	Options string `json:"options"`
	// Cmdline is the command line the entry boots with: options with GRUB
	// environment variables expanded.
	Cmdline
	// Vars maps each param to the GRUB environment variable it was
	// expanded from ("kernelopts", "tuned_params"); written-out params are
	// not listed.
	Vars map[string]string `json:"vars,omitempty"`
	// Unset names variables the options use that the GRUB environment does
	// not set: GRUB expands them to nothing.
	Unset []string `json:"unset,omitempty"`
}

// GrubDefaults are the two command-line variables grub-mkconfig passes to
// Linux entries. Normal entries get LINUX followed by LINUX_DEFAULT.
type GrubDefaults struct {
	CmdlineLinux        string `json:"cmdline_linux"`
	CmdlineLinuxDefault string `json:"cmdline_linux_default"`
	// Cmdline and Params are the command line grub-mkconfig gives normal
	// entries: CmdlineLinux, a space, CmdlineLinuxDefault. Left out when
	// empty, so snapshots written before they existed read back unchanged.
	Cmdline  string            `json:"cmdline,omitempty"`
	Params   map[string]string `json:"params,omitempty"`
	InitArgs []string          `json:"init_args,omitempty"`
	// Default is GRUB_DEFAULT ("" when unset: the first entry) and
	// EnableBLSCfg GRUB_ENABLE_BLSCFG.
	Default      string `json:"default,omitempty"`
	EnableBLSCfg string `json:"enable_blscfg,omitempty"`
	// Files are the files sourced, in order.
	Files []string `json:"files"`
	// Unknown names the variables (of the two) that cannot be evaluated without
	// running the shell; they are left out of the configured params and
	// reported in errors.
	Unknown []string `json:"unknown,omitempty"`
	// Aborted is the file:line of a syntax error, where grub-mkconfig's
	// /bin/sh exits: update-grub fails, grub.cfg keeps what its last run
	// wrote, and the configured command line is unknown (not present).
	Aborted string `json:"aborted,omitempty"`
}
