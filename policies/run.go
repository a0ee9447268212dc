package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// MaxSnapshotBytes bounds the size of one snapshot file Run reads.
const MaxSnapshotBytes = 64 << 20

// RunOptions configure Run.
type RunOptions struct {
	// FleetOf names the fleet of a host from its name and its snapshot in
	// generic JSON form (labels, and facts such as GPUs present) ("" for
	// none). Nil puts every host in fleet "". For a snapshot that cannot be
	// read, the host is the file name without extension and doc is nil.
	FleetOf func(host string, doc map[string]any) string
	// Workers bounds how many hosts are evaluated at once; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is called from worker goroutines after each host.
	Progress func(done, total int)
	// HostTimeout bounds the evaluation of one host's rules, and of one
	// fleet's fleet-wide rules: a user rule can loop for hours. A rule that
	// does not finish within it is a collection-error finding for the host
	// (a failure for the fleet), and the findings of the other rules are
	// kept. 0 means DefaultHostTimeout; negative means no limit.
	HostTimeout time.Duration
}

// DefaultHostTimeout is RunOptions.HostTimeout when it is 0.
const DefaultHostTimeout = 10 * time.Second

// Report is the result of Run.
type Report struct {
	// Hosts has one entry per snapshot file, in the order given.
	Hosts []HostRun `json:"hosts"`
	// Findings are host findings in file order, then fleet-wide findings by
	// fleet name and host.
	Findings []Finding `json:"findings"`
	// Failures are hosts or fleets the engine could not evaluate; the rest
	// of the run is still complete.
	Failures []Failure `json:"failures,omitempty"`
}

// HostRun says which host and fleet a snapshot file was audited as, and
// what of it could not be audited.
type HostRun struct {
	File  string `json:"file"`
	Host  string `json:"host"`
	Fleet string `json:"fleet"`
	// Unread says why nothing of the host was read (an unreadable snapshot
	// file, a snapshot.CollectorSource error); "" when it was read. An
	// unread host gets collection-error findings and nothing else.
	Unread string `json:"unread,omitempty"`
	// Skipped are the rules that did not run on the host because facts
	// they read were not collected.
	Skipped []string `json:"skipped,omitempty"`
	// TimedOut are the rules that did not finish within the budget.
	TimedOut []string `json:"timed_out,omitempty"`
}

// Failure is a host or fleet that could not be evaluated (a rule failed at
// run time, a fleet is not configured, a host name repeats).
type Failure struct {
	File  string `json:"file,omitempty"`
	Host  string `json:"host,omitempty"`
	Fleet string `json:"fleet"`
	Err   error  `json:"-"`
}

func (f Failure) Error() string {
	if f.File != "" {
		return fmt.Sprintf("%s (host %s, fleet %q): %v", f.File, f.Host, f.Fleet, f.Err)
	}
	return fmt.Sprintf("fleet %q: %v", f.Fleet, f.Err)
}

func (f Failure) Unwrap() error { return f.Err }

// MarshalJSON writes the failure with its error as text.
func (f Failure) MarshalJSON() ([]byte, error) {
	type plain Failure
	return json.Marshal(struct {
		plain
		Error string `json:"error"`
	}{plain(f), f.Err.Error()})
}

type hostResult struct {
	run      HostRun
	findings []Finding
	proj     map[string]any
	err      error
}

// Run audits the snapshot files: each is read, decoded and evaluated inside a
// bounded worker, then dropped, keeping only its findings and a compact
// projection for the fleet-wide pass, so memory grows with the number of
// workers, not with the size of the fleet. A file that cannot be read or
// decoded is a collection-error finding for its host. Run returns an error
// only when ctx ends.
func (e *Engine) Run(ctx context.Context, files []string, opts RunOptions) (*Report, error) {
	fleetOf := opts.FleetOf
	if fleetOf == nil {
		fleetOf = func(string, map[string]any) string { return "" }
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	budget := opts.HostTimeout
	if budget == 0 {
		budget = DefaultHostTimeout
	}
	results := make([]hostResult, len(files))
	var done atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, file := range files {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			results[i] = e.runHost(gctx, file, fleetOf, budget)
			if opts.Progress != nil {
				opts.Progress(int(done.Add(1)), len(files))
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	rep := &Report{Hosts: make([]HostRun, len(files))}
	members := map[string][]map[string]any{}
	firstFile := map[[2]string]string{}
	for i, r := range results {
		rep.Hosts[i] = r.run
		rep.Findings = append(rep.Findings, r.findings...)
		if r.err != nil {
			rep.Failures = append(rep.Failures, Failure{File: r.run.File, Host: r.run.Host, Fleet: r.run.Fleet, Err: r.err})
		}
		if r.proj == nil {
			continue
		}
		key := [2]string{r.run.Fleet, r.run.Host}
		if prev, dup := firstFile[key]; dup {
			rep.Failures = append(rep.Failures, Failure{File: r.run.File, Host: r.run.Host, Fleet: r.run.Fleet,
				Err: fmt.Errorf("host name also used by %s; fleet-wide rules counted that file only", prev)})
			continue
		}
		firstFile[key] = r.run.File
		members[r.run.Fleet] = append(members[r.run.Fleet], r.proj)
	}

	fleets := slices.Sorted(maps.Keys(members))
	fleetFindings := make([][]Finding, len(fleets))
	fleetErrs := make([]error, len(fleets))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, fleet := range fleets {
		g.Go(func() error {
			var slow []string
			fleetFindings[i], slow, fleetErrs[i] = e.evalFleet(gctx, fleet, members[fleet], budget)
			if len(slow) > 0 {
				fleetErrs[i] = errors.Join(fleetErrs[i], fmt.Errorf("fleet-wide %s %s did not finish within %s; %s findings for this fleet are unknown",
					plural(len(slow), "rule", "rules"), strings.Join(slow, ", "), budget, plural(len(slow), "its", "their")))
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, fleet := range fleets {
		rep.Findings = append(rep.Findings, fleetFindings[i]...)
		if fleetErrs[i] != nil {
			rep.Failures = append(rep.Failures, Failure{Fleet: fleet, Err: fleetErrs[i]})
		}
	}
	return rep, nil
}

func (e *Engine) runHost(ctx context.Context, file string, fleetOf func(string, map[string]any) string, budget time.Duration) hostResult {
	var run HostRun
	doc, err := readSnapshot(file)
	if err != nil {
		host := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		run = HostRun{File: file, Host: host, Fleet: fleetOf(host, nil)}
		doc = unreadDoc(host, file, err)
	} else {
		host, _ := doc["host"].(string)
		if host == "" {
			host = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
			doc["host"] = host
		}
		run = HostRun{File: file, Host: host, Fleet: fleetOf(host, doc)}
	}
	fq, ok := e.fleets[run.Fleet]
	if !ok {
		return hostResult{run: run, err: fmt.Errorf("%w: %q", ErrUnknownFleet, run.Fleet)}
	}
	res := hostResult{run: run}
	ev, err := e.evalHost(ctx, doc, run.Fleet, budget)
	res.findings, res.err = ev.findings, err
	res.run.Skipped, res.run.TimedOut = ev.skipped, ev.timedOut
	for _, id := range ev.timedOut {
		res.findings = append(res.findings, e.overBudget(res.run, e.byID[id], budget))
	}
	res.run.Unread = coverageOf(doc).unread
	if fq.fleet != nil && res.run.Unread == "" {
		// An unread host has no facts to compare: it would only drag the
		// fleet's majority towards empty values.
		res.proj = e.Project(doc)
	}
	return res
}

// overBudget is the collection-error finding for a rule that did not finish
// on a host within the evaluation budget: its findings there are unknown.
func (e *Engine) overBudget(run HostRun, slow *Rule, budget time.Duration) Finding {
	r := e.byID["collection-error"]
	return Finding{
		Rule:     r.ID,
		Severity: r.Severity,
		Title:    r.Title,
		Host:     run.Host,
		Fleet:    run.Fleet,
		Message:  fmt.Sprintf("rule %s did not finish within %s; its findings for this host are unknown", slow.ID, budget),
		Evidence: []Evidence{{
			Fact:   "host",
			Value:  run.Host,
			Source: slow.Location,
		}},
		Remediation: r.Remediation,
		References:  slices.Clone(r.References),
	}
}

// unreadDoc stands for a snapshot file that could not be read or decoded:
// a host not read at all (a snapshot.CollectorSource error naming the
// file), so the collection-error rule reports it and no other rule runs.
func unreadDoc(host, file string, err error) map[string]any {
	return map[string]any{
		"schema":  snapshot.Schema,
		"host":    host,
		"errors":  []any{map[string]any{"collector": snapshot.CollectorSource, "path": file, "reason": err.Error()}},
		"sources": map[string]any{"errors": file},
	}
}

// readSnapshot reads one snapshot file into its generic JSON form. Only a
// regular file is read, and at most MaxSnapshotBytes of it (a FIFO or a
// link to /dev/zero is an error, not a hang). Members of the wrong type are
// removed and become entries of the snapshot's errors (see
// snapshot.Validate), so the host is reported, never dropped.
func readSnapshot(file string) (map[string]any, error) {
	b, err := readCapped(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the finding names the file already
		}
		return nil, err
	}
	var v any
	if err := unmarshalJSON(b, &v); err != nil {
		return nil, fmt.Errorf("not a JSON snapshot: %w", err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON snapshot: the document is %s, not an object", jsonKind(v))
	}
	schema, _ := doc["schema"].(string)
	if err := snapshot.CheckSchema(schema); err != nil {
		return nil, err
	}
	if bad := snapshot.Validate(doc); len(bad) > 0 {
		errs, _ := doc["errors"].([]any)
		for _, e := range bad {
			errs = append(errs, map[string]any{"collector": e.Collector, "path": e.Path, "reason": e.Reason})
		}
		doc["errors"] = errs
	}
	return doc, nil
}

// readCapped reads a regular file of at most MaxSnapshotBytes. The buffer
// is sized from fstat once the file is known to be regular (a snapshot's
// size is true, unlike /proc's), so a fleet's worth of reads does not
// regrow it from nothing; the cap holds whatever the size says.
func readCapped(file string) ([]byte, error) {
	f, err := safeio.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if st, err := f.Stat(); err == nil && st.Size() <= MaxSnapshotBytes {
		buf.Grow(int(st.Size()) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxSnapshotBytes+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxSnapshotBytes {
		return nil, fmt.Errorf("%w: over the %d byte limit", safeio.ErrTooLarge, MaxSnapshotBytes)
	}
	return buf.Bytes(), nil
}

// LabelsOf returns a snapshot document's labels (string values only).
func LabelsOf(doc map[string]any) map[string]string {
	m, _ := doc["labels"].(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// jsonKind names a decoded JSON value's type for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
