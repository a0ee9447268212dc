package collectors

import (
	"fmt"
	"regexp"
	"strings"
)

// nvidiaModuleVersion is the NVRM line of /proc/driver/nvidia/version.
type nvidiaModuleVersion struct {
	Version string // "535.104.05"; some releases have two parts ("550.54")
	Flavor  string // "open" or "proprietary"
	Arch    string // the module's target, "x86_64" or "aarch64"
	Line    int
}

// The NVRM line names the module (nv-procfs.c prints pNVRM_ID):
//
//	NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023
//	NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build  (dvs-builder@...)  Fri May 31 ...
//
// The open flavor's id comes from open-gpu-kernel-modules utils.mk
// ("NVIDIA UNIX Open Kernel Module for $(TARGET_ARCH)  $(NVIDIA_VERSION)  ...").
var (
	nvrmOpen        = regexp.MustCompile(`^NVIDIA UNIX Open Kernel Module for (\S+)\s+(\d+(?:\.\d+)+)(?:\s|$)`)
	nvrmProprietary = regexp.MustCompile(`^NVIDIA UNIX (\S+) Kernel Module\s+(\d+(?:\.\d+)+)(?:\s|$)`)
)

// parseNvidiaVersion finds the NVRM line of /proc/driver/nvidia/version and
// returns the module's version and flavor.
func parseNvidiaVersion(data []byte) (nvidiaModuleVersion, error) {
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		id, ok := strings.CutPrefix(line, "NVRM version:")
		if !ok {
			continue
		}
		id = strings.TrimSpace(id)
		if m := nvrmOpen.FindStringSubmatch(id); m != nil {
			return nvidiaModuleVersion{Version: m[2], Flavor: "open", Arch: m[1], Line: i + 1}, nil
		}
		if m := nvrmProprietary.FindStringSubmatch(id); m != nil {
			return nvidiaModuleVersion{Version: m[2], Flavor: "proprietary", Arch: m[1], Line: i + 1}, nil
		}
		return nvidiaModuleVersion{}, fmt.Errorf("%w: line %d: unrecognised NVRM version %.60q", ErrParse, i+1, id)
	}
	return nvidiaModuleVersion{}, fmt.Errorf("%w: no \"NVRM version:\" line", ErrParse)
}

// gpuInformation is /proc/driver/nvidia/gpus/<bus id>/information.
type gpuInformation struct {
	Model     string
	ModelLine int
	BusID     string
	BusLine   int
}

// parseGPUInformation reads the "Key: \t value" lines nv-procfs.c writes
// (Model, IRQ, GPU UUID, Video BIOS, Bus Type, DMA Size, DMA Mask, Bus
// Location, Device Minor, GPU Firmware, GPU Excluded) and keeps the model and
// bus location.
func parseGPUInformation(data []byte) (gpuInformation, []error) {
	var info gpuInformation
	var errs []error
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			errs = append(errs, fmt.Errorf("%w: line %d: no ':' in %.40q", ErrParse, n, line))
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.TrimSpace(key) {
		case "Model":
			info.Model, info.ModelLine = value, n
		case "Bus Location":
			if !isGPUBusLocation(value) {
				errs = append(errs, fmt.Errorf("%w: line %d: bad bus location %.40q", ErrParse, n, value))
				continue
			}
			info.BusID, info.BusLine = strings.ToLower(value), n
		}
	}
	if info.ModelLine == 0 {
		errs = append(errs, fmt.Errorf("%w: no Model line", ErrParse))
	}
	return info, errs
}

var gpuBusLocation = regexp.MustCompile(`^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$`)

// isGPUBusLocation reports whether s is a domain:bus:device.function address.
func isGPUBusLocation(s string) bool { return gpuBusLocation.MatchString(s) }
