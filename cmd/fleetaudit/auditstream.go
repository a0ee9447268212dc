package main

import (
	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// auditStreams reports whether the audit may stream its findings to the report
// (audit.Options.Stream): when the renderer reads them in order. Waivers mark
// streamed findings as they are read (Result.ApplyWaivers), and --record
// writes them as they are read too (store.Recorder.Finish), before the
// renderer reads them again.
func auditStreams(format string, _ *waivers.Set) bool {
	return reports.Streams(format)
}
