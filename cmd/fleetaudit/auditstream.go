package main

import (
	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// auditStreams reports whether the audit may stream its findings to the report
// (audit.Options.Stream): only when nothing but the renderer reads them.
// Waivers mark streamed findings as they are read (Result.ApplyWaivers);
// --record stores every finding, one per host, so it needs them collected.
func auditStreams(format string, _ *waivers.Set, record bool) bool {
	return reports.Streams(format) && !record
}
