package session

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// MySQL clients' information_schema listings are answered from the policy:
// protected tables with their exposed columns only, public tables with the
// backend's columns, nothing charged.
func TestMySQLInformationSchema(t *testing.T) {
	e, acct, _ := engineFixture(t)
	ctx := context.Background()
	s, _ := New(serverFor(t, e), "ana", rewrite.MySQLFrontEnd)
	if err := s.UseDatabase("unused"); err != nil {
		t.Fatal(err)
	}
	rows := func(sql string) [][]any {
		t.Helper()
		res, err := s.Execute(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return res[0].Rows
	}
	str := func(rows [][]any) string { return fmt.Sprint(rows) }

	for sql, want := range map[string]string{
		"SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'unused' ORDER BY 1":                                                                          "[[notes BASE TABLE] [visits BASE TABLE]]",
		"select table_name from information_schema.tables where table_schema = database() order by table_name desc":                                                                      "[[visits] [notes]]",
		"SELECT t.TABLE_NAME FROM information_schema.TABLES AS t WHERE t.TABLE_SCHEMA IN ('x', 'UNUSED') AND t.TABLE_NAME LIKE 'v%'":                                                     "[[visits]]",
		"SELECT TABLE_NAME, TABLE_ROWS, DATA_LENGTH FROM information_schema.TABLES WHERE TABLE_NAME = 'visits'":                                                                          "[[visits <nil> <nil>]]",
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'other'":                                                                                                  "[]",
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'unused'":                                                                                                   "[[2]]",
		"SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY 1":                                                                                                                 "[[dpproxy] [information_schema] [unused]]",
		"SELECT SCHEMA_NAME AS s FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ('information_schema', 'mysql', 'dpproxy')":                                                   "[[unused]]",
		"SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, ORDINAL_POSITION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'unused' AND TABLE_NAME = 'visits' ORDER BY ORDINAL_POSITION": "[[patient_id bigint bigint(20) 1] [kind text text 2] [cost decimal decimal(65,30) 3] [n bigint bigint(20) 4]]",
		"SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_NAME = 'visits' AND (DATA_TYPE = 'bigint' OR COLUMN_NAME LIKE 'c%') AND ORDINAL_POSITION > 1":                    "[[cost] [n]]",
		"SELECT COLUMN_NAME, NUMERIC_PRECISION, CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_NAME = 'visits' AND CHARACTER_SET_NAME IS NOT NULL":                       "[[kind <nil> utf8mb4]]",
		"SELECT DISTINCT TABLE_NAME FROM information_schema.COLUMNS WHERE TABLE_NAME = 'visits'":                                                                                         "[[visits]]",
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME LIMIT 1 OFFSET 1":                                                          "[[visits]]",
		"SELECT TABLE_NAME, 'x' AS k, NULL AS n FROM information_schema.TABLES WHERE NOT TABLE_NAME = 'notes' AND TABLE_SCHEMA = 'unused'":                                               "[[visits x <nil>]]",
	} {
		if got := str(rows(sql)); got != want {
			t.Errorf("%s:\n got %s\nwant %s", sql, got, want)
		}
	}

	// Column names as the view names them (upper case); aliases kept; types.
	res, err := s.Execute(ctx, "select table_name, ORDINAL_POSITION as pos from information_schema.columns where table_name = 'notes'")
	if err != nil {
		t.Fatal(err)
	}
	if c := res[0].Columns; c[0].Name != "TABLE_NAME" || c[1].Name != "pos" || c[1].Type != sqltypes.Int8 {
		t.Errorf("columns %+v", c)
	}
	if got := str(res[0].Rows); got != "[[notes 1]]" { // the backend's columns of the public table
		t.Errorf("notes columns: %s", got)
	}
	if r := rows("SELECT * FROM information_schema.COLUMNS WHERE TABLE_NAME = 'notes'"); len(r) != 1 || len(r[0]) != 22 || r[0][3] != "body" {
		t.Errorf("SELECT * COLUMNS: %v", r)
	}

	// USE information_schema: unqualified names.
	one := func(sql string) {
		t.Helper()
		if _, err := s.Execute(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	one("USE information_schema")
	if got := str(rows("SELECT TABLE_NAME FROM TABLES WHERE TABLE_NAME = 'visits'")); got != "[[visits]]" {
		t.Errorf("after USE information_schema: %s", got)
	}
	one("USE unused")

	// Prepared, with parameters bound per execution.
	p, err := s.Prepare(ctx, "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Params) != 2 || len(p.Columns) != 2 || p.Columns[0].Name != "COLUMN_NAME" {
		t.Fatalf("prepared: %+v", p)
	}
	for table, want := range map[string]string{"visits": "[[patient_id bigint] [kind text] [cost decimal] [n bigint]]", "nosuch": "[]"} {
		r, err := s.ExecutePrepared(ctx, p, []any{"unused", table})
		if err != nil {
			t.Fatal(err)
		}
		if got := str(r.Rows); got != want {
			t.Errorf("prepared %s: %s, want %s", table, got, want)
		}
	}

	// Real SQL over the views: unions, functions, grouping, subqueries.
	for sql, want := range map[string]string{
		"SELECT COUNT(*) FROM information_schema.ROUTINES":                                                                                         "[[0]]",
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'unused' UNION SELECT 'x' ORDER BY 1":                               "[[notes] [visits] [x]]",
		"SELECT UPPER(TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1":                                       "[[NOTES] [VISITS]]",
		"SELECT TABLE_SCHEMA, COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA <> 'information_schema' GROUP BY TABLE_SCHEMA ORDER BY 1": "[[dpproxy 3] [unused 2]]",
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_NAME IN (SELECT 'visits')":                                                   "[[visits]]",
		"SELECT IF(TABLE_TYPE = 'BASE TABLE', 'TABLE', TABLE_TYPE) FROM information_schema.TABLES WHERE TABLE_NAME = 'notes'":                      "[[TABLE]]",
	} {
		if got := str(rows(sql)); got != want {
			t.Errorf("%s:\n got %s\nwant %s", sql, got, want)
		}
	}

	// Catalogs and tables together, and writes, are refused clearly.
	for _, sql := range []string{
		"SELECT * FROM information_schema.TABLES t JOIN visits v ON t.TABLE_NAME = v.kind",
		"SELECT COUNT(*) FROM visits WHERE kind IN (SELECT TABLE_NAME FROM information_schema.TABLES)",
	} {
		if _, err := s.Execute(ctx, sql); err == nil || sqlerr.As(err).Code != sqlerr.FeatureNotSupported {
			t.Errorf("%s: %v, want 0A000", sql, err)
		}
	}
	if _, err := s.Execute(ctx, "DELETE FROM information_schema.TABLES"); err == nil {
		t.Error("DELETE FROM information_schema.TABLES: no error")
	}
	for sql, code := range map[string]sqlerr.Code{
		"SELECT NOSUCH FROM information_schema.TABLES":                              sqlerr.UndefinedColumn,
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE x.TABLE_NAME = 'a'": sqlerr.UndefinedColumn,
	} {
		if _, err := s.Execute(ctx, sql); err == nil || sqlerr.As(err).Code != code {
			t.Errorf("%s: %v, want %s", sql, err, code)
		}
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != 0 {
		t.Errorf("charged %v", st.Spent)
	}
}

// Listing protected tables and their columns needs no backend at all.
func TestMySQLInformationSchemaWithoutBackend(t *testing.T) {
	e, _, be := engineFixture(t)
	serverFor(t, e) // the catalog is built at start, while the backend is up
	be.Close()
	s, _ := New(serverFor(t, e), "ana", rewrite.MySQLFrontEnd)
	res, err := s.Execute(context.Background(), "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_NAME = 'visits' AND TABLE_SCHEMA = 'unused'")
	if err != nil || len(res[0].Rows) != 4 {
		t.Fatalf("%v %+v", err, res)
	}
}
