package session

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// FuzzSessionStatements sends any text to sessions of both front ends,
// seeded with the SET, SHOW and RESET forms clients send. Nothing panics;
// a refusal is an *sqlerr.Error that is not internal; SET, SHOW and RESET
// never spend budget; and the session stays usable, with an ε inside the
// policy's range.
func FuzzSessionStatements(f *testing.F) {
	for _, s := range []string{
		"SET dpproxy.epsilon = 0.25", "SET dpproxy.epsilon TO '1e-3'", "SET SESSION dpproxy.epsilon = DEFAULT",
		"RESET dpproxy.epsilon", "RESET ALL", "SHOW dpproxy.epsilon", "SHOW ALL", "SHOW server_version",
		"SET application_name = 'metabase'", "SET search_path TO public, pg_catalog", "SET TIME ZONE 'UTC'",
		"SET extra_float_digits = 3", "SET NAMES utf8mb4", "SET @@session.autocommit = 0", "SET autocommit=1",
		"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "SET sql_mode = 'ANSI_QUOTES'",
		"SHOW VARIABLES LIKE 'max_allowed_packet'", "SHOW TABLES", "SHOW DATABASES", "SHOW COLUMNS FROM visits",
		"SET dpproxy.epsilon = -1", "SET dpproxy.epsilon = 1e400", "SET dpproxy.epsilon = 'abc'", "SHOW nosuch",
		"SET @x = (SELECT COUNT(*) FROM visits)", "SHOW CREATE TABLE visits", "SELECT @@version, @@max_connections",
	} {
		f.Add(s)
	}
	e, acct, _ := engineFixture(f)
	srv := serverFor(f, e)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, stmt string) {
		for _, fe := range []rewrite.FrontEnd{rewrite.PostgresFrontEnd, rewrite.MySQLFrontEnd} {
			s, err := New(srv, "ana", fe)
			if err != nil {
				t.Fatal(err)
			}
			before, _ := acct.Status("ana")
			_, err = s.Execute(ctx, stmt)
			if err != nil {
				if e := sqlerr.As(err); e.Code == sqlerr.InternalError {
					t.Fatalf("%q: internal error %v", stmt, err)
				}
			}
			word := strings.ToUpper(strings.TrimSpace(stmt))
			if after, _ := acct.Status("ana"); (strings.HasPrefix(word, "SET") || strings.HasPrefix(word, "SHOW") || strings.HasPrefix(word, "RESET")) &&
				after.Spent.Epsilon != before.Spent.Epsilon {
				t.Fatalf("%q spent ε %v", stmt, after.Spent.Epsilon-before.Spent.Epsilon)
			}
			if s.epsilon <= 0 || s.epsilon > e.Policy().Defaults.MaxEpsilonPerQuery {
				t.Fatalf("%q left the session's ε at %v", stmt, s.epsilon)
			}
			if _, err := s.Execute(ctx, "SELECT body FROM notes"); err != nil {
				t.Fatalf("after %q the session fails: %v", stmt, err)
			}
			s.Close()
		}
	})
}

// FuzzPreparedParams binds any values to prepared statements over the
// protected and public tables. Nothing panics; a refusal is not an
// internal error; a value never changes what a statement is (a DP
// aggregate stays one: one row of one count).
func FuzzPreparedParams(f *testing.F) {
	f.Add("a", int64(1), 1.5)
	f.Add("' OR 1=1 --", int64(-1), math.Copysign(0, -1))
	f.Add("\x00", int64(1<<62), 1e308)
	f.Add("b'; DROP TABLE visits; --", int64(0), 3.0)
	e, acct, _ := engineFixture(f)
	acct.SetLimit("ana", budget.Cost{Epsilon: 1e12, Delta: 0.5})
	ctx := context.Background()
	s, err := New(serverFor(f, e), "ana", rewrite.PostgresFrontEnd)
	if err != nil {
		f.Fatal(err)
	}
	count, err := s.Prepare(ctx, "SELECT COUNT(*) FROM visits WHERE kind = $1 AND n >= $2 AND cost < $3", nil)
	if err != nil {
		f.Fatal(err)
	}
	public, err := s.Prepare(ctx, "SELECT body FROM notes WHERE body <> $1 LIMIT $2", []sqltypes.Type{sqltypes.Text, sqltypes.Int8})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, n int64, x float64) {
		res, err := s.ExecutePrepared(ctx, count, []any{text, n, x})
		switch {
		case err != nil:
			if e := sqlerr.As(err); e.Code == sqlerr.InternalError {
				t.Fatalf("(%q, %d, %v): internal error %v", text, n, x, err)
			}
		case len(res.Rows) != 1 || len(res.Rows[0]) != 1:
			t.Fatalf("(%q, %d, %v): the DP count returned %v", text, n, x, res.Rows)
		}
		if _, err := s.ExecutePrepared(ctx, public, []any{text, n}); err != nil {
			if e := sqlerr.As(err); e.Code == sqlerr.InternalError {
				t.Fatalf("(%q, %d): public query internal error %v", text, n, err)
			}
		}
	})
}
