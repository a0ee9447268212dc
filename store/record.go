package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"strconv"
	"sync"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/reports"
)

// Recorder records one audit run while it runs: Loaded (the audit's
// Options.Loaded hook) stores each host's snapshot as the engine reads it,
// so snapshots are never held for the whole fleet, and Finish writes the
// rest when the audit is done, reading the findings as the audit yields
// them. What it keeps per host is the least Finish needs: the snapshot's
// hash and collected_at, and pod names for the hosts that have pods.
type Recorder struct {
	s   Store
	id  RunID
	ctx context.Context

	// likes are split blobs of documents other hosts are like, by the
	// document's address (Loaded's like; addressOf).
	likeMu sync.Mutex
	likes  map[uintptr]likeBlob

	mu    sync.Mutex
	hosts map[hostKey]hostSnap
	// pods name the pods of the hosts that have any (policies.PodIDs),
	// for finding keys.
	pods map[hostKey]map[string]string
	// added and reused count snapshot blobs written and found already
	// stored.
	added, reused int
	err           error
}

// hostKey is how a snapshot is found again: a digest of its input's
// origin and host (fleetrun.HostRun.File and Host), a fixed 16 bytes
// however long the path.
type hostKey [16]byte

func keyOf(origin, host string) hostKey {
	// An origin (a path or an address) holds no NUL: the pair is unambiguous.
	sum := sha256.Sum256([]byte(origin + "\x00" + host))
	return hostKey(sum[:16])
}

type hostSnap struct {
	// hash is the snapshot blob's address (contentHash), as bytes.
	hash        [sha256.Size]byte
	collectedAt string
}

// Begin records a new run as Incomplete. ctx bounds the snapshot writes
// of Loaded, which has none of its own.
func Begin(ctx context.Context, s Store, meta RunMeta) (*Recorder, error) {
	id, err := s.BeginRun(ctx, meta)
	if err != nil {
		return nil, err
	}
	return &Recorder{s: s, id: id, ctx: ctx, hosts: map[hostKey]hostSnap{}, pods: map[hostKey]map[string]string{},
		likes: map[uintptr]likeBlob{}}, nil
}

// ID is the run's id.
func (r *Recorder) ID() RunID { return r.id }

// Loaded stores a host's snapshot document; it has the signature of
// audit.Options.Loaded and is safe for concurrent use. It changes neither
// doc nor like. A failure is kept for Finish, which then fails the run.
func (r *Recorder) Loaded(in fleetrun.HostInput, doc, like map[string]any) {
	body, collectedAt, err := r.blob(doc, like)
	host, _ := doc["host"].(string)
	var hash string
	var added bool
	if err == nil {
		hash, added, err = r.s.PutBlob(r.ctx, KindSnapshot, body)
	}
	var sum [sha256.Size]byte
	if err == nil {
		_, err = hex.Decode(sum[:], []byte(hash))
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
	k := keyOf(in.Origin, host)
	r.hosts[k] = hostSnap{hash: sum, collectedAt: collectedAt}
	if len(pods) > 0 {
		r.pods[k] = pods
	} else {
		delete(r.pods, k)
	}
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

// blob is SnapshotBlob(doc). A doc that is like but for its host name
// (audit.Options.Loaded) is like's blob with the name put in: like is
// encoded once, not once per host of its configuration.
func (r *Recorder) blob(doc, like map[string]any) ([]byte, string, error) {
	host, ok := doc["host"].(string)
	if like == nil || !ok {
		return SnapshotBlob(doc)
	}
	key := addressOf(like)
	r.likeMu.Lock()
	sp, ok := r.likes[key]
	r.likeMu.Unlock()
	if !ok {
		sp = splitBlob(like)
		r.likeMu.Lock()
		if len(r.likes) >= maxLikes {
			clear(r.likes)
		}
		// sp holds like, so its address names no other map while kept.
		r.likes[key] = sp
		r.likeMu.Unlock()
	}
	if sp.parts[0] == nil {
		return SnapshotBlob(doc)
	}
	name, err := json.Marshal(host)
	if err != nil {
		return nil, "", err
	}
	body := make([]byte, 0, len(sp.parts[0])+len(name)+len(sp.parts[1]))
	body = append(append(append(body, sp.parts[0]...), name...), sp.parts[1]...)
	return body, sp.collectedAt, nil
}

// addressOf is a map's address: its identity while it is alive. The cache
// holds each map it keys (likeBlob.like), so no other map takes its
// address while its entry is kept; the Go heap does not move objects.
func addressOf(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// maxLikes bounds the split blobs a recorder keeps: a fleet repeats a few
// dozen configurations; one of distinct hosts has no like.
const maxLikes = 256

// likeBlob is SnapshotBlob of a document cut where its host name goes.
type likeBlob struct {
	like        map[string]any
	parts       [2][]byte // nil when the cut is not certain
	collectedAt string
}

// hostMark stands for the host name in a split blob.
const hostMark = "\x00fleetaudit host\x00"

func splitBlob(like map[string]any) likeBlob {
	sp := likeBlob{like: like}
	doc := maps.Clone(like)
	doc["host"] = hostMark
	body, collectedAt, err := SnapshotBlob(doc)
	if err != nil {
		return sp
	}
	sp.collectedAt = collectedAt
	mark, _ := json.Marshal(hostMark)
	if bytes.Count(body, mark) != 1 {
		return sp
	}
	i := bytes.Index(body, mark)
	sp.parts = [2][]byte{body[:i:i], body[i+len(mark):]}
	return sp
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
// content-addressed from res.Rules and res.FleetRules. The findings are
// read through res.All as the store writes them, one at a time: a
// streamed result (audit.Options.Stream) is recorded without ever being
// held whole, and may be read again afterwards (by a report).
func (r *Recorder) Finish(ctx context.Context, res *audit.Result, trend []reports.TrendPoint) error {
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
	rec.Hosts = func(yield func(*Host) bool) {
		hosts := res.HostRuns()
		if hosts == nil {
			return
		}
		for h := range hosts {
			host := Host{HostRun: h}
			if snap, ok := r.hosts[keyOf(h.File, h.Host)]; ok {
				host.Snapshot, host.CollectedAt = hex.EncodeToString(snap.hash[:]), snap.collectedAt
			}
			if !yield(&host) {
				return
			}
		}
	}
	pods := r.podsByHost(res.HostRuns())
	rec.Findings = func(yield func(*Finding) bool) {
		for f := range res.All() {
			rf := Finding{Finding: *f, Key: MatchKey(*f, pods[f.Host])}
			if !yield(&rf) {
				return
			}
		}
	}
	for _, p := range trend {
		p.Run = strconv.FormatInt(int64(r.id), 10)
		rec.Trend = append(rec.Trend, p)
	}
	return r.s.FinishRun(ctx, r.id, rec)
}

// podsByHost names the pods that finding keys use, by host name: those
// of the first of hosts with that name (two inputs may name one host).
// Only names with pods on some input are kept; a finding of any other
// host has no pod to name.
func (r *Recorder) podsByHost(hosts iter.Seq[fleetrun.HostRun]) map[string]map[string]string {
	out := map[string]map[string]string{}
	if len(r.pods) == 0 || hosts == nil {
		return out
	}
	withPods := map[string]bool{}
	for h := range hosts {
		if _, ok := r.pods[keyOf(h.File, h.Host)]; ok {
			withPods[h.Host] = true
		}
	}
	for h := range hosts {
		if _, done := out[h.Host]; !done && withPods[h.Host] {
			// nil when this first input of the name had no pods.
			out[h.Host] = r.pods[keyOf(h.File, h.Host)]
		}
	}
	return out
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
