# RDMA ports: state and link rate as /sys/class/infiniband reports them.
package fleetaudit.rules.rdma

# Every port with a state the kernel printed (a port whose state could not
# be read is the collection-error rule's).
ports := [[dev, p, port] |
	some dev, d in input.rdma.devices
	some p, port in d.ports
	port.state != ""
]

active(port) if port.state == "ACTIVE"

# The most common rate of the host's ACTIVE ports of one link layer, when it
# holds at least 60% of them and there are three or more (with two, neither
# is the odd one out).
majority_rate(layer) := rate if {
	rates := [port.rate_gbps | some [_, _, port] in ports; active(port); port.link_layer == layer]
	count(rates) >= 3
	some rate in {r | some r in rates}
	count([r | some r in rates; r == rate]) * 10 >= count(rates) * 6
}

default min_rate := null

min_rate := data.fleetaudit.params.rdma_min_rate_gbps

problem(port) := sprintf("state %s", [port.state]) if not active(port)

problem(port) := sprintf("rate %s, below the fleet's minimum %v Gb/s", [port.rate, min_rate]) if {
	active(port)
	min_rate != null
	port.rate_gbps < min_rate
} else := sprintf("rate %s where the host's other %s ports run %v Gb/s", [port.rate, port.link_layer, majority_rate(port.link_layer)]) if {
	active(port)
	port.rate_gbps < majority_rate(port.link_layer)
}

# METADATA
# title: RDMA port down or slow
# description: >-
#   An RDMA port (InfiniBand, RoCE or EFA, from /sys/class/infiniband) is not
#   ACTIVE, or is ACTIVE at a rate below the profile's rdma_min_rate_gbps, or
#   below the rate most of the host's other ports of the same link layer run
#   at (at least 60% of three or more ports). NCCL spreads traffic over every
#   port it finds: a down port drops a rail, a port that trained at a lower
#   rate (a bad cable or transceiver) slows every collective to its pace. The
#   comparison is within the host; param rdma_min_rate_gbps catches a host
#   whose ports all trained low.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/networking_troubleshooting.html
#   description: NIC-level diagnostics - link layer, link rate and active state before running NCCL
# - ref: https://docs.kernel.org/ABI/stable/sysfs-class-infiniband.html
#   description: /sys/class/infiniband/<dev>/ports/<port>/state and rate
# custom:
#   id: rdma-port-degraded
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Check the port's cable, transceiver and switch port (ibstat, mlxlink);
#     reseat or replace, then confirm the port is ACTIVE at the fabric's rate
#     before returning the host to the scheduler.
#   facts:
#   - rdma.devices
rdma_port_degraded contains f if {
	some [dev, p, port] in ports
	why := problem(port)
	f := {
		"msg": sprintf("RDMA port %s/%s (%s): %s", [dev, p, port.link_layer, why]),
		"evidence": [sprintf("rdma.devices.%s.ports.%s", [dev, p])],
	}
}
