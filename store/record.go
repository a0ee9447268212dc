package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
)

// Recorder records one audit run while it runs: Loaded (the audit's
// Options.Loaded hook) stores each host's snapshot as the engine reads it,
// so snapshots are never held for the whole fleet, and Finish writes the
// rest when the audit is done.
type Recorder struct {
	s   Store
	id  RunID
	ctx context.Context

	mu    sync.Mutex
	hosts map[hostKey]hostSnap
	// added and reused count snapshot blobs written and found already
	// stored.
	added, reused int
	err           error
}

// hostKey is how a snapshot is found again: its input's origin and host
// (policies.HostRun.File and Host).
type hostKey struct{ origin, host string }

type hostSnap struct {
	hash, collectedAt string
	// pods name the host's pods for finding keys (policies.PodIDs).
	pods map[string]string
}

// Begin records a new run as Incomplete. ctx bounds the snapshot writes
// of Loaded, which has none of its own.
func Begin(ctx context.Context, s Store, meta RunMeta) (*Recorder, error) {
	id, err := s.BeginRun(ctx, meta)
	if err != nil {
		return nil, err
	}
	return &Recorder{s: s, id: id, ctx: ctx, hosts: map[hostKey]hostSnap{}}, nil
}

// ID is the run's id.
func (r *Recorder) ID() RunID { return r.id }

// Loaded stores a host's snapshot document; it has the signature of
// audit.Options.Loaded and is safe for concurrent use. It does not change
// doc. A failure is kept for Finish, which then fails the run.
func (r *Recorder) Loaded(in policies.HostInput, doc map[string]any) {
	body, collectedAt, err := SnapshotBlob(doc)
	host, _ := doc["host"].(string)
	var hash string
	var added bool
	if err == nil {
		hash, added, err = r.s.PutBlob(r.ctx, KindSnapshot, body)
	}
	pods := policies.PodIDs(doc)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.err = errors.Join(r.err, fmt.Errorf("snapshot of %s (%s): %w", host, in.Origin, err))
		return
	}
	if added {
		r.added++
	} else {
		r.reused++
	}
	r.hosts[hostKey{in.Origin, host}] = hostSnap{hash: hash, collectedAt: collectedAt, pods: pods}
}

// SnapshotBlob is what a snapshot document is stored as: its JSON with
// object keys sorted (encoding/json's map order) and collected_at left out,
// so a host whose facts did not change is the same blob. collected_at is
// returned for the run's host row.
func SnapshotBlob(doc map[string]any) (body []byte, collectedAt string, err error) {
	collectedAt, _ = doc["collected_at"].(string)
	if _, ok := doc["collected_at"]; ok {
		doc = maps.Clone(doc)
		delete(doc, "collected_at")
	}
	body, err = json.Marshal(doc)
	return body, collectedAt, err
}

// Stored counts the snapshots of the run so far: new blobs written, and
// those already in the store (unchanged hosts).
func (r *Recorder) Stored() (added, reused int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.added, r.reused
}

// Finish records the audit's hosts, findings and trend and marks the run
// Complete. The catalog (the rules and each fleet's) is stored
// content-addressed from res.Rules and res.FleetRules.
func (r *Recorder) Finish(ctx context.Context, res *audit.Result, trend []TrendPoint) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.err
	if err != nil {
		_ = r.s.FailRun(ctx, r.id, err.Error())
		return err
	}
	cat, err := json.Marshal(Catalog{Rules: res.Rules, FleetRules: res.FleetRules})
	if err != nil {
		return err
	}
	catHash, _, err := r.s.PutBlob(ctx, KindCatalog, cat)
	if err != nil {
		return err
	}
	rec := &Record{Result: res, Catalog: catHash}
	pods := map[string]map[string]string{}
	for h := range res.HostRuns() {
		snap := r.hosts[hostKey{h.File, h.Host}]
		rec.Hosts = append(rec.Hosts, Host{HostRun: h, Snapshot: snap.hash, CollectedAt: snap.collectedAt})
		if _, ok := pods[h.Host]; !ok {
			pods[h.Host] = snap.pods
		}
	}
	for _, f := range res.Findings {
		rec.Findings = append(rec.Findings, Finding{Finding: f, Key: MatchKey(f, pods[f.Host])})
	}
	for _, p := range trend {
		p.Run = r.id
		rec.Trend = append(rec.Trend, p)
	}
	return r.s.FinishRun(ctx, r.id, rec)
}

// Fail marks the run Failed: the audit could not be made.
func (r *Recorder) Fail(ctx context.Context, cause error) error {
	return r.s.FailRun(ctx, r.id, cause.Error())
}

// MatchKey identifies a finding across runs: its host and
// policies.FindingKey, hashed to a fixed width.
func MatchKey(f policies.Finding, pods map[string]string) string {
	sum := sha256.Sum256([]byte(f.Host + "\x00" + policies.FindingKey(f, pods)))
	return hex.EncodeToString(sum[:16])
}
