package backend

import (
	"context"
	"testing"
)

// IsStatementError tells a statement refused while being prepared (its
// text is wrong, whatever the data) from a failure while running (which
// may depend on the data), on each database.
func TestIsStatementError(t *testing.T) {
	type query struct {
		sql    string
		static bool
	}
	run := func(t *testing.T, b Backend, queries []query) {
		for _, q := range queries {
			_, err := b.Query(context.Background(), q.sql)
			if err == nil {
				t.Errorf("%s: no error", q.sql)
				continue
			}
			if got := IsStatementError(err); got != q.static {
				t.Errorf("%s: %v: statement error %v, want %v", q.sql, err, got, q.static)
			}
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		run(t, openSQLiteT(t, newSQLiteFile(t, `CREATE TABLE t (x INTEGER)`, `INSERT INTO t VALUES (9223372036854775807), (1)`)), []query{
			{`SELECT nosuch FROM t`, true},
			{`SELECT * FROM nosuch`, true},
			{`SELECT initcap(x) FROM t`, true},
			{`SELECT FROM t`, true},
			{`SELECT SUM(x) FROM t`, false}, // integer overflow, while running
		})
	})
	t.Run("postgres", func(t *testing.T) {
		run(t, openPostgresT(t, pgDSN(t), 1), []query{
			{`SELECT nosuch FROM pg_class`, true},
			{`SELECT * FROM nosuch`, true},
			{`SELECT no_such_function(1)`, true},
			{`SELECT FROM WHERE`, true},
			{`SELECT 1 / (SELECT COUNT(*) - COUNT(*) FROM pg_class)`, false}, // division by zero
			// Class 42, but raised while running: only when a row reaches
			// the comparison of two columns of different collations.
			{`SELECT x < y FROM (VALUES ('a' COLLATE "C", 'b' COLLATE "POSIX")) AS t(x, y)`, false},
		})
	})
	t.Run("mysql", func(t *testing.T) {
		run(t, openMySQLT(t, mysqlDSN(t), 1), []query{
			{`SELECT nosuch FROM information_schema.TABLES`, true},
			{`SELECT * FROM nosuch.nosuch`, true},
			{`SELECT no_such_function(1)`, true},
			{`SELECT FROM WHERE`, true},
			{`SELECT 9223372036854775807 + (SELECT COUNT(*) FROM information_schema.TABLES)`, false}, // BIGINT out of range, while running
		})
	})
}
