# Version skew across the hosts of one fleet. input is the fleet's
# configurations: {"fleet": name, "count": hosts, "groups": [{"group", "count",
# "labels", <declared facts>}]} (see lib/common/skew.rego).
package fleetaudit.fleet_rules.versions

import data.fleetaudit.lib.skew
import data.fleetaudit.lib.version

# A host's NCCL builds as one comparable value: its versions sorted and joined.
# Hosts without NCCL on the host (containers bring their own) do not vote,
# nor do copies whose version could not be read.
nccl_values := {g.group: concat(",", sort(vs)) |
	some g in input.groups
	vs := {l.version | some l in g.libraries.nccl; known(l.version)}
	count(vs) > 0
}

known(v) if {
	is_string(v)
	not v in {"", "unknown"}
}

nccl_expected := skew.expected(nccl_values, nccl_key(nccl_baseline))

default nccl_baseline := null

nccl_baseline := data.fleetaudit.params.baseline.nccl_version

# A baseline may list several versions (system library and wheel).
nccl_key(v) := concat(",", sort(v)) if is_array(v)

nccl_key(v) := v if is_string(v)

nccl_key(null) := null

# METADATA
# title: NCCL versions differ across the fleet
# description: >-
#   The set of NCCL versions installed on a host differs from the fleet's
#   declared baseline (param baseline.nccl_version) or, without one, from the
#   set held by at least 60% of the fleet's hosts; below 60% the lack of
#   consensus is itself the finding. Ranks of one job on different NCCL
#   versions can fail at init or hang in collectives.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
#   description: NCCL troubleshooting
# custom:
#   id: nccl-version-skew
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Install the expected NCCL build on the deviating host (or declare the
#     intended one as the profile's baseline.nccl_version) so that every host of
#     the fleet carries the same set.
#   facts:
#   - libraries.nccl
nccl_version_skew contains f if {
	some group, v in nccl_values
	f := skew.finding(group, v, nccl_expected, "NCCL", ["libraries.nccl"])
}

driver_values := {g.group: v |
	some g in input.groups
	v := g.nvidia.driver_version
	known(v)
}

driver_expected := skew.expected(driver_values, driver_baseline)

default driver_baseline := null

driver_baseline := data.fleetaudit.params.baseline.driver_version

driver_branches := {version.major(v) | some v in driver_values}

# METADATA
# title: NVIDIA driver versions differ across the fleet
# description: >-
#   A host's NVIDIA driver differs from the fleet's declared baseline (param
#   baseline.driver_version) or, without one, from the version held by at least
#   60% of the fleet's hosts; below 60% the lack of consensus is itself the
#   finding. A different branch (major version) is high: CUDA compatibility,
#   peermem behaviour and bug fixes differ between branches. A different
#   release within the branch is medium.
# related_resources:
# - ref: https://docs.nvidia.com/deploy/cuda-compatibility/
#   description: CUDA and driver compatibility
# custom:
#   id: driver-version-skew
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Roll the deviating host to the expected driver release (or declare the
#     intended one as the profile's baseline.driver_version).
#   facts:
#   - nvidia.driver_version
driver_version_skew contains object.union(f, {"severity": driver_severity(v)}) if {
	some group, v in driver_values
	f := skew.finding(group, v, driver_expected, "NVIDIA driver", ["nvidia.driver_version"])
}

driver_severity(v) := "high" if {
	driver_expected.basis != "none"
	version.major(v) != version.major(driver_expected.value)
} else := "high" if {
	driver_expected.basis == "none"
	count(driver_branches) > 1
} else := "medium"

kernel_values := {g.group: v |
	some g in input.groups
	v := g.kernel.release
	known(v)
}

default kernel_baseline := null

kernel_baseline := data.fleetaudit.params.baseline.kernel_release

kernel_expected := skew.expected(kernel_values, kernel_baseline)

# METADATA
# title: Kernel releases differ across the fleet
# description: >-
#   A host runs a kernel release other than the fleet's declared baseline
#   (param baseline.kernel_release) or, without one, the release held by at
#   least 60% of the fleet's hosts; below 60% the lack of consensus is itself
#   the finding. RDMA, IOMMU and memory-management behaviour the jobs rely on
#   changes between releases.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/reporting-regressions.html
#   description: kernel regressions between releases
# custom:
#   id: kernel-version-skew
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Boot the deviating host into the expected kernel (or declare the intended
#     release as the profile's baseline.kernel_release).
#   facts:
#   - kernel.release
kernel_version_skew contains f if {
	some group, v in kernel_values
	f := skew.finding(group, v, kernel_expected, "kernel", ["kernel.release"])
}
