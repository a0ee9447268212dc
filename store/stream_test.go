package store

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// streamWaivers cover the example fleet: scoped to hosts, to a fleet,
// two on the same findings (the first marks them, both count them), one
// expired and one that matches nothing.
const streamWaivers = `waivers:
  - rule: hugetlb-cma-on-gpu
    fleet: gpu-training
    hosts: ["gpu-a-00[1-3]"]
    owner: alice@example.com
    justification: kernel rollout
    expires: 2099-09-30
  - rule: thp-always
    fleet: web-serving
    hosts: ["web-0[12]"]
    owner: carol@example.com
    justification: left over from a benchmark
    expires: 2099-12-31
  - rule: numa-balancing-enabled
    fleet: gpu-training
    owner: erin@example.com
    justification: measured harmless
    expires: 2099-12-31
  - rule: acs-redirect-on-gpu-path
    hosts: ["gpu-a-001"]
    fleet: "*"
    owner: frank@example.com
    justification: one host first
    expires: 2099-12-31
  - rule: acs-redirect-on-gpu-path
    fleet: gpu-training
    owner: frank@example.com
    justification: then the fleet
    expires: 2099-12-31
  - rule: tcp-tw-recycle
    fleet: "*"
    owner: bob@example.com
    justification: legacy image
    expires: 2020-01-31
  - rule: no-such-rule
    fleet: "*"
    owner: dave@example.com
    justification: stale
    expires: 2099-01-01
`

// A run recorded from streamed findings (audit.Options.Stream: read
// through Result.All as the store writes them) is row for row the run
// recorded from collected ones: hosts, findings with their seq, match key
// (pod names included) and waived mark, the blobs, the trend and the runs
// row. The findings read again afterwards, as a report reads them, are
// marked as the collected ones are, and the waivers report is the same.
func TestRecordStreamedFindings(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		set, err := fleets.Load(true)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := waivers.Parse("waivers.yaml", []byte(streamWaivers))
		if err != nil {
			t.Fatal(err)
		}
		dir := copyFleet(t, nil)
		at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		type recorded struct {
			rows     storeRows
			findings []policies.Finding
			waivers  *waivers.Report
		}
		run := func(stream bool) recorded {
			s := openTest(t, be.new(t))
			rec, err := Begin(ctx, s, RunMeta{StartedAt: at, Version: "test", Writer: "test"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := audit.Run(ctx, audit.Options{Fleets: set, Snapshots: []string{dir},
				Manifests: []string{"../kube/testdata/deployment-shm.yaml", "../kube/testdata/mpijob.yaml"}, ManifestFleet: "gpu-training",
				Now: func() time.Time { return at }, Loaded: rec.Loaded, Stream: stream})
			if err != nil {
				t.Fatal(err)
			}
			if (res.Findings == nil) != stream {
				t.Fatalf("stream %v: findings collected: %v", stream, res.Findings != nil)
			}
			res.Waivers = res.ApplyWaivers(ws, at)
			trend := []reports.TrendPoint{{Fleet: "gpu-training", Checks: 10, Failing: 3, Findings: map[string]int{"critical": 2}}}
			if err := rec.Finish(ctx, res, trend); err != nil {
				t.Fatal(err)
			}
			r := recorded{rows: dumpStore(t, s), waivers: res.Waivers}
			// The report's read, after the store's.
			if stream && res.Findings != nil {
				t.Fatal("recording collected the streamed findings")
			}
			for f := range res.All() {
				r.findings = append(r.findings, *f)
			}
			return r
		}
		collected, streamed := run(false), run(true)
		if diff := cmp.Diff(collected.rows, streamed.rows); diff != "" {
			t.Errorf("stored rows (-collected +streamed):\n%s", diff)
		}
		if diff := cmp.Diff(collected.findings, streamed.findings); diff != "" {
			t.Errorf("findings read after recording (-collected +streamed):\n%s", diff)
		}
		if diff := cmp.Diff(collected.waivers, streamed.waivers, cmp.AllowUnexported(waivers.Waiver{})); diff != "" {
			t.Errorf("waivers report (-collected +streamed):\n%s", diff)
		}

		// What the comparison covered: waived and unwaived findings on several
		// hosts, an expired and a stale waiver, and findings on pods keyed by
		// the pod's name.
		rows := collected.rows
		waived, hosts, pods := 0, map[string]bool{}, 0
		for _, f := range rows.Findings {
			waived += f.Waived
			hosts[f.Host] = true
			if strings.Contains(f.Body, `"fact":"pods.`) {
				pods++
				var pf policies.Finding
				if err := decodeFinding([]byte(f.Body), &pf); err != nil {
					t.Fatal(err)
				}
				if f.MatchKey == MatchKey(pf, nil) {
					t.Errorf("pod finding %s on %s keyed without its pod's name", f.Rule, f.Host)
				}
			}
		}
		if waived == 0 || waived == len(rows.Findings) || len(hosts) < 5 || pods == 0 {
			t.Errorf("%d findings, %d waived, on %d hosts, %d citing pods: the fixture lost its coverage", len(rows.Findings), waived, len(hosts), pods)
		}
		if r := collected.waivers; r.Expired != 1 || r.Stale != 1 || r.Waived == 0 {
			t.Errorf("waivers report %+v, want one expired, one stale, some waived", r)
		}
		if len(rows.Runs) != 1 || rows.Runs[0].State != Complete || rows.Runs[0].Findings != len(rows.Findings) {
			t.Errorf("runs %+v", rows.Runs)
		}
		podHosts := 0
		for _, h := range rows.Hosts {
			if strings.HasSuffix(h.Host, ".yaml") && h.Snapshot.Valid {
				podHosts++
			}
		}
		if podHosts != 2 {
			t.Errorf("%d manifest hosts with a snapshot, want 2", podHosts)
		}
	})
}

// storeRows are a store's rows, less what differs between two writes of
// the same run (times, the writer).
type storeRows struct {
	Runs     []runRow
	Hosts    []hostRow
	Findings []findingRow
	Blobs    []blobRow
	Trend    []trendRow
}

type runRow struct {
	ID                               int64
	State, Version, Command          string
	Hosts, Audited, Unread, Findings int
	Result, Catalog                  sql.NullString
}

type hostRow struct {
	Run, Seq                    int64
	Host, Fleet                 string
	Snapshot                    sql.NullString
	CollectedAt, Unread, Detail string
}

type findingRow struct {
	Run, Seq                              int64
	Rule, Severity, Fleet, Host, MatchKey string
	Waived                                int
	Finding, Body                         string
}

type blobRow struct {
	Hash, Kind, Encoding string
	Body                 []byte
}

type trendRow struct {
	Run             int64
	Fleet           string
	Checks, Failing int
	Findings        string
}

func dumpStore(t *testing.T, s *SQLite) storeRows {
	t.Helper()
	ctx := context.Background()
	var out storeRows
	query := func(q string, scan func(*sql.Rows) error) {
		rows, err := s.db.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	query(`SELECT id, state, fleetaudit, command, hosts, audited, unread, findings, result, catalog FROM runs ORDER BY id`, func(r *sql.Rows) error {
		var x runRow
		out.Runs = append(out.Runs, x)
		p := &out.Runs[len(out.Runs)-1]
		return r.Scan(&p.ID, &p.State, &p.Version, &p.Command, &p.Hosts, &p.Audited, &p.Unread, &p.Findings, &p.Result, &p.Catalog)
	})
	query(`SELECT run_id, seq, host, fleet, snapshot, collected_at, unread, detail FROM run_hosts ORDER BY run_id, seq`, func(r *sql.Rows) error {
		var x hostRow
		err := r.Scan(&x.Run, &x.Seq, &x.Host, &x.Fleet, &x.Snapshot, &x.CollectedAt, &x.Unread, &x.Detail)
		out.Hosts = append(out.Hosts, x)
		return err
	})
	body := `CAST(b.body AS TEXT)`
	if s.d.name == postgresDialect.name {
		body = `convert_from(b.body, 'UTF8')`
	}
	query(`SELECT f.run_id, f.seq, f.rule, f.severity, f.fleet, f.host, f.match_key, f.waived, f.finding, `+body+`
		FROM findings f JOIN blobs b ON b.hash = f.finding ORDER BY f.run_id, f.seq`, func(r *sql.Rows) error {
		var x findingRow
		err := r.Scan(&x.Run, &x.Seq, &x.Rule, &x.Severity, &x.Fleet, &x.Host, &x.MatchKey, &x.Waived, &x.Finding, &x.Body)
		out.Findings = append(out.Findings, x)
		return err
	})
	query(`SELECT hash, kind, encoding, body FROM blobs ORDER BY hash`, func(r *sql.Rows) error {
		var x blobRow
		err := r.Scan(&x.Hash, &x.Kind, &x.Encoding, &x.Body)
		out.Blobs = append(out.Blobs, x)
		return err
	})
	query(`SELECT run_id, fleet, checks, failing, findings FROM run_trend ORDER BY run_id, fleet`, func(r *sql.Rows) error {
		var x trendRow
		err := r.Scan(&x.Run, &x.Fleet, &x.Checks, &x.Failing, &x.Findings)
		out.Trend = append(out.Trend, x)
		return err
	})
	for i, f := range out.Findings {
		if f.Seq != int64(i) {
			t.Fatalf("finding %d has seq %d", i, f.Seq)
		}
	}
	if len(out.Runs) == 0 || len(out.Hosts) == 0 || len(out.Findings) == 0 || len(out.Trend) == 0 {
		t.Fatalf("an empty store: %d runs, %d hosts, %d findings, %d trend points", len(out.Runs), len(out.Hosts), len(out.Findings), len(out.Trend))
	}
	return out
}
