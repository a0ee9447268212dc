package collectors

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

const (
	limitsFile = "/etc/security/limits.conf"
	// pam_limits globs limits.d/*.conf and sorts the names with strcmp.
	limitsDir = "/etc/security/limits.d"
)

func collectLimits(c *collection) {
	const name = "limits"
	l := &c.snap.Limits
	l.Entries = []snapshot.LimitEntry{}
	l.Effective = map[string]map[string]snapshot.LimitValue{}
	l.Exempt = map[string]bool{}
	l.Files = []string{}

	paths := []string{limitsFile}
	for _, e := range c.readDir(name, limitsDir) {
		if !strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".conf") {
			paths = append(paths, path.Join(limitsDir, e.Name()))
		}
	}
	// pam_limits fails the session when limits.conf exists but cannot be
	// read; here the failure is recorded and the rest still evaluated.
	var rules []limitRule
	for _, p := range paths {
		file := c.realPath(p)
		if file == "/dev/null" {
			continue
		}
		data, ok := c.read(name, file)
		if !ok {
			continue
		}
		l.Files = append(l.Files, file)
		// pam_limits logs and skips a bad line and applies the rest.
		parsed, errs := parseLimitsConf(data)
		for _, err := range errs {
			c.skipped(name, file, err)
		}
		for _, r := range parsed {
			r.File = file
			rules = append(rules, r)
			l.Entries = append(l.Entries, snapshot.LimitEntry{
				Domain: r.Domain, Type: r.Type, Item: r.Item, Value: r.Value,
				Source: c.at(file, r.Line),
			})
		}
	}

	domains := []string{"*"}
	for _, d := range c.opts.LimitsDomains {
		switch {
		case d == "" || d == "*" || slices.Contains(domains, d):
		case strings.ContainsAny(d, ":% \t"):
			c.fail(name, "", fmt.Errorf("limits domain %q: want a user name or @group", d))
		default:
			domains = append(domains, d)
		}
	}
	var users []passwdEntry
	var groups []groupEntry
	if len(domains) > 1 {
		users, groups = c.readAccounts(name)
	}
	for _, d := range domains {
		member := limitsMember{Groups: map[string]bool{}, GIDs: map[uint32]bool{}}
		if d != "*" {
			member = limitsMemberFor(d, users, groups)
		}
		outcome := evaluateLimits(rules, member)
		values := map[string]snapshot.LimitValue{}
		l.Effective[d] = values
		if r := outcome.ExemptBy; r != nil {
			l.Exempt[d] = true
			c.from("limits.exempt."+d, r.File, r.Line)
			continue
		}
		for item, s := range outcome.Soft {
			v := values[item]
			v.Soft = s.Shown
			values[item] = v
			c.from("limits.effective."+d+"."+item+".soft", s.From.File, s.From.Line)
		}
		for item, h := range outcome.Hard {
			v := values[item]
			v.Hard = h.Shown
			values[item] = v
			c.from("limits.effective."+d+"."+item+".hard", h.From.File, h.From.Line)
		}
	}
}

// readAccounts reads the root's local users and groups; missing files
// leave them empty (the names then match only literally).
func (c *collection) readAccounts(collector string) ([]passwdEntry, []groupEntry) {
	var users []passwdEntry
	var groups []groupEntry
	if data, ok := c.read(collector, "/etc/passwd"); ok {
		var errs []error
		users, errs = parsePasswd(data)
		for _, err := range errs {
			c.fail(collector, "/etc/passwd", err)
		}
	}
	if data, ok := c.read(collector, "/etc/group"); ok {
		var errs []error
		groups, errs = parseGroup(data)
		for _, err := range errs {
			c.fail(collector, "/etc/group", err)
		}
	}
	return users, groups
}
