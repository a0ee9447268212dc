package reports

import (
	"fmt"
	"iter"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
)

// skippedLines says, per host with rules that did not run, how many and
// why; nil when every rule ran everywhere.
func skippedLines(r *audit.Result) []string {
	var lines []string
	for h := range hostRuns(r) {
		if len(h.Skipped) == 0 {
			continue
		}
		why := "facts not collected"
		if h.Image {
			why = "offline image, no running state"
		}
		lines = append(lines, fmt.Sprintf("%s: %d %s not evaluated: %s", h.Host, len(h.Skipped), plural(len(h.Skipped), "rule", "rules"), why))
	}
	return lines
}

// hostRuns is r.HostRuns, empty rather than nil.
func hostRuns(r *audit.Result) iter.Seq[policies.HostRun] {
	if hosts := r.HostRuns(); hosts != nil {
		return hosts
	}
	return func(func(policies.HostRun) bool) {}
}

// skippedMessage is the reason a JUnit case gives for a rule skipped on
// a host.
func skippedMessage(image bool) string {
	if image {
		return "not evaluated: offline image, no running state"
	}
	return "not evaluated: facts not collected"
}
