package pgtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

var server Server

func TestMain(m *testing.M) { os.Exit(server.Main(m)) }

// Each test gets its own database on the one server, reachable on the
// socket only.
func TestDatabasePerTest(t *testing.T) {
	a, b := server.DB(t), server.DB(t)
	if a == b {
		t.Fatalf("two databases share a URL: %s", a)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db, listen string
	if err := conn.QueryRow(ctx, `SELECT current_database(), current_setting('listen_addresses')`).Scan(&db, &listen); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a, "/"+db+"?") || listen != "" {
		t.Errorf("connected to %q (listen_addresses %q) by %s", db, listen, a)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE x (y int)`); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var n int
	if err := other.QueryRow(ctx, `SELECT COUNT(*) FROM pg_tables WHERE tablename = 'x'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the second database sees the first's table: %d, %v", n, err)
	}
}
