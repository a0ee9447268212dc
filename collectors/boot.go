package collectors

import (
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

const (
	bootCollector   = "boot"
	procCmdline     = "/proc/cmdline"
	grubDefaultFile = "/etc/default/grub"
	grubDefaultDir  = "/etc/default/grub.d"
)

// kernelCmdlineFiles are read by kernel-install (90-loaderentry.install,
// 60-ukify.install) in this order; the first present wins.
var kernelCmdlineFiles = []string{"/etc/kernel/cmdline", "/usr/lib/kernel/cmdline"}

// collectBoot reads the running kernel command line and the one the boot
// loader configuration will pass at the next boot.
func collectBoot(c *collection) {
	boot := &c.snap.Boot
	boot.Running = c.runningCmdline()

	grub, grubCmdline := c.grubCmdline()
	kernel := c.kernelCmdlineFile()
	boot.Configured.Grub = grub
	boot.Configured.KernelCmdline = kernel
	switch {
	case grub != nil:
		boot.Configured.Loader = "grub"
		boot.Configured.Cmdline = grubCmdline
	case kernel != nil:
		boot.Configured.Loader = "kernel-cmdline"
		boot.Configured.Cmdline = *kernel
		for name := range kernel.Params {
			c.snap.Sources["boot.configured.params."+name] = c.snap.Sources["boot.configured.kernel_cmdline.params."+name]
		}
		c.snap.Sources["boot.configured.cmdline"] = c.snap.Sources["boot.configured.kernel_cmdline.cmdline"]
	}
}

func (c *collection) runningCmdline() snapshot.Cmdline {
	data, ok := c.read(bootCollector, procCmdline)
	if !ok {
		return snapshot.Cmdline{}
	}
	// The kernel prints its command line followed by one newline.
	text := strings.TrimSuffix(string(data), "\n")
	parsed, err := ParseKernelCmdline(text)
	if err != nil {
		c.fail(bootCollector, procCmdline, err)
		text, _, _ = strings.Cut(text, "\x00")
	}
	cl := snapshot.Cmdline{Present: true, Cmdline: text, Params: parsed.Params(), InitArgs: parsed.InitArgs}
	c.from("boot.running.cmdline", procCmdline, 0)
	for name := range cl.Params {
		c.from("boot.running.params."+name, procCmdline, 0)
	}
	return cl
}

// grubCmdline sources the GRUB defaults as grub-mkconfig does: the main
// file when it exists, then grub.d/*.cfg in glob order (byte order here; the
// shell sorts by the locale's collation). It returns nil when GRUB has no
// defaults on this host.
func (c *collection) grubCmdline() (*snapshot.GrubDefaults, snapshot.Cmdline) {
	var files []GrubFile
	present := false
	read := func(name string) {
		errs := len(c.snap.Errors)
		if data, ok := c.read(bootCollector, name); ok {
			files = append(files, GrubFile{Name: name, Data: data})
			present = true
		} else if len(c.snap.Errors) > errs {
			present = true // there, but unreadable
		}
	}
	read(grubDefaultFile)
	for _, e := range c.readDir(bootCollector, grubDefaultDir) {
		// The glob *.cfg does not match names starting with a dot.
		if name := e.Name(); !strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".cfg") {
			read(grubDefaultDir + "/" + name)
		}
	}
	if !present {
		return nil, snapshot.Cmdline{}
	}

	res := EvalGrubDefaults(files, sourceFileTester{c.src})
	for _, e := range res.Errors {
		path := e.File
		if path == "" {
			path = grubDefaultFile
		}
		c.fail(bootCollector, path, e)
	}
	grub := &snapshot.GrubDefaults{Files: []string{}}
	for _, f := range files {
		grub.Files = append(grub.Files, f.Name)
	}

	// 10_linux passes "${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}"
	// to normal entries; the joining space comes from 10_linux itself.
	var segs []ShellSegment
	for i, v := range []struct {
		name, fact string
		val        ShellValue
		out        *string
	}{
		{"GRUB_CMDLINE_LINUX", "boot.configured.grub.cmdline_linux", res.Linux, &grub.CmdlineLinux},
		{"GRUB_CMDLINE_LINUX_DEFAULT", "boot.configured.grub.cmdline_linux_default", res.LinuxDefault, &grub.CmdlineLinuxDefault},
	} {
		if i > 0 {
			segs = append(segs, ShellSegment{Text: " "})
		}
		if v.val.Unknown != nil {
			// Reported as an error; the value is kept as the shell would
			// hold it if the uncertain part did not run.
			grub.Unknown = append(grub.Unknown, v.name)
		}
		*v.out = v.val.String()
		segs = append(segs, v.val.Segments...)
		if v.val.Set {
			c.from(v.fact, v.val.AssignedAt.File, v.val.AssignedAt.Line)
		} else {
			c.defaulted(v.fact, "not set in the GRUB defaults")
		}
	}

	var text strings.Builder
	var origins []ShellOrigin // of each byte of text
	for _, s := range segs {
		text.WriteString(s.Text)
		for range len(s.Text) {
			origins = append(origins, s.Origin)
		}
	}
	parsed, err := ParseKernelCmdline(text.String())
	if err != nil {
		c.fail(bootCollector, grubDefaultFile, err)
	}
	cl := snapshot.Cmdline{Present: true, Cmdline: text.String(), Params: parsed.Params(), InitArgs: parsed.InitArgs}
	for name := range cl.Params {
		arg, _ := parsed.Last(name)
		// A parameter is cited where its first character was written: the
		// assignment that introduced it, even when its value is expanded
		// from elsewhere.
		if o := origins[arg.Offset]; o.File != "" {
			c.from("boot.configured.params."+name, o.File, o.Line)
		}
	}
	return grub, cl
}

// kernelCmdlineFile reads the command line kernel-install gives new boot
// entries and UKIs.
func (c *collection) kernelCmdlineFile() *snapshot.Cmdline {
	for _, name := range kernelCmdlineFiles {
		errs := len(c.snap.Errors)
		data, ok := c.read(bootCollector, name)
		if !ok {
			if len(c.snap.Errors) > errs {
				// There but unreadable: present, with what it says unknown.
				return &snapshot.Cmdline{Present: true, Params: map[string]string{}}
			}
			continue
		}
		text, parsed, err := ParseKernelCmdlineFile(data)
		if err != nil {
			c.fail(bootCollector, name, err)
		}
		cl := &snapshot.Cmdline{Present: true, Cmdline: text, Params: parsed.Params(), InitArgs: parsed.InitArgs}
		c.from("boot.configured.kernel_cmdline.cmdline", name, 0)
		for n := range cl.Params {
			arg, _ := parsed.Last(n)
			c.from("boot.configured.kernel_cmdline.params."+n, name, arg.Line)
		}
		return cl
	}
	return nil
}
