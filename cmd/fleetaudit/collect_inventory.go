package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/sshsource"
)

func addCollectInventoryFlags(f *pflag.FlagSet) {
	f.String("inventory", "", "collect every host of this inventory that has an address, over SSH (with --out)")
	f.String("out", "", "directory for one HOST.json per inventory host (with --inventory); a host not read gets one saying why")
	addSSHFlags(f)
}

// runCollectInventory collects the inventory's hosts with an address over
// SSH into --out. A host that cannot be read still gets a snapshot, whose
// source error says why, so an audit of the directory reports it.
func (a *app) runCollectInventory(cmd *cobra.Command) error {
	v := a.v
	file, out := v.GetString("inventory"), v.GetString("out")
	if file == "" || out == "" {
		return usageError{errors.New("--inventory and --out go together")}
	}
	inv, err := inventory.Load(file)
	if err != nil {
		return usageError{err}
	}
	if err := a.shardOf(inv); err != nil {
		return err
	}
	if info, err := os.Stat(out); err != nil || !info.IsDir() {
		return usageError{fmt.Errorf("--out %s: not a directory", out)}
	}
	var hosts []sshsource.Host
	for _, h := range inv.Hosts {
		if h.Address != "" && h.Root == "" {
			hosts = append(hosts, audit.SSHHost(h))
		}
	}
	if len(hosts) == 0 {
		return usageError{fmt.Errorf("--inventory %s: no host has an address", file)}
	}
	parallel := v.GetInt("parallel")
	if parallel < 1 {
		return usageError{fmt.Errorf("--parallel %d: want at least 1", parallel)}
	}
	d, err := a.sshDialer(v.GetBool("no-exec"))
	if err != nil {
		return err
	}
	defer d.Close()
	progress := a.newSSHProgress(len(hosts))
	var writeErrs []error
	written := 0
	d.CollectAll(cmd.Context(), hosts, parallel, v.GetDuration("host-timeout"), func(r sshsource.Result, p sshsource.Progress) {
		progress.done(r, p)
		if r.Err != nil && r.Err.Class == sshsource.ClassInterrupted {
			return // not read: an earlier snapshot of it stays
		}
		var buf bytes.Buffer
		if err := snapshot.Encode(&buf, r.Snapshot); err != nil {
			writeErrs = append(writeErrs, fmt.Errorf("encoding %s: %w", r.Host.Name, err))
			return
		}
		name := filepath.Join(out, r.Host.Name+".json")
		// A host read in full is written even as the run is interrupted.
		if err := writeOutput(context.WithoutCancel(cmd.Context()), a, name, buf.Bytes()); err != nil {
			writeErrs = append(writeErrs, err)
			return
		}
		written++
	})
	progress.account(a.err)
	if err := errors.Join(writeErrs...); err != nil {
		return err
	}
	if cmd.Context().Err() != nil {
		return fmt.Errorf("%d of %d hosts were written to %s; the other %d were stopped or not started, and their earlier snapshots (if any) were left as they were", written, len(hosts), out, len(hosts)-written)
	}
	if n := len(progress.failures); n > 0 {
		return fmt.Errorf("%d of %d hosts were not read in full (listed above; their snapshots say why)", n, len(hosts))
	}
	return nil
}
