package backend

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Every backend stops reading a result at the ResultLimit of its context:
// a result of exactly the limit is returned, one row (or byte) more is a
// *ResultTooLargeError, and the backend keeps serving. On PostgreSQL the
// statement is cancelled on the server, so a result of a hundred million
// rows stops at once.
func TestResultLimit(t *testing.T) {
	type target struct {
		name string
		open func(t *testing.T) Backend
		// rows returns a query of n rows of one integer column.
		rows func(n int) string
		huge string
	}
	targets := []target{{
		name: "sqlite",
		open: func(t *testing.T) Backend {
			path := filepath.Join(t.TempDir(), "empty.db")
			db, err := sql.Open("sqlite", path)
			if err == nil {
				_, err = db.Exec("CREATE TABLE t (x INTEGER)")
				db.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			return openSQLiteT(t, path)
		},
		rows: func(n int) string {
			return "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < " + strconv.Itoa(n) + ") SELECT x FROM s"
		},
	}, {
		name: "postgres",
		open: func(t *testing.T) Backend { return openPostgresT(t, pgDSN(t), 2) },
		rows: func(n int) string { return "SELECT generate_series(1, " + strconv.Itoa(n) + ")" },
		huge: "SELECT generate_series(1, 100000000)",
	}, {
		name: "mysql",
		open: func(t *testing.T) Backend {
			_, dsn := mysqlDatabase(t, mysqlDSN(t))
			return openMySQLT(t, dsn, 2)
		},
		rows: func(n int) string { return "SELECT CAST(seq AS SIGNED) FROM seq_1_to_" + strconv.Itoa(n) },
	}}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			b := tg.open(t)
			ctx := context.Background()
			limited := func(l ResultLimit) context.Context { return WithResultLimit(ctx, l) }
			if res, err := b.Query(limited(ResultLimit{Rows: 1000}), tg.rows(1000)); err != nil || len(res.Values) != 1000 {
				t.Fatalf("1000 rows at a limit of 1000: %v", err)
			}
			var tl *ResultTooLargeError
			if _, err := b.Query(limited(ResultLimit{Rows: 1000}), tg.rows(1001)); !errors.As(err, &tl) || !tl.Rows || tl.Limit != 1000 {
				t.Fatalf("1001 rows at a limit of 1000: %v, want a row limit error", err)
			}
			// 100 integers are 1,600 bytes by valueSize.
			if _, err := b.Query(limited(ResultLimit{Bytes: 1600}), tg.rows(100)); err != nil {
				t.Fatalf("1600 bytes at a limit of 1600: %v", err)
			}
			if _, err := b.Query(limited(ResultLimit{Bytes: 1599}), tg.rows(100)); !errors.As(err, &tl) || tl.Rows || tl.Limit != 1599 {
				t.Fatalf("1600 bytes at a limit of 1599: %v, want a byte limit error", err)
			}
			if tg.huge != "" {
				start := time.Now()
				if _, err := b.Query(limited(ResultLimit{Rows: 10}), tg.huge); !errors.As(err, &tl) {
					t.Fatalf("huge result: %v, want a row limit error", err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("a huge result took %v to stop: it was read to its end", d)
				}
			}
			if res, err := b.Query(ctx, tg.rows(3)); err != nil || len(res.Values) != 3 {
				t.Fatalf("after the refusals: %v", err)
			}
		})
	}
}

// TestStatementContext: a statement's limit, shape and lookup travel in
// one context value, and a limit set later keeps the shape and lookup.
func TestStatementContext(t *testing.T) {
	lookup := Lookup{Prefix: "SELECT a,`b` AS `dpproxy_key` FROM t WHERE `b` IN (", Key: "7"}
	ctx := WithStatement(context.Background(), ResultLimit{Rows: 5}, "SELECT a FROM t WHERE b = ?", lookup)
	ctx = WithResultLimit(ctx, ResultLimit{Bytes: 9})
	if got := resultLimitFrom(ctx); got != (ResultLimit{Bytes: 9}) {
		t.Errorf("limit %+v, want the later one", got)
	}
	if got := statementFrom(ctx); got.shape != "SELECT a FROM t WHERE b = ?" || got.lookup != lookup {
		t.Errorf("shape %q, lookup %+v: lost", got.shape, got.lookup)
	}
	if got := statementFrom(context.Background()); got != (statement{}) {
		t.Errorf("no value: %+v", got)
	}

	// The statement's context is its parent's otherwise: values, deadline,
	// cancellation, and the contexts made from it are cancelled with it.
	type otherKey struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), otherKey{}, "kept"))
	ctx = WithStatement(parent, ResultLimit{Rows: 1}, "", Lookup{})
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	if ctx.Value(otherKey{}) != "kept" {
		t.Error("the parent's value is lost")
	}
	if _, ok := ctx.Deadline(); ok {
		t.Error("a deadline the parent does not have")
	}
	stopped := errors.New("stopped")
	cancel(stopped)
	for _, c := range []context.Context{ctx, child} {
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("not cancelled with its parent")
		}
		if !errors.Is(c.Err(), context.Canceled) || context.Cause(c) != stopped {
			t.Errorf("err %v, cause %v", c.Err(), context.Cause(c))
		}
	}
}
