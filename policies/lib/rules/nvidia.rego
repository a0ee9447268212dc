# The NVIDIA driver stack: kernel module, user-space libraries, fabric manager.
package fleetaudit.rules.nvidia

import data.fleetaudit.lib.version

loaded_driver := input.nvidia.driver_version if input.nvidia.driver_version != ""

else := input.nvidia.module_version

# METADATA
# title: Driver kernel module and NVML library versions differ
# description: >-
#   The loaded nvidia kernel module (/proc/driver/nvidia/version or
#   /sys/module/nvidia/version) and the user-space libnvidia-ml.so.<version>
#   differ: the driver package was upgraded without a reboot or module reload.
#   NVML, and every tool and container runtime built on it, fails with
#   "Failed to initialize NVML: Driver/library version mismatch".
# related_resources:
# - ref: https://docs.nvidia.com/deploy/nvml-api/index.html
#   description: NVML
# custom:
#   id: driver-library-mismatch
#   severity: critical
#   profiles: [all]
#   remediation: >-
#     Reboot the host (or unload and reload the nvidia modules) so the kernel
#     module matches the installed user-space driver, or reinstall the matching
#     user-space package.
#   facts:
#   - nvidia.driver_version
#   - nvidia.module_version
#   - nvidia.nvml_versions
driver_library_mismatch contains f if {
	input.nvidia.present == true
	count(input.nvidia.nvml_versions) > 0
	not loaded_driver in input.nvidia.nvml_versions
	f := {
		"msg": sprintf("kernel module %s, user-space NVML %s: NVML fails with Driver/library version mismatch", [loaded_driver, concat(", ", input.nvidia.nvml_versions)]),
		"evidence": ["nvidia.driver_version", "nvidia.nvml_versions"],
	}
}

# Minimum driver branch for each CUDA runtime major version (CUDA minor
# version compatibility).
cuda_min_driver := {"11": "450.80.02", "12": "525.60.13", "13": "580"}

# METADATA
# title: CUDA runtime needs a newer driver
# description: >-
#   A CUDA runtime library on the host (libcudart.so or a CUDA wheel) has a
#   major version the loaded driver cannot run: CUDA 11 needs R450 (450.80.02)
#   or later, CUDA 12 R525 (525.60.13), CUDA 13 R580, per CUDA's minor version
#   compatibility. CUDA then fails to initialise (cudaErrorInsufficientDriver)
#   unless the forward-compatibility package is installed.
# related_resources:
# - ref: https://docs.nvidia.com/deploy/cuda-compatibility/
#   description: CUDA compatibility and minimum driver versions
# custom:
#   id: cuda-driver-too-old
#   severity: critical
#   profiles: [all]
#   remediation: >-
#     Upgrade the driver to the branch the CUDA runtime needs, or install a
#     CUDA build that matches the driver.
#   facts:
#   - libraries.cuda
#   - nvidia.driver_version
cuda_driver_too_old contains f if {
	input.nvidia.present == true
	some lib in input.libraries.cuda
	major := split(lib.version, ".")[0]
	min := cuda_min_driver[major]
	version.less(loaded_driver, min)
	f := {
		"msg": sprintf("CUDA runtime %s (%s) needs driver %s or newer; the host runs %s", [lib.version, lib.path, min, loaded_driver]),
		"evidence": ["libraries.cuda", "nvidia.driver_version"],
	}
}

# METADATA
# title: Fabric manager missing or at another version than the driver
# description: >-
#   The host has NVSwitches, and nvidia-fabricmanager is not installed or its
#   version differs from the driver's. Fabric manager refuses to start on a
#   mismatch, the NVLink fabric is not configured, and CUDA returns
#   CUDA_ERROR_SYSTEM_NOT_READY.
# related_resources:
# - ref: https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html
#   description: Fabric Manager user guide
# - ref: https://github.com/NVIDIA/gpu-operator/issues/544
#   description: fabric manager version mismatch
# custom:
#   id: fabric-manager-mismatch
#   severity: critical
#   profiles: [gpu-training]
#   remediation: >-
#     Install nvidia-fabricmanager of exactly the driver's version and enable
#     its service.
#   facts:
#   - nvidia.nvswitches
#   - nvidia.fabric_manager
#   - nvidia.driver_version
fabric_manager_mismatch contains f if {
	input.nvidia.nvswitches > 0
	fm := input.nvidia.fabric_manager
	fm != loaded_driver
	fm != "unknown"
	f := {
		"msg": fm_message(fm),
		"evidence": ["nvidia.nvswitches", "nvidia.fabric_manager", "nvidia.driver_version"],
	}
}

fm_message("") := sprintf("%d NVSwitches but no nvidia-fabricmanager installed", [input.nvidia.nvswitches])

fm_message(fm) := sprintf("nvidia-fabricmanager %s with driver %s: fabric manager refuses to start", [fm, loaded_driver]) if fm != ""

# GPUs that only run with the open kernel modules.
open_only_gpu(model) if regex.match(`GH200|GB200|GB300|B100|B200|B300|RTX PRO 6000 Blackwell`, model)

# METADATA
# title: Proprietary kernel module on a GPU that needs the open one
# description: >-
#   A Grace Hopper (GH200) or Blackwell-class GPU runs with the proprietary
#   nvidia kernel module flavor. Those GPUs are supported only by the open
#   kernel modules.
# related_resources:
# - ref: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html
#   description: open kernel modules and the GPUs that require them
# custom:
#   id: proprietary-module-unsupported
#   severity: critical
#   profiles: [gpu-training]
#   remediation: >-
#     Install the open kernel module flavor of the same driver release
#     (nvidia-open / kernel-open packages).
#   facts:
#   - nvidia.gpus
#   - nvidia.flavor
proprietary_module_unsupported contains f if {
	input.nvidia.flavor == "proprietary"
	models := {g.model | some g in input.nvidia.gpus; open_only_gpu(g.model)}
	count(models) > 0
	f := {
		"msg": sprintf("%s with the proprietary kernel module: these GPUs need the open flavor", [concat(", ", sort(models))]),
		"evidence": ["nvidia.gpus", "nvidia.flavor"],
	}
}

# METADATA
# title: GPU persistence mode off and no nvidia-persistenced
# description: >-
#   nvidia-smi reports persistence mode Disabled for a GPU and no
#   nvidia-persistenced process runs. The driver then deinitialises the GPU
#   each time its last client exits, between every two jobs: the next CUDA
#   initialisation pays an ECC scrub of about 1-3 seconds per GPU, and state
#   that lives only while the GPU is initialised (application clocks, the
#   software power cap, compute and accounting mode, volatile ECC error
#   counts) reverts to its defaults. NVIDIA recommends the persistence daemon
#   over the legacy persistence mode (nvidia-smi -pm 1), which resets to
#   Disabled at every boot. The mode is only known when collect ran
#   nvidia-smi on the live host; an unknown mode, or a host where either
#   persistence mode is on or the daemon runs, does not fire.
# related_resources:
# - ref: https://docs.nvidia.com/deploy/driver-persistence/overview.html
#   description: Driver persistence, start latency and driver state
# - ref: https://docs.nvidia.com/deploy/driver-persistence/data-persistence.html
#   description: state lost when the driver deinitialises a GPU
# - ref: https://docs.nvidia.com/deploy/driver-persistence/persistence-daemon.html
#   description: nvidia-persistenced, the recommended way
# custom:
#   id: persistence-mode-off
#   severity: low
#   profiles: [gpu-training]
#   remediation: >-
#     Enable and start the persistence daemon (systemctl enable --now
#     nvidia-persistenced.service; the unit ships with the driver packages).
#     nvidia-smi -pm 1 also works until the next reboot.
#   facts:
#   - nvidia.gpus
#   - nvidia.persistenced
persistence_mode_off contains f if {
	input.nvidia.persistenced == false
	some i, g in input.nvidia.gpus
	g.persistence_mode == "disabled"
	f := {
		"msg": sprintf("GPU %s%s has persistence mode off and no nvidia-persistenced runs: the driver tears the GPU down after every job", [g.bus_id, gpu_model(g)]),
		"evidence": [sprintf("nvidia.gpus.%d.persistence_mode", [i]), "nvidia.persistenced"],
	}
}

gpu_model(g) := sprintf(" (%s)", [g.model]) if g.model != ""

else := ""
