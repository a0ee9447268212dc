package reports

import (
	"fmt"
	"iter"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// skippedLines says, per host with rules that did not run, how many and
// why; nil when every rule ran everywhere.
func skippedLines(r *audit.Result) []string {
	var lines []string
	for h := range hostRuns(r) {
		if len(h.Skipped) == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %d %s not evaluated: %s", h.Host, len(h.Skipped), plural(len(h.Skipped), "rule", "rules"), skippedWhy(h.Image)))
	}
	return lines
}

// hostRuns is r.HostRuns, empty rather than nil.
func hostRuns(r *audit.Result) iter.Seq[fleetrun.HostRun] {
	if hosts := r.HostRuns(); hosts != nil {
		return hosts
	}
	return func(func(fleetrun.HostRun) bool) {}
}

// skippedMessage is the reason a JUnit case gives for a rule skipped on
// a host.
func skippedMessage(image bool) string { return "not evaluated: " + skippedWhy(image) }

// skippedWhy is why a host's rules were skipped.
func skippedWhy(image bool) string {
	if image {
		return "offline image, no running state"
	}
	return "facts not collected"
}
