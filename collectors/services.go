package collectors

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

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
// file, drop-in or system.conf, as systemd's config_parse (v252,
// src/shared/conf-parser.c:276, parse_line :168) reads them: lines end as read_line() ends them,
// "#" and ";" comment lines (even inside a continuation), a trailing
// backslash continues the line, keys are case-sensitive. A line that is not
// "key=value" is logged and skipped ("Missing '=', ignoring line"). A
// section header that does not close or holds unsafe characters, and
// invalid UTF-8, make config_parse give up on the file: stopped is then
// true and what came before it is all that was read.
func parseUnitSetting(data []byte, section, key string) (out []unitAssignment, errs []error, stopped bool) {
	current := ""
	cont, hasCont, start := "", false, 0
	bomSeen := false
	lines := systemdLines(data)
	handle := func(n int, l string) bool {
		l = strings.Trim(l, sysctlWhitespace)
		switch {
		case l == "":
		case !utf8.ValidString(l):
			errs = append(errs, confLineErrorf(n, "invalid UTF-8; systemd stops reading the file here"))
			return false
		case l[0] == '[':
			if l[len(l)-1] != ']' {
				errs = append(errs, confLineErrorf(n, "invalid section header %q; systemd stops reading the file here", l))
				return false
			}
			if !sectionNameIsSafe(l[1 : len(l)-1]) {
				errs = append(errs, confLineErrorf(n, "bad characters in section header %q; systemd stops reading the file here", l))
				return false
			}
			current = l[1 : len(l)-1]
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				if current == section {
					errs = append(errs, confLineErrorf(n, "missing '=' in %q; systemd ignores the line", l))
				}
				return true
			}
			if current == section && strings.Trim(k, sysctlWhitespace) == key {
				out = append(out, unitAssignment{Line: n, Value: strings.Trim(v, sysctlWhitespace)})
			}
		}
		return true
	}
	for i, buf := range lines {
		n := i + 1
		if l := strings.TrimLeft(buf, sysctlWhitespace); l != "" && (l[0] == '#' || l[0] == ';') {
			continue
		}
		if !bomSeen && strings.HasPrefix(buf, logindBOM) {
			buf, bomSeen = buf[len(logindBOM):], true
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
		if !handle(start, line) {
			return out, errs, true
		}
	}
	if hasCont && !handle(start, cont) {
		return out, errs, true
	}
	return out, errs, false
}

// parseRlimitKB reads a LimitMEMLOCK= value as systemd's rlimit_parse
// (v252, src/basic/rlimit-util.c:259; parse-util.c:136 parse_size) does for a size: "infinity", or a size as
// parse_size reads it with base 1024, and "soft:hard" to set the two apart
// (soft above hard is refused). Each side is returned as KiB ("8192") or
// "unlimited". An empty value is refused too: config_parse_rlimit has no
// reset, so an earlier assignment stays.
func parseRlimitKB(value string) (soft, hard string, err error) {
	s, h, split := strings.Cut(value, ":")
	if value == "" {
		return "", "", fmt.Errorf("%w: empty value", ErrParse)
	}
	sb, err := parseRlimitBytes(s)
	if err != nil {
		return "", "", err
	}
	hb := sb
	if split && h != "" {
		if strings.Contains(h, ":") {
			return "", "", fmt.Errorf("%w: more than soft:hard: %q", ErrParse, hwClip(value))
		}
		if hb, err = parseRlimitBytes(h); err != nil {
			return "", "", err
		}
		if sb > hb {
			return "", "", fmt.Errorf("%w: soft limit above the hard limit: %q", ErrParse, hwClip(value))
		}
	}
	return rlimitKB(sb), rlimitKB(hb), nil
}

func rlimitKB(b uint64) string {
	if b == rlimInfinity {
		return "unlimited"
	}
	return strconv.FormatUint(b/1024, 10)
}

// iecSuffixes is parse_size's table for base 1024, largest first.
var iecSuffixes = []struct {
	suffix string
	factor uint64
}{
	{"E", 1 << 60}, {"P", 1 << 50}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}, {"", 1},
}

// parseRlimitBytes is rlimit_parse_size: "infinity" or parse_size(v, 1024),
// a sum of numbers each with a smaller suffix than the one before ("1G
// 512M"), each with an optional fraction.
func parseRlimitBytes(v string) (uint64, error) {
	if v == "infinity" {
		return rlimInfinity, nil
	}
	bad := func(why string) (uint64, error) {
		return 0, fmt.Errorf("%w: %s: %q", ErrParse, why, hwClip(v))
	}
	var total uint64
	p, startPos := v, 0
	for {
		p = strings.TrimLeft(p, sysctlWhitespace)
		// strtoull: optional sign, then digits
		q := p
		neg := false
		if q != "" && (q[0] == '+' || q[0] == '-') {
			neg = q[0] == '-'
			q = q[1:]
		}
		d := 0
		for d < len(q) && q[d] >= '0' && q[d] <= '9' {
			d++
		}
		if d == 0 {
			return bad("not a size or \"infinity\"")
		}
		if neg {
			return bad("negative size")
		}
		whole, err := strconv.ParseUint(q[:d], 10, 64)
		if err != nil {
			return bad("size out of range")
		}
		e := q[d:]
		var frac float64
		if strings.HasPrefix(e, ".") {
			e = e[1:]
			f := 0
			for f < len(e) && e[f] >= '0' && e[f] <= '9' {
				f++
			}
			if f > 0 {
				frac, _ = strconv.ParseFloat("0."+e[:f], 64)
				e = e[f:]
			}
		}
		e = strings.TrimLeft(e, sysctlWhitespace)
		i := startPos
		for ; i < len(iecSuffixes); i++ {
			if strings.HasPrefix(e, iecSuffixes[i].suffix) {
				break
			}
		}
		if i == len(iecSuffixes) {
			return bad("not a size or \"infinity\"")
		}
		factor := iecSuffixes[i].factor
		extra := uint64(0)
		if frac > 0 {
			extra = 1
		}
		if whole+extra > math.MaxUint64/factor {
			return bad("size out of range")
		}
		add := whole*factor + uint64(frac*float64(factor))
		if add > math.MaxUint64-total {
			return bad("size out of range")
		}
		total += add
		p = e[len(iecSuffixes[i].suffix):]
		startPos = i + 1
		if p == "" {
			break
		}
	}
	if total >= rlimInfinity {
		return bad("size out of range")
	}
	return total, nil
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
	report := func(f string, err error, skipped bool) {
		if key := f + "\x00" + err.Error(); !reported[key] {
			reported[key] = true
			if skipped {
				c.skipped(collector, f, err)
			} else {
				c.fail(collector, f, err)
			}
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
			for i, f := range files {
				data, ok := c.read(collector, f)
				if !ok {
					continue
				}
				as, errs, stopped := parseUnitSetting(data, "Service", "LimitMEMLOCK")
				for _, err := range errs {
					// systemd skips a bad line, and a drop-in it gives up
					// on counts up to there (load-dropin.c:117 ignores
					// config_parse's result); a unit file it gives up on
					// fails to load (load-fragment.c:6137-6146
					// unit_load_fragment returns the error), so the unit's limit is unknown.
					report(f, err, !(stopped && i == 0))
				}
				for _, a := range as {
					if _, _, err := parseRlimitKB(a.Value); err != nil {
						// conf-parser.c:1554 config_parse_rlimit: "Failed
						// to parse resource value, ignoring"; an earlier
						// value stays.
						report(f, confLineErrorf(a.Line, "LimitMEMLOCK=%s: %v; systemd ignores the assignment", a.Value, err), true)
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
	// main.c:689 parse_config_file ignores config_parse_many's result: a bad
	// line is skipped, and a file config_parse gives up on ends the
	// reading with what was parsed so far.
	for _, f := range files {
		data, ok := c.read(collector, f)
		if !ok {
			continue
		}
		as, errs, stopped := parseUnitSetting(data, "Manager", "DefaultLimitMEMLOCK")
		for _, err := range errs {
			c.skipped(collector, f, err)
		}
		for _, a := range as {
			soft, hard, err := parseRlimitKB(a.Value)
			if err != nil {
				c.skipped(collector, f, confLineErrorf(a.Line, "DefaultLimitMEMLOCK=%s: %v; systemd ignores the assignment", a.Value, err))
				continue
			}
			limit, from = &snapshot.MemlockLimit{Soft: soft, Hard: hard}, c.at(f, a.Line)
		}
		if stopped {
			break
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
	scan := c.procs()
	if scan.listErr != nil {
		c.fail("services", "/proc", scan.listErr)
	}
	// A comm that cannot be read is filed by the processes family; a
	// second entry for it would say nothing new.
	for _, p := range scan.procs {
		if p.pid == 0 || p.pid > math.MaxInt || p.err != nil || p.gone {
			continue
		}
		pid := int(p.pid)
		if wanted[p.comm] {
			if old, ok := found[p.comm]; !ok || pid < old {
				found[p.comm] = pid
			}
		}
	}
	return found
}
