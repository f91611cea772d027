package integration

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/demo"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Connection limits at their edges, over both protocols together:
// listen.max_connections_per_analyst = 2, max_connections = 3 and
// max_handshakes = 2. The connection just under each limit is served, the
// one over it is refused with 53300 / ERR 1040 and a message naming the
// limit, sessions already open keep working, and a closed connection
// makes room again.
func TestConnectionLimits(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writeMySQLPolicy(t, "listen:\n  max_connections: 3\n  max_connections_per_analyst: 2\n  max_handshakes: 2\n"+
		"backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	pgURL := "postgres://analyst:analyst@" + p.addr + "/demo?sslmode=disable"
	mysqlDSN := "analyst:analyst@tcp(" + p.mysqlAddress(t) + ")/demo?timeout=10s"

	pgConnect := func() (*pgx.Conn, error) { return pgx.Connect(ctx, pgURL) }
	pgCode := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return ""
	}
	mysqlPing := func() (*sql.DB, error) {
		db, err := sql.Open("mysql", mysqlDSN)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxIdleConns(1)
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}
	mysqlCode := func(err error) uint16 {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			return me.Number
		}
		return 0
	}
	works := func(name string, c *pgx.Conn) {
		t.Helper()
		var clinic string
		if err := c.QueryRow(ctx, "SELECT name FROM clinics ORDER BY clinic_id LIMIT 1").Scan(&clinic); err != nil || clinic == "" {
			t.Errorf("%s: an open session stopped working: %q %v", name, clinic, err)
		}
	}
	// eventually retries connect until the server has seen a close.
	eventually := func(name string, connect func() error) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := connect()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still refused after a connection closed: %v", name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Per analyst: two sessions (one per protocol), the third refused on
	// either protocol.
	a, err := pgConnect()
	if err != nil {
		t.Fatal(err)
	}
	b, err := mysqlPing()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgConnect(); pgCode(err) != "53300" {
		t.Fatalf("third session of the analyst (PostgreSQL): %v, want 53300", err)
	}
	if _, err := mysqlPing(); mysqlCode(err) != 1040 {
		t.Fatalf("third session of the analyst (MySQL): %v, want ERR 1040", err)
	}
	works("per analyst", a)
	b.Close()
	eventually("per analyst", func() error {
		db, err := mysqlPing()
		if err == nil {
			b = db
		}
		return err
	})

	// Handshakes: one half-open connection is within max_handshakes = 2,
	// a second fills max_connections = 3 with the two sessions; the next
	// client is refused.
	raw, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgConnect(); pgCode(err) != "53300" {
		t.Fatalf("a client over max_connections (PostgreSQL): %v, want 53300", err)
	}
	if _, err := mysqlPing(); mysqlCode(err) != 1040 {
		t.Fatalf("a client over max_connections (MySQL): %v, want ERR 1040", err)
	}
	works("over max_connections", a)
	raw.Close()
	b.Close()
	a.Close(ctx)

	// Two half-open connections fill max_handshakes: a real client is
	// refused though max_connections has room, and served once one of
	// them goes.
	time.Sleep(200 * time.Millisecond)
	raw1, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	raw2, err := net.Dial("tcp", p.mysqlAddress(t))
	if err != nil {
		t.Fatal(err)
	}
	defer raw2.Close()
	time.Sleep(200 * time.Millisecond)
	if _, err := pgConnect(); pgCode(err) != "53300" {
		t.Fatalf("a client over max_handshakes: %v, want 53300", err)
	}
	raw1.Close()
	eventually("handshakes", func() error {
		c, err := pgConnect()
		if err == nil {
			works("after handshakes", c)
			c.Close(ctx)
		}
		return err
	})
}

// listen.max_result_rows at its edge on both protocols: a public-table
// result of exactly the cap is returned, a larger one ends with 54000 /
// ERR 1104 naming the setting, and the same connection keeps working.
func TestResultCaps(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writeMySQLPolicy(t, "listen:\n  max_result_rows: 10\n"+
		"backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")

	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(sql string) (int, error) {
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			return 0, err
		}
		n := 0
		for rows.Next() {
			n++
		}
		return n, rows.Err()
	}
	if n, err := count("SELECT name FROM clinics LIMIT 10"); err != nil || n != 10 {
		t.Fatalf("10 rows at a cap of 10: %d %v", n, err)
	}
	var pe *pgconn.PgError
	if _, err := count("SELECT name FROM clinics LIMIT 11"); !errors.As(err, &pe) || pe.Code != "54000" || !strings.Contains(pe.Message, "max_result_rows") {
		t.Fatalf("11 rows at a cap of 10: %v, want 54000 naming listen.max_result_rows", err)
	}
	if n, err := count("SELECT name FROM clinics LIMIT 3"); err != nil || n != 3 {
		t.Fatalf("the connection after the refusal: %d %v", n, err)
	}

	db, err := sql.Open("mysql", "analyst:analyst@tcp("+p.mysqlAddress(t)+")/demo?timeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var me *mysql.MySQLError
	if _, err := db.Query("SELECT name FROM clinics"); !errors.As(err, &me) || me.Number != 1104 || !strings.Contains(me.Message, "max_result_rows") {
		t.Fatalf("25 rows at a cap of 10 (MySQL): %v, want ERR 1104", err)
	}
	var name string
	if err := db.QueryRow("SELECT name FROM clinics LIMIT 1").Scan(&name); err != nil {
		t.Fatalf("the MySQL connection after the refusal: %v", err)
	}
}

// A client that sends a query and never reads the result cannot hold its
// connection: the statement timeout covers sending the result, so the
// server gives up on it and closes the connection, freeing its place
// (here the only one: max_connections = 1).
func TestSlowReaderIsCutOff(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t, "listen:\n  statement_timeout: 1s\n  write_timeout: 1h\n  max_connections: 1\n  max_result_rows: 5000000\n"+
		"backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	url := "postgres://analyst:analyst@" + p.addr + "/demo?sslmode=disable"
	slow, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close(ctx)
	// 25⁴ = 390,625 rows of four clinic names, about 40 MB: more than the
	// socket buffers hold. Sent by hand, and never read.
	msg, err := (&pgproto3.Query{String: "SELECT a.name, b.name, c.name, d.name FROM clinics a, clinics b, clinics c, clinics d"}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slow.PgConn().Conn().Write(msg); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	refused := 0
	for {
		c, err := pgx.Connect(ctx, url)
		if err == nil {
			c.Close(ctx)
			break
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "53300" {
			t.Fatalf("while the slow reader holds the only connection: %v, want 53300", err)
		}
		refused++
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the slow reader still holds its connection after %v", time.Since(start))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if refused == 0 {
		t.Fatal("no connection was refused: the slow reader did not hold its place, the test proves nothing")
	}
	t.Logf("the slow reader was cut off after %v", time.Since(start).Round(100*time.Millisecond))
}
