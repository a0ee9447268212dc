package fleetaudit.rules.firewall_test

import data.fleetaudit.rules.firewall

zone(z) := object.union({"file": "/usr/lib/firewalld/zones/public.xml", "target": "", "sources": [], "interfaces": [], "services": ["ssh"], "ports": [], "rules": []}, z)

firewalld(enabled, zones) := {"firewall": {"firewalld": {"enabled": enabled, "default_zone": "public", "zones": zones}}}

stock := firewalld(true, {"public": zone({})})

findings(h) := fs if {
	fs := firewall.host_firewall_blocks_nccl with input as h
}

findings_with(h, nets) := fs if {
	fs := firewall.host_firewall_blocks_nccl with input as h with data.fleetaudit.params as {"fleet_networks": nets}
}

test_prefix_containment if {
	firewall.contains_net("10.0.0.0/8", "10.1.0.0/16")
	firewall.contains_net("10.0.0.0/8", "10.0.0.0/8")
	firewall.contains_net("0.0.0.0/0", "192.168.1.7")
	not firewall.contains_net("10.1.0.0/16", "10.0.0.0/8")
	not firewall.contains_net("10.0.0.0/8", "11.0.0.0/8")
	firewall.contains_net("fd00::/8", "fd12:3456::/32")
	firewall.contains_net("2001:db8::/32", "2001:0db8:0:1::/64")
	not firewall.contains_net("2001:db8::/32", "2001:db9::/32")
	not firewall.contains_net("10.0.0.0/8", "fd00::/8")
	not firewall.contains_net("ipset:cluster", "10.0.0.0/8")
	not firewall.contains_net("10.0.0.1-10.0.0.9", "10.0.0.0/30")
	not firewall.contains_net("10.0.0.0/33", "10.0.0.0/8")
	not firewall.contains_net("256.0.0.0/8", "10.0.0.0/8")
}

# The stock RHEL public zone: ssh, dhcpv6-client, cockpit; everything else
# rejected.
test_firewalld_default_zone_rejects if {
	[f] := [f | some f in findings(stock)]
	f.msg == "firewalld is enabled and its default zone public rejects what no rule accepts (default target); no rule accepts every source, and param fleet_networks is unset (set it to the fleet's networks to judge source-scoped accepts)"
	f.evidence == ["firewall.firewalld.enabled", "firewall.firewalld.default_zone", "firewall.firewalld.zones.public"]
	[g] := [g | some g in findings_with(stock, ["10.0.0.0/8"])]
	g.msg == "firewalld is enabled and its default zone public rejects what no rule accepts (default target); no accept covers the fleet's networks 10.0.0.0/8 (accepted sources: none)"
}

test_firewalld_disabled_or_accepting_passes if {
	count(findings(firewalld(false, {"public": zone({})}))) == 0
	count(findings(firewalld(true, {"public": zone({"target": "ACCEPT"})}))) == 0
	count(findings({"firewall": {}})) == 0
}

# The documented fix: the fleet's prefix in the trusted zone.
test_firewalld_trusted_source if {
	h := firewalld(true, {"public": zone({}), "trusted": zone({"target": "ACCEPT", "sources": ["10.0.0.0/8"]})})
	count(findings(h)) == 0
	count(findings_with(h, ["10.0.0.0/8"])) == 0
	count(findings_with(h, ["10.20.0.0/16"])) == 0
	[f] := [f | some f in findings_with(h, ["10.0.0.0/8", "172.16.0.0/12"])]
	contains(f.msg, "no accept covers the fleet's networks 10.0.0.0/8, 172.16.0.0/12 (accepted sources: 10.0.0.0/8)")
}

# A zone bound to the fleet's source whose target rejects takes the traffic
# away from everything else.
test_firewalld_source_zone_not_accepting if {
	h := firewalld(true, {"public": zone({}), "internal": zone({"sources": ["10.0.0.0/8"]})})
	count(findings_with(h, ["10.0.0.0/8"])) == 1
}

rich(x) := object.union({"family": "ipv4", "action": "accept", "match": []}, x)

test_firewalld_rich_rules if {
	from_fleet := firewalld(true, {"public": zone({"rules": [rich({"source": "10.0.0.0/8"})]})})
	count(findings_with(from_fleet, ["10.0.0.0/8"])) == 0
	count(findings_with(from_fleet, ["192.168.0.0/16"])) == 1
	port_only := firewalld(true, {"public": zone({"rules": [rich({"source": "10.0.0.0/8", "match": ["port 29500/tcp"]})]})})
	count(findings_with(port_only, ["10.0.0.0/8"])) == 1
	inverted := firewalld(true, {"public": zone({"rules": [rich({"source": "10.0.0.0/8", "source_invert": true})]})})
	count(findings_with(inverted, ["10.0.0.0/8"])) == 1
	everyone := firewalld(true, {"public": zone({"rules": [rich({})]})})
	count(findings(everyone)) == 0
	all_tcp := firewalld(true, {"public": zone({"ports": ["all/tcp"]})})
	count(findings(all_tcp)) == 0
}

test_firewalld_trusted_interface if {
	h := firewalld(true, {"public": zone({}), "trusted": zone({"target": "ACCEPT", "interfaces": ["ib0"]})})
	count(findings_with(h, ["10.0.0.0/8"])) == 0
	with_net := object.union(h, {"net": {"present": true, "interfaces": {"ib0": {"pci_address": "0000:1b:00.0"}, "docker0": {}}}})
	count(findings_with(with_net, ["10.0.0.0/8"])) == 0
	virtual := firewalld(true, {"public": zone({}), "trusted": zone({"target": "ACCEPT", "interfaces": ["docker0"]})})
	count(findings_with(object.union(virtual, {"net": with_net.net}), ["10.0.0.0/8"])) == 1
}

ufw(enabled, policy, rules) := {"firewall": {"ufw": {"enabled": enabled, "service_enabled": true, "default_input_policy": policy, "rules": rules}}}

tuple(r) := object.union({"action": "allow", "protocol": "any", "dport": "any", "dst": "0.0.0.0/0", "sport": "any", "src": "0.0.0.0/0", "direction": "in"}, r)

ssh := tuple({"protocol": "tcp", "dport": "22"})

test_ufw_drop_with_ssh_only if {
	[f] := [f | some f in findings(ufw(true, "drop", [ssh]))]
	startswith(f.msg, "ufw is enabled with default input policy drop; no rule accepts every source")
	f.evidence == ["firewall.ufw.enabled", "firewall.ufw.service_enabled", "firewall.ufw.default_input_policy"]
	count(findings(ufw(true, "reject", [ssh]))) == 1
}

test_ufw_inactive_or_accepting_passes if {
	count(findings(ufw(false, "drop", [ssh]))) == 0
	count(findings(ufw(true, "accept", [ssh]))) == 0
	h := ufw(true, "drop", [ssh])
	count(findings(object.union(h, {"firewall": {"ufw": {"service_enabled": false}}}))) == 0
}

test_ufw_source_covering if {
	h := ufw(true, "drop", [ssh, tuple({"src": "10.0.0.0/8"})])
	count(findings(h)) == 0
	count(findings_with(h, ["10.4.0.0/16"])) == 0
	[f] := [f | some f in findings_with(h, ["172.16.0.0/12"])]
	contains(f.msg, "no accept covers the fleet's networks 172.16.0.0/12 (accepted sources: 10.0.0.0/8)")

	# Restricted to a port, routed, outgoing, or udp only: covers nothing.
	for_port := ufw(true, "drop", [tuple({"src": "10.0.0.0/8", "protocol": "tcp", "dport": "29500"})])
	count(findings_with(for_port, ["10.0.0.0/8"])) == 1
	routed := ufw(true, "drop", [tuple({"src": "10.0.0.0/8", "route": true})])
	count(findings_with(routed, ["10.0.0.0/8"])) == 1
	udp := ufw(true, "drop", [tuple({"src": "10.0.0.0/8", "protocol": "udp"})])
	count(findings_with(udp, ["10.0.0.0/8"])) == 1
	deny := ufw(true, "drop", [tuple({"src": "10.0.0.0/8", "action": "deny"})])
	count(findings_with(deny, ["10.0.0.0/8"])) == 1
}

test_ufw_accept_all if {
	count(findings(ufw(true, "drop", [tuple({})]))) == 0
	count(findings(ufw(true, "drop", [tuple({"src": "::/0", "ipv6": true})]))) == 0
}

nft(enabled, chains) := {"firewall": {"nftables": {"enabled": enabled, "file": "/etc/nftables.conf", "chains": chains}}}

chain(rules, policy) := {"family": "inet", "table": "filter", "name": "input", "hook": "input", "policy": policy, "rules": rules}

r(x) := object.union({"match": [], "verdict": "accept"}, x)

base_rules := [
	r({"match": ["ct state established,related"]}),
	r({"iifname": ["lo"]}),
	r({"saddr": ["192.168.10.5"], "match": ["tcp dport 22"]}),
]

test_nft_policy_drop if {
	h := nft(true, [chain(base_rules, "drop")])
	[f] := [f | some f in findings(h)]
	startswith(f.msg, "nftables is enabled and chain inet filter input has policy drop; no rule accepts every source")
	f.evidence == ["firewall.nftables.enabled", "firewall.nftables.chains.0"]
	count(findings(nft(false, [chain(base_rules, "drop")]))) == 0
	count(findings(nft(true, [chain(base_rules, "accept")]))) == 0
	count(findings(nft(true, [object.union(chain(base_rules, "drop"), {"hook": "forward"})]))) == 0
}

test_nft_terminal_drop_rule if {
	h := nft(true, [chain(array.concat(base_rules, [r({"verdict": "reject"})]), "")])
	[f] := [f | some f in findings(h)]
	contains(f.msg, "drops everything at its rule 3")

	# An accept after the drop is never reached.
	late := nft(true, [chain(array.concat(base_rules, [r({"verdict": "drop"}), r({"saddr": ["10.0.0.0/8"]})]), "")])
	count(findings_with(late, ["10.0.0.0/8"])) == 1
	early := nft(true, [chain(array.concat(base_rules, [r({"saddr": ["10.0.0.0/8"]}), r({"verdict": "drop"})]), "")])
	count(findings_with(early, ["10.0.0.0/8"])) == 0
}

test_nft_source_accepts if {
	src := nft(true, [chain(array.concat(base_rules, [r({"saddr": ["10.0.0.0/8", "172.16.0.0/12"], "match": ["ct state new"]})]), "drop")])
	count(findings(src)) == 0
	count(findings_with(src, ["10.0.0.0/8", "172.20.0.0/16"])) == 0
	count(findings_with(src, ["192.168.0.0/16"])) == 1
	negated := nft(true, [chain(array.concat(base_rules, [r({"saddr": ["10.0.0.0/8"], "saddr_negated": true})]), "drop")])
	count(findings_with(negated, ["10.0.0.0/8"])) == 1
	ported := nft(true, [chain(array.concat(base_rules, [r({"saddr": ["10.0.0.0/8"], "match": ["tcp dport { 29400, 29500 }"]})]), "drop")])
	count(findings_with(ported, ["10.0.0.0/8"])) == 1
	tcp := nft(true, [chain(array.concat(base_rules, [r({"saddr": ["10.0.0.0/8"], "match": ["meta l4proto tcp"]})]), "drop")])
	count(findings_with(tcp, ["10.0.0.0/8"])) == 0
}

# Every input base chain must let the peer in.
test_nft_two_input_chains if {
	open := object.union(chain([r({"saddr": ["10.0.0.0/8"]})], "drop"), {"table": "site"})
	closed := chain(base_rules, "drop")
	h := nft(true, [open, closed])
	[f] := [f | some f in findings_with(h, ["10.0.0.0/8"])]
	f.evidence == ["firewall.nftables.enabled", "firewall.nftables.chains.1"]
}

test_nft_jump if {
	fabric := {"family": "inet", "table": "filter", "name": "fabric", "rules": [r({})]}
	via := chain(array.concat(base_rules, [r({"saddr": ["10.0.0.0/8"], "verdict": "jump", "target": "fabric"})]), "drop")
	count(findings_with(nft(true, [via, fabric]), ["10.0.0.0/8"])) == 0
	count(findings_with(nft(true, [via, fabric]), ["192.168.0.0/16"])) == 1
	ssh_only := {"family": "inet", "table": "filter", "name": "fabric", "rules": [r({"match": ["tcp dport 22"]})]}
	count(findings_with(nft(true, [via, ssh_only]), ["10.0.0.0/8"])) == 1
}

test_nft_interface_accept if {
	h := nft(true, [chain(array.concat(base_rules, [r({"iifname": ["ib*"]})]), "drop")])
	count(findings_with(h, ["10.0.0.0/8"])) == 0
	with_net := object.union(h, {"net": {"present": true, "interfaces": {"lo": {}, "ib0": {"pci_address": "0000:1b:00.0"}}}})
	count(findings_with(with_net, ["10.0.0.0/8"])) == 0
	named_set := nft(true, [chain(array.concat(base_rules, [r({"iifname": ["@fabric_ifs"]})]), "drop")])
	count(findings_with(named_set, ["10.0.0.0/8"])) == 1
	no_ib := object.union(h, {"net": {"present": true, "interfaces": {"lo": {}, "eth0": {"pci_address": "0000:00:05.0"}}}})
	count(findings_with(no_ib, ["10.0.0.0/8"])) == 1
}

# An ip table sees no IPv6 peer, an ip6 table no IPv4 one.
test_nft_family_networks if {
	v4 := nft(true, [object.union(chain(base_rules, "drop"), {"family": "ip"})])
	count(findings_with(v4, ["fd00::/8"])) == 0
	count(findings_with(v4, ["10.0.0.0/8", "fd00::/8"])) == 1
	v6 := nft(true, [object.union(chain(array.concat(base_rules, [r({"saddr": ["fd00::/8"]})]), "drop"), {"family": "ip6"})])
	count(findings_with(v6, ["10.0.0.0/8", "fd00::/8"])) == 0
	count(findings(v6)) == 0
}

# A site's accept in before.rules (ufw-before-input) covers like a user rule.
test_ufw_before_rules if {
	stock := [
		{"interface": "lo", "match": [], "target": "ACCEPT"},
		{"match": ["-m conntrack --ctstate RELATED,ESTABLISHED"], "target": "ACCEPT"},
		{"match": ["-p icmp --icmp-type echo-request"], "target": "ACCEPT"},
		{"match": [], "target": "ufw-not-local"},
	]
	h := object.union(ufw(true, "drop", [ssh]), {"firewall": {"ufw": {"before_rules": stock}}})
	count(findings_with(h, ["10.0.0.0/8"])) == 1
	site := array.concat(stock, [{"source": "10.0.0.0/8", "match": ["-m conntrack --ctstate NEW"], "target": "ACCEPT"}])
	h2 := object.union(ufw(true, "drop", [ssh]), {"firewall": {"ufw": {"before_rules": site}}})
	count(findings_with(h2, ["10.0.0.0/8"])) == 0
	ported := array.concat(stock, [{"source": "10.0.0.0/8", "match": ["-p tcp --dport 29500"], "target": "ACCEPT"}])
	h3 := object.union(ufw(true, "drop", [ssh]), {"firewall": {"ufw": {"before_rules": ported}}})
	count(findings_with(h3, ["10.0.0.0/8"])) == 1
	negated := array.concat(stock, [{"source": "10.0.0.0/8", "source_negated": true, "match": [], "target": "ACCEPT"}])
	h4 := object.union(ufw(true, "drop", [ssh]), {"firewall": {"ufw": {"before_rules": negated}}})
	count(findings_with(h4, ["10.0.0.0/8"])) == 1
}

# A before.rules accept of new connections covers only when nothing but the
# state narrows it: "-p tcp -m conntrack --ctstate NEW --dport 22" (the
# collector puts --dport in the tcp match, iptables' implicit one) and a
# conntrack match that also names a port or an address cover nothing.
before_accept(match) := object.union(ufw(true, "drop", [ssh]), {"firewall": {"ufw": {"before_rules": [{"source": "10.0.0.0/8", "match": match, "target": "ACCEPT"}]}}})

test_ufw_before_rules_new_state_only if {
	count(findings_with(before_accept(["-p tcp", "-m conntrack --ctstate NEW"]), ["10.0.0.0/8"])) == 0
	count(findings_with(before_accept(["-m state --state INVALID,NEW"]), ["10.0.0.0/8"])) == 0
	count(findings_with(before_accept(["-p tcp --dport 22", "-m conntrack --ctstate NEW"]), ["10.0.0.0/8"])) == 1
	count(findings_with(before_accept(["-m conntrack --ctstate NEW --ctorigdstport 22"]), ["10.0.0.0/8"])) == 1
	count(findings_with(before_accept(["-m conntrack --ctstate NEW --ctorigsrc 10.9.0.0/16"]), ["10.0.0.0/8"])) == 1
	count(findings_with(before_accept(["-m state --state NEW ! --state ESTABLISHED"]), ["10.0.0.0/8"])) == 1
}
