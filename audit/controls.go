package audit

import "github.com/fleetaudit/fleetaudit/policies"

// fleetRules lists, for each fleet with a host in the run, the rules the
// fleet ran: a control that passes everywhere has no finding to show it.
func fleetRules(e *policies.Engine, hosts []policies.HostRun) map[string][]string {
	out := map[string][]string{}
	for _, h := range hosts {
		if _, ok := out[h.Fleet]; !ok {
			out[h.Fleet] = e.FleetRules(h.Fleet)
		}
	}
	return out
}
