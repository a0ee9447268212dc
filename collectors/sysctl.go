package collectors

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// sysctlDirs are systemd-sysctl's CONF_PATHS("sysctl.d"), highest priority
// first; /lib/sysctl.d is read by procps and split-/usr systemd builds.
var sysctlDirs = []string{
	"/etc/sysctl.d",
	"/run/sysctl.d",
	"/usr/local/lib/sysctl.d",
	"/usr/lib/sysctl.d",
	"/lib/sysctl.d",
}

// sysctlLegacyFile is applied last by procps "sysctl --system". systemd-sysctl
// reads it only through the /etc/sysctl.d/99-sysctl.conf link that Debian,
// Ubuntu and RHEL ship, so a file reached that way is not read twice.
const sysctlLegacyFile = "/etc/sysctl.conf"

// builtinSysctls are read from /proc/sys on every host: the keys the policy
// library needs even when nothing configures them.
var builtinSysctls = []string{
	"kernel.numa_balancing",
	"kernel.perf_event_paranoid",
	"kernel.pid_max",
	"kernel.shmall",
	"kernel.shmmax",
	"vm.max_map_count",
	"vm.nr_hugepages",
	"vm.overcommit_memory",
	"vm.swappiness",
	"vm.zone_reclaim_mode",
	"fs.file-max",
	"fs.nr_open",
	"net.core.rmem_max",
	"net.core.somaxconn",
	"net.core.wmem_max",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_available_congestion_control",
	"net.ipv4.tcp_congestion_control",
	"net.ipv4.tcp_tw_recycle",
}

func collectSysctl(c *collection) {
	const name = "sysctl"
	s := &c.snap.Sysctl
	s.Configured = map[string]string{}
	s.Running = map[string]string{}
	s.Missing = []string{}
	s.Files = []string{}

	// Later files override earlier ones, and a later assignment of a key
	// overrides an earlier one: what is left is what gets applied.
	files := c.listConfFiles(name, sysctlDirs, ".conf")
	legacy := c.realPath(sysctlLegacyFile)
	paths := make([]string, 0, len(files)+1)
	for _, f := range files {
		paths = append(paths, f.Real)
	}
	if !slices.Contains(paths, legacy) && legacy != "/dev/null" {
		paths = append(paths, legacy)
	}
	for _, file := range paths {
		data, ok := c.read(name, file)
		if !ok {
			continue
		}
		s.Files = append(s.Files, file)
		assignments, errs := parseSysctlConf(data)
		for _, err := range errs {
			// systemd-sysctl and procps "sysctl --system" both skip
			// the line and apply the rest.
			c.skipped(name, file, err)
		}
		for _, a := range assignments {
			fact := "sysctl.configured." + a.Key
			if a.Exclude {
				// systemd replaces the assignment with a value-less one
				// and skips it when applying.
				delete(s.Configured, a.Key)
				delete(c.snap.Sources, fact)
				continue
			}
			s.Configured[a.Key] = a.Value
			c.from(fact, file, a.Line)
		}
	}

	// Without /proc/sys (a rendered config repo) nothing runs, so nothing
	// configured can be called missing.
	if _, err := c.src.Stat("proc/sys"); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.fail(name, "/proc/sys", err)
		}
		return
	}
	configured := map[string]bool{}
	wanted := slices.Clone(builtinSysctls)
	for key := range s.Configured {
		if !isSysctlGlob(key) {
			configured[key] = true
			wanted = append(wanted, key)
		}
	}
	for _, key := range c.opts.ExtraSysctls {
		norm := sysctlName(strings.Trim(key, sysctlWhitespace))
		if msg := sysctlKeyProblem(norm); msg != "" || isSysctlGlob(norm) {
			if msg == "" {
				msg = "glob patterns are not read"
			}
			c.fail(name, key, fmt.Errorf("extra sysctl %q: %s", key, msg))
			continue
		}
		wanted = append(wanted, norm)
	}
	slices.Sort(wanted)
	for _, key := range slices.Compact(wanted) {
		file := sysctlFile(key)
		data, err := readCapped(c.src, file, c.opts.MaxFileSize)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if configured[key] {
				s.Missing = append(s.Missing, key)
			}
			continue
		case err != nil:
			c.fail(name, file, err)
			continue
		}
		// The kernel ends every value with "\n"; fields inside a value
		// (ip_local_port_range, printk) stay tab-separated as it prints them.
		s.Running[key] = strings.TrimSuffix(string(data), "\n")
		c.from("sysctl.running."+key, file, 0)
	}
	// A missing key's source is the file that sets it: the line to remove.
	var places []snapshot.Provenance
	for _, key := range s.Missing {
		if p, ok := c.snap.Sources["sysctl.configured."+key]; ok {
			places = append(places, p)
		}
	}
	c.fromAll("sysctl.missing", places)
}
