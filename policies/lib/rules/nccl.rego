# NCCL settings outside the job: /etc/nccl.conf and NCCL_*/FI_* exports.
package fleetaudit.rules.nccl

import data.fleetaudit.lib.version
import data.fleetaudit.rules.pods

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
#   image: true
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
#   or later, where the documentation deprecates them for NCCL_MIN_CTAS and
#   NCCL_MAX_CTAS. NCCL still reads both (src/graph/connect.cc, NCCL_PARAM
#   MinNchannels/MaxNchannels, lines 331-332 at v2.30.7-1) and combines them
#   with the CTA settings, the most restrictive winning: the channel count is
#   max(MIN_NCHANNELS, MIN_CTAS) and min(MAX_NCHANNELS, MAX_CTAS) (connect.cc
#   lines 497-505). So the old variable is not ignored: it silently keeps
#   capping or raising the channel count alongside whatever NCCL_*_CTAS or the
#   communicator config asks for, and it may go away in a later release.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL_MIN_CTAS, NCCL_MAX_CTAS and the NCHANNELS variables deprecated in 2.17
# - ref: https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/graph/connect.cc#L331-L360
#   description: NCCL still reads NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS
# - ref: https://github.com/NVIDIA/nccl/blob/v2.17.1-1/src/init.cc#L1072-L1073
#   description: NCCL_MAX_CTAS and NCCL_MIN_CTAS, added in 2.17
# custom:
#   id: nccl-nchannels-superseded
#   severity: low
#   profiles: [gpu-training]
#   remediation: >-
#     Replace NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS with NCCL_MIN_CTAS /
#     NCCL_MAX_CTAS, removing the old variable: while it is set, NCCL applies
#     whichever of the two is more restrictive.
#   facts:
#   - nccl_config.effective
#   - libraries.nccl
nccl_nchannels_superseded contains f if {
	some name in ["NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"]
	env[name]
	newer := {v | some v in nccl_versions; not version.less(v, "2.17")}
	count(newer) > 0
	f := {
		"msg": sprintf("%s is set with NCCL %s, which deprecates it for NCCL_MIN_CTAS/NCCL_MAX_CTAS but still applies it on top of them", [name, concat(", ", sort(newer))]),
		"evidence": [fact(name), "libraries.nccl"],
	}
}

efa_present if {
	some _, d in input.rdma.devices
	d.driver == "efa"
}

efa_problems := {why | some kind in ["ifname", "collnet", "rdma", "provider"]; why := efa_problem(kind)}

efa_problem("ifname") := "NCCL_SOCKET_IFNAME is unset, so bootstrap may pick an interface the instance cannot route" if {
	not env.NCCL_SOCKET_IFNAME
}

efa_problem("collnet") := "NCCL_COLLNET_ENABLE=1, but EFA has no CollNet" if collnet_on(env.NCCL_COLLNET_ENABLE)

efa_problem("rdma") := sprintf("FI_EFA_USE_DEVICE_RDMA=%s, so the NIC does not read GPU buffers directly", [env.FI_EFA_USE_DEVICE_RDMA]) if {
	rdma_off(env.FI_EFA_USE_DEVICE_RDMA)
}

efa_problem("provider") := sprintf("FI_PROVIDER=%s, so libfabric does not use the EFA provider", [env.FI_PROVIDER]) if {
	not_efa_provider(env.FI_PROVIDER)
}

collnet_on(v) if v == "1"

rdma_off(v) if v != "1"

# libfabric's FI_PROVIDER is a comma-separated list of providers to use, or
# with a leading "^" a list to exclude.
not_efa_provider(v) if startswith(trim_space(v), "^")

not_efa_provider(v) if {
	not startswith(trim_space(v), "^")
	not "efa" in {trim_space(p) | some p in split(lower(v), ",")}
}

# What a container's env sets wrong on an EFA host. NCCL_SOCKET_IFNAME unset
# in a pod is not a problem of the pod: the host's setting applies. A value
# from valueFrom (a ConfigMap, Secret or field) is not in the pod spec:
# unknown, not judged.
pod_efa_problem(e) := "NCCL_COLLNET_ENABLE=1 (EFA has no CollNet)" if {
	not e.valueFrom
	e.name == "NCCL_COLLNET_ENABLE"
	collnet_on(object.get(e, "value", ""))
} else := sprintf("FI_EFA_USE_DEVICE_RDMA=%s (GPUDirect off)", [object.get(e, "value", "")]) if {
	not e.valueFrom
	e.name == "FI_EFA_USE_DEVICE_RDMA"
	rdma_off(object.get(e, "value", ""))
} else := sprintf("FI_PROVIDER=%s (not the EFA provider)", [object.get(e, "value", "")]) if {
	not e.valueFrom
	e.name == "FI_PROVIDER"
	not_efa_provider(object.get(e, "value", ""))
}

# The value a pod fix gives each variable pod_efa_problem reports: NCCL's
# default for CollNet, GPUDirect on, the EFA provider.
pod_efa_value := {"NCCL_COLLNET_ENABLE": "0", "FI_EFA_USE_DEVICE_RDMA": "1", "FI_PROVIDER": "efa"}

# METADATA
# title: NCCL settings wrong for EFA
# description: >-
#   EFA devices are present and the host configuration leaves
#   NCCL_SOCKET_IFNAME unset (init can hang on an unroutable interface), sets
#   NCCL_COLLNET_ENABLE=1 (no CollNet on EFA; on InfiniBand with SHARP it is
#   fine, so hosts without EFA are not checked), sets FI_EFA_USE_DEVICE_RDMA
#   to something other than 1, or sets FI_PROVIDER to a provider list without
#   efa (libfabric then runs NCCL's traffic over tcp or sockets). A container
#   of a pod on the host that sets NCCL_COLLNET_ENABLE=1,
#   FI_EFA_USE_DEVICE_RDMA other than 1, or FI_PROVIDER without efa is
#   reported as well, with a fix that sets those variables in the container
#   (a value from valueFrom is not in the pod spec and is not judged); an
#   MPIJob launcher pod is not, as it runs no NCCL.
# related_resources:
# - ref: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl.html
#   description: NCCL with EFA
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL_SOCKET_IFNAME and NCCL_COLLNET_ENABLE
# - ref: https://ofiwg.github.io/libfabric/main/man/fi_provider.7.html
#   description: FI_PROVIDER selects (or with ^ excludes) libfabric providers
# custom:
#   id: efa-nccl-env
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Set NCCL_SOCKET_IFNAME to the instance's primary interface, unset
#     NCCL_COLLNET_ENABLE, set FI_EFA_USE_DEVICE_RDMA=1 and FI_PROVIDER=efa (or
#     leave it unset) in the EFA fleet's layer and in the pod specs.
#   facts:
#   - rdma.devices
#   - nccl_config.effective
#   - pods
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

efa_nccl_env contains f if {
	efa_present
	some i, p in input.pods
	not pods.launcher(p)
	some c in pods.containers(p)
	problems := {why | some e in object.get(c, "env", []); why := pod_efa_problem(e)}
	count(problems) > 0
	f := {
		"msg": sprintf("EFA host: container %s of pod %s sets %s", [c.name, pods.name(p), concat("; ", sort(problems))]),
		"evidence": ["rdma.devices", pods.pod_path(i)],
		"fix": {"kind": "pod", "container": c.name, "env": {e.name: pod_efa_value[e.name] | some e in object.get(c, "env", []); pod_efa_problem(e)}},
	}
}

# NCCL_COLLNET_ENABLE=0 is NCCL's default. NCCL_SOCKET_IFNAME needs the
# instance's primary interface, which no snapshot records: a host missing it
# gets no fix, since a fix that leaves part of the finding is no fix.
efa_fix := {} if {
	not env.NCCL_SOCKET_IFNAME
} else := {"fix": {"kind": "nccl-env", "set": object.union(object.union(collnet_set, rdma_set), provider_set)}}

collnet_set := {"NCCL_COLLNET_ENABLE": "0"} if efa_problem("collnet")

else := {}

rdma_set := {"FI_EFA_USE_DEVICE_RDMA": "1"} if efa_problem("rdma")

else := {}

provider_set := {"FI_PROVIDER": "efa"} if efa_problem("provider")

else := {}

# A host's NCCL copies with a known version, or any copy at all.
host_nccl if count(input.libraries.nccl) > 0

# METADATA
# title: EFA host without an NCCL net plugin
# description: >-
#   EFA devices are present and NCCL is installed on the host, but no NCCL
#   net plugin (libnccl-net*.so, aws-ofi-nccl for EFA) is in the loader's
#   directories or the aws-ofi-nccl install directories. NCCL has no EFA
#   transport of its own: without the plugin it falls back to TCP sockets
#   at a fraction of the bandwidth, without an error. A snapshot from before
#   plugins were collected says nothing and is not judged.
# related_resources:
# - ref: https://github.com/aws/aws-ofi-nccl
#   description: aws-ofi-nccl, the NCCL net plugin for libfabric and EFA
# - ref: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl.html
#   description: NCCL with EFA - install the aws-ofi-nccl plugin
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL_NET_PLUGIN and the libnccl-net.so lookup
# custom:
#   id: efa-ofi-plugin-missing
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Install aws-ofi-nccl (the EFA installer's /opt/amazon/ofi-nccl) in the
#     EFA fleet's image and put its lib directory on the jobs' loader path, or
#     use a container image that ships it.
#   facts:
#   - rdma.devices
#   - libraries.nccl
#   - libraries.nccl_net
efa_ofi_plugin_missing contains f if {
	efa_present
	host_nccl
	is_array(input.libraries.nccl_net)
	count(input.libraries.nccl_net) == 0
	f := {
		"msg": sprintf("EFA devices are present and NCCL %s is installed, but no NCCL net plugin (libnccl-net*.so): NCCL falls back to TCP sockets", [concat(", ", sort(nccl_versions))]),
		"evidence": ["rdma.devices", "libraries.nccl", "libraries.nccl_net"],
	}
}

# aws-ofi-nccl supplies NCCL_TOPO_FILE itself for the EC2 types it knows
# (platform-aws: p4d/p4de topology files).
efa_plugin_present if {
	efa_present
	count(object.get(input.libraries, "nccl_net", [])) > 0
}

# METADATA
# title: NCCL topology hidden in a virtual machine
# description: >-
#   The host is a virtual machine (the x86 hypervisor CPU flag or
#   /sys/hypervisor) with GPUs and RDMA devices, and the host's NCCL
#   configuration sets no NCCL_TOPO_FILE, or sets one that does not exist. A
#   guest's PCI tree is flattened by the hypervisor, so NCCL cannot see which
#   NIC shares a PCIe switch with which GPU and picks slow or cross-socket
#   paths for GPUDirect RDMA. Not reported on an EFA host with an NCCL net
#   plugin: aws-ofi-nccl supplies the topology for the instance types it
#   knows. A pod may set NCCL_TOPO_FILE itself; this rule reads the host's
#   configuration.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL_TOPO_FILE
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
#   description: NCCL in virtual machines - topology detection and PCI ACS
# - ref: https://github.com/aws/aws-ofi-nccl/blob/master/src/platform-aws.cpp
#   description: aws-ofi-nccl's per-instance topology files
# custom:
#   id: nccl-topology-hidden
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Ship the VM's topology (an NCCL topology XML from the cloud provider, or
#     one dumped with NCCL_TOPO_DUMP_FILE on a reference host) in the fleet's
#     image and set NCCL_TOPO_FILE to it in the fleet's NCCL configuration.
#   facts:
#   - iommu.hypervisor
#   - nvidia.gpus
#   - rdma.devices
#   - nccl_config.effective
#   - nccl_config.topo_file_missing
#   - libraries.nccl_net
nccl_topology_hidden contains f if {
	input.iommu.hypervisor == true
	count(input.nvidia.gpus) > 0
	count(input.rdma.devices) > 0
	not efa_plugin_present
	why := topology_problem
	f := {
		"msg": sprintf("virtual machine with %d GPUs and RDMA devices: %s, so NCCL cannot see the PCI topology behind the hypervisor", [count(input.nvidia.gpus), why.text]),
		"evidence": array.concat(["iommu.hypervisor"], why.evidence),
	}
}

topology_problem := {"text": "NCCL_TOPO_FILE is not set", "evidence": ["nccl_config.effective"]} if {
	not env.NCCL_TOPO_FILE
} else := {"text": sprintf("NCCL_TOPO_FILE=%s does not exist", [env.NCCL_TOPO_FILE]), "evidence": [fact("NCCL_TOPO_FILE"), "nccl_config.topo_file_missing"]} if {
	input.nccl_config.topo_file_missing == true
}
