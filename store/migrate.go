package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// migrations are the schema, one step per version: step i brings a store
// from version i to i+1. Steps are only ever appended; a released step is
// never edited. The DDL is portable SQL but for two types the dialect
// spells ({{ID}}: an auto-assigned 64-bit key; {{BLOB}}: bytes).
// Timestamps are fixed-width UTC text (timeFormat), so they sort as text
// in any database.
var migrations = [][]string{
	// 1: runs, content-addressed blobs, hosts, findings, trend points.
	{
		`CREATE TABLE blobs (
			hash TEXT PRIMARY KEY,
			kind TEXT NOT NULL,
			encoding TEXT NOT NULL DEFAULT '',
			body {{BLOB}} NOT NULL,
			stored_at TEXT NOT NULL
		)`,
		`CREATE TABLE runs (
			id {{ID}},
			started_at TEXT NOT NULL,
			finished_at TEXT,
			state TEXT NOT NULL,
			error TEXT NOT NULL DEFAULT '',
			fleetaudit TEXT NOT NULL,
			writer TEXT NOT NULL,
			command TEXT NOT NULL DEFAULT '',
			hosts INTEGER NOT NULL DEFAULT 0,
			audited INTEGER NOT NULL DEFAULT 0,
			unread INTEGER NOT NULL DEFAULT 0,
			findings INTEGER NOT NULL DEFAULT 0,
			result TEXT,
			catalog TEXT REFERENCES blobs (hash)
		)`,
		`CREATE INDEX runs_started ON runs (started_at)`,
		`CREATE TABLE run_hosts (
			run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			seq INTEGER NOT NULL,
			host TEXT NOT NULL,
			fleet TEXT NOT NULL,
			snapshot TEXT REFERENCES blobs (hash),
			collected_at TEXT NOT NULL DEFAULT '',
			unread TEXT NOT NULL DEFAULT '',
			detail TEXT NOT NULL,
			PRIMARY KEY (run_id, seq)
		)`,
		`CREATE INDEX run_hosts_host ON run_hosts (host, run_id)`,
		`CREATE TABLE findings (
			run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			seq INTEGER NOT NULL,
			rule TEXT NOT NULL,
			severity TEXT NOT NULL,
			fleet TEXT NOT NULL,
			host TEXT NOT NULL,
			match_key TEXT NOT NULL,
			waived INTEGER NOT NULL DEFAULT 0,
			finding TEXT NOT NULL REFERENCES blobs (hash),
			PRIMARY KEY (run_id, seq)
		)`,
		`CREATE INDEX findings_fleet ON findings (run_id, fleet, severity)`,
		`CREATE TABLE run_trend (
			run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			fleet TEXT NOT NULL,
			checks INTEGER NOT NULL,
			failing INTEGER NOT NULL,
			findings TEXT NOT NULL,
			PRIMARY KEY (run_id, fleet)
		)`,
	},
	// 2: indexes on the columns that reference blobs, so that pruning can
	// tell a blob no run needs, and delete it, without scanning every
	// finding once per blob (the foreign-key check does that otherwise).
	{
		`CREATE INDEX run_hosts_snapshot ON run_hosts (snapshot)`,
		`CREATE INDEX findings_blob ON findings (finding)`,
		`CREATE INDEX runs_catalog ON runs (catalog)`,
	},
	// 3: sharded runs: n runners each record a shard of one named run
	// (a row each); readers see the run once every shard is complete.
	// Unnamed runs have name '' and shard 0 of 0.
	{
		`ALTER TABLE runs ADD COLUMN name TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE runs ADD COLUMN shard INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN shards INTEGER NOT NULL DEFAULT 0`,
		`CREATE UNIQUE INDEX runs_shard ON runs (name, shard) WHERE name <> ''`,
	},
}

// SchemaVersion is the schema version this fleetaudit writes.
func SchemaVersion() int { return len(migrations) }

// dialect is what differs between SQL databases in this package's SQL.
type dialect struct {
	name string
	// types replace {{ID}} and {{BLOB}} in migrations.
	id, blob string
	// tables lists the user tables of the database.
	tables string
	// writeLock, run first in a write transaction, serializes the
	// writers that SQLite's one write lock serializes already (""
	// none); pruneLock, run first in Prune, also keeps runs from being
	// begun until Prune commits.
	writeLock, pruneLock string
	// locked tells a driver error that is a lock wait that timed out.
	locked func(error) bool
}

func (d dialect) lockWrites(ctx context.Context, tx *sql.Tx) error {
	if d.writeLock == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, d.writeLock)
	return err
}

func (d dialect) lockPrune(ctx context.Context, tx *sql.Tx) error {
	if err := d.lockWrites(ctx, tx); err != nil || d.pruneLock == "" {
		return err
	}
	_, err := tx.ExecContext(ctx, d.pruneLock)
	return err
}

var sqliteDialect = dialect{
	name:   "sqlite",
	id:     "INTEGER PRIMARY KEY",
	blob:   "BLOB",
	tables: `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`,
}

func (d dialect) ddl(stmt string) string {
	return strings.NewReplacer("{{ID}}", d.id, "{{BLOB}}", d.blob).Replace(stmt)
}

// schemaTable records each migration applied, and by which fleetaudit.
const schemaTable = "fleetaudit_schema"

// errMigrate: a read-only open found a schema older than this fleetaudit's.
var errMigrate = errors.New("the store's schema needs migrating")

// migrate brings the database to SchemaVersion in one transaction. A
// database with tables but no schemaTable is not a store; one whose version
// is newer than this fleetaudit knows is refused, naming who wrote it. The
// version is read first without the write lock, so that opening a store
// that is up to date waits for no writer; readOnly returns errMigrate
// where a migration is due.
func migrate(ctx context.Context, db *sql.DB, d dialect, version, where string, readOnly bool) error {
	have, err := schemaVersion(ctx, db, d, version, where)
	if err != nil || have == len(migrations) {
		return err
	}
	if readOnly {
		return errMigrate
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if err := d.lockWrites(ctx, tx); err != nil {
		return err
	}
	// Again under the write lock: another writer may have migrated since.
	tables, err := tableNames(ctx, tx, d)
	if err != nil {
		return err
	}
	if !tables[schemaTable] {
		if len(tables) > 0 {
			return fmt.Errorf("%s: %w: it has tables but no %s", where, ErrNotStore, schemaTable)
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE `+schemaTable+` (
			version INTEGER PRIMARY KEY,
			applied_at TEXT NOT NULL,
			fleetaudit TEXT NOT NULL
		)`); err != nil {
			return fmt.Errorf("%s: creating the schema table: %w", where, err)
		}
	}
	if have, err = readVersion(ctx, tx, version, where); err != nil || have == len(migrations) {
		return err
	}
	now := formatTime(timeNow())
	for v := have; v < len(migrations); v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.ExecContext(ctx, d.ddl(stmt)); err != nil {
				return fmt.Errorf("%s: migrating to schema version %d: %w", where, v+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+schemaTable+` (version, applied_at, fleetaudit) VALUES (?, ?, ?)`, v+1, now, version); err != nil {
			return fmt.Errorf("%s: recording schema version %d: %w", where, v+1, err)
		}
	}
	return tx.Commit()
}

// schemaVersion reads the store's schema version in a read transaction
// (0: an empty database), refusing what is not a store or is newer.
func schemaVersion(ctx context.Context, db *sql.DB, d dialect, version, where string) (int, error) {
	// A read-only transaction begins deferred (the DSN's immediate is for
	// writes): it takes no write lock.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	tables, err := tableNames(ctx, tx, d)
	if err != nil {
		return 0, err
	}
	if !tables[schemaTable] {
		if len(tables) > 0 {
			return 0, fmt.Errorf("%s: %w: it has tables but no %s", where, ErrNotStore, schemaTable)
		}
		return 0, nil
	}
	return readVersion(ctx, tx, version, where)
}

// readVersion is the schema table's latest version; newer than this
// fleetaudit knows is ErrNewerSchema.
func readVersion(ctx context.Context, tx *sql.Tx, version, where string) (int, error) {
	var have int
	var by sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT version, fleetaudit FROM `+schemaTable+` ORDER BY version DESC LIMIT 1`).Scan(&have, &by)
	if err != nil && err != sql.ErrNoRows {
		return 0, fmt.Errorf("%s: reading the schema version: %w", where, err)
	}
	if have > len(migrations) {
		return 0, fmt.Errorf("%s: %w (schema version %d, by fleetaudit %s); this fleetaudit (%s) knows up to version %d: upgrade fleetaudit to read it",
			where, ErrNewerSchema, have, by.String, version, len(migrations))
	}
	return have, nil
}

func tableNames(ctx context.Context, tx *sql.Tx, d dialect) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, d.tables)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out[name] = true
	}
	return out, rows.Err()
}
