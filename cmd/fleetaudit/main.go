// Command fleetaudit audits server fleets for configuration hazards and drift.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	setGCPercent(0)
	os.Exit(runMain(os.Args[1:]))
}

// defaultGCPercent is the collector's target when GOGC is not set. A run
// is a batch job whose live heap is small next to the machine: at 200 the
// collector runs half as often as Go's default 100, for about 12% less CPU
// on 10,000 hosts that all differ, at the cost of a larger peak heap.
const defaultGCPercent = 200

// largeRunHosts is the audit size from which the collector's target is Go's
// own 100 again: there the heap is mostly what each host keeps until the
// report (its name, record and findings), which grows with the fleet, so
// the headroom at 200 costs more memory than it saves CPU (1,000,000
// default-generator hosts on 2 cores peaked at 305-358 MiB with 200, and
// at 251-268 MiB with 100 once this applied), and hosts of one
// configuration, the common case of a large fleet, leave little garbage
// to collect anyway.
const largeRunHosts = 50_000

// gcPercent says what to set the collector's target to for a run of hosts
// (0 when not known yet): nothing when the user chose with GOGC (GOMEMLIMIT
// applies either way).
func gcPercent(getenv func(string) string, hosts int) (int, bool) {
	if getenv("GOGC") != "" {
		return 0, false
	}
	if hosts >= largeRunHosts {
		return 100, true
	}
	return defaultGCPercent, true
}

// setGCPercent sets the collector's target for a run of hosts.
func setGCPercent(hosts int) {
	if p, ok := gcPercent(os.Getenv, hosts); ok {
		debug.SetGCPercent(p)
	}
}

// runMain is main but for the exit: SIGINT or SIGTERM cancels the run's
// context (the command says what it stopped and what it kept); a second
// one ends the process at once.
func runMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	return run(ctx, args, streams{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Getenv)
}
