package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/fleetaudit/fleetaudit/policies"
)

// findingKeyer lists the match keys of a run's findings without decoding
// the findings, all FirstSeen needs of each earlier run. It is optional:
// a Store without it is read through Findings.
type findingKeyer interface {
	FindingKeys(ctx context.Context, id RunID) ([]string, error)
}

// FindingKeys lists the match keys of run id's findings, of every shard
// of a sharded run, as Findings reads them.
func (s *DB) FindingKeys(ctx context.Context, id RunID) ([]string, error) {
	_, ids, err := s.rowsOf(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		if out, err = s.appendFindingKeys(ctx, out, id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *DB) appendFindingKeys(ctx context.Context, out []string, id RunID) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT match_key FROM findings WHERE run_id = ?`, int64(id))
	if err != nil {
		return nil, fmt.Errorf("store %s: finding keys of run %d: %w", s.path, id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("store %s: finding keys of run %d: %w", s.path, id, err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// heldKeys are the match keys of run id's findings.
func heldKeys(ctx context.Context, s Store, id RunID) (map[string]bool, error) {
	held := map[string]bool{}
	if fk, ok := s.(findingKeyer); ok {
		keys, err := fk.FindingKeys(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			held[k] = true
		}
		return held, nil
	}
	findings, err := s.Findings(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, f := range findings {
		held[f.Key] = true
	}
	return held, nil
}

// findingReffer lists a run's findings by key and blob without decoding
// them: the earlier run of a report's changes (loadRefSide). Optional, as
// findingKeyer is.
type findingReffer interface {
	findingRefs(ctx context.Context, id RunID) ([]findingRef, error)
}

// findingRef is a finding as its row names it.
type findingRef struct {
	host, key, hash       string
	fleet, severity, rule string
}

// findingRefs lists run id's findings, of every shard of a sharded run,
// in the order Findings reads them.
func (s *DB) findingRefs(ctx context.Context, id RunID) ([]findingRef, error) {
	_, ids, err := s.rowsOf(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []findingRef
	for _, id := range ids {
		rows, err := s.db.QueryContext(ctx, `SELECT host, fleet, severity, rule, match_key, finding FROM findings WHERE run_id = ? ORDER BY seq`, int64(id))
		if err != nil {
			return nil, fmt.Errorf("store %s: findings of run %d: %w", s.path, id, err)
		}
		for rows.Next() {
			var r findingRef
			if err := rows.Scan(&r.host, &r.fleet, &r.severity, &r.rule, &r.key, &r.hash); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store %s: findings of run %d: %w", s.path, id, err)
			}
			// As the finding's JSON has them (hosts are keyed by those).
			r.host, r.fleet, r.rule = asJSONText(fromDBText(r.host)), asJSONText(fromDBText(r.fleet)), asJSONText(fromDBText(r.rule))
			r.severity = asJSONText(fromDBText(r.severity))
			out = append(out, r)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("store %s: findings of run %d: %w", s.path, id, err)
		}
	}
	if len(ids) > 1 {
		slices.SortStableFunc(out, func(a, b findingRef) int {
			return cmp.Or(cmp.Compare(a.fleet, b.fleet),
				cmp.Compare(policies.SeverityRank(b.severity), policies.SeverityRank(a.severity)),
				cmp.Compare(a.host, b.host), cmp.Compare(a.rule, b.rule))
		})
	}
	return out, nil
}
