package main

import (
	"context"
	"database/sql"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// serveAnswers runs serve on a loopback listener until the test ends.
func serveAnswers(t *testing.T, serve func(net.Conn) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveOn(ctx, "answer", ln, answerEach(serve)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveOn: %v", err)
		}
	})
	return ln.Addr().String()
}

// The answer server speaks enough of each protocol for the clients the
// bench uses (pgx, go-sql-driver) to connect and read the eight rows of
// every query, twice on one connection.
func TestAnswerPostgres(t *testing.T) {
	addr := serveAnswers(t, answerPostgres(pgAnswer()))
	ctx := context.Background()
	for _, mode := range []string{"simple"} {
		c, err := connect(ctx, "postgres://bench:bench@"+addr+"/bench?sslmode=disable", mode)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		for range 2 {
			rows, err := c.Query(ctx, "SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region")
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 8 || got[0][0] != "central" || got[0][1] != int64(22064) {
				t.Fatalf("rows %v", got)
			}
		}
	}
}

func TestAnswerMySQL(t *testing.T) {
	addr := serveAnswers(t, answerMySQL(myAnswer()))
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = "bench", "bench", "tcp", addr, "bench"
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	for range 2 {
		rows, err := db.Query("SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var region string
			var count int64
			var avg float64
			if err := rows.Scan(&region, &count, &avg); err != nil {
				t.Fatal(err)
			}
			if n == 0 && (region != "central" || count != 22064 || avg < 38422 || avg > 38423) {
				t.Fatalf("first row %q %d %v", region, count, avg)
			}
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != 8 {
			t.Fatalf("%d rows, want 8", n)
		}
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
}

// A MySQL query runs without the run's context (see myClient.query), so
// the run's end must still end it: a server that never answers the
// query leaves the client blocked until the run's context ends, which
// closes the socket.
func TestMySQLQueryEndsWithTheRun(t *testing.T) {
	addr := serveAnswers(t, answerMySQL(nil)) // answers the ping, never a query
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := connectMySQL(ctx, "bench:bench@tcp("+addr+")/bench", "simple")
	if err != nil {
		t.Fatal(err)
	}
	// Not closed before the query has returned: closing waits for it.
	done := make(chan error, 1)
	go func() {
		_, err := c.query(ctx, "SELECT 1", nil)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the query returned before the run ended: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		c.close()
		if err == nil {
			t.Fatal("the query ended by the run's end reported no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run ended but the query it left waiting did not")
	}
}
