package main

import (
	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// auditStreams reports whether the audit may stream its findings to the report
// (audit.Options.Stream): only when nothing but the renderer reads them.
// Waivers mark Result.Findings in place and --record stores them, so
// either needs every finding collected, one per host.
func auditStreams(format string, ws *waivers.Set, record bool) bool {
	return reports.Streams(format) && ws == nil && !record
}
