# NCCL settings outside the job: /etc/nccl.conf and NCCL_*/FI_* exports.
package fleetaudit.rules.nccl

import data.fleetaudit.lib.version

env := input.nccl_config.effective

fact(name) := sprintf("nccl_config.effective.%s", [name])

# Debug knobs NCCL documents as not for production, and how bad each is
# here.
debug_severity(name, value) := "high" if {
	name == "NCCL_IB_DISABLE"
	value == "1"
	count(input.rdma.devices) > 0
} else := "high" if {
	name == "NCCL_PROTO"
	contains(lower(value), "ll128")
	not startswith(value, "^")
} else := "medium" if {
	name in {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_NTHREADS"}
} else := "medium" if {
	name == "NCCL_IB_DISABLE"
	value == "1"
}

# METADATA
# title: Debug-only NCCL setting in host configuration
# description: >-
#   /etc/nccl.conf, /etc/environment or /etc/profile.d sets an NCCL variable the
#   NCCL documentation describes as a debugging aid that should generally not
#   be set in production: NCCL_IB_DISABLE=1 with RDMA devices present, or
#   NCCL_PROTO forcing LL128, is high; NCCL_P2P_DISABLE, NCCL_SHM_DISABLE,
#   NCCL_ALGO, NCCL_PROTO, NCCL_BUFFSIZE and NCCL_NTHREADS are medium. Every
#   job on the host inherits them.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL environment variables
# custom:
#   id: nccl-debug-env
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Remove the variable from the host configuration; set it per job while
#     debugging instead.
#   facts:
#   - nccl_config.effective
#   - rdma.devices
nccl_debug_env contains f if {
	some name, value in env
	sev := debug_severity(name, value)
	f := object.union(
		{
			"msg": sprintf("%s=%s is set for every job on the host; NCCL documents it as a debugging setting", [name, value]),
			"evidence": [fact(name)],
			"severity": sev,
		},
		debug_fix(name),
	)
}

# NCCL_IB_DISABLE=0 is NCCL's default, so setting it where NCCL reads with
# the highest precedence undoes the debug setting. The other knobs have no
# neutral value (any NCCL_ALGO forces an algorithm): removing the line is
# their fix, which an nccl-env fix cannot express.
debug_fix("NCCL_IB_DISABLE") := {"fix": {"kind": "nccl-env", "set": {"NCCL_IB_DISABLE": "0"}}}

debug_fix(name) := {} if name != "NCCL_IB_DISABLE"

nccl_versions := {l.version | some l in input.libraries.nccl; not l.version in {"", "unknown"}}

# METADATA
# title: NCCL_MIN/MAX_NCHANNELS with an NCCL that superseded them
# description: >-
#   NCCL_MIN_NCHANNELS or NCCL_MAX_NCHANNELS is set and the host's NCCL is 2.17
#   or later, where NCCL_MIN_CTAS and NCCL_MAX_CTAS replace them; the old
#   variables no longer mean what the setting intended.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL_MIN_CTAS, NCCL_MAX_CTAS and the deprecated NCHANNELS
# custom:
#   id: nccl-nchannels-superseded
#   severity: low
#   profiles: [gpu-training]
#   remediation: >-
#     Replace NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS with NCCL_MIN_CTAS /
#     NCCL_MAX_CTAS.
#   facts:
#   - nccl_config.effective
#   - libraries.nccl
nccl_nchannels_superseded contains f if {
	some name in ["NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"]
	env[name]
	newer := {v | some v in nccl_versions; not version.less(v, "2.17")}
	count(newer) > 0
	f := {
		"msg": sprintf("%s is set, but NCCL %s uses NCCL_MIN_CTAS/NCCL_MAX_CTAS", [name, concat(", ", sort(newer))]),
		"evidence": [fact(name), "libraries.nccl"],
	}
}

efa_present if {
	some _, d in input.rdma.devices
	d.driver == "efa"
}

efa_problems := {why | some kind in ["ifname", "collnet", "rdma"]; why := efa_problem(kind)}

efa_problem("ifname") := "NCCL_SOCKET_IFNAME is unset, so bootstrap may pick an interface the instance cannot route" if {
	not env.NCCL_SOCKET_IFNAME
}

efa_problem("collnet") := "NCCL_COLLNET_ENABLE=1, but EFA has no CollNet" if env.NCCL_COLLNET_ENABLE == "1"

efa_problem("rdma") := sprintf("FI_EFA_USE_DEVICE_RDMA=%s, so the NIC does not read GPU buffers directly", [env.FI_EFA_USE_DEVICE_RDMA]) if {
	env.FI_EFA_USE_DEVICE_RDMA
	env.FI_EFA_USE_DEVICE_RDMA != "1"
}

# METADATA
# title: NCCL settings wrong for EFA
# description: >-
#   EFA devices are present and the host configuration leaves
#   NCCL_SOCKET_IFNAME unset (init can hang on an unroutable interface), sets
#   NCCL_COLLNET_ENABLE=1 (no CollNet on EFA; on InfiniBand with SHARP it is
#   fine, so hosts without EFA are not checked), or sets FI_EFA_USE_DEVICE_RDMA
#   to something other than 1.
# related_resources:
# - ref: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl.html
#   description: NCCL with EFA
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL_SOCKET_IFNAME and NCCL_COLLNET_ENABLE
# custom:
#   id: efa-nccl-env
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Set NCCL_SOCKET_IFNAME to the instance's primary interface, unset
#     NCCL_COLLNET_ENABLE and set FI_EFA_USE_DEVICE_RDMA=1 in the EFA fleet's
#     layer.
#   facts:
#   - rdma.devices
#   - nccl_config.effective
efa_nccl_env contains f if {
	efa_present
	count(efa_problems) > 0
	f := object.union(
		{
			"msg": sprintf("EFA host: %s", [concat("; ", sort(efa_problems))]),
			"evidence": ["rdma.devices", "nccl_config.effective"],
		},
		efa_fix,
	)
}

# NCCL_COLLNET_ENABLE=0 is NCCL's default. NCCL_SOCKET_IFNAME needs the
# instance's primary interface, which no snapshot records: a host missing it
# gets no fix, since a fix that leaves part of the finding is no fix.
efa_fix := {} if {
	not env.NCCL_SOCKET_IFNAME
} else := {"fix": {"kind": "nccl-env", "set": object.union(collnet_set, rdma_set)}}

collnet_set := {"NCCL_COLLNET_ENABLE": "0"} if efa_problem("collnet")

else := {}

rdma_set := {"FI_EFA_USE_DEVICE_RDMA": "1"} if efa_problem("rdma")

else := {}
