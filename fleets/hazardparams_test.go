package fleets

import (
	"strings"
	"testing"
)

func TestCheckHazardParam(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string // "" for valid
	}{
		{"foll_longterm_drivers", []any{map[string]any{"from": "535.171.04", "before": "536"}, map[string]any{"from": "555", "before": nil}}, ""},
		{"foll_longterm_drivers", []any{}, ""},
		{"foll_longterm_drivers", "550.90.07", "want a list of {from, before} version ranges"},
		{"foll_longterm_drivers", []any{map[string]any{"from": 550.9, "before": nil}}, "item 0: from: want a quoted version string"},
		{"foll_longterm_drivers", []any{map[string]any{"from": "550"}}, "item 0: before: want a quoted version or null"},
		{"foll_longterm_drivers", []any{map[string]any{"from": "550", "before": nil, "to": "1"}}, `item 0: unknown key "to"`},
		{"foll_longterm_min_driver", "550.90.07", ""},
		{"foll_longterm_min_driver", 550.9, "want a quoted version string"},
		{"peermem_race_drivers", map[string]any{"mitigated": []any{map[string]any{"from": "550", "before": "560"}}, "fixed": []any{}}, ""},
		{"peermem_race_drivers", map[string]any{"patched": []any{}}, `unknown key "patched"`},
		{"peermem_race_drivers", []any{}, "want a mapping of state"},
		{"rdma_min_rate_gbps", 400, ""},
		{"rdma_min_rate_gbps", 12.5, ""},
		{"rdma_min_rate_gbps", "400", "want a non-negative number of Gb/s"},
		{"rdma_min_rate_gbps", -1, "want a non-negative number"},
		{"fleet_networks", []any{"10.0.0.0/8", "fd00::/8"}, ""},
		{"fleet_networks", []any{}, ""},
		{"fleet_networks", "10.0.0.0/8", "want a list of CIDR prefixes"},
		{"fleet_networks", []any{"10.0.0.0"}, `item 0: "10.0.0.0" is not a CIDR prefix`},
		{"fleet_networks", []any{"10.0.0.0/8", 10}, "item 1: want a CIDR prefix string"},
		{"fleet_networks", []any{"::ffff:10.0.0.0/104"}, "hex groups only"},
		{"user_policy_param", 1.5, ""},
	} {
		err := checkHazardParam(tc.name, tc.v)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s=%v: %v", tc.name, tc.v, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s=%v: error %v, want %q", tc.name, tc.v, err, tc.want)
		}
	}
}
