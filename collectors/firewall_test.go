package collectors

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

func TestParseKeyValues(t *testing.T) {
	kvs, errs := parseKeyValues([]byte("# c\nENABLED=yes\n  DEFAULT_INPUT_POLICY=\"DROP\" \nX='a b'\nbroken\nY=\n"))
	want := []keyValue{{2, "ENABLED", "yes"}, {3, "DEFAULT_INPUT_POLICY", "DROP"}, {4, "X", "a b"}, {6, "Y", ""}}
	if d := cmp.Diff(want, kvs); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	var le *confLineError
	if len(errs) != 1 || !errors.As(errs[0], &le) || le.Line != 5 {
		t.Errorf("errors %v, want one at line 5", errs)
	}
}

func TestParseFirewalldZone(t *testing.T) {
	public, err := os.ReadFile("../testdata/hosts/rhel-node/usr/lib/firewalld/zones/public.xml")
	if err != nil {
		t.Fatal(err)
	}
	z, err := parseFirewalldZone(public)
	if err != nil {
		t.Fatal(err)
	}
	want := snapshot.FirewalldZone{Sources: []string{}, Interfaces: []string{}, Services: []string{"ssh", "dhcpv6-client", "cockpit"}, Ports: []string{}, Rules: []snapshot.FirewalldRule{}}
	if d := cmp.Diff(want, z.Zone); d != "" || z.ZoneLine != 2 {
		t.Errorf("public (line %d, -want +got):\n%s", z.ZoneLine, d)
	}
	site := `<?xml version="1.0" encoding="utf-8"?>
<zone target="%%REJECT%%">
  <interface name="ib0"/>
  <source address="10.0.0.0/8"/>
  <source ipset="cluster"/>
  <port port="29400-29500" protocol="tcp"/>
  <protocol value="tcp"/>
  <rule family="ipv4">
    <source address="10.1.0.0/16" invert="True"/>
    <log prefix="x" level="info"/>
    <accept/>
  </rule>
  <rule>
    <service name="ssh"/>
    <reject/>
  </rule>
  <rule family="ipv6"><source address="fd00::/8"/><accept/></rule>
</zone>
`
	z, err = parseFirewalldZone([]byte(site))
	if err != nil {
		t.Fatal(err)
	}
	want = snapshot.FirewalldZone{
		Target: "%%REJECT%%", Sources: []string{"10.0.0.0/8", "ipset:cluster"}, Interfaces: []string{"ib0"}, Services: []string{},
		Ports: []string{"29400-29500/tcp", "all/tcp"},
		Rules: []snapshot.FirewalldRule{
			{Family: "ipv4", Source: "10.1.0.0/16", SourceInvert: true, Action: "accept", Match: []string{}},
			{Action: "reject", Match: []string{"service ssh"}},
			{Family: "ipv6", Source: "fd00::/8", Action: "accept", Match: []string{}},
		},
	}
	if d := cmp.Diff(want, z.Zone); d != "" {
		t.Errorf("site zone (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{8, 13, 17}, z.RuleLines); d != "" {
		t.Errorf("rule lines (-want +got):\n%s", d)
	}
	for _, bad := range []string{"", "<zone>", "<service name='x'/>", "<zone><source/></zone>", "<zone></zne>", "\x00"} {
		if _, err := parseFirewalldZone([]byte(bad)); !errors.Is(err, ErrParse) {
			t.Errorf("%q: error %v, want ErrParse", bad, err)
		}
	}
}

func TestParseUFWUserRules(t *testing.T) {
	data, err := os.ReadFile("../testdata/hosts/dmabuf-node/etc/ufw/user.rules")
	if err != nil {
		t.Fatal(err)
	}
	more := string(data) + `
### tuple ### allow_log-all tcp 22 0.0.0.0/0 any 192.168.1.0/24 in_eth1
### tuple ### route:allow any any 0.0.0.0/0 any 10.0.0.0/8 in_eth0!out_eth1
### tuple ### allow tcp any 0.0.0.0/0 any 0.0.0.0/0 OpenSSH - in
### tuple ### limit tcp 22 0.0.0.0/0 any 0.0.0.0/0 out_eth0
### tuple ### allow any any
### tuple ### permit any any 0.0.0.0/0 any 0.0.0.0/0 in
### tuple ### allow any any 0.0.0.0/0 any 0.0.0.0/0 sideways
`
	tuples, errs := parseUFWUserRules([]byte(more))
	var got []snapshot.UFWRule
	var lines []int
	for _, tu := range tuples {
		got = append(got, tu.Rule)
		lines = append(lines, tu.Line)
	}
	any4 := "0.0.0.0/0"
	want := []snapshot.UFWRule{
		{Action: "allow", Protocol: "tcp", DPort: "22", Dst: any4, SPort: "any", Src: any4, Direction: "in"},
		{Action: "allow", Protocol: "any", DPort: "any", Dst: any4, SPort: "any", Src: "10.0.0.0/8", Direction: "in"},
		{Action: "allow", Protocol: "tcp", DPort: "22", Dst: any4, SPort: "any", Src: "192.168.1.0/24", Direction: "in", Interface: "eth1"},
		{Action: "allow", Route: true, Protocol: "any", DPort: "any", Dst: any4, SPort: "any", Src: "10.0.0.0/8", Direction: "in", Interface: "eth0"},
		{Action: "allow", Protocol: "tcp", DPort: "any", Dst: any4, SPort: "any", Src: any4, DApp: "OpenSSH", Direction: "in"},
		{Action: "limit", Protocol: "tcp", DPort: "22", Dst: any4, SPort: "any", Src: any4, Direction: "out", Interface: "eth0"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{20, 23, 43, 44, 45, 46}, lines); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
	var errLines []int
	for _, err := range errs {
		var le *confLineError
		if !errors.As(err, &le) {
			t.Fatalf("%v is not a line error", err)
		}
		errLines = append(errLines, le.Line)
	}
	if d := cmp.Diff([]int{47, 48, 49}, errLines); d != "" {
		t.Errorf("error lines (-want +got):\n%s", d)
	}
}

// nftFS serves a map of files as nft's include reader.
func nftFS(files map[string]string) nftReader {
	return nftReader{
		read: func(name string) ([]byte, error) {
			if s, ok := files[name]; ok {
				return []byte(s), nil
			}
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		},
		glob: func(pattern string) ([]string, error) {
			var out []string
			for name := range files {
				if ok, _ := path.Match(pattern, name); ok {
					out = append(out, name)
				}
			}
			sortStrings(out)
			return out, nil
		},
	}
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestParseNftablesFixture(t *testing.T) {
	data, err := os.ReadFile("../testdata/hosts/gpu-node/etc/nftables.conf")
	if err != nil {
		t.Fatal(err)
	}
	chains, errs := parseNftables("/etc/nftables.conf", data, nftFS(nil))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(chains) != 3 || chains[0].Name != "input" || chains[0].Policy != "drop" || chains[0].Hook != "input" {
		t.Fatalf("chains %+v", chains)
	}
	rules := chains[0].Rules
	want := []snapshot.NftRule{
		{Match: []string{"ct state established,related"}, Verdict: "accept"},
		{Match: []string{"ct state invalid"}, Verdict: "drop"},
		{Iifname: []string{"lo"}, Match: []string{}, Verdict: "accept"},
		{Match: []string{"ip protocol icmp"}, Verdict: "accept"},
		{Match: []string{"meta l4proto ipv6-icmp"}, Verdict: "accept"},
		{Saddr: []string{"192.168.10.5", "192.168.10.6"}, Match: []string{"tcp dport 22"}, Verdict: "accept"},
		{Saddr: []string{"192.168.20.10", "192.168.20.11"}, Match: []string{"tcp dport 9100"}, Verdict: "accept"},
		{Match: []string{}},
	}
	if d := cmp.Diff(want, rules); d != "" {
		t.Errorf("rules (-want +got):\n%s", d)
	}
	var lines []int
	for _, at := range chains[0].at {
		lines = append(lines, at.Line)
	}
	if d := cmp.Diff([]int{18, 19, 20, 21, 22, 23, 24, 25}, lines); d != "" {
		t.Errorf("rule lines (-want +got):\n%s", d)
	}
}

// The command form (nft add ...), includes by glob, defines, flush.
func TestParseNftablesCommandsAndIncludes(t *testing.T) {
	files := map[string]string{
		"/etc/sysconfig/nftables.conf": `# RHEL's file: includes, commented out by default
# include "/etc/nftables/main.nft"
include "/etc/nftables/*.nft"
include "missing-is-an-error.nft"
`,
		"/etc/nftables/10-base.nft": `flush ruleset
define fabric = 10.0.0.0/8
add table ip filter
add chain ip filter INPUT { type filter hook input priority 0 ; policy drop ; }
add rule ip filter INPUT iifname "lo" counter accept
add rule ip filter INPUT ip saddr $fabric accept comment "fabric"
insert rule ip filter INPUT ct state established,related accept
add rule ip filter INPUT tcp dport { 22, 443 } ct state new accept
add rule ip filter INPUT ip saddr != { 192.168.0.0/16 } tcp flags & (syn|ack) == syn jump LOGDROP
add set ip filter allowed { type ipv4_addr; flags interval; }
add element ip filter allowed { 172.16.0.0/12, 10.9.9.9 }
add rule ip filter INPUT ip saddr @allowed iif ib0 reject with icmp type host-prohibited
add rule ip filter INPUT ip6 saddr @unknown drop
add chain ip filter LOGDROP
add rule ip filter LOGDROP log prefix "drop: " level warn drop
`,
		"/etc/nftables/20-bogus.nft": "tabel inet x { }\nadd rule inet t c \"unterminated\n",
	}
	chains, errs := parseNftables("/etc/sysconfig/nftables.conf", []byte(files["/etc/sysconfig/nftables.conf"]), nftFS(files))
	if len(chains) < 2 {
		t.Fatalf("chains %+v, errors %v", chains, errs)
	}
	in := chains[0]
	if in.Family != "ip" || in.Table != "filter" || in.Name != "INPUT" || in.Hook != "input" || in.Policy != "drop" {
		t.Errorf("INPUT %+v", in.NftChain)
	}
	want := []snapshot.NftRule{
		{Match: []string{"ct state established,related"}, Verdict: "accept"},
		{Iifname: []string{"lo"}, Match: []string{}, Verdict: "accept"},
		{Saddr: []string{"10.0.0.0/8"}, Match: []string{}, Verdict: "accept"},
		{Match: []string{"tcp dport { 22, 443 }", "ct state new"}, Verdict: "accept"},
		{Saddr: []string{"192.168.0.0/16"}, SaddrNegated: true, Match: []string{"tcp flags & (syn|ack) == syn"}, Verdict: "jump", Target: "LOGDROP"},
		{Saddr: []string{"172.16.0.0/12", "10.9.9.9"}, Iifname: []string{"ib0"}, Match: []string{}, Verdict: "reject"},
		{Saddr: []string{"@unknown"}, Match: []string{}, Verdict: "drop"},
	}
	if d := cmp.Diff(want, in.Rules); d != "" {
		t.Errorf("INPUT rules (-want +got):\n%s", d)
	}
	if p := in.at[0]; p.Path() != "/etc/nftables/10-base.nft" || p.Line != 7 {
		t.Errorf("inserted rule at %v, want /etc/nftables/10-base.nft:7", p)
	}
	var got []string
	for _, err := range errs {
		var ne *nftError
		if !errors.As(err, &ne) || !errors.Is(err, ErrParse) {
			t.Fatalf("%v is not an nftError", err)
		}
		got = append(got, fmt.Sprintf("%s:%d", ne.File, ne.Line))
	}
	want2 := []string{"/etc/nftables/20-bogus.nft:2", "/etc/sysconfig/nftables.conf:4", "/etc/nftables/20-bogus.nft:1"}
	if d := cmp.Diff(sortedCopy(want2), sortedCopy(got)); d != "" {
		t.Errorf("errors (-want +got):\n%s\n%v", d, errs)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sortStrings(out)
	return out
}

// Maps and NAT statements are never read as a source or an interface.
func TestParseNftablesMaps(t *testing.T) {
	conf := `table ip t {
	chain c {
		type filter hook input priority 0;
		meta iif vmap @jump_map
		iifname vmap { "ib0" : accept }
		ip saddr vmap { 10.0.0.0/8 : accept }
		snat ip saddr map { 192.168.1.1 : 1.1.1.1 }
		iifname @fabric accept
	}
}
`
	chains, errs := parseNftables("/etc/nftables.conf", []byte(conf), nftFS(nil))
	if len(errs) > 0 || len(chains) != 1 {
		t.Fatalf("chains %+v, errors %v", chains, errs)
	}
	want := []snapshot.NftRule{
		{Match: []string{"meta iif vmap @jump_map"}, Verdict: "vmap"},
		{Match: []string{`iifname vmap { "ib0" : accept }`}, Verdict: "vmap"},
		{Match: []string{"ip saddr vmap { 10.0.0.0/8 : accept }"}, Verdict: "vmap"},
		{Match: []string{"snat ip saddr map { 192.168.1.1 : 1.1.1.1 }"}},
		{Iifname: []string{"@fabric"}, Match: []string{}, Verdict: "accept"},
	}
	if d := cmp.Diff(want, chains[0].Rules); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestParseNftablesIncludeLoop(t *testing.T) {
	files := map[string]string{
		"/etc/nftables.conf": `include "/etc/a.nft"`,
		"/etc/a.nft":         `include "/etc/a.nft"` + "\ntable inet t { chain c { type filter hook input priority 0; policy accept; } }\n",
	}
	chains, errs := parseNftables("/etc/nftables.conf", []byte(files["/etc/nftables.conf"]), nftFS(files))
	if len(chains) != 1 || chains[0].Policy != "accept" {
		t.Errorf("chains %+v", chains)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "includes itself") {
		t.Errorf("errors %v, want one include loop", errs)
	}
}

// Files that include each other's glob: bounded, not factorial.
func TestParseNftablesIncludeFanOut(t *testing.T) {
	files := map[string]string{}
	for i := range 12 {
		files[fmt.Sprintf("/etc/nftables/%02d.nft", i)] = `include "/etc/nftables/*.nft"` + "\n"
	}
	_, errs := parseNftables("/etc/nftables.conf", []byte(`include "/etc/nftables/*.nft"`), nftFS(files))
	if len(errs) == 0 || !strings.Contains(errs[len(errs)-1].Error(), "more than 256 files") {
		t.Errorf("errors %d, last %v", len(errs), errs[len(errs)-1:])
	}
}

// Enablement links, masking, the unit's own ruleset file, absent firewalls.
func TestCollectFirewall(t *testing.T) {
	root := versionsHostTree(t, map[string]string{
		"usr/lib/systemd/system/nftables.service":                      "[Service]\nExecStart=/sbin/nft -f /etc/sysconfig/nftables.conf\n",
		"etc/systemd/system/sysinit.target.wants/nftables.service":     "-> /usr/lib/systemd/system/nftables.service",
		"etc/sysconfig/nftables.conf":                                  "table inet f {\n chain i { type filter hook input priority 0; policy drop; }\n}\n",
		"etc/nftables.conf":                                            "not read: the unit names another file\n",
		"usr/lib/systemd/system/firewalld.service":                     "[Service]\n",
		"etc/systemd/system/multi-user.target.wants/firewalld.service": "-> /usr/lib/systemd/system/firewalld.service",
		"etc/systemd/system/firewalld.service":                         "-> /dev/null",
		"etc/firewalld/firewalld.conf":                                 "DefaultZone=work\n",
		"usr/lib/firewalld/zones/public.xml":                           "<zone/>\n",
		"etc/ufw/ufw.conf":                                             "ENABLED=YES\n",
		"etc/systemd/system/multi-user.target.wants/ufw.service":       "-> /usr/lib/systemd/system/ufw.service",
		"sys/class/dmi/id/sys_vendor":                                  "QEMU\n",
	})
	c := versionsTestCollection(Dir(root))
	collectFirewall(c)
	collectDMI(c)
	fw := c.snap.Firewall
	if fw.Firewalld == nil || fw.Firewalld.Enabled || fw.Firewalld.DefaultZone != "work" || len(fw.Firewalld.Zones) != 0 {
		t.Errorf("firewalld %+v: want masked (not enabled), default zone work, no zone", fw.Firewalld)
	}
	if fw.UFW == nil || !fw.UFW.Enabled || fw.UFW.ServiceEnabled || fw.UFW.DefaultInputPolicy != "" {
		t.Errorf("ufw %+v", fw.UFW)
	}
	n := fw.Nftables
	if n == nil || !n.Enabled || n.File != "/etc/sysconfig/nftables.conf" || len(n.Chains) != 1 || n.Chains[0].Policy != "drop" {
		t.Errorf("nftables %+v", n)
	}
	if c.snap.DMI == nil || c.snap.DMI.SysVendor != "QEMU" || c.snap.DMI.ProductName != "" {
		t.Errorf("dmi %+v", c.snap.DMI)
	}
	for fact, src := range map[string]string{
		"firewall.firewalld.enabled":      "/etc/systemd/system/firewalld.service",
		"firewall.firewalld.default_zone": "/etc/firewalld/firewalld.conf:1",
		"firewall.nftables.enabled":       "/etc/systemd/system/sysinit.target.wants/nftables.service",
		"firewall.nftables.chains.0":      "/etc/sysconfig/nftables.conf:2",
		"firewall.ufw.enabled":            "/etc/ufw/ufw.conf:1",
		"dmi.sys_vendor":                  "/sys/class/dmi/id/sys_vendor",
	} {
		if got := c.snap.Sources[fact].String(); got != src {
			t.Errorf("%s: source %q, want %q", fact, got, src)
		}
	}
	// ufw.service's link outlived its unit file: nothing starts.
	if got := c.snap.Sources["firewall.ufw.service_enabled"].String(); !strings.Contains(got, "not installed") {
		t.Errorf("ufw.service_enabled: source %q, want not installed", got)
	}
	// The default zone has no file: an error, so the rule does not guess.
	if len(c.snap.Errors) != 1 || c.snap.Errors[0].Path != "/etc/firewalld/zones/work.xml" {
		t.Errorf("errors %+v", c.snap.Errors)
	}

	empty := versionsTestCollection(Dir(t.TempDir()))
	collectFirewall(empty)
	collectDMI(empty)
	if f := empty.snap.Firewall; f.Firewalld != nil || f.UFW != nil || f.Nftables != nil || empty.snap.DMI != nil {
		t.Errorf("nothing installed: %+v, dmi %+v", f, empty.snap.DMI)
	}
}

// FuzzFirewallConfs: the firewall parsers never panic, report errors as
// ErrParse, and return only what they were built to (known ufw actions,
// nft verdicts).
func FuzzFirewallConfs(f *testing.F) {
	for _, p := range []string{
		"../testdata/hosts/rhel-node/usr/lib/firewalld/zones/public.xml",
		"../testdata/hosts/rhel-node/etc/firewalld/zones/internal.xml",
		"../testdata/hosts/rhel-node/etc/firewalld/firewalld.conf",
		"../testdata/hosts/dmabuf-node/etc/ufw/user.rules",
		"../testdata/hosts/dmabuf-node/etc/default/ufw",
		"../testdata/hosts/gpu-node/etc/nftables.conf",
		"../testdata/hosts/dmabuf-node/etc/ufw/before.rules",
	} {
		data, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	// Debian's ufw as shipped: its rules templates and configuration.
	seeds := debroot.Files(f, "ufw", "usr/share/ufw/iptables/*.rules", "usr/share/ufw/ufw.conf", "etc/default/ufw")
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		f.Add(string(seeds[name]))
	}
	// Debian's nftables (its ruleset and example rulesets) and firewalld
	// (its configuration and zones) as shipped.
	for _, s := range append(realpkgSeeds(f, "nftables", "etc/nftables.conf", "usr/share/doc/nftables/examples/*.nft"),
		realpkgSeeds(f, "firewalld", "etc/firewalld/firewalld.conf", "usr/lib/firewalld/zones/*.xml")...) {
		f.Add(string(s))
	}
	f.Add("add rule ip filter INPUT ip saddr { 10.0.0.0/8, $x } counter accept\ninclude \"/etc/x/*.nft\"\n")
	f.Add("define a = { 1.2.3.4 }\ntable t { chain c { type filter hook input priority 0; policy drop; ip saddr $a jump d } }")
	f.Add("### tuple ### route:allow_log any any 0.0.0.0/0 any ::/0 - - in_a!out_b comment=00")
	f.Fuzz(func(t *testing.T, text string) {
		data := []byte(text)
		if _, err := parseFirewalldZone(data); err != nil && !errors.Is(err, ErrParse) {
			t.Errorf("zone: %v is not ErrParse", err)
		}
		tuples, errs := parseUFWUserRules(data)
		for _, tu := range tuples {
			switch tu.Rule.Action {
			case "allow", "deny", "reject", "limit":
			default:
				t.Errorf("ufw action %q", tu.Rule.Action)
			}
		}
		for _, chain := range []string{"ufw-before-input", "ufw6-before-input"} {
			lines, rules, iptErrs := parseIptablesChain(data, chain)
			if len(lines) != len(rules) {
				t.Errorf("%d lines for %d rules", len(lines), len(rules))
			}
			for _, r := range rules {
				for _, m := range r.Match {
					if m == "" || strings.HasPrefix(m, "-m comment") {
						t.Errorf("match %q in %+v", m, r)
					}
				}
			}
			errs = append(errs, iptErrs...)
		}
		_, kvErrs := parseKeyValues(data)
		for _, err := range append(errs, kvErrs...) {
			if !errors.Is(err, ErrParse) {
				t.Errorf("%v is not ErrParse", err)
			}
		}
		files := map[string]string{"/etc/nftables.conf": text, "/etc/inc.nft": text}
		chains, nftErrs := parseNftables("/etc/nftables.conf", data, nftFS(files))
		for _, err := range nftErrs {
			if !errors.Is(err, ErrParse) {
				t.Errorf("%v is not ErrParse", err)
			}
		}
		for _, c := range chains {
			if len(c.at) != len(c.Rules) {
				t.Fatalf("chain %s: %d rules, %d positions", c.Name, len(c.Rules), len(c.at))
			}
			for _, r := range c.Rules {
				if r.Verdict != "" && r.Verdict != "vmap" && !nftVerdicts[r.Verdict] {
					t.Errorf("verdict %q", r.Verdict)
				}
				if r.Match == nil {
					t.Errorf("nil match in %+v", r)
				}
			}
		}
	})
}

func TestParseIptablesChain(t *testing.T) {
	data, err := os.ReadFile("../testdata/hosts/dmabuf-node/etc/ufw/before.rules")
	if err != nil {
		t.Fatal(err)
	}
	extra := string(data) + "-A ufw-before-input ! -s 10.0.0.0/8 ! -i ib0 --protocol tcp --jump ACCEPT\n-A ufw-before-input -s 'unterminated\n-A ufw-before-input stray -j ACCEPT\n"
	lines, rules, errs := parseIptablesChain([]byte(extra), "ufw-before-input")
	want := []snapshot.IptablesRule{
		{Interface: "lo", Match: []string{}, Target: "ACCEPT"},
		{Match: []string{"-m conntrack --ctstate RELATED,ESTABLISHED"}, Target: "ACCEPT"},
		{Match: []string{"-m conntrack --ctstate INVALID"}, Target: "ufw-logging-deny"},
		{Match: []string{"-m conntrack --ctstate INVALID"}, Target: "DROP"},
		{Match: []string{"-p icmp --icmp-type destination-unreachable"}, Target: "ACCEPT"},
		{Match: []string{"-p icmp --icmp-type time-exceeded"}, Target: "ACCEPT"},
		{Match: []string{"-p icmp --icmp-type parameter-problem"}, Target: "ACCEPT"},
		{Match: []string{"-p icmp --icmp-type echo-request"}, Target: "ACCEPT"},
		{Match: []string{"-p udp --sport 67 --dport 68"}, Target: "ACCEPT"},
		{Source: "172.16.40.0/24", Match: []string{"-p tcp --dport 9100"}, Target: "ACCEPT"},
		{Match: []string{}, Target: "ufw-not-local"},
		{Match: []string{"-p udp --dport 5353", "-d 224.0.0.251"}, Target: "ACCEPT"},
		{Match: []string{"-p udp --dport 1900", "-d 239.255.255.250"}, Target: "ACCEPT"},
		{Source: "10.0.0.0/8", SourceNegated: true, Match: []string{"! -i ib0", "-p tcp"}, Target: "ACCEPT"},
	}
	if d := cmp.Diff(want, rules); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if len(lines) != len(rules) || lines[0] != 21 {
		t.Errorf("lines %v", lines)
	}
	if len(errs) != 2 {
		t.Errorf("errors %v, want the unterminated quote and the stray word", errs)
	}
	for _, err := range errs {
		if !errors.Is(err, ErrParse) {
			t.Errorf("%v is not ErrParse", err)
		}
	}
}

// TestParseIptablesRuleOptionOwners: an option goes to the most recent
// loaded match that takes it, else to the match -p loads implicitly,
// as iptables' command_default sends it; what no match takes is an error.
func TestParseIptablesRuleOptionOwners(t *testing.T) {
	for _, tt := range []struct {
		rule    string
		want    snapshot.IptablesRule
		wantErr string
	}{
		// ufw 0.36.2 before6.rules line 133.
		{rule: "-p udp -s fe80::/10 --sport 547 -d fe80::/10 --dport 546 -j ACCEPT",
			want: snapshot.IptablesRule{Source: "fe80::/10", Match: []string{"-p udp --sport 547 --dport 546", "-d fe80::/10"}, Target: "ACCEPT"}},
		{rule: "-p tcp -m conntrack --ctstate NEW ! -o eth0 ! --syn --dport 22 -m comment --comment 'x y' -j DROP",
			want: snapshot.IptablesRule{Match: []string{"-p tcp ! --syn --dport 22", "-m conntrack --ctstate NEW", "! -o eth0"}, Target: "DROP"}},
		{rule: "-p 17 -m multiport --dports 53,5353 --sport 53 -j ACCEPT",
			want: snapshot.IptablesRule{Match: []string{"-p 17 --sport 53", "-m multiport --dports 53,5353"}, Target: "ACCEPT"}},
		{rule: "-p ipv6-icmp -d ff02::1 --icmpv6-type 130 -j ACCEPT",
			want: snapshot.IptablesRule{Match: []string{"-p ipv6-icmp --icmpv6-type 130", "-d ff02::1"}, Target: "ACCEPT"}},
		// An explicit -m tcp takes the port; the implicit one is not loaded.
		{rule: "-p tcp -m tcp -d 10.0.0.1 --dport 22 -j ACCEPT",
			want: snapshot.IptablesRule{Match: []string{"-p tcp", "-m tcp --dport 22", "-d 10.0.0.1"}, Target: "ACCEPT"}},
		// A match whose options are not listed takes whatever follows it.
		{rule: "-p tcp -m hashlimit --hashlimit-upto 5/s --hashlimit-name ssh --dport 22 -j ACCEPT",
			want: snapshot.IptablesRule{Match: []string{"-p tcp", "-m hashlimit --hashlimit-upto 5/s --hashlimit-name ssh --dport 22"}, Target: "ACCEPT"}},
		// No match takes these: iptables rejects the rule.
		{rule: "! -p udp --dport 53 -j ACCEPT", wantErr: `"--dport" of the udp match with ! -p udp`},
		{rule: "! -p udp --icmp-type 8 -j ACCEPT", wantErr: `unexpected "--icmp-type"`},
		{rule: "! -m conntrack --ctstate NEW -j ACCEPT", wantErr: `unexpected ! before -m conntrack`},
		{rule: "-p udp --icmp-type 8 -j ACCEPT", wantErr: `unexpected "--icmp-type"`},
		{rule: "-p gre --dport 1 -j ACCEPT", wantErr: `unexpected "--dport"`},
		{rule: "-m conntrack --dport 1 -j ACCEPT", wantErr: `unexpected "--dport"`},
		{rule: "-s 10.0.0.0/8 stray -j ACCEPT", wantErr: `unexpected "stray"`},
	} {
		lines, rules, errs := parseIptablesChain([]byte("-A c "+tt.rule+"\n"), "c")
		if tt.wantErr != "" {
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.wantErr) || len(rules) != 0 {
				t.Errorf("%s: errors %v, rules %+v, want only %s", tt.rule, errs, rules, tt.wantErr)
			}
			continue
		}
		if len(errs) != 0 || len(rules) != 1 || lines[0] != 1 {
			t.Errorf("%s: errors %v, %d rules", tt.rule, errs, len(rules))
			continue
		}
		if d := cmp.Diff(tt.want, rules[0]); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.rule, d)
		}
	}
}
