package collectors

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

const (
	meminfoPath = "/proc/meminfo"
	thpPath     = "/sys/kernel/mm/transparent_hugepage/enabled"
)

// meminfoValue is one /proc/meminfo line: a size in kB or, for the
// HugePages_* counters, a count.
type meminfoValue struct {
	Value int64
	Line  int
}

// parseMeminfo reads /proc/meminfo ("Name:   123 kB"). Malformed lines are
// skipped and reported; the rest is still returned. A repeated name keeps
// its first value.
func parseMeminfo(data []byte) (map[string]meminfoValue, []error) {
	values := map[string]meminfoValue{}
	var errs []error
	for i, raw := range bytes.Split(data, []byte("\n")) {
		line := i + 1
		text := strings.TrimSpace(string(raw))
		if text == "" {
			continue
		}
		name, rest, ok := strings.Cut(text, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			errs = append(errs, fmt.Errorf("%w: line %d: want \"Name: value\", got %q", ErrParse, line, hwClip(text)))
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 || len(fields) > 2 || (len(fields) == 2 && fields[1] != "kB") {
			errs = append(errs, fmt.Errorf("%w: line %d: %s: want a number and an optional kB, got %q", ErrParse, line, name, hwClip(strings.TrimSpace(rest))))
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%w: line %d: %s: %q is not a non-negative integer", ErrParse, line, name, hwClip(fields[0])))
			continue
		}
		if _, dup := values[name]; !dup {
			values[name] = meminfoValue{Value: n, Line: line}
		}
	}
	return values, errs
}

// parseTHPMode returns the selected choice of a sysfs selector such as
// "always [madvise] never".
func parseTHPMode(text string) (string, error) {
	text = strings.TrimSpace(text)
	open := strings.IndexByte(text, '[')
	end := -1
	if open >= 0 {
		if n := strings.IndexByte(text[open:], ']'); n >= 0 {
			end = open + n
		}
	}
	if end < 0 {
		return "", fmt.Errorf("%w: line 1: no [selected] choice in %q", ErrParse, hwClip(text))
	}
	if strings.IndexByte(text[end+1:], '[') >= 0 {
		return "", fmt.Errorf("%w: line 1: more than one [selected] choice in %q", ErrParse, hwClip(text))
	}
	mode := text[open+1 : end]
	if mode == "" || strings.ContainsAny(mode, " \t[") {
		return "", fmt.Errorf("%w: line 1: bad selected choice in %q", ErrParse, hwClip(text))
	}
	return mode, nil
}

// hwClip keeps error messages short when a file is garbage.
func hwClip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

func collectMemory(c *collection) {
	const collector = "memory"
	if data, ok := c.read(collector, meminfoPath); ok {
		values, errs := parseMeminfo(data)
		for _, err := range errs {
			c.fail(collector, meminfoPath, err)
		}
		m := &c.snap.Memory
		m.Present = true
		c.from("memory.present", meminfoPath, 0)
		fields := []struct {
			name string
			fact string
			dst  *int64
		}{
			{"MemTotal", "memory.mem_total_kb", &m.MemTotalKB},
			{"CmaTotal", "memory.cma_total_kb", &m.CmaTotalKB},
			{"CmaFree", "memory.cma_free_kb", &m.CmaFreeKB},
			{"HugePages_Total", "memory.hugepages_total", &m.HugePagesTotal},
			{"HugePages_Free", "memory.hugepages_free", &m.HugePagesFree},
			{"HugePages_Rsvd", "memory.hugepages_rsvd", &m.HugePagesRsvd},
			{"HugePages_Surp", "memory.hugepages_surp", &m.HugePagesSurp},
			{"Hugepagesize", "memory.hugepagesize_kb", &m.HugepagesizeKB},
		}
		for _, f := range fields {
			v, ok := values[f.name]
			if !ok {
				// The kernel omits Cma* without CONFIG_CMA and HugePages_*
				// without hugetlb support.
				c.defaulted(f.fact, "no "+f.name+" line in "+meminfoPath)
				continue
			}
			*f.dst = v.Value
			c.from(f.fact, meminfoPath, 0)
		}
		_, m.CmaPresent = values["CmaTotal"]
		c.from("memory.cma_present", meminfoPath, 0)
	}

	if data, ok := c.read(collector, thpPath); ok {
		mode, err := parseTHPMode(string(data))
		if err != nil {
			c.fail(collector, thpPath, err)
			return
		}
		c.snap.Memory.TransparentHugepages = mode
		c.from("memory.transparent_hugepages", thpPath, 0)
	}
}
