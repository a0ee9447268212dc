# Network interface settings across the hosts of one fleet.
package fleetaudit.fleet_rules.net

import data.fleetaudit.lib.skew

link_names := {1: "Ethernet", 32: "InfiniBand"}

link_name(t) := link_names[t]

link_name(t) := sprintf("type %d", [t]) if not link_names[t]

# A host's RDMA-facing interfaces: those on the PCI function of an RDMA
# device, with an MTU, by group. Hosts whose interfaces were not read do
# not vote.
rdma_facing[g.group] := ifcs if {
	some g in input.groups
	g.net.present == true
	ifcs := {name: ifc |
		some name, ifc in g.net.interfaces
		count(object.get(ifc, "rdma", [])) > 0
		ifc.mtu > 0
	}
}

# A host's RDMA-facing MTUs as one comparable value: "<link>:<mtu>" per
# distinct pair, sorted (IPoIB and RoCE interfaces run different MTUs on
# purpose; hosts are compared like for like). Hosts with none facing RDMA
# do not vote.
mtu_values := {group: concat(", ", sort(pairs)) |
	some group, ifcs in rdma_facing
	pairs := {sprintf("%s:%d", [link_name(ifc.type), ifc.mtu]) | some ifc in ifcs}
	count(pairs) > 0
}

# The MTU of each RDMA-facing interface, which the finding cites (each
# with the file it was read from).
mtu_evidence(group) := sort([sprintf("net.interfaces.%s.mtu", [name]) | some name, _ in rdma_facing[group]])

mtu_expected := skew.expected(mtu_values, null)

# METADATA
# title: MTU of RDMA-facing interfaces differs across the fleet
# description: >-
#   The MTUs of a host's interfaces that face the RDMA fabric (on the PCI
#   function of an RDMA device: RoCE netdevs, IPoIB) differ from the MTUs
#   most of the fleet's hosts run (at least 60%; below that the lack of
#   consensus is itself the finding). Each host's value is its distinct
#   (link type, MTU) pairs, so InfiniBand and Ethernet are compared like for
#   like. A RoCE path MTU follows the netdev MTU, and IPoIB datagram (2044)
#   against connected (up to 65520) mode changes what the NCCL bootstrap
#   and socket fallbacks can send: mixed MTUs across a job's hosts show up as
#   stalls and retransmissions, not errors.
# related_resources:
# - ref: https://docs.nvidia.com/networking/display/mlnxofedv24010331/ip+over+infiniband+(ipoib)
#   description: IPoIB datagram and connected mode MTUs
# - ref: https://docs.kernel.org/ABI/testing/sysfs-class-net.html
#   description: /sys/class/net/<iface>/mtu
# custom:
#   id: mtu-skew
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Set the fleet's MTU for RDMA-facing interfaces in its network
#     configuration layer (netplan, NetworkManager or ifcfg) and reapply it on
#     the deviating hosts.
#   facts:
#   - net.present
#   - net.interfaces
mtu_skew contains f if {
	some group, v in mtu_values
	f := skew.finding(group, v, mtu_expected, "RDMA-facing MTU", mtu_evidence(group))
}
