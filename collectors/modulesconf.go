package collectors

import (
	"fmt"
	"strconv"
	"strings"
)

// loadedModule is one line of /proc/modules.
type loadedModule struct {
	Name  string
	State string // Live, Loading or Unloading
	Line  int
}

// parseProcModules reads /proc/modules. The kernel's m_show prints
// "name size refcount deps state address [taints]", with "-" for an unknown
// refcount or no dependants, so a line has at least six fields.
func parseProcModules(data []byte) ([]loadedModule, []error) {
	var mods []loadedModule
	var errs []error
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		f := strings.Fields(raw)
		if len(f) == 0 {
			continue
		}
		if len(f) < 6 {
			errs = append(errs, fmt.Errorf("%w: line %d: %d fields, want at least 6", ErrParse, n, len(f)))
			continue
		}
		if !isModuleName(f[0]) {
			errs = append(errs, fmt.Errorf("%w: line %d: bad module name %.40q", ErrParse, n, f[0]))
			continue
		}
		if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
			errs = append(errs, fmt.Errorf("%w: line %d: size %.20q is not a number", ErrParse, n, f[1]))
			continue
		}
		switch f[4] {
		case "Live", "Loading", "Unloading":
		default:
			errs = append(errs, fmt.Errorf("%w: line %d: unknown state %.20q", ErrParse, n, f[4]))
			continue
		}
		mods = append(mods, loadedModule{Name: f[0], State: f[4], Line: n})
	}
	return mods, errs
}

// configuredModule is a module a boot-time list asks to load.
type configuredModule struct {
	Name string // normalised: "nvidia-peermem" becomes nvidia_peermem
	Line int
}

// parseModulesLoadD reads a modules-load.d(5) file: one module name per line;
// empty lines and lines whose first non-blank character is '#' or ';' are
// ignored. systemd-modules-load hands the whole line to kmod, so a line with
// blanks inside names no module: kmod finds none, and apply_file goes on
// with the next line (src/modules-load/modules-load.c:97, v252: "if (k ==
// -ENOENT) continue"). Every error is such a line. Lines end as read_line()
// ends them.
func parseModulesLoadD(data []byte) ([]configuredModule, []error) {
	var mods []configuredModule
	var errs []error
	for i, raw := range systemdLines(data) {
		n := i + 1
		line := strings.Trim(raw, sysctlWhitespace)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.ContainsAny(line, " \t") {
			errs = append(errs, fmt.Errorf("%w: line %d: %.40q is not one module name", ErrParse, n, line))
			continue
		}
		name := normalizeModuleName(line)
		if !isModuleName(name) {
			errs = append(errs, fmt.Errorf("%w: line %d: bad module name %.40q", ErrParse, n, line))
			continue
		}
		mods = append(mods, configuredModule{Name: name, Line: n})
	}
	return mods, errs
}

// parseEtcModules reads Debian's /etc/modules (modules(5)): a module name per
// line, optionally followed by its parameters; '#' starts a comment line.
func parseEtcModules(data []byte) ([]configuredModule, []error) {
	var mods []configuredModule
	var errs []error
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		f := strings.Fields(raw)
		if len(f) == 0 || f[0][0] == '#' {
			continue
		}
		name := normalizeModuleName(f[0])
		if !isModuleName(name) {
			errs = append(errs, fmt.Errorf("%w: line %d: bad module name %.40q", ErrParse, n, f[0]))
			continue
		}
		mods = append(mods, configuredModule{Name: name, Line: n})
	}
	return mods, errs
}

// normalizeModuleName spells a name as the kernel does: kmod's
// modname_normalize turns '-' into '_'.
func normalizeModuleName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// isModuleName reports whether s can name a kernel module as /proc/modules
// prints it.
func isModuleName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
