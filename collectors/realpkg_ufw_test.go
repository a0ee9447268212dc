package collectors

import (
	"context"
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

// ufwInstalledRoot is a root holding Debian's ufw package as its postinst
// ("configure") leaves it on a fresh install: the rules templates of
// /usr/share/ufw copied into /etc/ufw (ucf, cp), ufw.conf copied as
// shipped (the debconf question ufw/enable defaults to false: ENABLED=no
// stays), and ufw.service enabled by deb-systemd-helper (was-enabled
// defaults to true on a new installation).
func ufwInstalledRoot(t *testing.T) (string, debroot.Package) {
	t.Helper()
	root, pkgs := debroot.Root(t, "ufw")
	copyFile := func(from, to string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, to), data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"before.rules", "before6.rules", "after.rules", "after6.rules", "user.rules", "user6.rules"} {
		copyFile("usr/share/ufw/iptables/"+f, "etc/ufw/"+f)
	}
	for _, f := range []string{"before.init", "after.init", "ufw.conf"} {
		copyFile("usr/share/ufw/"+f, "etc/ufw/"+f)
	}
	wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/lib/systemd/system/ufw.service", filepath.Join(wants, "ufw.service")); err != nil {
		t.Fatal(err)
	}
	return root, pkgs[0]
}

// TestRealUFWPackage collects Debian's ufw as installed: every file of the
// package parses, and the facts are ufw's documented defaults.
func TestRealUFWPackage(t *testing.T) {
	root, pkg := ufwInstalledRoot(t)
	t.Logf("ufw %s (%s)", pkg.Version, filepath.Base(pkg.Deb))
	target, err := Local(root, LocalOptions{NoExec: true})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := Collect(context.Background(), target, fixtureOptions("ufw"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range snap.Errors {
		if e.Collector == "firewall" {
			t.Errorf("firewall collection error: %s: %s", e.Path, e.Reason)
		}
	}
	u := snap.Firewall.UFW
	if u == nil {
		t.Fatal("ufw installed but not collected")
	}
	if snap.Firewall.Firewalld != nil || snap.Firewall.Nftables != nil {
		t.Errorf("only ufw is installed: %+v", snap.Firewall)
	}
	// ufw.conf ships ENABLED=no (ufw(8): "ufw is disabled by default");
	// /etc/default/ufw ships DEFAULT_INPUT_POLICY="DROP"; the user rules
	// templates hold no rules until "ufw allow" writes some.
	if u.Enabled || !u.ServiceEnabled || u.DefaultInputPolicy != "drop" || len(u.Rules) != 0 {
		t.Errorf("ufw: enabled %v (want false), service enabled %v (want true), input policy %q (want drop), %d user rules (want 0)",
			u.Enabled, u.ServiceEnabled, u.DefaultInputPolicy, len(u.Rules))
	}
	// Every -A line of the two input chains is a rule.
	count := func(file, chain string) int {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		return len(regexp.MustCompile(`(?m)^-A `+chain+` `).FindAll(data, -1))
	}
	n4, n6 := count("etc/ufw/before.rules", "ufw-before-input"), count("etc/ufw/before6.rules", "ufw6-before-input")
	if len(u.BeforeRules) != n4+n6 || n6 == 0 {
		t.Fatalf("%d before rules, want %d + %d", len(u.BeforeRules), n4, n6)
	}
	// The DHCPv6 client rule: -p udp -s fe80::/10 --sport 547 -d fe80::/10 --dport 546.
	dhcp6 := snapshot.IptablesRule{Source: "fe80::/10", Match: []string{"-p udp --sport 547 --dport 546", "-d fe80::/10"}, Target: "ACCEPT", IPv6: true}
	found := false
	for i, r := range u.BeforeRules {
		if cmp.Equal(r, dhcp6) {
			found = true
			at := snap.Sources["firewall.ufw.before_rules."+strconv.Itoa(i)]
			if at.File != "/etc/ufw/before6.rules" || at.Line != 133 {
				t.Errorf("DHCPv6 client rule from %+v, want /etc/ufw/before6.rules:133", at)
			}
		}
	}
	if !found {
		t.Errorf("no DHCPv6 client rule %+v in %+v", dhcp6, u.BeforeRules)
	}
	if at := snap.Sources["firewall.ufw.enabled"]; at.File != "/etc/ufw/ufw.conf" || at.Line == 0 {
		t.Errorf("ufw enabled from %+v, want the ENABLED= line of /etc/ufw/ufw.conf", at)
	}
}

// TestRealUFWRulesFilesParse: every chain of every rules file ufw ships
// (before, after and user, IPv4 and IPv6) reads without an error, each -A
// line a rule.
func TestRealUFWRulesFilesParse(t *testing.T) {
	files := debroot.Files(t, "ufw", "usr/share/ufw/iptables/*.rules")
	if files == nil {
		t.Skip("ufw not available here")
	}
	appendRE := regexp.MustCompile(`(?m)^-A (\S+) `)
	for name, data := range files {
		chains := map[string]int{}
		for _, m := range appendRE.FindAllSubmatch(data, -1) {
			chains[string(m[1])]++
		}
		if len(chains) == 0 && !strings.Contains(name, "/user") {
			// user6.rules ships with no rules of its own
			t.Errorf("%s: no -A lines", name)
		}
		for chain, n := range chains {
			lines, rules, errs := parseIptablesChain(data, chain)
			for _, err := range errs {
				t.Errorf("%s, chain %s: %v", name, chain, err)
			}
			if len(rules) != n || len(lines) != n {
				t.Errorf("%s, chain %s: %d rules, want %d", name, chain, len(rules), n)
			}
		}
	}
}
