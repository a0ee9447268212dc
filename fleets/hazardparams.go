package fleets

import (
	"fmt"
	"net/netip"
	"strings"
)

// checkHazardParam type-checks the version tables and thresholds of the
// hazard rules (hugetlb-cma-on-gpu, peermem-teardown-race, the RDMA and
// memlock rules). Names it does not know pass through for user policies.
func checkHazardParam(name string, v any) error {
	switch name {
	case "foll_longterm_min_driver":
		return wantVersion(v)
	case "foll_longterm_drivers":
		return wantVersionRanges(v)
	case "rdma_min_rate_gbps":
		switch n := v.(type) {
		case int:
			if n >= 0 {
				return nil
			}
		case float64:
			if n >= 0 {
				return nil
			}
		}
		return fmt.Errorf("want a non-negative number of Gb/s, got %s", typeName(v))
	case "fleet_networks":
		return wantPrefixes(v)
	case "peermem_race_drivers":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("want a mapping of state (mitigated, fixed) to version ranges, got %s", typeName(v))
		}
		for _, k := range sortedKeys(m) {
			if k != "mitigated" && k != "fixed" {
				return fmt.Errorf("unknown key %q (known: fixed, mitigated)", k)
			}
			if err := wantVersionRanges(m[k]); err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
		}
	}
	return nil
}

// wantVersionRanges: a list of {from: "version", before: "version" or null}.
func wantVersionRanges(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want a list of {from, before} version ranges, got %s", typeName(v))
	}
	for i, item := range list {
		r, ok := item.(map[string]any)
		if !ok {
			return fmt.Errorf("item %d: want {from, before}, got %s", i, typeName(item))
		}
		for _, k := range sortedKeys(r) {
			if k != "from" && k != "before" {
				return fmt.Errorf("item %d: unknown key %q (known: before, from)", i, k)
			}
		}
		if err := wantVersion(r["from"]); err != nil {
			return fmt.Errorf("item %d: from: %v", i, err)
		}
		before, ok := r["before"]
		if !ok {
			return fmt.Errorf("item %d: before: want a quoted version or null (open-ended), got nothing", i)
		}
		if before != nil {
			if err := wantVersion(before); err != nil {
				return fmt.Errorf("item %d: before: %v", i, err)
			}
		}
	}
	return nil
}

// wantPrefixes: a list of CIDR prefixes ("10.0.0.0/8", "fd00::/8"), as
// host-firewall-blocks-nccl compares them. An IPv6 prefix written with an
// embedded IPv4 address is refused: the rule reads hex groups only.
func wantPrefixes(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want a list of CIDR prefixes, got %s", typeName(v))
	}
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			return fmt.Errorf("item %d: want a CIDR prefix string, got %s", i, typeName(item))
		}
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("item %d: %q is not a CIDR prefix (address/length)", i, s)
		}
		if strings.Contains(s, ":") && strings.Contains(s, ".") {
			return fmt.Errorf("item %d: %q: write an IPv6 prefix in hex groups only", i, s)
		}
	}
	return nil
}
