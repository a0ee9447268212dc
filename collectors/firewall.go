package collectors

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Firewall configuration paths (firewalld.conf(5), firewalld.zone(5),
// ufw-framework(8), the nftables units of Debian and RHEL).
const (
	firewalldConf     = "/etc/firewalld/firewalld.conf"
	firewalldEtcZones = "/etc/firewalld/zones"
	firewalldLibZones = "/usr/lib/firewalld/zones"
	ufwConf           = "/etc/ufw/ufw.conf"
	ufwDefaults       = "/etc/default/ufw"
	ufwUserRules      = "/etc/ufw/user.rules"
	ufwUserRules6     = "/etc/ufw/user6.rules"
	ufwBeforeRules    = "/etc/ufw/before.rules"
	ufwBeforeRules6   = "/etc/ufw/before6.rules"
)

// nftablesConfs are the ruleset files the Debian and the RHEL
// nftables.service load, when the unit does not say.
var nftablesConfs = []string{"/etc/nftables.conf", "/etc/sysconfig/nftables.conf"}

// FirewallPaths are the files and directories the firewall collector reads,
// for transports that fetch a host's files ahead of collection (the unit
// search path and /etc/systemd/system's *.wants links aside).
func FirewallPaths() []string {
	return []string{firewalldConf, firewalldEtcZones, firewalldLibZones, ufwConf, ufwDefaults, ufwUserRules, ufwUserRules6, ufwBeforeRules, ufwBeforeRules6, nftablesConfs[0], nftablesConfs[1]}
}

// FirewallUnits are the units whose enablement the firewall collector reads.
func FirewallUnits() []string {
	return []string{"firewalld.service", "ufw.service", "nftables.service"}
}

func collectFirewall(c *collection) {
	collectFirewalld(c)
	collectUFW(c)
	collectNftables(c)
}

// unitEnabled reports whether unit is enabled: installed (a unit file in
// systemd's search path), a link to it in an /etc/systemd/system/*.wants or
// *.requires directory (what systemctl enable writes), and not masked. The fact gets the link, or a default
// saying why not.
func (c *collection) unitEnabled(collector, unit, fact string) bool {
	file, ok := c.firstExisting(unitPaths(unit))
	if !ok {
		// A link left behind by a removed package starts nothing.
		c.defaulted(fact, fmt.Sprintf("no unit file %s in systemd's search path: not installed", unit))
		return false
	}
	if c.realPath(file) == "/dev/null" {
		c.from(fact, file, 0)
		return false
	}
	const dir = "/etc/systemd/system"
	for _, e := range c.readDir(collector, dir) {
		if !strings.HasSuffix(e.Name(), ".wants") && !strings.HasSuffix(e.Name(), ".requires") {
			continue
		}
		link := path.Join(dir, e.Name(), unit)
		if _, err := c.src.Lstat(rel(link)); err == nil {
			c.from(fact, link, 0)
			return true
		}
	}
	c.defaulted(fact, fmt.Sprintf("no link to %s in %s/*.wants or *.requires: not enabled", unit, dir))
	return false
}

// exists reports whether name is present in the root (a directory or a
// file; a broken link is not).
func (c *collection) exists(name string) bool {
	_, err := c.src.Stat(rel(name))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

func collectFirewalld(c *collection) {
	const collector = "firewall"
	_, unit := c.firstExisting(unitPaths("firewalld.service"))
	if !unit && !c.exists("/etc/firewalld") && !c.exists(firewalldLibZones) {
		return
	}
	fw := &snapshot.Firewalld{DefaultZone: "public", Zones: map[string]snapshot.FirewalldZone{}}
	c.snap.Firewall.Firewalld = fw
	fw.Enabled = c.unitEnabled(collector, "firewalld.service", "firewall.firewalld.enabled")
	c.defaulted("firewall.firewalld.default_zone", "no DefaultZone= in "+firewalldConf+": firewalld's default, public")
	if kv, ok := c.keyValue(collector, firewalldConf, "DefaultZone"); ok && kv.Value != "" {
		fw.DefaultZone = kv.Value
		c.from("firewall.firewalld.default_zone", firewalldConf, kv.Line)
	}
	// /etc replaces /usr/lib zone by zone.
	files := map[string]string{}
	for _, dir := range []string{firewalldLibZones, firewalldEtcZones} {
		for _, e := range c.readDir(collector, dir) {
			if name, ok := strings.CutSuffix(e.Name(), ".xml"); ok && name != "" && !strings.HasPrefix(name, ".") {
				files[name] = path.Join(dir, e.Name())
			}
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		file := files[name]
		data, ok := c.read(collector, file)
		if !ok {
			continue
		}
		z, err := parseFirewalldZone(data)
		if err != nil {
			c.fail(collector, file, err)
			continue
		}
		if name != fw.DefaultZone && len(z.Zone.Sources) == 0 && len(z.Zone.Interfaces) == 0 {
			continue // no traffic reaches it
		}
		z.Zone.File = c.realPath(file)
		fw.Zones[name] = z.Zone
		fact := "firewall.firewalld.zones." + name
		c.from(fact, file, z.ZoneLine)
		for i, l := range z.RuleLines {
			c.from(fact+".rules."+strconv.Itoa(i), file, l)
		}
		for i, l := range z.SourceLine {
			c.from(fact+".sources."+strconv.Itoa(i), file, l)
		}
	}
	if _, ok := files[fw.DefaultZone]; !ok {
		c.fail(collector, path.Join(firewalldEtcZones, fw.DefaultZone+".xml"), fmt.Errorf("default zone %q: no zone file in %s or %s", fw.DefaultZone, firewalldEtcZones, firewalldLibZones))
	}
}

func collectUFW(c *collection) {
	const collector = "firewall"
	if !c.exists(ufwConf) && !c.exists(ufwDefaults) {
		return
	}
	u := &snapshot.UFW{Rules: []snapshot.UFWRule{}}
	c.snap.Firewall.UFW = u
	u.ServiceEnabled = c.unitEnabled(collector, "ufw.service", "firewall.ufw.service_enabled")
	c.defaulted("firewall.ufw.enabled", "no ENABLED= in "+ufwConf+": ufw-init does not start")
	if kv, ok := c.keyValue(collector, ufwConf, "ENABLED"); ok {
		// ufw-init: [ "$ENABLED" = "yes" ] || [ "$ENABLED" = "YES" ]
		u.Enabled = kv.Value == "yes" || kv.Value == "YES"
		c.from("firewall.ufw.enabled", ufwConf, kv.Line)
	}
	if kv, ok := c.keyValue(collector, ufwDefaults, "DEFAULT_INPUT_POLICY"); ok {
		u.DefaultInputPolicy = strings.ToLower(kv.Value)
		c.from("firewall.ufw.default_input_policy", ufwDefaults, kv.Line)
	}
	u.BeforeRules = []snapshot.IptablesRule{}
	for _, b := range []struct{ file, chain string }{{ufwBeforeRules, "ufw-before-input"}, {ufwBeforeRules6, "ufw6-before-input"}} {
		data, ok := c.read(collector, b.file)
		if !ok {
			continue
		}
		lines, rules, errs := parseIptablesChain(data, b.chain)
		for _, err := range errs {
			c.fail(collector, b.file, err)
		}
		for i, r := range rules {
			r.IPv6 = b.file == ufwBeforeRules6
			c.from("firewall.ufw.before_rules."+strconv.Itoa(len(u.BeforeRules)), b.file, lines[i])
			u.BeforeRules = append(u.BeforeRules, r)
		}
	}
	for _, file := range []string{ufwUserRules, ufwUserRules6} {
		data, ok := c.read(collector, file)
		if !ok {
			continue
		}
		tuples, errs := parseUFWUserRules(data)
		for _, err := range errs {
			c.fail(collector, file, err)
		}
		for _, t := range tuples {
			t.Rule.IPv6 = file == ufwUserRules6
			c.from("firewall.ufw.rules."+strconv.Itoa(len(u.Rules)), file, t.Line)
			u.Rules = append(u.Rules, t.Rule)
		}
	}
}

func collectNftables(c *collection) {
	const collector = "firewall"
	unitFile, unit := c.firstExisting(unitPaths("nftables.service"))
	file := ""
	if unit && c.realPath(unitFile) != "/dev/null" {
		if data, ok := c.read(collector, unitFile); ok {
			file = nftExecStartFile(data)
		}
	}
	if file == "" {
		file, _ = c.firstExisting(nftablesConfs)
	}
	if file == "" && !unit {
		return
	}
	n := &snapshot.Nftables{Chains: []snapshot.NftChain{}}
	c.snap.Firewall.Nftables = n
	n.Enabled = c.unitEnabled(collector, "nftables.service", "firewall.nftables.enabled")
	if file == "" {
		file = nftablesConfs[0]
	}
	n.File = file
	data, ok := c.read(collector, file)
	if !ok {
		c.defaulted("firewall.nftables.file", file+" does not exist: no ruleset")
		return
	}
	c.from("firewall.nftables.file", file, 0)
	r := nftReader{
		read: func(name string) ([]byte, error) { return readCapped(c.src, name, c.opts.MaxFileSize) },
		glob: func(pattern string) ([]string, error) {
			dir, base := path.Split(pattern)
			if strings.ContainsAny(dir, "*?[") {
				return nil, fmt.Errorf("a glob in a directory name is not supported")
			}
			var out []string
			for _, e := range c.readDir(collector, dir) {
				if ok, _ := path.Match(base, e.Name()); ok && !strings.HasPrefix(e.Name(), ".") {
					out = append(out, path.Join(dir, e.Name()))
				}
			}
			return out, nil
		},
	}
	chains, errs := parseNftables(file, data, r)
	for _, err := range errs {
		var ne *nftError
		if errors.As(err, &ne) {
			c.fail(collector, ne.File, confLineErrorf(ne.Line, "%s", ne.Msg))
			continue
		}
		c.fail(collector, file, err)
	}
	for i, ch := range chains {
		fact := "firewall.nftables.chains." + strconv.Itoa(i)
		c.from(fact, ch.file, ch.line)
		for j, at := range ch.at {
			c.from(fact+".rules."+strconv.Itoa(j), at.Path(), at.Line)
		}
		if ch.Rules == nil {
			ch.Rules = []snapshot.NftRule{}
		}
		n.Chains = append(n.Chains, ch.NftChain)
	}
}

// nftExecStartFile is the file an nftables unit's ExecStart= loads
// ("nft -f FILE"), "" when it names none.
func nftExecStartFile(unit []byte) string {
	as, _, _ := parseUnitSetting(unit, "Service", "ExecStart")
	for _, a := range as {
		f := strings.Fields(a.Value)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "-f" || f[i] == "--file" {
				return f[i+1]
			}
		}
	}
	return ""
}

// DMI: the firmware's system identification.
const dmiDir = "/sys/class/dmi/id"

func collectDMI(c *collection) {
	const collector = "dmi"
	var d snapshot.DMI
	for _, f := range []struct {
		name string
		dst  *string
	}{{"sys_vendor", &d.SysVendor}, {"product_name", &d.ProductName}} {
		file := dmiDir + "/" + f.name
		if v, ok := c.readTrimmed(collector, file); ok && v != "" {
			*f.dst = v
			c.from("dmi."+f.name, file, 0)
		}
	}
	if d != (snapshot.DMI{}) {
		c.snap.DMI = &d
	}
}
