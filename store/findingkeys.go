package store

import (
	"context"
	"fmt"
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
