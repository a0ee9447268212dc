package collectors

import (
	"fmt"
	"strconv"
	"strings"
)

// parsePCIResourceSize reads /sys/bus/pci/devices/<addr>/resource, one
// "start end flags" line of hex per resource (resource_show in
// drivers/pci/pci-sysfs.c: the six BARs first), and returns the size of
// resource index bar, 0 when it is unused (end 0).
func parsePCIResourceSize(data []byte, bar int) (int64, error) {
	lines := confFileLines(data)
	if bar >= len(lines) {
		return 0, fmt.Errorf("%w: %d lines, no resource %d", ErrParse, len(lines), bar)
	}
	f := strings.Fields(lines[bar])
	if len(f) != 3 {
		return 0, confLineErrorf(bar+1, "want \"start end flags\", got %q", hwClip(lines[bar]))
	}
	var v [3]uint64
	for i, s := range f {
		hex, ok := strings.CutPrefix(s, "0x")
		n, err := strconv.ParseUint(hex, 16, 64)
		if !ok || err != nil {
			return 0, confLineErrorf(bar+1, "%q is not a 0x hex number", hwClip(s))
		}
		v[i] = n
	}
	start, end := v[0], v[1]
	if end == 0 {
		return 0, nil
	}
	if end < start || end-start >= 1<<62 {
		return 0, confLineErrorf(bar+1, "end %#x before start %#x", end, start)
	}
	return int64(end - start + 1), nil
}
