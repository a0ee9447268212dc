package collectors

import (
	"fmt"
	"strings"
)

// dpkgPackage is one stanza of dpkg's status database (/var/lib/dpkg/status).
type dpkgPackage struct {
	Package     string
	Status      string // "want flag status": "install ok installed"
	Version     string // "535.104.05-1", with epoch and revision
	Line        int    // of the Package field
	VersionLine int
}

// Installed reports whether dpkg has the package installed; a held package
// ("hold ok installed") is installed too, a removed one keeping its
// configuration ("deinstall ok config-files") is not.
func (p dpkgPackage) Installed() bool {
	f := strings.Fields(p.Status)
	return len(f) == 3 && f[2] == "installed"
}

// UpstreamVersion drops the epoch and the Debian revision: "1:535.104.05-1"
// is 535.104.05.
func (p dpkgPackage) UpstreamVersion() string {
	v := p.Version
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndexByte(v, '-'); i > 0 {
		v = v[:i]
	}
	return v
}

// parseDpkgStatus reads the deb822 stanzas of dpkg's status file: "Field:
// value" lines, continuation lines starting with a space or tab, stanzas
// separated by blank lines. Only Package, Status and Version are kept.
func parseDpkgStatus(data []byte) ([]dpkgPackage, []error) {
	var pkgs []dpkgPackage
	var errs []error
	var cur dpkgPackage
	start, fields := 0, 0
	flush := func() {
		if fields > 0 {
			if cur.Package == "" {
				errs = append(errs, fmt.Errorf("%w: line %d: stanza without a Package field", ErrParse, start))
			} else {
				pkgs = append(pkgs, cur)
			}
		}
		cur, start, fields = dpkgPackage{}, 0, 0
	}
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line := strings.TrimRight(raw, "\r")
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if fields == 0 {
				errs = append(errs, fmt.Errorf("%w: line %d: continuation line outside a field", ErrParse, n))
			}
			continue
		}
		if line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			errs = append(errs, fmt.Errorf("%w: line %d: not a \"Field: value\" line: %.40q", ErrParse, n, line))
			continue
		}
		if fields == 0 {
			start = n
		}
		fields++
		value = strings.TrimSpace(value)
		// deb822 field names are case-insensitive.
		switch strings.ToLower(name) {
		case "package":
			cur.Package, cur.Line = value, n
		case "status":
			cur.Status = value
		case "version":
			cur.Version, cur.VersionLine = value, n
		}
	}
	flush()
	return pkgs, errs
}
