package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/sshsource"
	"github.com/fleetaudit/fleetaudit/transport"
)

func addCollectInventoryFlags(f *pflag.FlagSet) {
	f.String("inventory", "", "collect every host of this inventory: one with a root from that local tree, any other through its ansible_connection (SSH by default; local reads this machine) (with --out)")
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
	hosts := audit.CollectHosts(inv)
	if len(hosts) == 0 {
		return inputError{fmt.Errorf("--inventory %s: no host has an address or a root", file)}
	}
	parallel := v.GetInt("parallel")
	if parallel < 1 {
		return usageError{fmt.Errorf("--parallel %d: want at least 1", parallel)}
	}
	// Its files (known_hosts, keys) are checked before anything runs.
	transports, ssh, progress, err := a.transports(hosts, v.GetBool("no-exec"))
	if err != nil {
		return err
	}
	if ssh != nil {
		defer ssh.Dialer.Close()
	}
	if err := outDir(out); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(cmd.Context())
	defer stop()
	// mu orders the SSH progress and the writes, both called from the
	// hosts' workers.
	var mu sync.Mutex
	var writeErr error
	written := 0
	write := func(host string, snap *snapshot.Snapshot) {
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
	seen := 0
	if ssh != nil {
		ssh.Done = func(r sshsource.Result, p sshsource.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if writeErr != nil {
				return // stopped: these hosts failed for it, not for themselves
			}
			seen++
			progress.done(r, p)
		}
	}
	type notRead struct{ host, why string }
	var unread []notRead
	opts := audit.Options{Inventory: inv, Transports: transports, NoExec: v.GetBool("no-exec"), Version: version, Parallel: parallel}
	err = audit.Collect(ctx, opts, func(h inventory.Host, snap *snapshot.Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		e := collectors.Unread(snap)
		if writeErr != nil || (e != nil && ctx.Err() != nil) {
			return // not read: an earlier snapshot of it stays
		}
		if name, _ := transport.For(h); e != nil && name != transport.SSH { // the SSH account lists its own
			where := e.Path
			if name == transport.Local {
				where = "root " + e.Path
			}
			unread = append(unread, notRead{h.Name, fmt.Sprintf("%s: %s: %s", h.Name, where, e.Reason)})
		}
		write(h.Name, snap)
	})
	if err != nil {
		return err
	}
	total := len(hosts)
	if progress != nil {
		if writeErr != nil {
			progress.total = seen
		}
		progress.account(a.err)
	}
	slices.SortFunc(unread, func(x, y notRead) int { return strings.Compare(x.host, y.host) })
	for _, u := range unread {
		fmt.Fprintf(a.err, "not read: %s\n", u.why)
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
