package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// minEvery keeps --every from turning collect into a busy loop.
const minEvery = time.Minute

// addCollectEvery gives collect --every: collect again at an interval until
// stopped, replacing -o (or --out's HOST.json) each time. It is how the DaemonSet in deploy/ keeps
// each node's snapshot fresh for the auditing CronJob.
func addCollectEvery(a *app, cmd *cobra.Command) {
	cmd.Flags().Duration("every", 0, "collect again every DURATION until stopped (SIGTERM), replacing -o (or --out's HOST.json) each time, as a DaemonSet runs it (0: once)")
	cmd.Example += `

  # In a DaemonSet: the node's / mounted at /host, a fresh snapshot every hour
  fleetaudit collect --root /host --hostname "$NODE_NAME" --out /snapshots --every 1h`
	once := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		every := a.v.GetDuration("every")
		switch {
		case every == 0:
			return once(cmd, args)
		case every < minEvery:
			return usageError{fmt.Errorf("--every %s: want at least %s", every, minEvery)}
		}
		ctx := cmd.Context()
		for {
			err := once(cmd, args)
			if errors.As(err, new(usageError)) {
				return err
			}
			if err != nil && ctx.Err() == nil {
				// The last good snapshot stays in place; the next round may
				// succeed (a file briefly unreadable, a full disk).
				a.log.Error("collection failed; trying again", "in", every, "error", err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(every):
			}
		}
	}
}
