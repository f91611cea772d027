package session

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// What drivers and BI tools ask before their first query is answered by
// the session itself, whatever the backend, at no cost.
func TestSessionAnswersServerQuestions(t *testing.T) {
	e, acct, be := engineFixture(t)
	serverFor(t, e) // the catalog is built at start, while the backend is up
	be.Close()      // none of this may need the backend
	ctx := context.Background()
	s, _ := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)
	s.SetStartupParameters("clinic", map[string]string{"application_name": "psql", "DateStyle": "ISO, DMY", "client_encoding": "LATIN1"})

	for _, c := range []struct {
		sql     string
		name    string
		typ     sqltypes.Type
		want    any
		wantTag string
	}{
		{"SELECT version()", "version", sqltypes.Text, "PostgreSQL 15.0 (dpproxy), a differential-privacy proxy", "SELECT 1"},
		{"select current_schema()", "current_schema", sqltypes.Name, "public", "SELECT 1"},
		{"SELECT current_database()", "current_database", sqltypes.Name, "clinic", "SELECT 1"},
		{"SELECT session_user", "session_user", sqltypes.Name, "ana", "SELECT 1"},
		{"SELECT current_setting('server_version_num')", "current_setting", sqltypes.Text, "150000", "SELECT 1"},
		{"SELECT current_setting('server_version_num')::int/100 AS version", "version", sqltypes.Int4, int64(1500), "SELECT 1"},
		{"SELECT 1", "?column?", sqltypes.Int4, int64(1), "SELECT 1"},
		{"SELECT TRUE AS _ LIMIT 0", "_", sqltypes.Bool, nil, "SELECT 0"},
		{"show timezone;", "timezone", sqltypes.Text, "UTC", "SHOW"},
		{"SHOW TRANSACTION ISOLATION LEVEL", "transaction_isolation", sqltypes.Text, "read committed", "SHOW"},
		{"show standard_conforming_strings", "standard_conforming_strings", sqltypes.Text, "on", "SHOW"},
		{"SHOW DateStyle", "datestyle", sqltypes.Text, "ISO, DMY", "SHOW"},
		{"SHOW application_name", "application_name", sqltypes.Text, "psql", "SHOW"},
		{"SHOW client_encoding", "client_encoding", sqltypes.Text, "UTF8", "SHOW"},
	} {
		res, err := s.Execute(ctx, c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		r := res[0]
		if r.Tag != c.wantTag || len(r.Columns) != 1 || r.Columns[0].Name != c.name || r.Columns[0].Type != c.typ {
			t.Errorf("%s: tag %q columns %+v", c.sql, r.Tag, r.Columns)
			continue
		}
		if c.want == nil {
			if len(r.Rows) != 0 {
				t.Errorf("%s: rows %v, want none", c.sql, r.Rows)
			}
		} else if len(r.Rows) != 1 || r.Rows[0][0] != c.want {
			t.Errorf("%s: rows %v, want %v", c.sql, r.Rows, c.want)
		}
	}

	// SET changes what SHOW and current_setting report; RESET restores.
	for _, sql := range []string{"SET extra_float_digits = 3", "SET application_name = 'PostgreSQL JDBC Driver'", "SET SESSION TIMEZONE TO 'Europe/Oslo'", "SET TIME ZONE 'UTC'", "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", "SET search_path TO public, \"$user\""} {
		if res, err := s.Execute(ctx, sql); err != nil || res[0].Tag != "SET" {
			t.Errorf("%s: %v", sql, err)
		}
	}
	if res, _ := s.Execute(ctx, "SELECT current_setting('application_name')"); res[0].Rows[0][0] != "PostgreSQL JDBC Driver" {
		t.Errorf("application_name after SET: %v", res[0].Rows)
	}
	if res, _ := s.Execute(ctx, "RESET application_name"); res[0].Tag != "RESET" {
		t.Error("RESET")
	}
	if res, _ := s.Execute(ctx, "SHOW application_name"); res[0].Rows[0][0] != "psql" {
		t.Errorf("application_name after RESET: %v", res[0].Rows)
	}

	// Parameters dpproxy depends on cannot be changed; unknown ones are errors.
	for _, c := range []struct {
		sql  string
		code sqlerr.Code
	}{
		{"SET standard_conforming_strings = off", sqlerr.FeatureNotSupported},
		{"SET client_encoding = 'LATIN1'", sqlerr.FeatureNotSupported},
		{"SHOW no_such_parameter", sqlerr.UndefinedObject},
		{"SHOW ALL", sqlerr.FeatureNotSupported},
		{"SELECT pg_sleep(1)", sqlerr.FeatureNotSupported}, // the virtual catalog names what it does not support
	} {
		if _, err := s.Execute(ctx, c.sql); sqlerr.As(err).Code != c.code {
			t.Errorf("%s: got %v, want %s", c.sql, err, c.code)
		}
	}
	if _, err := s.Execute(ctx, "SET standard_conforming_strings = on"); err != nil {
		t.Errorf("setting a fixed parameter to its value: %v", err)
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != 0 {
		t.Errorf("spent ε=%v", st.Spent.Epsilon)
	}

	// Prepared forms describe the same columns.
	p, err := s.Prepare(ctx, "SHOW search_path", nil)
	if err != nil || len(p.Columns) != 1 || p.Columns[0].Name != "search_path" {
		t.Errorf("prepared SHOW: %+v %v", p, err)
	}
	p, err = s.Prepare(ctx, "select current_schema()", nil)
	if err != nil || len(p.Columns) != 1 || p.Columns[0].Type != sqltypes.Name {
		t.Errorf("prepared current_schema: %+v %v", p, err)
	}
}

// Probes that return no rows whatever the data are answered with their
// columns only, even on protected tables, and explained without a panic.
func TestEmptyProbesOnProtectedTables(t *testing.T) {
	e, acct, be := engineFixture(t)
	serverFor(t, e) // the catalog is built at start, while the backend is up
	be.Close()
	ctx := context.Background()
	s, _ := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)
	for _, c := range []struct {
		sql   string
		names string
	}{
		{`SELECT TRUE AS _ FROM "visits" WHERE 1 <> 1 LIMIT 0`, "_"},
		{`SELECT * FROM visits LIMIT 0`, "patient_id,kind,cost,n"},
		{`SELECT kind, cost FROM visits WHERE 1 = 0`, "kind,cost"},
	} {
		res, err := s.Execute(ctx, c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		var names []string
		for _, col := range res[0].Columns {
			names = append(names, col.Name)
		}
		if len(res[0].Rows) != 0 || strings.Join(names, ",") != c.names {
			t.Errorf("%s: columns %v rows %v", c.sql, names, res[0].Rows)
		}
		if _, err := s.Execute(ctx, "EXPLAIN DP "+c.sql); err != nil {
			t.Errorf("EXPLAIN DP %s: %v", c.sql, err)
		}
	}
	for _, sql := range []string{"EXPLAIN DP SELECT version()", "EXPLAIN DP SELECT * FROM dpproxy.budget"} {
		if _, err := s.Execute(ctx, sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
	// Anything that could return rows is still refused.
	for _, sql := range []string{`SELECT * FROM visits LIMIT 1`, `SELECT * FROM visits WHERE 1 = 1`, `SELECT * FROM visits WHERE n <> n`} {
		if _, err := s.Execute(ctx, sql); sqlerr.As(err).Code != sqlerr.InsufficientPrivilege {
			t.Errorf("%s: %v", sql, err)
		}
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != 0 {
		t.Errorf("spent ε=%v", st.Spent.Epsilon)
	}
}

// psql's \d queries are answered by the virtual catalog, with no backend
// and no catalog role.
func TestPsqlCatalogQueryAnswered(t *testing.T) {
	e, acct, be := engineFixture(t)
	serverFor(t, e)
	be.Close()
	s, _ := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)
	res, err := s.Execute(context.Background(), `SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(visits)$' COLLATE pg_catalog.default`)
	if err != nil || fmt.Sprint(res[0].Rows) != "[[visits]]" {
		t.Fatalf("got %v %v", res, err)
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != 0 {
		t.Errorf("charged %v", st.Spent)
	}
}

// A repeated public-table query is analyzed once and answered the same.
func TestPassthroughMemo(t *testing.T) {
	e, acct, _ := engineFixture(t)
	ctx := context.Background()
	s, _ := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)
	var first []*sqltypes.Result
	for i := 0; i < 3; i++ {
		res, err := s.Execute(ctx, "SELECT body FROM notes WHERE body = 'hello'")
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = res
		} else if len(res[0].Rows) != len(first[0].Rows) || res[0].Rows[0][0] != "hello" {
			t.Fatalf("memoized answer %v differs from %v", res[0].Rows, first[0].Rows)
		}
	}
	if e.Passthroughs().Len() != 1 {
		t.Errorf("memo holds %d entries, want 1", e.Passthroughs().Len())
	}
	// DP queries are never memoized this way (they are charged or cached).
	if _, err := s.Execute(ctx, "SELECT COUNT(*) FROM visits"); err != nil {
		t.Fatal(err)
	}
	if e.Passthroughs().Len() != 1 {
		t.Error("a DP query entered the passthrough memo")
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon == 0 {
		t.Error("the DP query was not charged")
	}
}

// Client text never becomes SQL of the catalog's SQLite: a function name
// holding a second statement (ATTACH of a database file) is refused on
// both front ends, and no file appears.
func TestCatalogInjectionRefused(t *testing.T) {
	e, _, _ := engineFixture(t)
	dir := t.TempDir()
	target := dir + "/attached.db"
	for _, c := range []struct {
		fe  rewrite.FrontEnd
		sql string
	}{
		{rewrite.PostgresFrontEnd, `SELECT "1; ATTACH '` + target + `' AS e; SELECT 1 --"()`},
		{rewrite.MySQLFrontEnd, "SELECT `1; ATTACH '" + target + "' AS e; SELECT 1 --`()"},
		{rewrite.PostgresFrontEnd, `SELECT * FROM pg_class WHERE relname = 'x'; ATTACH '` + target + `' AS e`},
	} {
		s, _ := New(serverFor(t, e), "ana", c.fe)
		if _, err := s.Execute(context.Background(), c.sql); err == nil {
			t.Errorf("%s: answered", c.sql)
		}
		if _, err := os.Stat(target); err == nil {
			t.Fatalf("%s: created %s", c.sql, target)
		}
	}
}
