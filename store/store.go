// Package store is the history of audit runs: each run's hosts, findings,
// per-fleet trend points and the snapshots it audited, so that history,
// drift between runs and compliance reports can be answered later without a
// server.
//
// Snapshots are content-addressed: a host whose facts did not change since
// the last run costs its run a reference, not a new row. A run is written
// in two steps: BeginRun marks it incomplete at once, and FinishRun writes
// its hosts and findings and marks it complete in one transaction, so a
// writer that dies midway leaves a consistent store whose run says it is
// incomplete.
//
// Store is the interface; DB implements it on SQLite (modernc.org/sqlite,
// no cgo) or PostgreSQL (pgx), with the same portable SQL and migrations.
// Runners of one fleet split in shards each record a shard of one named
// run, which readers see whole once every shard is complete (shards.go).
package store

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/reports"
)

// RunID identifies a recorded run; ids grow with time.
type RunID int64

// Run states.
const (
	// Incomplete: begun and not finished: the writer is still running, or
	// died (killed, crashed, the machine lost power) before it finished.
	Incomplete = "incomplete"
	// Complete: every host and finding of the run is recorded.
	Complete = "complete"
	// Failed: the audit itself failed (a policy that does not compile);
	// Run.Error says why.
	Failed = "failed"
)

// Blob kinds.
const (
	// KindSnapshot is a host's snapshot document, collected_at left out
	// (it is in Host): the same facts are the same blob.
	KindSnapshot = "snapshot"
	// KindCatalog is a Catalog: the rules' metadata and each fleet's rules.
	KindCatalog = "catalog"
	// KindFinding is a finding as in the findings JSON: a finding still
	// open, word for word, is the same blob.
	KindFinding = "finding"
)

// Store records audit runs and answers from them. Implementations are safe
// for concurrent use.
type Store interface {
	// BeginRun records a new run as Incomplete and returns its id.
	BeginRun(ctx context.Context, meta RunMeta) (RunID, error)
	// PutBlob stores body under its content hash (hex SHA-256) unless it
	// is there already; added reports whether a new row was written.
	PutBlob(ctx context.Context, kind string, body []byte) (hash string, added bool, err error)
	// FinishRun writes the run's hosts, findings and trend and marks it
	// Complete, all in one transaction.
	FinishRun(ctx context.Context, id RunID, rec *Record) error
	// FailRun marks a run Failed with the reason.
	FailRun(ctx context.Context, id RunID, reason string) error

	// Runs lists runs, newest first; a sharded run is one (see Run).
	Runs(ctx context.Context, q RunQuery) ([]Run, error)
	// Run returns one run; ErrNoRun (wrapped) when there is none. The id
	// of any shard of a sharded run returns the sharded run, complete
	// once every shard is.
	Run(ctx context.Context, id RunID) (Run, error)
	// Counts are the findings of the given runs per fleet and severity.
	Counts(ctx context.Context, ids []RunID) ([]Count, error)
	// Hosts are a run's hosts in the order they were audited (a sharded
	// run's shard by shard).
	Hosts(ctx context.Context, id RunID) ([]Host, error)
	// Findings are a run's findings in report order.
	Findings(ctx context.Context, id RunID) ([]Finding, error)
	// Trend are the trend points of the given runs, oldest run first.
	Trend(ctx context.Context, ids []RunID) ([]reports.TrendPoint, error)
	// Blob returns a stored body; ErrNoBlob (wrapped) when there is none.
	Blob(ctx context.Context, hash string) ([]byte, error)

	Close() error
}

// Errors a caller may test for with errors.Is.
var (
	// ErrNoStore: the store file does not exist (readers never create one).
	ErrNoStore = errors.New("no store here: record runs with 'fleetaudit audit --record'")
	// ErrNewerSchema: the store was written by a newer fleetaudit.
	ErrNewerSchema = errors.New("the store was written by a newer fleetaudit")
	// ErrNotStore: the file is not a fleetaudit store.
	ErrNotStore = errors.New("not a fleetaudit store")
	// ErrNoRun: no run has that id, or no run matches.
	ErrNoRun = errors.New("no such run")
	// ErrNotComplete: the run named is incomplete or failed.
	ErrNotComplete = errors.New("the run is not complete")
	// ErrNoBlob: no blob has that hash.
	ErrNoBlob = errors.New("no such blob")
	// ErrLocked: another process held the store's write lock for longer
	// than a write waits.
	ErrLocked = errors.New("another process is writing to the store and holds its write lock")
)

// RunMeta is what a run records when it begins.
type RunMeta struct {
	StartedAt time.Time
	// Version is the fleetaudit that writes the run.
	Version string
	// Writer names the writing process (host and pid), so an incomplete
	// run says whose it was.
	Writer string
	// Command is the command line that made the run, for people.
	Command string
	// Name, Shard and Shards record shard Shard of Shards (from 1) of the
	// run Name, which readers see as one run once every shard is
	// complete. A name without shards is shard 1 of 1; no name, an
	// unnamed run of its own.
	Name          string
	Shard, Shards int
}

// Run is a recorded run.
type Run struct {
	ID RunID `json:"id"`
	// State is Incomplete, Complete or Failed.
	State      string     `json:"state"`
	Error      string     `json:"error,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Version    string     `json:"fleetaudit"`
	Writer     string     `json:"writer"`
	Command    string     `json:"command,omitempty"`
	// Counts of a complete run (zero otherwise).
	Hosts    int `json:"hosts"`
	Audited  int `json:"audited"`
	Unread   int `json:"unread"`
	Findings int `json:"findings"`
	// Result is the audit result without its findings and hosts (errors,
	// summary, waivers), as JSON; nil unless complete.
	Result json.RawMessage `json:"-"`
	// Catalog is the hash of the run's Catalog blob; "" unless complete.
	Catalog string `json:"-"`
	// Name is a sharded run's name ("" for a run of one runner).
	Name string `json:"name,omitempty"`
	// Shards are a sharded run's shards, in order, missing ones too.
	Shards []Shard `json:"shards,omitempty"`

	// shard and shards are a row's place in its run (0 of 0: unsharded).
	shard, shards int
	// catalogs are the distinct catalogs of a sharded run's shards.
	catalogs []string
}

// Missing is the state of a shard that no runner has recorded.
const Missing = "missing"

// Shard is one runner's part of a sharded run.
type Shard struct {
	// Shard is its number, from 1.
	Shard int `json:"shard"`
	// ID is its own row's id; 0 when missing.
	ID RunID `json:"id,omitempty"`
	// State is Incomplete, Complete, Failed or Missing.
	State  string `json:"state"`
	Error  string `json:"error,omitempty"`
	Writer string `json:"writer,omitempty"`
	Hosts  int    `json:"hosts"`
}

// RunQuery selects runs.
type RunQuery struct {
	// Since keeps runs started at or after it (zero: all).
	Since time.Time
	// State keeps runs in that state ("": all).
	State string
	// Limit keeps the newest Limit runs (0: all).
	Limit int
}

// Record is what FinishRun writes. Hosts and Findings are read once each,
// in that order, inside FinishRun's transaction and row by row, so a
// large fleet's findings are never all in memory; what they yield is
// valid during the call only.
type Record struct {
	FinishedAt time.Time
	// Result is the audit's result; its hosts and findings are written
	// as rows (from Hosts and Findings), the rest as the run's result
	// document.
	Result *audit.Result
	// Hosts yields the run's hosts in audit order, with their snapshot
	// blobs.
	Hosts iter.Seq[*Host]
	// Findings yields the run's findings in report order
	// (audit.Result.All), with their match keys.
	Findings iter.Seq[*Finding]
	// Catalog is the hash of the run's Catalog blob.
	Catalog string
	// Trend are the run's trend points, one per fleet.
	Trend []reports.TrendPoint
}

// Host is one host of a run.
type Host struct {
	fleetrun.HostRun
	// Snapshot is the hash of the host's snapshot blob; "" when none was
	// recorded.
	Snapshot string `json:"snapshot,omitempty"`
	// CollectedAt is the snapshot's collected_at ("" when it had none).
	CollectedAt string `json:"collected_at,omitempty"`
}

// Finding is one recorded finding.
type Finding struct {
	policies.Finding
	// Key matches the finding across runs of the same host
	// (policies.FindingKey, hashed).
	Key string `json:"-"`
}

// Count is the findings of one run, fleet and severity.
type Count struct {
	Run      RunID  `json:"run"`
	Fleet    string `json:"fleet"`
	Severity string `json:"severity"`
	Findings int    `json:"findings"`
	// Waived are those of Findings a waiver covers.
	Waived int `json:"waived"`
}

// Catalog is what a report needs of the rules beyond their findings: each
// rule's metadata and the rules each fleet ran. Stored content-addressed,
// so runs with the same library share one.
type Catalog struct {
	Rules      []policies.Rule     `json:"rules"`
	FleetRules map[string][]string `json:"fleet_rules"`
}
