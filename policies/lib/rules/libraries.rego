# User-space libraries jobs load: NCCL and the CUDA runtime.
package fleetaudit.rules.libraries

# Versions that could be read; a copy of unknown version cannot be compared.
nccl_versions := {l.version | some l in input.libraries.nccl; not l.version in {"", "unknown"}}

# METADATA
# title: Several NCCL versions on one host
# description: >-
#   More than one NCCL version is installed on the host: a system library and a
#   Python wheel, or two wheels in different environments. Which one a job
#   loads depends on its loader path and import order, so two jobs on the same
#   host, or two ranks of one job, can run different NCCL builds. Copies whose
#   version could not be read are not counted.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/install-guide/index.html
#   description: NCCL installation and library search
# - ref: https://pypi.org/project/nvidia-nccl-cu12/
#   description: the NCCL wheel PyTorch and JAX install
# custom:
#   id: nccl-multiple-versions
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Keep one NCCL build per host (remove the extra package or wheel), or pin
#     the one jobs must load with LD_LIBRARY_PATH / NCCL_LIBRARY in the job
#     environment.
#   facts:
#   - libraries.nccl
nccl_multiple_versions contains f if {
	count(nccl_versions) > 1
	copies := sort([sprintf("%s (%s, %s)", [l.version, l.kind, l.path]) | some l in input.libraries.nccl; l.version in nccl_versions])
	f := {
		"msg": sprintf("%d NCCL versions on the host: %s", [count(nccl_versions), concat("; ", copies)]),
		"evidence": ["libraries.nccl"],
	}
}
