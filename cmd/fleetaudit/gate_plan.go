package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/store"
)

// defaultStoreFlag is --store given without a value: the default store.
const defaultStoreFlag = "default"

// addPlanFlags adds the per-host plan's flags to gate.
func addPlanFlags(f *pflag.FlagSet) {
	addStoreFlag(f)
	f.Lookup("store").Usage = "plan the change per host from the latest complete run of this history store (--store alone: the default store, $XDG_DATA_HOME/fleetaudit/store.db; a path needs --store=PATH)"
	f.Lookup("store").NoOptDefVal = defaultStoreFlag
	f.String("snapshots", "", "plan the change per host from every snapshot (*.json) in this directory")
	f.Duration("max-age", configrepo.DefaultMaxAge, "a host whose snapshot is older than this is not planned (listed with why)")
	f.String("summary", "", "with --format markdown, where the report goes in full when the PR comment must be cut to GitHub's 65,536 characters (default $GITHUB_STEP_SUMMARY)")
}

// gateArgs refuses arguments, and names the fix for "--store PATH": a
// flag with an optional value takes it only as --store=PATH.
func gateArgs(cmd *cobra.Command, args []string) error {
	if f := cmd.Flags().Lookup("store"); len(args) > 0 && f != nil && f.Changed && f.Value.String() == defaultStoreFlag {
		return fmt.Errorf("--store takes its path as --store=%s, not as a separate argument", args[0])
	}
	return cobra.NoArgs(cmd, args)
}

// planOptions loads the hosts of --store or --snapshots; nil when neither
// is given. done releases what they hold.
func (a *app) planOptions(ctx context.Context, out string) (opts *configrepo.PlanOptions, done func(), err error) {
	v := a.v
	storeSet, dir := v.GetString("store") != "", v.GetString("snapshots")
	done = func() {}
	if !storeSet && dir == "" {
		return nil, done, nil
	}
	if storeSet && dir != "" {
		return nil, done, usageError{fmt.Errorf("--store and --snapshots: give one source of hosts")}
	}
	maxAge := v.GetDuration("max-age")
	if maxAge <= 0 {
		return nil, done, usageError{fmt.Errorf("--max-age %s: want a positive duration", maxAge)}
	}
	if dir != "" {
		hosts, err := snapshotHosts(dir)
		if err != nil {
			return nil, done, err
		}
		return &configrepo.PlanOptions{Source: "snapshots " + dir, Hosts: hosts, MaxAge: maxAge}, done, nil
	}
	if v.GetString("store") == defaultStoreFlag {
		v.Set("store", "")
	}
	s, err := a.openStoreToRead(ctx, out)
	if err != nil {
		return nil, done, err
	}
	hosts, id, err := storeHosts(ctx, s)
	if err != nil {
		s.Close()
		return nil, done, err
	}
	return &configrepo.PlanOptions{Source: fmt.Sprintf("store %s run %d", s.Path(), id), Hosts: hosts, MaxAge: maxAge},
		func() { s.Close() }, nil
}

// storeHosts are the hosts of a store's latest complete run.
func storeHosts(ctx context.Context, s *store.SQLite) ([]configrepo.PlanHost, store.RunID, error) {
	id, err := store.Resolve(ctx, s, "latest")
	if err != nil {
		return nil, 0, err
	}
	hosts, err := s.Hosts(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	out := make([]configrepo.PlanHost, 0, len(hosts))
	for _, h := range hosts {
		ph := configrepo.PlanHost{Name: h.Host, Origin: fmt.Sprintf("run %d", id), Fleet: h.Fleet, Unread: h.Unread}
		if h.CollectedAt != "" {
			t, err := time.Parse(time.RFC3339Nano, h.CollectedAt)
			if err != nil {
				return nil, 0, fmt.Errorf("run %d: host %s: collected_at %q: %w", id, h.Host, h.CollectedAt, err)
			}
			ph.CollectedAt = t
		}
		hash := h.Snapshot
		if hash == "" && ph.Unread == "" {
			ph.Unread = "no snapshot was recorded"
		}
		ph.Read = func(ctx context.Context, buf []byte) ([]byte, error) { return s.BlobTo(ctx, hash, buf) }
		out = append(out, ph)
	}
	return out, id, nil
}

// snapshotHosts are the snapshot files (*.json) of dir, each host named by
// its document.
func snapshotHosts(dir string) ([]configrepo.PlanHost, error) {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil, usageError{fmt.Errorf("--snapshots %s: not a directory", dir)}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	out := make([]configrepo.PlanHost, 0, len(files))
	for _, file := range files {
		out = append(out, configrepo.PlanHost{
			Name:   "", // the document's
			Origin: file,
			Read: func(_ context.Context, buf []byte) ([]byte, error) {
				return snapshot.ReadFile(file, buf)
			},
		})
	}
	return out, nil
}

// commentRoom is what a PR comment keeps free of the report: the Action's
// marker line.
const commentRoom = 1024

// renderGateMarkdown writes the Markdown report to w, cut to a PR comment's
// size; when cut, the whole report goes to the job summary (--summary, else
// $GITHUB_STEP_SUMMARY, appended to as GitHub expects).
func (a *app) renderGateMarkdown(w io.Writer, render reports.GateFormat, res *configrepo.Result, opts reports.Options) error {
	var buf bytes.Buffer
	if err := render.RenderGate(&buf, res, opts); err != nil {
		return err
	}
	comment, cut := reports.SplitComment(buf.String(), reports.CommentLimit-commentRoom)
	if cut {
		summary := a.v.GetString("summary")
		if summary == "" {
			summary = a.getenv("GITHUB_STEP_SUMMARY")
		}
		if summary == "" {
			return fmt.Errorf("the Markdown report is %d characters, more than a PR comment holds (%d): name a file for the whole report with --summary", len([]rune(buf.String())), reports.CommentLimit)
		}
		f, err := os.OpenFile(summary, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--summary: %w", err)
		}
		_, err = f.Write(buf.Bytes())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--summary %s: %w", summary, err)
		}
		a.log.Info("the PR comment holds the report's first part; the whole report is in the summary", "summary", summary)
	}
	_, err := io.WriteString(w, comment)
	return err
}
