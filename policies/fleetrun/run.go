package fleetrun

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// HostInput is one host for Run: where it came from and how to get its
// snapshot document. Load runs inside Run's bounded workers, so a fleet's
// documents are never all in memory at once.
type HostInput struct {
	// Origin is where the host came from: a snapshot file, a root, an
	// address. It is HostRun.File, and names the host in messages and in
	// the collection-error finding of a host that could not be read.
	Origin string
	// Name is the host's name when its document gives none, and the name of
	// a host whose document could not be loaded.
	Name string
	// Load returns the host's snapshot document (see snapshot.Document);
	// Run calls it once and may add to it. An error means nothing of the
	// host was read: the host gets its collection-error finding and nothing
	// else.
	Load func(ctx context.Context) (map[string]any, error)
	// Read, if set, returns the host's snapshot file as bytes, read into
	// buf's storage when it fits (see snapshot.ReadFile). Run then decodes
	// them itself, the same way Load would, and a host whose snapshot
	// differs from one already evaluated only in its "host" member is
	// never decoded: it shares that evaluation.
	Read func(ctx context.Context, buf []byte) ([]byte, error)
}

// SnapshotFile is the input of a snapshot file (see snapshot.ReadDocument);
// its host, when the document names none, is the file name less extension.
func SnapshotFile(file string) HostInput {
	return HostInput{
		Origin: file,
		Name:   strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)),
		Load:   func(context.Context) (map[string]any, error) { return snapshot.ReadDocument(file) },
		Read:   func(_ context.Context, buf []byte) ([]byte, error) { return snapshot.ReadFile(file, buf) },
	}
}

// SnapshotFiles are the inputs of snapshot files, in order.
func SnapshotFiles(files []string) iter.Seq[HostInput] {
	return func(yield func(HostInput) bool) {
		for _, f := range files {
			if !yield(SnapshotFile(f)) {
				return
			}
		}
	}
}

// RunOptions configure Run.
type RunOptions struct {
	// FleetOf names the fleet of a host from its name and its snapshot
	// document (labels, and facts such as GPUs present) ("" for none). Nil
	// puts every host in fleet "". For a host whose document could not be
	// loaded, the host is HostInput.Name and doc is nil.
	FleetOf func(host string, doc map[string]any) string
	// FleetSections are the top-level members of a document FleetOf reads
	// (nil: all of it). Hosts that share an evaluation share these: FleetOf
	// is then called with the host's own name and a document holding only
	// them, so it must take the name from its argument.
	FleetSections []string
	// Workers bounds how many hosts are evaluated at once; 0 means GOMAXPROCS.
	Workers int
	// Hosts is how many inputs the iterator yields, when known (0: not
	// known): the hosts' records are then allocated once, in place.
	Hosts int
	// Progress, if set, is called from worker goroutines after each host
	// with the number of hosts done.
	Progress func(done int)
	// Loaded, if set, is called from worker goroutines with each host's
	// document as the rules will see it, before they do (tests compare it
	// with what was collected; the history store keeps it). A host whose
	// file equals an earlier one's but for its name is not decoded again:
	// doc is then like, that earlier host's document (the same map for
	// every such host), shallow-copied with the host's own name; like is
	// nil for a host decoded on its own. It must change neither.
	Loaded func(in HostInput, doc, like map[string]any)
	// HostTimeout bounds the evaluation of one host's rules, and of one
	// fleet's fleet-wide rules: a user rule can loop for hours. A rule that
	// does not finish within it is a collection-error finding for the host
	// (a failure for the fleet), and the findings of the other rules are
	// kept. 0 means DefaultHostTimeout; negative means no limit.
	HostTimeout time.Duration

	// wholeGroups keeps every fleet rule on the fleet's groups, none on
	// groups of its own facts (tests).
	wholeGroups bool
}

// DefaultHostTimeout is RunOptions.HostTimeout when it is 0.
const DefaultHostTimeout = 10 * time.Second

// Report is the result of Run.
type Report struct {
	// Hosts has one entry per input, in the order given.
	Hosts []HostRun `json:"hosts"`
	// Findings are host findings in file order, then fleet-wide findings by
	// fleet name and host.
	Findings []policies.Finding `json:"findings"`
	// Failures are hosts or fleets the engine could not evaluate; the rest
	// of the run is still complete.
	Failures []Failure `json:"failures,omitempty"`
}

// HostRun says which host and fleet an input was audited as, and what of
// it could not be audited.
type HostRun struct {
	// File is the input's origin (HostInput.Origin).
	File  string `json:"file"`
	Host  string `json:"host"`
	Fleet string `json:"fleet"`
	// Unread says why nothing of the host was read (a document that could
	// not be loaded, a snapshot.CollectorSource error); "" when it was
	// read. An unread host gets collection-error findings and nothing else.
	Unread string `json:"unread,omitempty"`
	// Skipped are the rules that did not run on the host because facts
	// they read were not collected.
	Skipped []string `json:"skipped,omitempty"`
	// Image: the host is an offline OS image (source.image), so rules
	// that read running state are among Skipped.
	Image bool `json:"image,omitempty"`
	// TimedOut are the rules that did not finish within the budget.
	TimedOut []string `json:"timed_out,omitempty"`
	// PodsUnread: no pods were read for the host (no Kubernetes node, no
	// manifests). Absent pods mean none to the rules, which run and find
	// nothing; a report counts such a host out of the rules that read
	// nothing but pods.
	PodsUnread bool `json:"pods_unread,omitempty"`
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

// overBudget is the collection-error finding for a rule that did not finish
// on a host within the evaluation budget: its findings there are unknown.
func overBudget(e *policies.Engine, run HostRun, slow *policies.Rule, budget time.Duration) policies.Finding {
	r := e.RuleByID("collection-error")
	return policies.Finding{
		Rule:     r.ID,
		Severity: r.Severity,
		Title:    r.Title,
		Host:     run.Host,
		Fleet:    run.Fleet,
		Message:  fmt.Sprintf("rule %s did not finish within %s; its findings for this host are unknown", slow.ID, budget),
		Evidence: []policies.Evidence{{
			Fact:   "host",
			Value:  run.Host,
			Source: slow.Location,
		}},
		Remediation: r.Remediation,
		References:  slices.Clone(r.References),
	}
}

// unreadDoc stands for a host whose document could not be loaded (a
// snapshot file that could not be read or decoded): a host not read at all
// (a snapshot.CollectorSource error naming its origin), so the
// collection-error rule reports it and no other rule runs.
func unreadDoc(host, origin string, err error) map[string]any {
	return map[string]any{
		"schema":  snapshot.Schema,
		"host":    host,
		"errors":  []any{map[string]any{"collector": snapshot.CollectorSource, "path": origin, "reason": err.Error()}},
		"sources": map[string]any{"errors": origin},
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
