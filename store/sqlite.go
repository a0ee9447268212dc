package store

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/reports"
)

// Options configure Open.
type Options struct {
	// Create makes the store (and its directory) when the file does not
	// exist, or its tables in an empty PostgreSQL database; without it a
	// missing file or empty database is ErrNoStore. Readers leave it
	// false so a typo in --store is an error, not an empty history.
	Create bool
	// ReadOnly opens a connection that never writes (SQLite's mode=ro;
	// PostgreSQL's default_transaction_read_only):
	// in WAL mode it reads the last committed state while a writer holds
	// its transaction, never waiting for it. A store whose schema is older
	// is first migrated by a writing connection, once.
	ReadOnly bool
	// Version is this fleetaudit's version, recorded with migrations.
	Version string
	// Wait is how long a write waits for another process's write lock
	// before failing with ErrLocked (0: DefaultWait); PostgreSQL's
	// lock_timeout.
	Wait time.Duration
}

// DefaultWait is how long a write waits for another writer by default.
const DefaultWait = time.Minute

// DB is a store in a SQL database: an SQLite file (Open's default) or a
// PostgreSQL database (a postgres:// URL).
//
// In SQLite it is one file (with its -wal and -shm companions while open)
// in WAL mode. Every transaction is atomic, so a writer that dies leaves
// no trace of an unfinished one but its run's Incomplete mark. Snapshot
// blobs are written with synchronous=NORMAL (no fsync per host: a power
// loss may forget the last ones, never corrupt); FinishRun commits with
// synchronous=FULL, which makes the run and every blob before it durable.
type DB struct {
	db *sql.DB
	// path names the store in messages: the file as given, or the URL
	// without its password.
	path string
	d    dialect
	// wait is the busy timeout, for ErrLocked's message.
	wait time.Duration
	// afterRow, in tests, is called inside FinishRun's transaction after
	// each row it writes: a test's writer process blocks there to be
	// killed mid-write.
	afterRow func(table string, n int)
	// gzipWriters are reused: a writer's state is most of a megabyte.
	gzipWriters sync.Pool
	// gzipReaders are reused too: each holds a 32 KiB window, and the
	// gate reads a blob per host.
	gzipReaders sync.Pool
}

// SQLite is DB's name from when SQLite was its one database.
type SQLite = DB

var _ Store = (*DB)(nil)

// Open opens (and migrates) the store at path: an SQLite file, or a
// PostgreSQL database given as a postgres:// or postgresql:// URL.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, errors.New("no store path given")
	}
	if IsURL(path) {
		return openPostgres(ctx, path, opts)
	}
	if opts.Create && opts.ReadOnly {
		return nil, fmt.Errorf("store %s: a read-only open cannot create the store", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	if strings.ContainsAny(abs, "?#") {
		// The driver reads what follows "?" as its own parameters.
		return nil, fmt.Errorf("store %s: a store path may not contain '?' or '#'", path)
	}
	switch info, err := os.Stat(abs); {
	case errors.Is(err, fs.ErrNotExist) && !opts.Create:
		return nil, fmt.Errorf("store %s: %w", path, ErrNoStore)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return nil, fmt.Errorf("store %s: %w", path, err)
		}
		// The store holds every host's snapshot: readable by its owner
		// only (SQLite would create it 0644). O_EXCL: a racing writer's
		// file is opened, not replaced.
		f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("store %s: %w", path, err)
		}
		if f != nil {
			f.Close()
		}
	case err != nil:
		return nil, fmt.Errorf("store %s: %w", path, err)
	case !info.Mode().IsRegular():
		// SQLite would block on a FIFO, or write through a device.
		return nil, fmt.Errorf("store %s: %w: not a regular file", path, ErrNotStore)
	}
	wait := opts.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	if opts.ReadOnly {
		s, err := open(ctx, abs, path, wait, true, opts.Version)
		if !errors.Is(err, errMigrate) {
			return s, err
		}
		// An older schema: migrated once by a writer, then read as usual.
		w, err := open(ctx, abs, path, wait, false, opts.Version)
		if err != nil {
			return nil, err
		}
		w.Close()
		return open(ctx, abs, path, wait, true, opts.Version)
	}
	return open(ctx, abs, path, wait, false, opts.Version)
}

// open connects to the store file abs (named path in errors) and checks or
// migrates its schema; a read-only store whose schema needs migrating
// returns errMigrate.
func open(ctx context.Context, abs, path string, wait time.Duration, readOnly bool, version string) (*DB, error) {
	var dsn string
	if readOnly {
		// A file: URI, so that SQLite itself sees mode=ro: the connection
		// takes no write lock, and a missing file is not created. The
		// store was put in WAL mode when it was created (WAL persists), so
		// it reads beside a writer.
		u := url.URL{Scheme: "file", Path: abs, RawQuery: fmt.Sprintf("mode=ro&_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", wait.Milliseconds())}
		dsn = u.String()
	} else {
		// WAL: readers do not block the writer, nor the writer them;
		// NORMAL: see SQLite; immediate: a writing transaction takes the
		// write lock when it begins, so two writers queue (busy_timeout)
		// instead of deadlocking.
		dsn = abs + fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate", wait.Milliseconds())
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	// One connection: the workers that store snapshots during a run queue
	// here rather than contend for SQLite's write lock.
	db.SetMaxOpenConns(1)
	s := &DB{db: db, path: path, d: sqliteDialect, wait: wait}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, s.openErr(err)
	}
	if err := migrate(ctx, db, s.d, version, "store "+path, readOnly); err != nil {
		db.Close()
		if errors.Is(err, errMigrate) {
			return nil, err
		}
		return nil, s.openErr(err)
	}
	return s, nil
}

// openErr names a file that SQLite cannot read as a database.
func (s *DB) openErr(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_NOTADB || se.Code()&0xff == sqlite3.SQLITE_CORRUPT) {
		return fmt.Errorf("store %s: %w: %v", s.path, ErrNotStore, err)
	}
	err = s.lockErr(err)
	if strings.HasPrefix(err.Error(), "store ") {
		return err
	}
	return fmt.Errorf("store %s: %w", s.path, err)
}

// lockErr is ErrLocked, with how long it waited, when err is SQLite's busy:
// another process held the write lock past the busy timeout. SQLite's
// own "database is locked" names neither.
func (s *DB) lockErr(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY || s.d.locked != nil && s.d.locked(err) {
		return fmt.Errorf("%w; gave up after waiting %s", ErrLocked, s.wait)
	}
	return err
}

// Path is the store's file as given to Open, or its URL without a
// password.
func (s *DB) Path() string { return s.path }

// Close closes the store.
func (s *DB) Close() error { return s.db.Close() }

// timeFormat is fixed-width, so stored times sort as text.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

// timeNow is time.Now, in UTC.
func timeNow() time.Time { return time.Now().UTC() }

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) (time.Time, error) { return time.Parse(timeFormat, s) }

// BeginRun implements Store. A shard of a named run (meta.Name) replaces
// a failed or unfinished attempt at the same shard, and is refused when
// that shard is recorded already or the run has another number of shards.
func (s *DB) BeginRun(ctx context.Context, meta RunMeta) (RunID, error) {
	if meta.StartedAt.IsZero() {
		meta.StartedAt = timeNow()
	}
	shard, shards := meta.Shard, meta.Shards
	if meta.Name != "" && shards == 0 {
		shard, shards = 1, 1
	}
	if meta.Name == "" && shards != 0 || shards < 0 || shards > 0 && (shard < 1 || shard > shards) {
		return 0, fmt.Errorf("store %s: beginning a run: shard %d/%d of run %q: want 1 <= shard <= shards, with a run name", s.path, shard, shards, meta.Name)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store %s: beginning a run: %w", s.path, s.lockErr(err))
	}
	defer func() { _ = tx.Rollback() }()
	if meta.Name != "" {
		if err := s.claimShard(ctx, tx, meta.Name, shard, shards); err != nil {
			return 0, fmt.Errorf("store %s: beginning a run: %w", s.path, s.lockErr(err))
		}
	}
	var id int64
	err = tx.QueryRowContext(ctx,
		`INSERT INTO runs (started_at, state, fleetaudit, writer, command, name, shard, shards) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		formatTime(meta.StartedAt), Incomplete, dbText(meta.Version), dbText(meta.Writer), dbText(meta.Command), dbText(meta.Name), shard, shards).Scan(&id)
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return 0, fmt.Errorf("store %s: beginning a run: %w", s.path, s.lockErr(err))
	}
	return RunID(id), nil
}

// PutBlob implements Store.
func (s *DB) PutBlob(ctx context.Context, kind string, body []byte) (string, bool, error) {
	hash := contentHash(body)
	// Most snapshots of a run are stored already (unchanged hosts): ask
	// before compressing.
	var one int
	switch err := s.db.QueryRowContext(ctx, `SELECT 1 FROM blobs WHERE hash = ?`, hash).Scan(&one); {
	case err == nil:
		return hash, false, nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", false, fmt.Errorf("store %s: storing a %s: %w", s.path, kind, err)
	}
	enc, stored, err := s.encodeBlob(body)
	if err != nil {
		return "", false, fmt.Errorf("store %s: storing a %s: %w", s.path, kind, err)
	}
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO blobs (hash, kind, encoding, body, stored_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING`,
		hash, kind, enc, stored, formatTime(timeNow()))
	if err != nil {
		return "", false, fmt.Errorf("store %s: storing a %s: %w", s.path, kind, s.lockErr(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return "", false, fmt.Errorf("store %s: storing a %s: %w", s.path, kind, err)
	}
	return hash, n > 0, nil
}

// contentHash is a blob's address: the SHA-256 of its content (before
// encoding), hex.
func contentHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// Blob encodings: snapshots are JSON that gzip shrinks about four times.
const (
	encodingRaw  = ""
	encodingGzip = "gzip"
	// gzipAbove is the size from which a blob is compressed.
	gzipAbove = 512
)

func (s *DB) encodeBlob(body []byte) (string, []byte, error) {
	if len(body) < gzipAbove {
		return encodingRaw, body, nil
	}
	var buf bytes.Buffer
	zw, _ := s.gzipWriters.Get().(*gzip.Writer)
	if zw == nil {
		var err error
		if zw, err = gzip.NewWriterLevel(&buf, gzip.BestSpeed); err != nil {
			return "", nil, err
		}
	} else {
		zw.Reset(&buf)
	}
	defer s.gzipWriters.Put(zw)
	if _, err := zw.Write(body); err != nil {
		return "", nil, err
	}
	if err := zw.Close(); err != nil {
		return "", nil, err
	}
	return encodingGzip, buf.Bytes(), nil
}

// maxBlob caps what a stored blob may decode to: a damaged or hostile
// store must not exhaust memory.
const maxBlob = 64 << 20

func (s *SQLite) decodeBlob(enc string, stored, buf []byte) ([]byte, error) {
	switch enc {
	case encodingRaw:
		return stored, nil
	case encodingGzip:
		// klauspost's inflate reads the same stream in about half the
		// time of compress/flate's.
		zr, _ := s.gzipReaders.Get().(*kgzip.Reader)
		var err error
		if zr == nil {
			zr, err = kgzip.NewReader(bytes.NewReader(stored))
		} else {
			err = zr.Reset(bytes.NewReader(stored))
		}
		if err != nil {
			return nil, err
		}
		defer s.gzipReaders.Put(zr)
		// gzip's trailer holds the size (mod 2^32): one allocation of it,
		// not a slice grown from nothing (the gate reads thousands).
		out := bytes.NewBuffer(buf[:0])
		if n := len(stored); n >= 4 {
			out.Grow(int(min(binary.LittleEndian.Uint32(stored[n-4:]), maxBlob)) + bytes.MinRead)
		}
		if _, err := out.ReadFrom(io.LimitReader(zr, maxBlob+1)); err != nil {
			return nil, err
		}
		body := out.Bytes()
		if len(body) > maxBlob {
			return nil, fmt.Errorf("decodes to more than %d bytes", maxBlob)
		}
		return body, nil
	}
	return nil, fmt.Errorf("unknown encoding %q (a newer fleetaudit?)", enc)
}

// FinishRun implements Store.
func (s *DB) FinishRun(ctx context.Context, id RunID, rec *Record) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store %s: recording run %d: %w", s.path, id, s.lockErr(err))
		}
	}()
	hosts, finds := rec.Hosts, rec.Findings
	if hosts == nil {
		hosts = func(func(*Host) bool) {}
	}
	if finds == nil {
		finds = func(func(*Finding) bool) {}
	}
	res := rec.Result
	doc := *res
	doc.Findings, doc.Hosts, doc.Rules, doc.FleetRules = nil, nil, nil, nil
	result, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	// The store's one connection, so the pragma applies to this commit.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s.d.name == sqliteDialect.name {
		if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
			return err
		}
		defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = NORMAL`) }()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if err := s.d.lockWrites(ctx, tx); err != nil {
		return err
	}
	var state, name string
	var shards int
	if err := tx.QueryRowContext(ctx, `SELECT state, name, shards FROM runs WHERE id = ?`, int64(id)).Scan(&state, &name, &shards); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoRun
		}
		return err
	}
	if state != Incomplete {
		return fmt.Errorf("the run is %s already", state)
	}
	// Rows go in batchRows at a time: one statement per batch, not per
	// row, which a database server answers in one round trip.
	hostRows := &batch{tx: tx, head: `INSERT INTO run_hosts (run_id, seq, host, fleet, snapshot, collected_at, unread, detail) VALUES `, cols: 8,
		written: func(n int) { s.row("run_hosts", n) }}
	defer hostRows.close()
	i := 0
	for h := range hosts {
		detail, err := json.Marshal(h.HostRun)
		if err != nil {
			return err
		}
		var snap any
		if h.Snapshot != "" {
			snap = h.Snapshot
		}
		if err := hostRows.add(ctx, int64(id), i, dbText(h.Host), dbText(h.Fleet), snap, dbText(h.CollectedAt), dbText(h.Unread), string(detail)); err != nil {
			return fmt.Errorf("hosts up to %s: %w", h.Host, err)
		}
		i++
	}
	if err := hostRows.flush(ctx); err != nil {
		return fmt.Errorf("hosts: %w", err)
	}
	if shards > 1 {
		if why, err := overlap(ctx, tx, id, name, shards); err != nil {
			return fmt.Errorf("hosts: %w", err)
		} else if why != "" {
			// Neither shard's hosts may be counted twice: this shard
			// fails (FailRun's statement, on this connection), and its
			// rerun replaces it.
			_ = tx.Rollback()
			if _, err := conn.ExecContext(ctx, `UPDATE runs SET state = ?, error = ?, finished_at = ? WHERE id = ? AND state = ?`,
				Failed, dbText(why), formatTime(timeNow()), int64(id), Incomplete); err != nil {
				return fmt.Errorf("%s; marking it failed: %w", why, err)
			}
			return errors.New(why)
		}
	}
	// A finding is a blob too: one still open since the last run, word
	// for word, costs its run a row, not its evidence again.
	blobRows := &batch{tx: tx, head: `INSERT INTO blobs (hash, kind, encoding, body, stored_at) VALUES `, cols: 5, tail: ` ON CONFLICT (hash) DO NOTHING`}
	defer blobRows.close()
	findRows := &batch{tx: tx, head: `INSERT INTO findings (run_id, seq, rule, severity, fleet, host, match_key, waived, finding) VALUES `, cols: 9,
		written: func(n int) { s.row("findings", n) },
		// The findings' blobs first: the rows reference them.
		before: blobRows.flush}
	defer findRows.close()
	now := formatTime(timeNow())
	// Written as they are yielded: findings counts them for the run.
	findings := 0
	for f := range finds {
		body, err := json.Marshal(f.Finding)
		if err != nil {
			return err
		}
		// Findings are small and mostly stored already: kept as they are.
		hash := contentHash(body)
		if err := blobRows.add(ctx, hash, KindFinding, encodingRaw, body, now); err != nil {
			return fmt.Errorf("findings up to %s on %s: %w", f.Rule, f.Host, err)
		}
		waived := 0
		if f.Waived != nil {
			waived = 1
		}
		if err := findRows.add(ctx, int64(id), findings, dbText(f.Rule), dbText(f.Severity), dbText(f.Fleet), dbText(f.Host), f.Key, waived, hash); err != nil {
			return fmt.Errorf("findings up to %s on %s: %w", f.Rule, f.Host, err)
		}
		findings++
	}
	if err := findRows.flush(ctx); err != nil {
		return fmt.Errorf("findings: %w", err)
	}
	for _, p := range rec.Trend {
		counts, err := json.Marshal(p.Findings)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_trend (run_id, fleet, checks, failing, findings) VALUES (?, ?, ?, ?, ?)`,
			int64(id), dbText(p.Fleet), p.Checks, p.Failing, string(counts)); err != nil {
			return fmt.Errorf("trend of fleet %q: %w", p.Fleet, err)
		}
	}
	var catalog any
	if rec.Catalog != "" {
		catalog = rec.Catalog
	}
	finished := rec.FinishedAt
	if finished.IsZero() {
		finished = timeNow()
	}
	sum := res.Summary
	if _, err := tx.ExecContext(ctx,
		`UPDATE runs SET state = ?, finished_at = ?, hosts = ?, audited = ?, unread = ?, findings = ?, result = ?, catalog = ? WHERE id = ?`,
		Complete, formatTime(finished), sum.Hosts, sum.Audited, sum.Unread, findings, string(result), catalog, int64(id)); err != nil {
		return err
	}
	return tx.Commit()
}

// batchRows is how many rows one INSERT of FinishRun writes: 200 findings
// are 1,800 parameters, within SQLite's and PostgreSQL's limits.
const batchRows = 200

// batch is a multi-row INSERT written batchRows rows at a time; the
// statement of a full batch is prepared once.
type batch struct {
	tx         *sql.Tx
	head, tail string
	cols       int
	args       []any
	n, total   int
	full       *sql.Stmt
	// before runs ahead of each flush; written sees each row written
	// (the count so far).
	before  func(context.Context) error
	written func(n int)
}

func (b *batch) add(ctx context.Context, vals ...any) error {
	b.args = append(b.args, vals...)
	b.n++
	if b.n == batchRows {
		return b.flush(ctx)
	}
	return nil
}

func (b *batch) flush(ctx context.Context) error {
	if b.before != nil {
		if err := b.before(ctx); err != nil {
			return err
		}
	}
	if b.n == 0 {
		return nil
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", b.cols), ", ") + ")"
	query := func(n int) string { return b.head + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + b.tail }
	var err error
	switch {
	case b.n < batchRows:
		_, err = b.tx.ExecContext(ctx, query(b.n), b.args...)
	case b.full == nil:
		if b.full, err = b.tx.PrepareContext(ctx, query(batchRows)); err != nil {
			return err
		}
		fallthrough
	default:
		_, err = b.full.ExecContext(ctx, b.args...)
	}
	if err != nil {
		return err
	}
	for range b.n {
		b.total++
		if b.written != nil {
			b.written(b.total)
		}
	}
	b.args, b.n = b.args[:0], 0
	return nil
}

func (b *batch) close() {
	if b.full != nil {
		b.full.Close()
	}
}

func (s *DB) row(table string, n int) {
	if s.afterRow != nil {
		s.afterRow(table, n)
	}
}

// FailRun implements Store.
func (s *DB) FailRun(ctx context.Context, id RunID, reason string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE runs SET state = ?, error = ?, finished_at = ? WHERE id = ? AND state = ?`,
		Failed, dbText(reason), formatTime(timeNow()), int64(id), Incomplete)
	if err != nil {
		return fmt.Errorf("store %s: marking run %d failed: %w", s.path, id, s.lockErr(err))
	}
	return nil
}

const runColumns = `id, state, error, started_at, finished_at, fleetaudit, writer, command, hosts, audited, unread, findings, result, catalog, name, shard, shards`

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var id int64
	var started string
	var finished, result, catalog sql.NullString
	if err := sc.Scan(&id, &r.State, &r.Error, &started, &finished, &r.Version, &r.Writer, &r.Command,
		&r.Hosts, &r.Audited, &r.Unread, &r.Findings, &result, &catalog, &r.Name, &r.shard, &r.shards); err != nil {
		return Run{}, err
	}
	r.ID = RunID(id)
	for _, p := range []*string{&r.Error, &r.Version, &r.Writer, &r.Command, &r.Name} {
		*p = fromDBText(*p)
	}
	t, err := parseTime(started)
	if err != nil {
		return Run{}, fmt.Errorf("run %d: started_at %q: %w", id, started, err)
	}
	r.StartedAt = t
	if finished.Valid {
		t, err := parseTime(finished.String)
		if err != nil {
			return Run{}, fmt.Errorf("run %d: finished_at %q: %w", id, finished.String, err)
		}
		r.FinishedAt = &t
	}
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	r.Catalog = catalog.String
	return r, nil
}

// placeholders returns "?, ?, ..." for n values, and the ids as arguments.
func placeholders(ids []RunID) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = int64(id)
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", "), args
}

// counts are Counts of physical runs (a shard each).
func (s *DB) counts(ctx context.Context, ids []RunID) ([]Count, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := placeholders(ids)
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, fleet, severity, COUNT(*), SUM(waived) FROM findings
		WHERE run_id IN (`+in+`) GROUP BY run_id, fleet, severity ORDER BY run_id, fleet, severity`, args...)
	if err != nil {
		return nil, fmt.Errorf("store %s: counting findings: %w", s.path, err)
	}
	defer rows.Close()
	var out []Count
	for rows.Next() {
		var c Count
		var id int64
		if err := rows.Scan(&id, &c.Fleet, &c.Severity, &c.Findings, &c.Waived); err != nil {
			return nil, fmt.Errorf("store %s: counting findings: %w", s.path, err)
		}
		c.Run = RunID(id)
		c.Fleet, c.Severity = fromDBText(c.Fleet), fromDBText(c.Severity)
		out = append(out, c)
	}
	return out, rows.Err()
}

// hosts are Hosts of a physical run (a shard).
func (s *DB) hosts(ctx context.Context, id RunID) ([]Host, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT snapshot, collected_at, detail FROM run_hosts WHERE run_id = ? ORDER BY seq`, int64(id))
	if err != nil {
		return nil, fmt.Errorf("store %s: hosts of run %d: %w", s.path, id, err)
	}
	defer rows.Close()
	var out []Host
	for rows.Next() {
		var h Host
		var snap sql.NullString
		var detail string
		if err := rows.Scan(&snap, &h.CollectedAt, &detail); err != nil {
			return nil, fmt.Errorf("store %s: hosts of run %d: %w", s.path, id, err)
		}
		if err := json.Unmarshal([]byte(detail), &h.HostRun); err != nil {
			return nil, fmt.Errorf("store %s: hosts of run %d: %w", s.path, id, err)
		}
		h.Snapshot, h.CollectedAt = snap.String, fromDBText(h.CollectedAt)
		out = append(out, h)
	}
	return out, rows.Err()
}

// findings are Findings of a physical run (a shard).
func (s *DB) findings(ctx context.Context, id RunID) ([]Finding, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT f.match_key, b.encoding, b.body FROM findings f JOIN blobs b ON b.hash = f.finding WHERE f.run_id = ? ORDER BY f.seq`, int64(id))
	if err != nil {
		return nil, fmt.Errorf("store %s: findings of run %d: %w", s.path, id, err)
	}
	defer rows.Close()
	var out []Finding
	in := newInterner()
	for rows.Next() {
		var f Finding
		var enc string
		var stored []byte
		if err := rows.Scan(&f.Key, &enc, &stored); err != nil {
			return nil, fmt.Errorf("store %s: findings of run %d: %w", s.path, id, err)
		}
		body, err := s.decodeBlob(enc, stored, nil)
		if err != nil {
			return nil, fmt.Errorf("store %s: a finding of run %d: %w", s.path, id, err)
		}
		if err := decodeFinding(body, &f.Finding); err != nil {
			return nil, fmt.Errorf("store %s: a finding of run %d: %w", s.path, id, err)
		}
		in.finding(&f.Finding)
		out = append(out, f)
	}
	return out, rows.Err()
}

// decodeFinding reads a finding back with numbers as json.Number, as the
// engine produced them from snapshot documents.
func decodeFinding(b []byte, f *policies.Finding) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(f)
}

// trend is Trend of physical runs (a shard each).
func (s *DB) trend(ctx context.Context, ids []RunID) ([]reports.TrendPoint, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := placeholders(ids)
	rows, err := s.db.QueryContext(ctx, `SELECT t.run_id, r.started_at, t.fleet, t.checks, t.failing, t.findings
		FROM run_trend t JOIN runs r ON r.id = t.run_id
		WHERE t.run_id IN (`+in+`) ORDER BY t.run_id, t.fleet`, args...)
	if err != nil {
		return nil, fmt.Errorf("store %s: trend: %w", s.path, err)
	}
	defer rows.Close()
	var out []reports.TrendPoint
	var runIDs []int64
	for rows.Next() {
		var p reports.TrendPoint
		var id int64
		var at, counts string
		if err := rows.Scan(&id, &at, &p.Fleet, &p.Checks, &p.Failing, &counts); err != nil {
			return nil, fmt.Errorf("store %s: trend: %w", s.path, err)
		}
		p.Run, p.Fleet = strconv.FormatInt(id, 10), fromDBText(p.Fleet)
		if p.At, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("store %s: trend of run %d: %w", s.path, id, err)
		}
		if err := json.Unmarshal([]byte(counts), &p.Findings); err != nil {
			return nil, fmt.Errorf("store %s: trend of run %d: %w", s.path, id, err)
		}
		out = append(out, p)
		runIDs = append(runIDs, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store %s: trend: %w", s.path, err)
	}
	// By fleet name's bytes, as SQLite orders them: a PostgreSQL
	// database's collation (en_US, say) orders text otherwise.
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(runIDs[a], runIDs[b]), strings.Compare(out[a].Fleet, out[b].Fleet))
	})
	sorted := make([]reports.TrendPoint, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted, nil
}

// Blob implements Store.
func (s *DB) Blob(ctx context.Context, hash string) ([]byte, error) {
	return s.BlobTo(ctx, hash, nil)
}

// BlobTo is Blob decoded into buf's storage when it fits: a reader of
// thousands of snapshots reuses one buffer instead of leaving each behind.
func (s *DB) BlobTo(ctx context.Context, hash string, buf []byte) ([]byte, error) {
	var enc string
	var stored []byte
	err := s.db.QueryRowContext(ctx, `SELECT encoding, body FROM blobs WHERE hash = ?`, hash).Scan(&enc, &stored)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store %s: blob %s: %w", s.path, hash, ErrNoBlob)
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: blob %s: %w", s.path, hash, err)
	}
	body, err := s.decodeBlob(enc, stored, buf)
	if err != nil {
		return nil, fmt.Errorf("store %s: blob %s: %w", s.path, hash, err)
	}
	return body, nil
}

// Stats counts rows, for tests and `history --stats`.
type Stats struct {
	// Runs, Hosts and Findings count rows; Blobs the distinct contents,
	// Snapshots and FindingBlobs those of each kind.
	Runs, Blobs, Snapshots, FindingBlobs, Hosts, Findings int
}

// Stats implements counting the store's rows.
func (s *DB) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM blobs),
		(SELECT COUNT(*) FROM blobs WHERE kind = 'snapshot'),
		(SELECT COUNT(*) FROM blobs WHERE kind = 'finding'),
		(SELECT COUNT(*) FROM run_hosts), (SELECT COUNT(*) FROM findings)`).
		Scan(&st.Runs, &st.Blobs, &st.Snapshots, &st.FindingBlobs, &st.Hosts, &st.Findings)
	if err != nil {
		return Stats{}, fmt.Errorf("store %s: counting rows: %w", s.path, err)
	}
	return st, nil
}

// Check runs SQLite's integrity check: "" when the file is sound (and
// always for PostgreSQL, which checks its pages as it reads them).
func (s *DB) Check(ctx context.Context) (string, error) {
	if s.d.name != sqliteDialect.name {
		return "", nil
	}
	var res string
	if err := s.db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res); err != nil {
		return "", fmt.Errorf("store %s: integrity check: %w", s.path, err)
	}
	if res == "ok" {
		return "", nil
	}
	return res, nil
}
