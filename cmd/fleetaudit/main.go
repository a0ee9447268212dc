// Command fleetaudit audits server fleets for configuration hazards and drift.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(runMain(os.Args[1:])) }

// runMain is main but for the exit: SIGINT or SIGTERM cancels the run's
// context (the command says what it stopped and what it kept); a second
// one ends the process at once.
func runMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	return run(ctx, args, streams{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Getenv)
}
