package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT 1`:                          `SELECT 1`,
		`INSERT INTO x VALUES (?, ?, ?)`:    `INSERT INTO x VALUES ($1, $2, $3)`,
		`SELECT '?' FROM x WHERE a = ?`:     `SELECT '?' FROM x WHERE a = $1`,
		`SELECT 'it''s ?' WHERE a = ? OR ?`: `SELECT 'it''s ?' WHERE a = $1 OR $2`,
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
}

// The password comes from PGPASSWORD or PGPASSFILE, never from the URL,
// and no error or log line shows it: not a wrong one, not one the URL
// was (wrongly) given.
func TestPostgresPasswordIsNeverShown(t *testing.T) {
	srv := postgres.Get(t)
	ctx := context.Background()
	const secret = "s3cret-Pa55-word"
	where := postgres.DB(t)
	db := strings.TrimPrefix(where[strings.LastIndex(where, "/"):], "/")
	db = db[:strings.Index(db, "?")]
	if err := srv.Exec("postgres", `DROP ROLE IF EXISTS pwtest`, `CREATE ROLE pwtest LOGIN PASSWORD '`+secret+`'`,
		`ALTER DATABASE "`+db+`" OWNER TO pwtest`); err != nil {
		t.Fatal(err)
	}
	url := srv.URL(db, "pwtest")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	noSecret := func(what string, err error) {
		t.Helper()
		log.Error(what, "err", err)
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error shows the password: %v", what, err)
		}
	}

	// A password in the URL is refused before anything connects.
	withPw := strings.Replace(url, "pwtest@", "pwtest:"+secret+"@", 1)
	_, err := Open(ctx, withPw, Options{Create: true, Version: "test"})
	noSecret("password in the URL", err)
	if err == nil || !strings.Contains(err.Error(), "PGPASSWORD") {
		t.Errorf("a password in the URL: %v", err)
	}
	_, err = Open(ctx, url+"&password="+secret, Options{Create: true, Version: "test"})
	noSecret("password parameter", err)
	if err == nil || !strings.Contains(err.Error(), "PGPASSWORD") {
		t.Errorf("a password parameter: %v", err)
	}

	// No password, then a wrong one: refused by the server, not shown.
	t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("PGPASSWORD", "")
	_, err = Open(ctx, url, Options{Create: true, Version: "test"})
	noSecret("no password", err)
	if err == nil {
		t.Fatal("opened without a password")
	}
	t.Setenv("PGPASSWORD", secret+"-wrong")
	_, err = Open(ctx, url, Options{Create: true, Version: "test"})
	noSecret("wrong password", err)
	if err == nil || strings.Contains(err.Error(), secret+"-wrong") || !strings.Contains(err.Error(), "pwtest") {
		t.Errorf("a wrong password: %v", err)
	}

	// The right one from PGPASSWORD, then from a PGPASSFILE.
	t.Setenv("PGPASSWORD", secret)
	s, err := Open(ctx, url, Options{Create: true, Version: "test"})
	if err != nil {
		t.Fatalf("with PGPASSWORD: %v", err)
	}
	log.Info("recorded", "store", s.Path())
	id, _ := record(t, s, copyFleet(t, nil))
	s.Close()
	t.Setenv("PGPASSWORD", "")
	pass := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(pass, []byte(fmt.Sprintf("*:*:%s:pwtest:%s\n", db, secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", pass)
	r, err := Open(ctx, url, Options{ReadOnly: true, Version: "test"})
	if err != nil {
		t.Fatalf("with PGPASSFILE: %v", err)
	}
	defer r.Close()
	if _, _, err := LoadResult(ctx, r, id); err != nil {
		t.Errorf("reading with PGPASSFILE: %v", err)
	}
	// Errors after connecting name the store by its URL, no password.
	_, err = r.Run(ctx, 999)
	noSecret("no such run", err)
	if !errors.Is(err, ErrNoRun) || !strings.Contains(err.Error(), "pwtest@") {
		t.Errorf("no such run: %v", err)
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log shows the password:\n%s", logs.String())
	}
}

// A database with other tables is not a store; an empty one is no store
// to a reader, and becomes one for a writer.
func TestPostgresOpenRefusesWhatIsNotAStore(t *testing.T) {
	srv := postgres.Get(t)
	ctx := context.Background()
	empty := postgres.DB(t)
	if _, err := Open(ctx, empty, Options{ReadOnly: true}); !errors.Is(err, ErrNoStore) {
		t.Errorf("an empty database read: %v", err)
	}
	if _, err := Open(ctx, empty, Options{}); !errors.Is(err, ErrNoStore) {
		t.Errorf("an empty database opened without Create: %v", err)
	}
	if n := len(tablesOf(t, empty)); n != 0 {
		t.Errorf("a reader created %d tables", n)
	}
	other := postgres.DB(t)
	name := other[strings.LastIndex(other, "/")+1 : strings.Index(other, "?")]
	if err := srv.Exec(name, `CREATE TABLE accounts (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, other, Options{Create: true}); !errors.Is(err, ErrNotStore) || !strings.Contains(err.Error(), name) {
		t.Errorf("another application's database: %v", err)
	}
	missing := strings.Replace(other, "/"+name+"?", "/no_such_db?", 1)
	if _, err := Open(ctx, missing, Options{Create: true}); err == nil || !strings.Contains(err.Error(), "no_such_db") {
		t.Errorf("a missing database: %v", err)
	}
}

func tablesOf(t *testing.T, where string) []string {
	t.Helper()
	rows, err := rawDB(t, where).Query(`SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// Writers that open a new database at once migrate it once.
func TestConcurrentFirstOpens(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		where := be.new(t)
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for range 6 {
			wg.Go(func() {
				s, err := Open(context.Background(), where, Options{Create: true, Version: "test"})
				if err == nil {
					s.Close()
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		var n int
		if err := rawDB(t, where).QueryRow(`SELECT COUNT(*) FROM fleetaudit_schema`).Scan(&n); err != nil || n != SchemaVersion() {
			t.Errorf("%d schema rows, %v", n, err)
		}
	})
}

// Writers record runs into one store at once (each its own handle, as
// separate runners have) while readers read it: every run completes, the
// snapshots and findings they share are stored once, and a reader never
// sees a complete run with part of its rows.
func TestWritersAndReadersAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		where := be.new(t)
		openTest(t, where).Close()
		dir := copyFleet(t, nil)
		n, _ := exampleHosts(t)
		const writers, runsEach = 4, 2
		done := make(chan struct{})
		var wg, readers sync.WaitGroup
		errs := make(chan error, writers*runsEach+16)
		for range writers {
			wg.Go(func() {
				s, err := Open(ctx, where, Options{Version: "test"})
				if err != nil {
					errs <- err
					return
				}
				defer s.Close()
				for range runsEach {
					if _, err := recordErr(s, dir); err != nil {
						errs <- err
					}
				}
			})
		}
		reads := make([]int, 2)
		for i := range reads {
			readers.Go(func() {
				r, err := Open(ctx, where, Options{ReadOnly: true, Version: "test"})
				if err != nil {
					errs <- err
					return
				}
				defer r.Close()
				for {
					select {
					case <-done:
						return
					default:
					}
					runs, err := r.Runs(ctx, RunQuery{State: Complete})
					if err != nil {
						errs <- err
						return
					}
					for _, run := range runs {
						hosts, err := r.Hosts(ctx, run.ID)
						if err != nil {
							errs <- err
							return
						}
						fs, err := r.Findings(ctx, run.ID)
						if err != nil {
							errs <- err
							return
						}
						if len(hosts) != n || len(fs) != run.Findings {
							errs <- fmt.Errorf("complete run %d read with %d hosts and %d of %d findings", run.ID, len(hosts), len(fs), run.Findings)
							return
						}
						reads[i]++
					}
				}
			})
		}
		wg.Wait()
		close(done)
		readers.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		s := openTest(t, where)
		runs, err := s.Runs(ctx, RunQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != writers*runsEach {
			t.Fatalf("%d runs, want %d", len(runs), writers*runsEach)
		}
		for _, r := range runs {
			if r.State != Complete || r.Hosts != n {
				t.Errorf("run %d: %s with %d hosts", r.ID, r.State, r.Hosts)
			}
		}
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Snapshots != n || st.Hosts != n*writers*runsEach || st.Findings != runs[0].Findings*writers*runsEach || st.FindingBlobs != runs[0].Findings {
			t.Errorf("rows = %+v: want %d snapshots, %d hosts, %d finding blobs", st, n, n*writers*runsEach, runs[0].Findings)
		}
		t.Logf("reads of complete runs while writing: %v", reads)
	})
}
