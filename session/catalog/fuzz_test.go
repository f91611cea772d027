package catalog

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/rewrite"
)

// FuzzCatalogQueries feeds any text to both front ends' catalog paths: no
// input may panic, change the catalog, or fail with anything but an
// *Error (or a cancelled context); the catalog keeps answering.
func FuzzCatalogQueries(f *testing.F) {
	for _, path := range []string{"testdata/psql15_describe.sql", "testdata/mysql_clients.sql"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, q := range strings.Split(string(data), "\n--\n") {
			f.Add(strings.TrimSpace(q))
		}
	}
	for _, q := range []string{`SELECT 'a'::regclass`, `SELECT ARRAY(SELECT 1)[1]`, `SELECT x FROM unnest(ARRAY[1,2]) AS u(x)`,
		`WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT * FROM r`, `SELECT E'\x41\101\u0041'`,
		`SELECT $1::int + $2`, `SELECT 1 IS NOT DISTINCT FROM 2 FETCH FIRST 1 ROWS ONLY`} {
		f.Add(q)
	}
	c, err := sharedCatalog()
	if err != nil {
		f.Fatal(err)
	}
	sess := testSession()
	f.Fuzz(func(t *testing.T, q string) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		check := func(err error) {
			var ce *Error
			if err != nil && !errors.As(err, &ce) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) &&
				!strings.Contains(err.Error(), "interrupted") {
				t.Fatalf("%q: %T %v", q, err, err)
			}
		}
		_, err := c.QueryPostgres(ctx, q, []any{"1", "2"}, sess)
		check(err)
		// As the MySQL front end parses: a text the TiDB parser panics on
		// (a numeric literal of 82 digits, say) is refused there with a
		// syntax error and never reaches the catalog.
		if stmts, perr := rewrite.Parse(q, rewrite.MySQLFrontEnd); perr == nil && len(stmts) == 1 {
			_, err := c.QueryMySQL(ctx, stmts[0], nil, sess)
			check(err)
		}
		var n int
		if err := c.pg.db.QueryRow(`SELECT count(*) FROM pg_class WHERE relname = 'visits'`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("after %q the catalog changed: %d %v", q, n, err)
		}
	})
}
