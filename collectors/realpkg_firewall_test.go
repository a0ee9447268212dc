package collectors

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

const firewallRule = "host-firewall-blocks-nccl"

// fabric is the fleet's network in the firewall tests.
var fabric = map[string]any{"fleet_networks": []any{"10.0.0.0/8"}}

// ufwEnable writes what "ufw enable" writes (ufw 0.36.2): frontend.py
// set_enabled calls backend.py set_default(files['conf'], "ENABLED",
// "yes"), which rewrites every line of /etc/ufw/ufw.conf matching
// ^ENABLED= as ENABLED=yes (appending it when none does). start_firewall
// then runs ufw-init (the running firewall, not a file) and
// update_logging rewrites user.rules and user6.rules from the rules they
// already hold: none on a fresh install, so the same empty chains.
func ufwEnable(t *testing.T, root string) {
	t.Helper()
	file := filepath.Join(root, "etc/ufw/ufw.conf")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pat := regexp.MustCompile(`^ENABLED=`)
	var out []string
	found := false
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if pat.MatchString(l) {
			l, found = "ENABLED=yes\n", true
		}
		out = append(out, l)
	}
	if !found {
		out = append(out, "ENABLED=yes\n")
	}
	if err := os.WriteFile(file, []byte(strings.Join(out, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRealUFWEnabled: Debian's ufw as installed drops nothing (ufw(8): "ufw
// is disabled by default"); after "ufw enable" its default input policy
// DROP (/etc/default/ufw) drops NCCL's ports, and nothing the stock
// before.rules accept covers a fleet network: the rule fires, citing the
// ENABLED= line ufw wrote and the policy line of /etc/default/ufw.
func TestRealUFWEnabled(t *testing.T) {
	root, pkg := ufwInstalledRoot(t)
	t.Logf("ufw %s", pkg.Version)
	snap := realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	if fs := realpkgFindings(t, snap, firewallRule, fabric); len(fs) != 0 {
		t.Errorf("ufw disabled as installed, yet %s: %+v", firewallRule, fs)
	}

	ufwEnable(t, root)
	snap = realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	if u := snap.Firewall.UFW; u == nil || !u.Enabled {
		t.Fatalf("after ufw enable: %+v, want enabled", u)
	}
	enabledAt := "/etc/ufw/ufw.conf:" + strconv.Itoa(lineOf(t, root, "etc/ufw/ufw.conf", `^ENABLED=yes$`))
	policyAt := "/etc/default/ufw:" + strconv.Itoa(lineOf(t, root, "etc/default/ufw", `^DEFAULT_INPUT_POLICY=`))
	for _, params := range []map[string]any{nil, fabric} {
		fs := realpkgFindings(t, snap, firewallRule, params)
		if len(fs) != 1 {
			t.Fatalf("fleet params %v: %d findings, want 1: %+v", params, len(fs), fs)
		}
		f := fs[0]
		if !strings.HasPrefix(f.Message, "ufw is enabled with default input policy drop;") {
			t.Errorf("message %q", f.Message)
		}
		if got := evidenceFrom(f, "firewall.ufw.enabled"); got != enabledAt {
			t.Errorf("enabled from %q, want %q", got, enabledAt)
		}
		if got := evidenceFrom(f, "firewall.ufw.default_input_policy"); got != policyAt {
			t.Errorf("input policy from %q, want %q", got, policyAt)
		}
		if got, want := evidenceFrom(f, "firewall.ufw.service_enabled"), "/etc/systemd/system/multi-user.target.wants/ufw.service"; got != want {
			t.Errorf("service enabled from %q, want %q", got, want)
		}
	}
}

// TestRealNftablesPackage: Debian's nftables as installed and as its
// README.Debian says to start from an example ruleset.
func TestRealNftablesPackage(t *testing.T) {
	root, pkgs := debroot.Root(t, "nftables")
	t.Logf("nftables %s", pkgs[0].Version)
	const conf = "etc/nftables.conf"

	// As installed: the postinst enables nftables.service only where it was
	// enabled before (dh_installsystemd --no-enable; README.Debian: "you
	// can optionally enable"); /etc/nftables.conf holds an inet filter
	// table with the three base chains and neither policy nor rules, and a
	// base chain's policy is accept unless written (nft(8)).
	snap := realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	n := snap.Firewall.Nftables
	if n == nil {
		t.Fatal("nftables installed but not collected")
	}
	if n.Enabled || n.File != "/etc/nftables.conf" {
		t.Errorf("enabled %v (want false), file %q (want /etc/nftables.conf, the unit's ExecStart nft -f)", n.Enabled, n.File)
	}
	want := []snapshot.NftChain{
		{Family: "inet", Table: "filter", Name: "input", Hook: "input", Rules: []snapshot.NftRule{}},
		{Family: "inet", Table: "filter", Name: "forward", Hook: "forward", Rules: []snapshot.NftRule{}},
		{Family: "inet", Table: "filter", Name: "output", Hook: "output", Rules: []snapshot.NftRule{}},
	}
	if diff := cmp.Diff(want, n.Chains); diff != "" {
		t.Errorf("chains (-want +got):\n%s", diff)
	}
	for i, name := range []string{"input", "forward", "output"} {
		at := snap.Sources["firewall.nftables.chains."+strconv.Itoa(i)]
		if wantLine := lineOf(t, root, conf, `^\s*chain `+name+` \{`); at.File != "/etc/nftables.conf" || at.Line != wantLine {
			t.Errorf("chain %s from %+v, want /etc/nftables.conf:%d", name, at, wantLine)
		}
	}
	if fs := realpkgFindings(t, snap, firewallRule, fabric); len(fs) != 0 {
		t.Errorf("as installed: %+v", fs)
	}

	// Enabled as shipped ([Install] WantedBy=sysinit.target): it accepts
	// everything still.
	enableUnit(t, root, "sysinit.target", "/lib/systemd/system/nftables.service")
	snap = realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	if !snap.Firewall.Nftables.Enabled {
		t.Error("nftables.service linked into sysinit.target.wants, not enabled")
	}
	if fs := realpkgFindings(t, snap, firewallRule, fabric); len(fs) != 0 {
		t.Errorf("stock ruleset, enabled: %+v", fs)
	}

	// The shipped workstation example as /etc/nftables.conf: its input
	// chain accepts loopback, established traffic and ICMPv6, then "counter
	// drop", its fifth rule, drops every other packet.
	example, err := os.ReadFile(filepath.Join(root, "usr/share/doc/nftables/examples/workstation.nft"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, conf), example, 0o755); err != nil {
		t.Fatal(err)
	}
	snap = realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	chains := snap.Firewall.Nftables.Chains
	if len(chains) != 1 || chains[0].Name != "input" || len(chains[0].Rules) != 5 {
		t.Fatalf("workstation.nft: chains %+v, want input with 5 rules", chains)
	}
	input := chains[0]
	if r := input.Rules[0]; r.Verdict != "accept" || !cmp.Equal(r.Iifname, []string{"lo"}) {
		t.Errorf("rule 0 %+v, want iif lo accept", r)
	}
	if r := input.Rules[4]; r.Verdict != "drop" || len(r.Match) != 0 || len(r.Saddr) != 0 {
		t.Errorf("rule 4 %+v, want an unconditional drop", r)
	}
	if at, wantLine := snap.Sources["firewall.nftables.chains.0.rules.4"], lineOf(t, root, conf, `^\s*counter drop$`); at.Line != wantLine {
		t.Errorf("counter drop from %+v, want line %d", at, wantLine)
	}
	fs := realpkgFindings(t, snap, firewallRule, fabric)
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(fs), fs)
	}
	if want := "nftables is enabled and chain inet filter input drops everything at its rule 4; no accept covers the fleet's networks 10.0.0.0/8"; !strings.HasPrefix(fs[0].Message, want) {
		t.Errorf("message %q, want it to start %q", fs[0].Message, want)
	}
	if got, want := evidenceFrom(fs[0], "firewall.nftables.chains.0"), "/etc/nftables.conf:"+strconv.Itoa(lineOf(t, root, conf, `^\s*chain input \{`)); got != want {
		t.Errorf("chain from %q, want %q", got, want)
	}
}

// firewalldInstalledRoot is Debian's firewalld as its postinst leaves it:
// deb-systemd-helper enable (was-enabled defaults to true on a new
// installation) links firewalld.service into multi-user.target.wants and
// its Alias= dbus-org.fedoraproject.FirewallD1.service.
func firewalldInstalledRoot(t *testing.T) (string, debroot.Package) {
	t.Helper()
	root, pkgs := debroot.Root(t, "firewalld")
	enableUnit(t, root, "multi-user.target", "/lib/systemd/system/firewalld.service")
	if err := os.Symlink("/lib/systemd/system/firewalld.service", filepath.Join(root, "etc/systemd/system/dbus-org.fedoraproject.FirewallD1.service")); err != nil {
		t.Fatal(err)
	}
	return root, pkgs[0]
}

// TestRealFirewalldPackage: firewalld as installed runs with DefaultZone
// public (firewalld.conf), whose zone file has no target, which
// firewalld.zone(5) says rejects what no service or port accepts: the rule
// fires. "firewall-cmd --permanent --zone=trusted --add-source=10.0.0.0/8"
// binds the fabric to the trusted zone (target ACCEPT), and then it does
// not, for that network.
func TestRealFirewalldPackage(t *testing.T) {
	root, pkg := firewalldInstalledRoot(t)
	t.Logf("firewalld %s", pkg.Version)
	snap := realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	fw := snap.Firewall.Firewalld
	if fw == nil {
		t.Fatal("firewalld installed but not collected")
	}
	if !fw.Enabled || fw.DefaultZone != "public" {
		t.Errorf("enabled %v, default zone %q, want enabled and public", fw.Enabled, fw.DefaultZone)
	}
	confAt := "/etc/firewalld/firewalld.conf:" + strconv.Itoa(lineOf(t, root, "etc/firewalld/firewalld.conf", `^DefaultZone=`))
	if at := snap.Sources["firewall.firewalld.default_zone"]; at.String() != confAt {
		t.Errorf("default zone from %s, want %s", at, confAt)
	}
	// public.xml: <service name="ssh"/>, <service name="dhcpv6-client"/>;
	// no other zone binds a source or an interface.
	want := map[string]snapshot.FirewalldZone{"public": {
		File: "/usr/lib/firewalld/zones/public.xml", Sources: []string{}, Interfaces: []string{},
		Services: []string{"ssh", "dhcpv6-client"}, Ports: []string{}, Rules: []snapshot.FirewalldRule{},
	}}
	if diff := cmp.Diff(want, fw.Zones); diff != "" {
		t.Errorf("zones (-want +got):\n%s", diff)
	}
	fs := realpkgFindings(t, snap, firewallRule, fabric)
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(fs), fs)
	}
	if want := "firewalld is enabled and its default zone public rejects what no rule accepts (default target)"; !strings.HasPrefix(fs[0].Message, want) {
		t.Errorf("message %q", fs[0].Message)
	}
	if got := evidenceFrom(fs[0], "firewall.firewalld.default_zone"); got != confAt {
		t.Errorf("default zone cited from %q, want %q", got, confAt)
	}

	// firewall-cmd --permanent writes the zone to /etc/firewalld/zones with
	// firewall/core/io/zone.py zone_writer: the shipped zone's elements,
	// then interfaces, then <source address=.../>, then <forward/>.
	shipped, err := os.ReadFile(filepath.Join(root, "usr/lib/firewalld/zones/trusted.xml"))
	if err != nil {
		t.Fatal(err)
	}
	trusted := strings.Replace(string(shipped), "  <forward/>\n", "  <source address=\"10.0.0.0/8\"/>\n  <forward/>\n", 1)
	if trusted == string(shipped) {
		t.Fatal("trusted.xml has no <forward/> line")
	}
	writeFile(t, root, "etc/firewalld/zones/trusted.xml", trusted)
	snap = realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	z := snap.Firewall.Firewalld.Zones["trusted"]
	if z.Target != "ACCEPT" || !cmp.Equal(z.Sources, []string{"10.0.0.0/8"}) || z.File != "/etc/firewalld/zones/trusted.xml" {
		t.Errorf("trusted zone %+v", z)
	}
	if at, wantLine := snap.Sources["firewall.firewalld.zones.trusted.sources.0"], lineOf(t, root, "etc/firewalld/zones/trusted.xml", `<source address=`); at.Line != wantLine {
		t.Errorf("source from %+v, want line %d", at, wantLine)
	}
	if fs := realpkgFindings(t, snap, firewallRule, fabric); len(fs) != 0 {
		t.Errorf("fabric in the trusted zone: %+v", fs)
	}
	if fs := realpkgFindings(t, snap, firewallRule, map[string]any{"fleet_networks": []any{"192.168.0.0/16"}}); len(fs) != 1 {
		t.Errorf("another network: %d findings, want 1", len(fs))
	}
}

// TestRealNftablesExamplesParse: every example ruleset Debian's nftables
// ships parses with one chain per "chain NAME {" block. all-in-one.nft
// includes "./inet-filter.nft" and its siblings: nft opens a "./" name
// from its working directory (scanner.l, search_in_include_path), which
// is / for nftables.service, so there it fails, and the collector says
// so for each include line.
func TestRealNftablesExamplesParse(t *testing.T) {
	files := debroot.Files(t, "nftables", "usr/share/doc/nftables/examples/*.nft")
	if files == nil {
		t.Skip("nftables not available here")
	}
	chainRE := regexp.MustCompile(`(?m)^\s*chain\s+\S+\s*\{`)
	includeRE := regexp.MustCompile(`(?m)^include "\./`)
	none := nftReader{
		read: func(name string) ([]byte, error) { return nil, os.ErrNotExist },
		glob: func(string) ([]string, error) { return nil, nil },
	}
	for name, data := range files {
		chains, errs := parseNftables("/etc/nftables.conf", data, none)
		if n := len(includeRE.FindAll(data, -1)); n > 0 {
			if len(errs) != n || len(chains) != 0 {
				t.Errorf("%s: %d includes of ./ names: %d errors %v, %d chains", name, n, len(errs), errs, len(chains))
			}
			continue
		}
		for _, err := range errs {
			t.Errorf("%s: %v", name, err)
		}
		if want := len(chainRE.FindAll(data, -1)); len(chains) != want {
			t.Errorf("%s: %d chains, want %d", name, len(chains), want)
		}
	}
}

// ufwAllow adds a rule to /etc/ufw/user.rules and user6.rules as "ufw
// allow" writes it (ufw 0.36.2, backend_iptables.py _write_rules): after
// "### RULES ###", a blank line, "### tuple ### ACTION PROTO DPORT DST
// SPORT SRC [DAPP SAPP] IFACES", and the iptables line. _write_rules also
// rewrites the chain declarations and the logging section, which the
// collector does not read; they are left as shipped, and the new rule
// goes first (ufw appends it to the rules it holds).
func ufwAllow(t *testing.T, root, v4, v6 string) {
	t.Helper()
	for file, rule := range map[string]string{"etc/ufw/user.rules": v4, "etc/ufw/user6.rules": v6} {
		if rule == "" { // an IPv4 source: no IPv6 rule
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		text, n := strings.Replace(string(data), "### RULES ###\n", "### RULES ###\n\n"+rule, 1), strings.Count(string(data), "### RULES ###\n")
		if n != 1 {
			t.Fatalf("%s: %d \"### RULES ###\" lines", file, n)
		}
		if err := os.WriteFile(filepath.Join(root, file), []byte(text), 0o640); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRealUFWAllowOpenSSH: what ufw.conf itself advises before enabling
// ("be sure to add a rule to allow your remote connection ... 'ufw allow
// 22/tcp'"), through openssh-server's application profile (OpenSSH:
// ports=22/tcp). ufw enable then drops everything else: an accept of port
// 22 does not let NCCL's ephemeral ports through, so the rule fires, and
// stops once "ufw allow from 10.0.0.0/8" accepts the fleet.
func TestRealUFWAllowOpenSSH(t *testing.T) {
	root, pkg := ufwInstalledRoot(t)
	ssh, err := debroot.Unpack(root, "openssh-server")
	if err != nil {
		t.Skipf("openssh-server: %v", err)
	}
	t.Logf("ufw %s, openssh-server %s", pkg.Version, ssh[0].Version)
	ufwAllow(t, root,
		"### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 OpenSSH - in\n-A ufw-user-input -p tcp --dport 22 -j ACCEPT -m comment --comment 'dapp_OpenSSH'\n",
		"### tuple ### allow tcp 22 ::/0 any ::/0 OpenSSH - in\n-A ufw6-user-input -p tcp --dport 22 -j ACCEPT -m comment --comment 'dapp_OpenSSH'\n")
	ufwEnable(t, root)
	snap := realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	want := []snapshot.UFWRule{
		{Action: "allow", Protocol: "tcp", DPort: "22", Dst: "0.0.0.0/0", SPort: "any", Src: "0.0.0.0/0", DApp: "OpenSSH", Direction: "in"},
		{Action: "allow", Protocol: "tcp", DPort: "22", Dst: "::/0", SPort: "any", Src: "::/0", DApp: "OpenSSH", Direction: "in", IPv6: true},
	}
	if diff := cmp.Diff(want, snap.Firewall.UFW.Rules); diff != "" {
		t.Errorf("user rules (-want +got):\n%s", diff)
	}
	if at, line := snap.Sources["firewall.ufw.rules.0"], lineOf(t, root, "etc/ufw/user.rules", `^### tuple ### allow tcp 22 `); at.File != "/etc/ufw/user.rules" || at.Line != line {
		t.Errorf("OpenSSH rule from %+v, want /etc/ufw/user.rules:%d", at, line)
	}
	fs := realpkgFindings(t, snap, firewallRule, fabric)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "no accept covers the fleet's networks 10.0.0.0/8 (accepted sources: none)") {
		t.Fatalf("findings %+v, want one: only port 22 is open", fs)
	}

	ufwAllow(t, root,
		"### tuple ### allow any any 0.0.0.0/0 any 10.0.0.0/8 in\n-A ufw-user-input -s 10.0.0.0/8 -j ACCEPT\n",
		"")
	snap = realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	if fs := realpkgFindings(t, snap, firewallRule, fabric); len(fs) != 0 {
		t.Errorf("ufw allow from 10.0.0.0/8: %+v", fs)
	}
}

// TestRealFirewalldZonesParse: every zone firewalld ships parses, with the
// target its <zone> element writes and each of its <service>, <port> and
// <protocol> elements.
func TestRealFirewalldZonesParse(t *testing.T) {
	files := debroot.Files(t, "firewalld", "usr/lib/firewalld/zones/*.xml")
	if files == nil {
		t.Skip("firewalld not available here")
	}
	targetRE := regexp.MustCompile(`<zone[^>]* target="([^"]*)"`)
	count := func(data []byte, el string) int {
		return len(regexp.MustCompile(`<`+el+` `).FindAll(data, -1))
	}
	for name, data := range files {
		z, err := parseFirewalldZone(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		target := ""
		if m := targetRE.FindSubmatch(data); m != nil {
			target = string(m[1])
		}
		if z.Zone.Target != target {
			t.Errorf("%s: target %q, want %q", name, z.Zone.Target, target)
		}
		if n := count(data, "service"); len(z.Zone.Services) != n {
			t.Errorf("%s: services %v, want %d", name, z.Zone.Services, n)
		}
		if n := count(data, "port") + count(data, "protocol"); len(z.Zone.Ports) != n {
			t.Errorf("%s: ports %v, want %d", name, z.Zone.Ports, n)
		}
		if len(z.Zone.Sources)+len(z.Zone.Interfaces)+len(z.Zone.Rules) != 0 {
			t.Errorf("%s: a shipped zone binds nothing and has no rich rule: %+v", name, z.Zone)
		}
	}
}
