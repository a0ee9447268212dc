# Host firewalls (firewalld, ufw, nftables) against the peers NCCL talks to.
package fleetaudit.rules.firewall

# The fleet's networks (param fleet_networks, CIDR prefixes); null when the
# profile sets none.
default networks := null

networks := data.fleetaudit.params.fleet_networks

# The networks a table of family sees: an ip table no IPv6 peer, an ip6
# table no IPv4 one.
nets_for(family) := null if networks == null

else := [n | some n in networks; not contains(n, ":")] if family == "ip"

else := [n | some n in networks; contains(n, ":")] if family == "ip6"

else := networks

# --- Addresses as bit strings, so prefixes compare without net.* (which
# policies may not call). An address is IPv4 dotted quad or IPv6 hex groups
# with at most one "::"; anything else (a range, a set name, ipset:...,
# mac:...) has no bits and covers nothing.

octet_bits(o) := sprintf("%08b", [to_number(o)]) if {
	regex.match(`^[0-9]{1,3}$`, o)
	to_number(o) <= 255
}

place := [1, 16, 256, 4096]

hex_digit := {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9, "a": 10, "b": 11, "c": 12, "d": 13, "e": 14, "f": 15}

group_bits(g) := sprintf("%016b", [n]) if {
	regex.match(`^[0-9a-f]{1,4}$`, g)
	digits := split(g, "")
	n := sum([v | some i, d in digits; v := hex_digit[d] * place[count(digits) - 1 - i]])
}

v4_bits(a) := concat("", [b | some o in parts; b := octet_bits(o)]) if {
	parts := split(a, ".")
	count(parts) == 4
	count([1 | some o in parts; octet_bits(o)]) == 4
}

v6_groups(a) := split(a, ":") if {
	not contains(a, "::")
	count(split(a, ":")) == 8
}

v6_groups(a) := array.concat(array.concat(head, [x | some _ in numbers.range(1, 8 - count(head) - count(tail)); x := "0"]), tail) if {
	contains(a, "::")
	halves := split(a, "::")
	count(halves) == 2
	head := [g | some g in split(halves[0], ":"); g != ""]
	tail := [g | some g in split(halves[1], ":"); g != ""]
	count(head) + count(tail) < 8
}

v6_bits(a) := concat("", [b | some g in groups; b := group_bits(g)]) if {
	groups := v6_groups(lower(a))
	count([1 | some g in groups; group_bits(g)]) == 8
}

# prefix(p) is [bits, length] of "addr" or "addr/len".
prefix(p) := [bits, len] if {
	parts := split(p, "/")
	count(parts) <= 2
	bits := addr_bits(parts[0])
	len := prefix_len(parts, count(bits))
}

addr_bits(a) := v4_bits(a)

addr_bits(a) := v6_bits(a) if contains(a, ":")

prefix_len(parts, max) := max if count(parts) == 1

prefix_len(parts, max) := n if {
	count(parts) == 2
	regex.match(`^[0-9]{1,3}$`, parts[1])
	n := to_number(parts[1])
	n <= max
}

# contains_net(outer, inner): every address of prefix inner is in outer.
contains_net(outer, inner) if {
	[ob, ol] := prefix(outer)
	[ib, il] := prefix(inner)
	count(ob) == count(ib)
	ol <= il
	substring(ob, 0, ol) == substring(ib, 0, ol)
}

any_source := {"0.0.0.0/0", "::/0", "any", ""}

# --- What each firewall accepts without looking at ports: {"scope": "any"},
# {"scope": "source", "source": prefix} or {"scope": "interface", "iface":
# name}, each with the fact that says so. A port-, service- or
# state-restricted accept covers nothing: NCCL's bootstrap and socket
# transport listen on ephemeral ports.

# firewalld: a zone whose target is ACCEPT takes everything bound to it; a
# rich rule that accepts without matching anything else takes its source
# (or the zone's traffic); a zone-level <protocol value="tcp"/> accepts all
# TCP to the zone.
fwd := input.firewall.firewalld

zone_fact(name) := sprintf("firewall.firewalld.zones.%s", [name])

firewalld_accepts := ((firewalld_zone_sources | firewalld_zone_ifaces) | firewalld_rich) | firewalld_tcp

firewalld_zone_sources := {{"scope": "source", "source": s, "fact": sprintf("%s.sources.%d", [zone_fact(name), i])} |
	some name, z in fwd.zones
	upper(z.target) == "ACCEPT"
	some i, s in z.sources
}

firewalld_zone_ifaces := {{"scope": "interface", "iface": ifc, "fact": zone_fact(name)} |
	some name, z in fwd.zones
	upper(z.target) == "ACCEPT"
	some ifc in z.interfaces
}

firewalld_rich := {a |
	some name, z in fwd.zones
	some i, r in z.rules
	r.action == "accept"
	count(r.match) == 0
	not r.source_invert
	some a in rich_scope(name, z, r, sprintf("%s.rules.%d", [zone_fact(name), i]))
}

firewalld_tcp := {{"scope": "any", "fact": zone_fact(fwd.default_zone)} |
	some p in fwd.zones[fwd.default_zone].ports
	p == "all/tcp"
}

rich_scope(name, z, r, fact) := {{"scope": "source", "source": r.source, "fact": fact}} if r.source != ""

else := {{"scope": "any", "fact": fact}} if name == fwd.default_zone

else := {{"scope": "source", "source": s, "fact": fact} | some s in z.sources}

firewalld_drops := sprintf("firewalld is enabled and its default zone %s %s", [fwd.default_zone, target_text(fwd.zones[fwd.default_zone].target)]) if {
	fwd.enabled == true
	upper(fwd.zones[fwd.default_zone].target) != "ACCEPT"
}

target_text(t) := "drops what no rule accepts (target DROP)" if upper(t) == "DROP"

else := "rejects what no rule accepts (target %%REJECT%%)" if upper(t) in {"%%REJECT%%", "REJECT"}

else := "rejects what no rule accepts (default target)"

# ufw: an allow rule for incoming traffic of any protocol or TCP to any
# port; user6.rules' ::/0 is any too.
ufw := input.firewall.ufw

ufw_accepts := {a |
	some i, r in ufw.rules
	r.action == "allow"
	not r.route
	r.direction == "in"
	r.protocol in {"any", "tcp"}
	r.dport == "any"
	object.get(r, "dapp", "") == ""
	a := ufw_scope(r, sprintf("firewall.ufw.rules.%d", [i]))
}

# before.rules: an ACCEPT in ufw-before-input with nothing but a source,
# an interface, TCP or new connections.
ufw_before_accepts := {a |
	some i, r in ufw.before_rules
	r.target == "ACCEPT"
	not r.source_negated
	every m in r.match {
		ipt_neutral(m)
	}
	a := ipt_scope(r, sprintf("firewall.ufw.before_rules.%d", [i]))
}

ipt_neutral(m) if regex.match(`^-p (tcp|6)$`, m)

# The state list and nothing else: a port or an address the same match
# also names (--ctorigdstport, --ctorigsrc) narrows it.
ipt_neutral(m) if regex.match(`^-m (conntrack --ctstate|state --state) [A-Z,]*\bNEW\b[A-Z,]*$`, m)

ipt_scope(r, fact) := {"scope": "interface", "iface": r.interface, "fact": fact} if {
	object.get(r, "interface", "") != ""
} else := {"scope": "any", "fact": fact} if {
	object.get(r, "source", "") in any_source
} else := {"scope": "source", "source": r.source, "fact": fact}

ufw_scope(r, fact) := {"scope": "interface", "iface": r.interface, "fact": fact} if {
	object.get(r, "interface", "") != ""
} else := {"scope": "any", "fact": fact} if {
	r.src in any_source
} else := {"scope": "source", "source": r.src, "fact": fact}

ufw_drops := sprintf("ufw is enabled with default input policy %s", [ufw.default_input_policy]) if {
	ufw.enabled == true
	ufw.service_enabled == true
	ufw.default_input_policy in {"drop", "reject"}
}

# nftables: every base chain on the input hook of an ip, ip6 or inet table
# must let the peer through (an accept in one chain does not skip the
# others). A chain drops by its policy or by a rule that drops everything;
# accepts after that rule are never reached. A jump or goto from the chain
# brings the target chain's accepts, under the jump's own source and
# interface.
nft := input.firewall.nftables

input_chain(i) if {
	c := nft.chains[i]
	c.hook == "input"
	c.family in {"ip", "ip6", "inet"}
}

unconditional(r) if {
	count(object.get(r, "saddr", [])) == 0
	count(object.get(r, "iifname", [])) == 0
	count(r.match) == 0
}

first_drop(c) := min([j | some j, r in c.rules; r.verdict in {"drop", "reject"}; unconditional(r)])

reachable(c, j) if j < first_drop(c)

reachable(c, _) if count([1 | some r in c.rules; r.verdict in {"drop", "reject"}; unconditional(r)]) == 0

chain_drops(i) := sprintf("nftables is enabled and chain %s %s %s %s", [c.family, c.table, c.name, how]) if {
	nft.enabled == true
	input_chain(i)
	c := nft.chains[i]
	how := drop_how(c)
}

drop_how(c) := "has policy drop" if c.policy == "drop"

else := sprintf("drops everything at its rule %d", [first_drop(c)])

# A match that does not narrow which NCCL connections pass: new TCP
# connections (established ones are accepted in every real ruleset).
neutral(m) if regex.match(`^ct state [^=!]*\bnew\b`, m)

neutral(m) if regex.match(`^(meta l4proto|ip protocol|ip6 nexthdr) (tcp|\{ .*\btcp\b.* \})$`, m)

neutral(m) if regex.match(`^meta nfproto `, m)

nft_accept_rule(r) if {
	r.verdict == "accept"
	not r.saddr_negated
	every m in r.match {
		neutral(m)
	}
}

nft_accepts(i) := {a |
	c := nft.chains[i]
	some j, r in c.rules
	reachable(c, j)
	nft_accept_rule(r)
	some a in nft_scope(r, sprintf("firewall.nftables.chains.%d.rules.%d", [i, j]))
} | {a |
	c := nft.chains[i]
	some j, jr in c.rules
	reachable(c, j)
	jr.verdict in {"jump", "goto"}
	not jr.saddr_negated
	every m in jr.match {
		neutral(m)
	}
	some k, t in nft.chains
	t.family == c.family
	t.table == c.table
	t.name == jr.target
	some l, r in t.rules
	nft_accept_rule(r)
	merged := object.union(r, {
		"saddr": merge_list(object.get(r, "saddr", []), object.get(jr, "saddr", [])),
		"iifname": merge_list(object.get(r, "iifname", []), object.get(jr, "iifname", [])),
	})
	some a in nft_scope(merged, sprintf("firewall.nftables.chains.%d.rules.%d", [k, l]))
}

merge_list(own, outer) := own if count(own) > 0

else := outer

nft_scope(r, fact) := {{"scope": "interface", "iface": i, "fact": fact} | some i in r.iifname} if {
	count(object.get(r, "iifname", [])) > 0
} else := {{"scope": "source", "source": s, "fact": fact} | some s in r.saddr} if {
	count(object.get(r, "saddr", [])) > 0
} else := {{"scope": "any", "fact": fact}}

# --- Coverage.

# An interface-scoped accept counts when it names a physical interface (one
# on a PCI function in /sys/class/net; nft's "ib*" wildcards too), or any
# interface but loopback where the interfaces were not read: the auditor
# does not know the addresses behind it, and the cluster NIC in a trusted
# zone is the documented way to open a fabric.
iface_counts(name) if {
	name != "lo"
	not startswith(name, "@") # a named set the file does not list
	not input.net.present
}

iface_counts(name) if {
	name != "lo"
	input.net.present == true
	some n, ifc in input.net.interfaces
	object.get(ifc, "pci_address", "") != ""
	glob.match(name, [], n)
}

covered(accepts, _) if {
	some a in accepts
	a.scope == "any"
}

covered(accepts, _) if {
	some a in accepts
	a.scope == "interface"
	iface_counts(a.iface)
}

# With fleet_networks: every network inside an accepted source.
covered(accepts, nets) if {
	nets != null
	every n in nets {
		some a in accepts
		a.scope == "source"
		contains_net(a.source, n)
	}
}

# Without it, a source-scoped accept may be the fleet's: not reported.
covered(accepts, null) if {
	some a in accepts
	a.scope == "source"
}

why(accepts, nets) := sprintf("no accept covers the fleet's networks %s (accepted sources: %s)", [concat(", ", nets), sources_text(accepts)]) if {
	nets != null
} else := "no rule accepts every source, and param fleet_networks is unset (set it to the fleet's networks to judge source-scoped accepts)"

sources_text(accepts) := "none" if count({a | some a in accepts; a.scope == "source"}) == 0

else := concat(", ", sort({a.source | some a in accepts; a.scope == "source"}))

# METADATA
# title: Host firewall drops NCCL's connections
# description: >-
#   firewalld, ufw or nftables is enabled with an input policy that drops or
#   rejects, and nothing it accepts covers the fleet's networks (param
#   fleet_networks). NCCL's bootstrap, its proxies and its socket transport
#   listen over TCP on ports the kernel picks (ncclSocketListen binds port 0
#   unless NCCL_COMM_ID forces one): a firewall that opens only named ports
#   (ssh, an exporter, the launcher's rendezvous port) drops them, and NCCL
#   initialisation hangs until its timeout (the HyperPod NCCL debugging
#   guide's "Host Firewall Blocking NCCL"). RDMA
#   traffic (InfiniBand verbs, RoCE, EFA) bypasses netfilter, but NCCL's
#   bootstrap does not, so RDMA fleets are affected too. Read from the
#   configuration the services load at boot, not the running ruleset:
#   firewalld's default zone target, its zones bound to sources or
#   interfaces with target ACCEPT and rich rules that accept a source
#   without a port or service; ufw's ENABLED, DEFAULT_INPUT_POLICY, allow
#   rules for any port and ACCEPTs a site added to before.rules; nftables' base input chains (policy drop, or a rule
#   that drops everything) and their accepts by ip saddr or interface, one
#   jump deep. An accept restricted to ports or services covers nothing; an
#   accept bound to a physical interface counts as covering (the auditor
#   does not know its addresses). Without fleet_networks, only an accept
#   from every source covers, and a host with a source-scoped accept is not
#   reported.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
#   description: NCCL troubleshooting - networking and firewalls
# - ref: https://github.com/NVIDIA/nccl/blob/master/src/misc/socket.cc
#   description: ncclSocketListen - "addr port should be 0 (Any port)"
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-socket-ifname
#   description: NCCL_SOCKET_IFNAME - the interface of NCCL's TCP sockets
# - ref: https://firewalld.org/documentation/man-pages/firewalld.zone.html
#   description: firewalld.zone(5) - zone target, sources, rich rules
# - ref: https://manpages.ubuntu.com/manpages/noble/man8/ufw-framework.8.html
#   description: ufw-framework(8) - ufw.conf, /etc/default/ufw, user.rules
# - ref: https://wiki.nftables.org/wiki-nftables/index.php/Configuring_chains
#   description: nftables - base chains, hooks and policies
# custom:
#   id: host-firewall-blocks-nccl
#   severity: high
#   profiles: [gpu-training]
#   image: true
#   remediation: >-
#     Accept the fleet's networks before the drop: a firewalld zone with
#     target ACCEPT bound to the fleet's prefix (firewall-cmd --permanent
#     --zone=trusted --add-source=10.0.0.0/8), ufw allow from 10.0.0.0/8, or
#     an nftables "ip saddr 10.0.0.0/8 accept" in the input chain; or take
#     the cluster interface into a trusted zone. Then set the profile's
#     fleet_networks so the audit can check it.
#   facts:
#   - firewall
#   - net.interfaces
host_firewall_blocks_nccl contains f if {
	what := firewalld_drops
	not covered(firewalld_accepts, networks)
	f := {
		"msg": sprintf("%s; %s", [what, why(firewalld_accepts, networks)]),
		"evidence": ["firewall.firewalld.enabled", "firewall.firewalld.default_zone", zone_fact(fwd.default_zone)],
	}
}

host_firewall_blocks_nccl contains f if {
	what := ufw_drops
	accepts := ufw_accepts | ufw_before_accepts
	not covered(accepts, networks)
	f := {
		"msg": sprintf("%s; %s", [what, why(accepts, networks)]),
		"evidence": ["firewall.ufw.enabled", "firewall.ufw.service_enabled", "firewall.ufw.default_input_policy"],
	}
}

host_firewall_blocks_nccl contains f if {
	some i, _ in nft.chains
	what := chain_drops(i)
	nets := nets_for(nft.chains[i].family)
	nets != []
	accepts := nft_accepts(i)
	not covered(accepts, nets)
	f := {
		"msg": sprintf("%s; %s", [what, why(accepts, nets)]),
		"evidence": ["firewall.nftables.enabled", sprintf("firewall.nftables.chains.%d", [i])],
	}
}
