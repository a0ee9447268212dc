package collectors

import (
	"slices"
	"strings"
)

const (
	procModules = "/proc/modules"
	etcModules  = "/etc/modules"
)

// modulesLoadDirs in precedence order (modules-load.d(5)): a file in an
// earlier directory overrides one of the same name in a later one; /lib is
// read on split-/usr systems.
var modulesLoadDirs = []string{
	"/etc/modules-load.d",
	"/run/modules-load.d",
	"/usr/local/lib/modules-load.d",
	"/usr/lib/modules-load.d",
	"/lib/modules-load.d",
}

func collectModules(c *collection) {
	m := &c.snap.Modules
	m.Configured = map[string]bool{}

	data, ok := c.read("modules", procModules)
	if !ok && !c.opts.ConfigOnly && !c.snap.Source.Image && c.missing(procModules) {
		// A live root whose /proc lacks it: the loaded modules are unknown,
		// not none. Left out, and said, so that no rule reports a module as
		// not loaded. (An image has no running state at all: the snapshot's
		// source says so once.)
		c.fail("modules", procModules, errRunningStateUnknown)
	}
	if ok {
		m.Loaded = []string{}
		mods, errs := parseProcModules(data)
		for _, err := range errs {
			c.fail("modules", procModules, err)
		}
		for _, mod := range mods {
			m.Loaded = append(m.Loaded, mod.Name)
		}
		slices.Sort(m.Loaded)
		m.Loaded = slices.Compact(m.Loaded)
		c.from("modules.loaded", procModules, 0)
	}

	configure := func(file string, mods []configuredModule) {
		for _, mod := range mods {
			if !m.Configured[mod.Name] {
				m.Configured[mod.Name] = true
				c.from("modules.configured."+mod.Name, file, mod.Line)
			}
		}
	}
	etcModulesReal, _ := RealPath(c.src, etcModules)
	chosen := map[string]string{}
	for _, dir := range modulesLoadDirs {
		for _, e := range c.readDir("modules", dir) {
			if _, taken := chosen[e.Name()]; !taken && strings.HasSuffix(e.Name(), ".conf") {
				chosen[e.Name()] = dir + "/" + e.Name()
			}
		}
	}
	// /etc/modules first: Debian's systemd links modules-load.d/modules.conf
	// to it, and the file itself is the better provenance. Read through
	// that link, systemd-modules-load looks each whole line up as a module
	// name, so the parameters modules(5) allows (for kmod's sysvinit
	// script, which kmod.service replaces under systemd) make the line
	// load nothing.
	viaSystemd := false
	for _, file := range chosen {
		if real, err := RealPath(c.src, file); err == nil && real == etcModulesReal {
			viaSystemd = true
		}
	}
	if data, ok := c.read("modules", etcModules); ok {
		parse := parseEtcModules
		if viaSystemd {
			parse = parseModulesLoadD
		}
		mods, errs := parse(data)
		for _, err := range errs {
			c.skipped("modules", etcModules, err)
		}
		configure(etcModules, mods)
	}

	// systemd applies the winners in file-name order, whatever their directory.
	names := make([]string, 0, len(chosen))
	for name := range chosen {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		file := chosen[name]
		if real, err := RealPath(c.src, file); err == nil && real == etcModulesReal {
			continue
		}
		data, ok := c.read("modules", file)
		if !ok {
			continue
		}
		mods, errs := parseModulesLoadD(data)
		for _, err := range errs {
			c.skipped("modules", file, err)
		}
		configure(file, mods)
	}
	collectRDMAModules(c, configure)
	collectModprobeD(c)
}

// collectModprobeD records what modprobe.d blocks; the maps stay nil (and
// out of the snapshot) when nothing does. A module is blacklisted
// by any line; the first install line for a name is the one kmod runs.
func collectModprobeD(c *collection) {
	m := &c.snap.Modules
	for _, f := range c.listConfFiles("modules", modprobeDirs, ".conf") {
		data, ok := c.read("modules", f.Real)
		if !ok {
			continue
		}
		dirs, errs := parseModprobeConf(data)
		for _, err := range errs {
			// kmod ignores the line and applies the rest.
			c.skipped("modules", f.Real, err)
		}
		for _, d := range dirs {
			switch d.Cmd {
			case "blacklist":
				if !m.Blacklisted[d.Module] {
					if m.Blacklisted == nil {
						m.Blacklisted = map[string]bool{}
					}
					m.Blacklisted[d.Module] = true
					c.from("modules.blacklisted."+d.Module, f.Real, d.Line)
				}
			case "install":
				if _, ok := m.Install[d.Module]; !ok {
					if m.Install == nil {
						m.Install = map[string]string{}
					}
					m.Install[d.Module] = d.Command
					c.from("modules.install."+d.Module, f.Real, d.Line)
				}
			}
		}
	}
}
