package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/sshsource"
)

func addCollectInventoryFlags(f *pflag.FlagSet) {
	f.String("inventory", "", "collect every host of this inventory: one with an address over SSH, one with a root from that local tree (with --out)")
	f.String("out", "", "directory to write HOST.json into, made if missing, instead of -o: one per inventory host with --inventory (a host not read gets one saying why)")
	addSSHFlags(f)
}

// runCollectInventory collects the inventory's hosts into --out: a host
// with a root from that local tree, one with an address over SSH. A host
// that cannot be read still gets a snapshot, whose source error says why,
// so an audit of the directory reports it. A snapshot that cannot be
// written (a full disk) stops the run with that one error: every other
// host would fail the same way.
func (a *app) runCollectInventory(cmd *cobra.Command) error {
	v := a.v
	file, out := v.GetString("inventory"), v.GetString("out")
	if out == "" {
		return usageError{errors.New("--inventory needs --out, the directory for one HOST.json per host")}
	}
	inv, err := inventory.Load(file)
	if err != nil {
		return inputError{err}
	}
	if err := a.shardOf(inv); err != nil {
		return err
	}
	var hosts []sshsource.Host
	var local []inventory.Host
	for _, h := range inv.Hosts {
		switch {
		case h.Root != "":
			local = append(local, h)
		case h.Address != "":
			hosts = append(hosts, audit.SSHHost(h))
		}
	}
	if len(hosts)+len(local) == 0 {
		return inputError{fmt.Errorf("--inventory %s: no host has an address or a root", file)}
	}
	parallel := v.GetInt("parallel")
	if parallel < 1 {
		return usageError{fmt.Errorf("--parallel %d: want at least 1", parallel)}
	}
	var d *sshsource.Dialer
	if len(hosts) > 0 {
		// Its files (known_hosts, keys) are checked before anything runs.
		if d, err = a.sshDialer(v.GetBool("no-exec")); err != nil {
			return err
		}
		defer d.Close()
	}
	if err := outDir(out); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(cmd.Context())
	defer stop()
	var writeErr error
	written := 0
	write := func(host string, snap *snapshot.Snapshot) {
		if writeErr != nil {
			return
		}
		var buf bytes.Buffer
		err := snapshot.Encode(&buf, snap)
		if err != nil {
			err = fmt.Errorf("encoding %s: %w", host, err)
		} else {
			var name string
			if name, err = snapshot.FileName(host); err == nil {
				// A host read in full is written even as the run is interrupted.
				err = writeOutput(context.WithoutCancel(ctx), a, filepath.Join(out, name), buf.Bytes())
			}
		}
		if err != nil {
			writeErr = err
			stop()
			return
		}
		written++
	}
	var unread []string
	for _, h := range local {
		snap := audit.CollectRoot(ctx, h.Name, h.Root, v.GetBool("no-exec"), version)
		if ctx.Err() != nil {
			break
		}
		if e := collectors.Unread(snap); e != nil {
			unread = append(unread, fmt.Sprintf("%s: root %s: %s", h.Name, h.Root, e.Reason))
		}
		write(h.Name, snap)
	}
	total := len(hosts) + len(local)
	var progress *sshProgress
	if d != nil && writeErr == nil {
		progress = a.newSSHProgress(len(hosts))
		seen := 0
		d.CollectAll(ctx, hosts, parallel, v.GetDuration("host-timeout"), func(r sshsource.Result, p sshsource.Progress) {
			if writeErr != nil {
				return // stopped: these hosts failed for it, not for themselves
			}
			seen++
			progress.done(r, p)
			if r.Err != nil && r.Err.Class == sshsource.ClassInterrupted {
				return // not read: an earlier snapshot of it stays
			}
			write(r.Host.Name, r.Snapshot)
		})
		if writeErr != nil {
			progress.total = seen
		}
		progress.account(a.err)
	}
	for _, u := range unread {
		fmt.Fprintf(a.err, "not read: %s\n", u)
	}
	if writeErr != nil {
		return fmt.Errorf("%w; stopped with %d of %d hosts written", writeErr, written, total)
	}
	if cmd.Context().Err() != nil {
		return fmt.Errorf("%d of %d hosts were written to %s; the other %d were stopped or not started, and their earlier snapshots (if any) were left as they were", written, total, out, total-written)
	}
	n := len(unread)
	if progress != nil {
		n += len(progress.failures)
	}
	if n > 0 {
		return fmt.Errorf("%d of %d hosts were not read in full (listed above; their snapshots say why)", n, total)
	}
	return nil
}

// outDir makes --out, the directory of the snapshots, when it is not there.
func outDir(out string) error {
	info, err := os.Stat(out)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return fmt.Errorf("--out %s: making the directory: %w", out, err)
		}
		return nil
	}
	if err != nil {
		return inputError{fmt.Errorf("--out %s: %w", out, err)}
	}
	if !info.IsDir() {
		return usageError{fmt.Errorf("--out %s: not a directory (a %s): --out names the directory for one HOST.json per host", out, safeio.Kind(info.Mode()))}
	}
	return nil
}
