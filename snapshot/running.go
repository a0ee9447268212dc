package snapshot

import "strings"

// RunningState are the fact paths read from the running system (/proc,
// /sys, /dev, running processes, commands) rather than from configuration
// on disk; "*" matches one path element and a path covers everything below
// it. An offline image (Origin.Image) has none of them: they are not
// collected, which is different from collected and empty.
var RunningState = []string{
	"boot.running",
	"sysctl.running",
	"sysctl.missing",
	// kernel.installed and kernel.boot_release are read from an image's files.
	"kernel.release",
	"kernel.version",
	"kernel.arch",
	"nvidia.present",
	"nvidia.driver_version",
	"nvidia.flavor",
	"nvidia.module_version",
	"nvidia.gpus",
	"nvidia.nvswitches",
	"nvidia.persistenced",
	"modules.loaded",
	"memory",
	"rdma",
	"iommu",
	"pci",
	"net",
	"services.units.*.running_pid",
	"services.units.*.running_memlock",
	"dmi",
}

// IsRunningState reports whether the fact path lies on or below one of
// RunningState.
func IsRunningState(path string) bool {
	parts := strings.Split(path, ".")
	for _, r := range RunningState {
		if coversPath(strings.Split(r, "."), parts) {
			return true
		}
	}
	return false
}

// ImageMayLack reports whether an image's snapshot may lack section: it is
// running state, or was wholly running state in files written before
// kernel.installed (kernel).
func ImageMayLack(section string) bool {
	return IsRunningState(section) || section == "kernel"
}

func coversPath(pattern, path []string) bool {
	if len(pattern) > len(path) {
		return false
	}
	for i, s := range pattern {
		if s != "*" && s != path[i] {
			return false
		}
	}
	return true
}

// dropRunning removes RunningState from doc, an image's snapshot in
// generic JSON form: its running state is absent, not empty.
func dropRunning(doc map[string]any) {
	for _, r := range RunningState {
		dropPath(doc, strings.Split(r, "."))
	}
}

func dropPath(m map[string]any, parts []string) {
	if parts[0] != "*" {
		if len(parts) == 1 {
			delete(m, parts[0])
		} else if sub, ok := m[parts[0]].(map[string]any); ok {
			dropPath(sub, parts[1:])
		}
		return
	}
	for _, v := range m {
		if sub, ok := v.(map[string]any); ok && len(parts) > 1 {
			dropPath(sub, parts[1:])
		}
	}
}
