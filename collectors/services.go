package collectors

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// jobServices are the services whose children run jobs, with the name their
// main process shows in /proc/<pid>/comm.
var jobServices = []struct{ unit, comm string }{
	{"slurmd.service", "slurmd"},
	{"containerd.service", "containerd"},
	{"docker.service", "dockerd"},
	{"kubelet.service", "kubelet"},
	{"crio.service", "crio"},
}

// systemUnitDirs is systemd's system unit search path, highest priority
// first (systemd.unit(5), "System Unit Search Path").
var systemUnitDirs = []string{
	"/etc/systemd/system", "/run/systemd/system",
	"/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system",
}

// unitAssignment is one valid Key= line of the section asked for.
type unitAssignment struct {
	Line  int
	Value string
}

// parseUnitSetting reads the assignments of key in section from a unit
// file, drop-in or system.conf, as systemd's config_parse reads them: "#"
// and ";" comment lines, a trailing backslash continues the line, keys are
// case-sensitive. A line that is not "key=value" or a section header that
// does not close is an error (systemd logs it and goes on).
func parseUnitSetting(data []byte, section, key string) ([]unitAssignment, []error) {
	var out []unitAssignment
	var errs []error
	current := ""
	cont, hasCont, start := "", false, 0
	lines := confFileLines(data)
	handle := func(n int, l string) {
		l = strings.Trim(l, sysctlWhitespace)
		switch {
		case l == "":
		case l[0] == '[':
			if l[len(l)-1] != ']' {
				errs = append(errs, confLineErrorf(n, "invalid section header %q", l))
				current = ""
				return
			}
			current = l[1 : len(l)-1]
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				if current == section {
					errs = append(errs, confLineErrorf(n, "missing '=' in %q", l))
				}
				return
			}
			if current == section && strings.Trim(k, sysctlWhitespace) == key {
				out = append(out, unitAssignment{Line: n, Value: strings.Trim(v, sysctlWhitespace)})
			}
		}
	}
	for i, buf := range lines {
		n := i + 1
		if l := strings.TrimLeft(buf, sysctlWhitespace); !hasCont && l != "" && (l[0] == '#' || l[0] == ';') {
			continue
		}
		if !hasCont {
			start = n
		}
		line := buf
		if hasCont {
			line = cont + buf
		}
		if endsEscaped(line) {
			cont, hasCont = line[:len(line)-1]+" ", true
			continue
		}
		cont, hasCont = "", false
		handle(start, line)
	}
	if hasCont {
		handle(start, cont)
	}
	return out, errs
}

var rlimitSize = regexp.MustCompile(`^([0-9]+)(\.[0-9]+)?[ \t]*([KMGTPE]?)B?$`)

// parseRlimitKB reads a LimitMEMLOCK= value as systemd's rlimit_parse does
// for a size: "infinity", or a size with an optional base-1024 suffix
// (K, M, G, T, P, E), and "soft:hard" to set the two apart. Each side is
// returned as KiB ("8192") or "unlimited".
func parseRlimitKB(value string) (soft, hard string, err error) {
	s, h, split := strings.Cut(value, ":")
	if soft, err = parseRlimitOne(s); err != nil {
		return "", "", err
	}
	if !split {
		return soft, soft, nil
	}
	if hard, err = parseRlimitOne(h); err != nil {
		return "", "", err
	}
	return soft, hard, nil
}

func parseRlimitOne(v string) (string, error) {
	v = strings.Trim(v, sysctlWhitespace)
	if v == "infinity" {
		return "unlimited", nil
	}
	m := rlimitSize.FindStringSubmatch(v)
	if m == nil {
		return "", fmt.Errorf("%w: not a size or \"infinity\": %q", ErrParse, hwClip(v))
	}
	whole, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: size out of range: %q", ErrParse, hwClip(v))
	}
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40, "P": 50, "E": 60}[m[3]]
	bytes := float64(whole)
	if m[2] != "" {
		frac, _ := strconv.ParseFloat("0"+m[2], 64)
		bytes += frac
	}
	bytes *= math.Exp2(float64(shift))
	if bytes >= math.MaxUint64 {
		return "", fmt.Errorf("%w: size out of range: %q", ErrParse, hwClip(v))
	}
	return strconv.FormatUint(uint64(bytes)/1024, 10), nil
}

// parseProcLimitsMemlock reads the "Max locked memory" line of
// /proc/<pid>/limits: soft and hard in bytes, or "unlimited".
func parseProcLimitsMemlock(data []byte) (soft, hard string, err error) {
	for i, line := range confFileLines(data) {
		rest, ok := strings.CutPrefix(line, "Max locked memory")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return "", "", confLineErrorf(i+1, "want soft and hard limits, got %q", hwClip(line))
		}
		var out [2]string
		for j, v := range f[:2] {
			if v == "unlimited" {
				out[j] = v
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return "", "", confLineErrorf(i+1, "limit %q is not a number of bytes", hwClip(v))
			}
			out[j] = strconv.FormatUint(n/1024, 10)
		}
		return out[0], out[1], nil
	}
	return "", "", fmt.Errorf("%w: no \"Max locked memory\" line", ErrParse)
}

func collectServices(c *collection) {
	const collector = "services"
	units := map[string]snapshot.ServiceUnit{}
	c.snap.Services.Units = units
	defaultMemlock, defaultFrom := c.managerDefaultMemlock()
	running := c.runningServices()
	// service.d drop-ins apply to every unit: report a bad line once.
	reported := map[string]bool{}
	fail := func(f string, err error) {
		if key := f + "\x00" + err.Error(); !reported[key] {
			reported[key] = true
			c.fail(collector, f, err)
		}
	}
	for _, js := range jobServices {
		fact := "services.units." + js.unit
		u := snapshot.ServiceUnit{DropIns: []string{}}
		file, found := c.firstExisting(unitPaths(js.unit))
		pid, isRunning := running[js.comm]
		if !found && !isRunning {
			continue
		}
		if found {
			u.File = c.realPath(file)
			u.Masked = u.File == "/dev/null"
			c.from(fact+".file", file, 0)
		}
		var setting *unitAssignment
		var settingFile string
		if found && !u.Masked {
			files := []string{file}
			for _, d := range c.listConfFiles(collector, unitDropInDirs(js.unit), ".conf") {
				u.DropIns = append(u.DropIns, d.Real)
				files = append(files, d.Path)
			}
			for _, f := range files {
				data, ok := c.read(collector, f)
				if !ok {
					continue
				}
				as, errs := parseUnitSetting(data, "Service", "LimitMEMLOCK")
				for _, err := range errs {
					fail(f, err)
				}
				for _, a := range as {
					if a.Value == "" { // an empty assignment resets
						setting, settingFile = nil, ""
						continue
					}
					if _, _, err := parseRlimitKB(a.Value); err != nil {
						fail(f, confLineErrorf(a.Line, "LimitMEMLOCK=%s: %v", a.Value, err))
						continue
					}
					setting, settingFile = &a, f
				}
			}
		}
		switch {
		case setting != nil:
			soft, hard, _ := parseRlimitKB(setting.Value)
			u.Memlock = &snapshot.MemlockLimit{Soft: soft, Hard: hard}
			c.from(fact+".memlock", settingFile, setting.Line)
		case defaultMemlock != nil && found && !u.Masked:
			u.Memlock = defaultMemlock
			c.snap.Sources[fact+".memlock"] = defaultFrom
		case found && !u.Masked:
			u.MemlockDefault = true
			c.defaulted(fact+".memlock_default", "no LimitMEMLOCK= or DefaultLimitMEMLOCK=: systemd's default (8M since systemd 251, else the kernel's)")
		}
		if isRunning {
			u.RunningPID = pid
			name := fmt.Sprintf("/proc/%d/limits", pid)
			if data, ok := c.read(collector, name); ok {
				soft, hard, err := parseProcLimitsMemlock(data)
				if err != nil {
					c.fail(collector, name, err)
				} else {
					u.RunningMemlock = &snapshot.MemlockLimit{Soft: soft, Hard: hard}
					c.from(fact+".running_memlock", name, 0)
				}
			}
			c.from(fact+".running_pid", fmt.Sprintf("/proc/%d/comm", pid), 0)
		}
		units[js.unit] = u
		if found {
			c.from(fact, file, 0)
		} else {
			c.from(fact, fmt.Sprintf("/proc/%d/comm", pid), 0)
		}
	}
}

func unitPaths(unit string) []string {
	out := make([]string, len(systemUnitDirs))
	for i, d := range systemUnitDirs {
		out[i] = path.Join(d, unit)
	}
	return out
}

// unitDropInDirs: <unit>.d and, since systemd 246, the service.d that
// applies to every service; systemd sorts their files together by name.
func unitDropInDirs(unit string) []string {
	var out []string
	for _, d := range systemUnitDirs {
		out = append(out, path.Join(d, unit+".d"), path.Join(d, "service.d"))
	}
	return out
}

// managerDefaultMemlock is DefaultLimitMEMLOCK= of system.conf and its
// drop-ins (the last assignment wins), nil when none sets it.
func (c *collection) managerDefaultMemlock() (*snapshot.MemlockLimit, snapshot.Provenance) {
	const collector = "services"
	var files []string
	if f, ok := c.firstExisting([]string{"/etc/systemd/system.conf", "/run/systemd/system.conf", "/usr/local/lib/systemd/system.conf", "/usr/lib/systemd/system.conf"}); ok {
		files = append(files, f)
	}
	for _, d := range c.listConfFiles(collector, []string{"/etc/systemd/system.conf.d", "/run/systemd/system.conf.d", "/usr/local/lib/systemd/system.conf.d", "/usr/lib/systemd/system.conf.d"}, ".conf") {
		files = append(files, d.Path)
	}
	var limit *snapshot.MemlockLimit
	var from snapshot.Provenance
	for _, f := range files {
		data, ok := c.read(collector, f)
		if !ok {
			continue
		}
		as, errs := parseUnitSetting(data, "Manager", "DefaultLimitMEMLOCK")
		for _, err := range errs {
			c.fail(collector, f, err)
		}
		for _, a := range as {
			if a.Value == "" {
				limit = nil
				continue
			}
			soft, hard, err := parseRlimitKB(a.Value)
			if err != nil {
				c.fail(collector, f, confLineErrorf(a.Line, "DefaultLimitMEMLOCK=%s: %v", a.Value, err))
				continue
			}
			limit, from = &snapshot.MemlockLimit{Soft: soft, Hard: hard}, c.at(f, a.Line)
		}
	}
	return limit, from
}

// runningServices maps each job service's comm to its lowest PID (the
// daemon, started before any child of the same name).
func (c *collection) runningServices() map[string]int {
	wanted := map[string]bool{}
	for _, js := range jobServices {
		wanted[js.comm] = true
	}
	found := map[string]int{}
	for _, e := range c.readDir("services", "/proc") {
		if c.ctx.Err() != nil {
			return found
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		// The processes collector reads the same files and reports one
		// it cannot read; a second entry for it would say nothing new.
		data, err := readCapped(c.src, "/proc/"+e.Name()+"/comm", 4096)
		if err != nil {
			continue
		}
		comm := strings.TrimSpace(string(data))
		if wanted[comm] {
			if old, ok := found[comm]; !ok || pid < old {
				found[comm] = pid
			}
		}
	}
	return found
}
