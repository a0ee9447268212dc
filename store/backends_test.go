package store

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fleetaudit/fleetaudit/internal/pgtest"
)

// postgres is this test binary's PostgreSQL server.
var postgres pgtest.Server

// backend is a database the store runs on, for tests that run on each.
type backend struct {
	name string
	// new returns where a fresh, empty store is: an SQLite file's path,
	// or a new PostgreSQL database's URL (on the test binary's server).
	new func(t testing.TB) string
}

var backends = []backend{
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "store.db") }},
	{"postgres", func(t testing.TB) string { return postgres.DB(t) }},
}

// eachBackend runs f as a subtest per backend.
func eachBackend(t *testing.T, f func(t *testing.T, be backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

func (b backend) postgres() bool { return b.name == "postgres" }

// rawDB opens the database under a store without the store's checks.
func rawDB(t *testing.T, where string) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	if IsURL(where) {
		db, err = sql.Open("pgx", where)
		_ = stdlib.GetDefaultDriver()
	} else {
		db, err = sql.Open("sqlite", where)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
