package collectors

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// nvidiaSmi is the command that reports each GPU's persistence mode, which
// only NVML knows: neither /proc nor /sys shows it.
var nvidiaSmi = []string{"nvidia-smi", "--query-gpu=pci.bus_id,persistence_mode", "--format=csv,noheader"}

// Commands are the commands the collectors may run through Target.Exec, so
// a transport can run them ahead, with what it reads anyway.
func Commands() [][]string { return [][]string{slices.Clone(nvidiaSmi)} }

// nvidiaSmiCommand is the command line as provenance and error entries name it.
var nvidiaSmiCommand = strings.Join(nvidiaSmi, " ")

// gpuPersistence is one line of nvidiaSmi's output with a known mode.
type gpuPersistence struct {
	// BusID is normalised as /proc/driver/nvidia/gpus names GPUs
	// ("0000:1b:00.0").
	BusID string
	// Mode is "enabled" or "disabled".
	Mode string
	Line int
}

// parseNvidiaSmiPersistence reads the "<bus id>, <mode>" lines of nvidiaSmi.
// A mode nvidia-smi cannot tell ("[N/A]", "[Insufficient Permissions]",
// "[Unknown Error]", any bracketed value) leaves that GPU out: unknown is not
// off. Blank lines are skipped; anything else malformed is an error and the
// other lines are still read.
func parseNvidiaSmiPersistence(data []byte) ([]gpuPersistence, []error) {
	var out []gpuPersistence
	var errs []error
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		bus, mode, ok := strings.Cut(line, ",")
		if !ok {
			errs = append(errs, fmt.Errorf("%w: line %d: no ',' in %.60q", ErrParse, n, line))
			continue
		}
		id, ok := normalizeBusID(strings.TrimSpace(bus))
		if !ok {
			errs = append(errs, fmt.Errorf("%w: line %d: bad bus id %.40q", ErrParse, n, strings.TrimSpace(bus)))
			continue
		}
		mode = strings.TrimSpace(mode)
		switch {
		case strings.EqualFold(mode, "Enabled"):
			out = append(out, gpuPersistence{BusID: id, Mode: "enabled", Line: n})
		case strings.EqualFold(mode, "Disabled"):
			out = append(out, gpuPersistence{BusID: id, Mode: "disabled", Line: n})
		case strings.HasPrefix(mode, "[") && strings.HasSuffix(mode, "]"):
			// nvidia-smi's way of saying it does not know.
		default:
			errs = append(errs, fmt.Errorf("%w: line %d: unknown persistence mode %.40q", ErrParse, n, mode))
		}
	}
	return out, errs
}

// normalizeBusID turns a PCI address as nvidia-smi prints it
// ("00000000:1B:00.0", a 32-bit domain) into the form Linux and
// /proc/driver/nvidia/gpus use ("0000:1b:00.0": lower case, the domain in at
// least four digits).
func normalizeBusID(s string) (string, bool) {
	if !isGPUBusLocation(s) {
		return "", false
	}
	domain, rest, _ := strings.Cut(s, ":")
	d, err := strconv.ParseUint(domain, 16, 32)
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%04x:%s", d, strings.ToLower(rest)), true
}

// collectPersistenceMode runs nvidiaSmi through the target's Exec, when set, on a
// host with NVIDIA GPUs or a loaded driver, and records each GPU's
// persistence mode. A GPU nvidia-smi lists that /proc/driver/nvidia/gpus did
// not (a container that hides /proc/driver) is added with its bus id alone.
//
// No nvidia-smi on the host is no fact and no error; a failing nvidia-smi is
// a collection error when the host has GPUs (without them, "No devices were
// found" is the expected failure).
func collectPersistenceMode(c *collection) {
	nv := &c.snap.NVIDIA
	if c.exec == nil || (len(nv.GPUs) == 0 && !nv.Present) {
		return
	}
	out, err := c.exec(c.ctx, nvidiaSmi[0], nvidiaSmi[1:]...)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || c.ctx.Err() != nil {
			return
		}
		if len(nv.GPUs) > 0 {
			c.failAs("nvidia", nvidiaSmiCommand, err)
		}
		return
	}
	modes, errs := parseNvidiaSmiPersistence(out)
	for _, err := range errs {
		c.failAs("nvidia", nvidiaSmiCommand, err)
	}
	if len(modes) == 0 {
		return
	}
	mode := map[string]string{}
	for _, m := range modes {
		mode[m.BusID] = m.Mode
	}
	known := map[string]bool{}
	for _, g := range nv.GPUs {
		known[g.BusID] = true
	}
	added := false
	for _, m := range modes {
		if !known[m.BusID] {
			known[m.BusID] = true
			nv.GPUs = append(nv.GPUs, snapshot.GPU{BusID: m.BusID})
			added = true
		}
	}
	if added {
		slices.SortFunc(nv.GPUs, func(a, b snapshot.GPU) int { return strings.Compare(a.BusID, b.BusID) })
		if _, ok := c.snap.Sources["nvidia.gpus"]; !ok {
			c.byCommand("nvidia.gpus", nvidiaSmiCommand)
		}
	}
	for i := range nv.GPUs {
		if m, ok := mode[nv.GPUs[i].BusID]; ok {
			nv.GPUs[i].PersistenceMode = m
			c.byCommand("nvidia.gpus."+strconv.Itoa(i)+".persistence_mode", nvidiaSmiCommand)
		}
	}
}
