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
	// Loader names the configuration the params come from: "grub",
	// "kernel-cmdline" (/etc/kernel/cmdline, systemd-boot and UKIs) or "" when
	// none is present.
	Loader string `json:"loader"`
	Cmdline
	// Grub holds the GRUB variables after sourcing /etc/default/grub and grub.d.
	Grub *GrubDefaults `json:"grub,omitempty"`
	// KernelCmdline is /etc/kernel/cmdline (or /usr/lib/kernel/cmdline) when present.
	KernelCmdline *Cmdline `json:"kernel_cmdline,omitempty"`
}

// GrubDefaults are the two command-line variables grub-mkconfig passes to
// Linux entries. Normal entries get LINUX followed by LINUX_DEFAULT.
type GrubDefaults struct {
	CmdlineLinux        string `json:"cmdline_linux"`
	CmdlineLinuxDefault string `json:"cmdline_linux_default"`
	// Files are the files sourced, in order.
	Files []string `json:"files"`
	// Unknown names the variables (of the two) that cannot be evaluated without
	// running the shell; they are left out of the configured params and
	// reported in errors.
	Unknown []string `json:"unknown,omitempty"`
}
