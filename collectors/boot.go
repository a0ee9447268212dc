package collectors

import (
	"strconv"
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
// loader configuration will pass at the next boot. Which boot loader that
// is comes from the evidence it leaves (see decideLoader); its default
// entry gives the command line, or the GRUB defaults, or /etc/kernel/cmdline.
func collectBoot(c *collection) {
	boot := &c.snap.Boot
	boot.Running = c.runningCmdline()

	grub, eval := c.grubCmdline()
	kernel := c.kernelCmdlineFile()
	boot.Configured.Grub = grub
	boot.Configured.KernelCmdline = kernel

	lc := c.decideLoader(boot.Running)
	var entries *bootEntries
	if lc.sdBoot {
		entries = lc.sd
	} else {
		entries = c.collectGrubBLS(eval)
	}
	switch {
	case entries != nil:
		c.useEntries(entries)
	case grub != nil && !lc.sdBoot && grub.Aborted != "":
		// grub-mkconfig cannot run: the next boot keeps grub.cfg, which is
		// not read here. The error says so.
		boot.Configured.Loader = "grub"
	case grub != nil && !lc.sdBoot:
		boot.Configured.Loader = "grub"
		boot.Configured.Cmdline = snapshot.Cmdline{Present: true, Cmdline: grub.Cmdline, Params: grub.Params, InitArgs: grub.InitArgs}
		c.copySources("boot.configured.grub.", "boot.configured.", grub.Params)
	case kernel != nil:
		boot.Configured.Loader = "kernel-cmdline"
		boot.Configured.Cmdline = *kernel
		c.copySources("boot.configured.kernel_cmdline.", "boot.configured.", kernel.Params)
	}
	c.recordLoaderEvidence(lc, entries)
}

// copySources cites a params map's provenance again under another prefix.
func (c *collection) copySources(from, to string, params map[string]string) {
	for name := range params {
		if p, ok := c.snap.Sources[from+"params."+name]; ok {
			c.snap.Sources[to+"params."+name] = p
		}
	}
	if p, ok := c.snap.Sources[from+"cmdline"]; ok {
		c.snap.Sources[to+"cmdline"] = p
	}
}

// useEntries makes the default entry's command line the configured one.
func (c *collection) useEntries(be *bootEntries) {
	cfg := &c.snap.Boot.Configured
	cfg.Loader = be.loader
	cfg.Entries = be.entries
	cfg.DefaultBy = be.defaultBy
	if len(be.env) > 0 {
		cfg.Grubenv = be.env
	}
	for fact, p := range be.sources {
		c.snap.Sources["boot.configured."+fact] = p
	}
	if be.def < 0 {
		// Which entry boots is unknown (reported as an error): no
		// configured command line rather than a guessed one.
		return
	}
	def := be.def
	cfg.DefaultEntry = &def
	cfg.Cmdline = be.entries[def].Cmdline
	c.copySources("boot.configured.entries."+strconv.Itoa(def)+".", "boot.configured.", cfg.Params)
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
// defaults on this host. The command line they give is in the result's
// Cmdline and Params, cited under boot.configured.grub.
func (c *collection) grubCmdline() (*snapshot.GrubDefaults, *GrubEvaluation) {
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
		return nil, nil
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
	if a := res.Aborted; a != nil {
		grub.Aborted = ShellOrigin{File: a.File, Line: a.Line}.String()
	}
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
		if at := v.val.AssignedAt; v.val.Set && at.File == "" && v.val.Unknown != nil {
			// Unknown since grub-mkconfig stopped reading.
			c.from(v.fact, v.val.Unknown.At.File, v.val.Unknown.At.Line)
		} else if v.val.Set {
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
	grub.Cmdline, grub.Params, grub.InitArgs = text.String(), parsed.Params(), parsed.InitArgs
	for name := range grub.Params {
		arg, _ := parsed.Last(name)
		// A parameter is cited where its first character was written: the
		// assignment that introduced it, even when its value is expanded
		// from elsewhere.
		if o := origins[arg.Offset]; o.File != "" {
			c.from("boot.configured.grub.params."+name, o.File, o.Line)
		}
	}
	for _, v := range []struct {
		val ShellValue
		out *string
	}{{res.Default, &grub.Default}, {res.EnableBLSCfg, &grub.EnableBLSCfg}} {
		if v.val.Set && v.val.Unknown == nil {
			*v.out = v.val.String()
		}
	}
	return grub, &res
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
