package inventory

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxExpansion bounds the hosts one pattern may expand to: gpu-[0:99999999]
// is a typo, not a fleet.
const maxExpansion = 1 << 18

// letters is Python's string.ascii_letters, the alphabet of Ansible's
// alphabetic ranges ([a:c], and [x:B] spanning the case change).
const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// splitHostPort separates an optional ":port" from a host pattern the way
// Ansible's parse_address does for inventories: "web-01:2222",
// "gpu-[01:04]:22", "[fe80::1]:22". An unbracketed IPv6 address has no port.
func splitHostPort(pattern string) (host string, port int, err error) {
	if strings.HasPrefix(pattern, "[") {
		if end := strings.Index(pattern, "]"); end > 0 && strings.Count(pattern[1:end], ":") >= 2 {
			host, rest := pattern[1:end], pattern[end+1:]
			if rest == "" {
				return host, 0, nil
			}
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return "", 0, fmt.Errorf("host %q: unexpected %q after the IPv6 address", pattern, rest)
			}
			port, err := parsePort(p)
			if err != nil {
				return "", 0, fmt.Errorf("host %q: %w", pattern, err)
			}
			return host, port, nil
		}
	}
	colons := outsideBrackets(pattern, ':')
	switch {
	case len(colons) == 0:
		return pattern, 0, nil
	case len(colons) > 1:
		return pattern, 0, nil // IPv6 without brackets: no port possible
	}
	i := colons[0]
	if i == len(pattern)-1 {
		return "", 0, fmt.Errorf("host %q: a trailing ':' is reserved for a port", pattern)
	}
	port, err = parsePort(pattern[i+1:])
	if err != nil {
		return "", 0, fmt.Errorf("host %q: %w", pattern, err)
	}
	return pattern[:i], port, nil
}

func outsideBrackets(s string, c byte) []int {
	var at []int
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case c:
			if depth == 0 {
				at = append(at, i)
			}
		}
	}
	return at
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return p, nil
}

// expandHostPattern expands Ansible host ranges: "gpu-a-[001:128]" (zero
// padding kept when the start has a leading zero), "db-[a:f]", steps as in
// "[1:9:2]", and several ranges in one name. It follows Ansible's
// expand_hostname_range with two deliberate differences: a range whose start
// exceeds its end (which Ansible silently expands to no hosts) is an error,
// and bounds must be plain digits or single letters.
func expandHostPattern(pattern string) ([]string, error) {
	if !strings.Contains(pattern, "[") {
		if strings.Contains(pattern, "]") {
			return nil, fmt.Errorf("host %q: unbalanced ']'", pattern)
		}
		return []string{pattern}, nil
	}
	out := []string{}
	if err := expandInto(pattern, pattern, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func expandInto(whole, s string, out *[]string) error {
	open := strings.IndexByte(s, '[')
	if open < 0 {
		if strings.Contains(s, "]") {
			return fmt.Errorf("host %q: unbalanced ']'", whole)
		}
		*out = append(*out, s)
		return nil
	}
	end := strings.IndexByte(s, ']')
	if end < open {
		return fmt.Errorf("host %q: '[' without a closing ']'", whole)
	}
	head, spec, tail := s[:open], s[open+1:end], s[end+1:]
	seq, err := rangeValues(spec)
	if err != nil {
		return fmt.Errorf("host %q: range [%s]: %w", whole, spec, err)
	}
	if len(*out)+len(seq) > maxExpansion {
		return fmt.Errorf("host %q: expands to more than %d hosts", whole, maxExpansion)
	}
	for _, v := range seq {
		if err := expandInto(whole, head+v+tail, out); err != nil {
			return err
		}
		if len(*out) > maxExpansion {
			return fmt.Errorf("host %q: expands to more than %d hosts", whole, maxExpansion)
		}
	}
	return nil
}

func rangeValues(spec string) ([]string, error) {
	bounds := strings.Split(spec, ":")
	if len(bounds) != 2 && len(bounds) != 3 {
		return nil, errors.New("want begin:end or begin:end:step")
	}
	beg, end := bounds[0], bounds[1]
	step := 1
	if len(bounds) == 3 {
		n, err := strconv.Atoi(bounds[2])
		if err != nil || n < 1 || !allDigits(bounds[2]) {
			return nil, fmt.Errorf("step %q is not a positive integer", bounds[2])
		}
		step = n
	}
	if beg == "" {
		beg = "0"
	}
	if end == "" {
		return nil, errors.New("no end value")
	}
	if len(beg) == 1 && len(end) == 1 && strings.Contains(letters, beg) && strings.Contains(letters, end) {
		i, j := strings.Index(letters, beg), strings.Index(letters, end)
		if i > j {
			return nil, errors.New("begin is after end")
		}
		var seq []string
		for k := i; k <= j; k += step {
			seq = append(seq, letters[k:k+1])
		}
		return seq, nil
	}
	if !allDigits(beg) || !allDigits(end) {
		return nil, errors.New("bounds must both be numbers or both single letters")
	}
	width := 0
	if len(beg) > 1 && beg[0] == '0' {
		// A leading zero is Ansible's formatting hint: pad to that width.
		if len(end) != len(beg) {
			return nil, errors.New("a zero-padded begin needs an end of the same width")
		}
		width = len(beg)
	}
	b, errB := strconv.Atoi(beg)
	e, errE := strconv.Atoi(end)
	if errB != nil || errE != nil {
		return nil, errors.New("bounds out of range")
	}
	if b > e {
		return nil, errors.New("begin is after end")
	}
	n := (e-b)/step + 1
	if n > maxExpansion {
		return nil, fmt.Errorf("more than %d values", maxExpansion)
	}
	seq := make([]string, n)
	for i := range seq { // by index: b+step could overflow near MaxInt
		seq[i] = fmt.Sprintf("%0*d", width, b+i*step)
	}
	return seq, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
