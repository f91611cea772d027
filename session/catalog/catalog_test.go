package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

func testSchema() Schema {
	return Schema{Database: "demo", Tables: []Table{
		{Name: "visits", Kind: Protected, Columns: []Column{{Name: "patient_id", Type: sqltypes.Int4}, {Name: "cost", Type: sqltypes.Numeric}, {Name: "diagnosis", Type: sqltypes.Text}}},
		{Name: "clinics", Kind: Public, Columns: []Column{{Name: "clinic_id", Type: sqltypes.Int4, NotNull: true}, {Name: "city", Type: sqltypes.Varchar, Length: 40}}, PrimaryKey: []string{"clinic_id"}},
		{Schema: "dpproxy", Name: "budget", Kind: View, Columns: []Column{{Name: "analyst", Type: sqltypes.Text}}},
	}}
}

func testSession() *Session {
	return &Session{User: "alice", Database: "demo", ServerVersion: "15.0 (dpproxy)", BackendPID: 42,
		Setting: func(name string) (string, bool) {
			switch name {
			case "server_version_num":
				return "150000", true
			case "version":
				return "10.11.0-dpproxy", true
			}
			return "", false
		}}
}

// sharedCatalog is built once: the catalog is read-only, and building it
// is the slow part of these tests (more so under the race detector).
var sharedCatalog = sync.OnceValues(func() (*Catalog, error) { return New(context.Background(), testSchema()) })

func newTestCatalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := sharedCatalog()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readCorpus(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, q := range strings.Split(string(data), "\n--\n") {
		if q = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(q), ";")); q != "" {
			qs = append(qs, strings.TrimSuffix(q, ";"))
		}
	}
	return qs
}

// queryPG runs a PostgreSQL catalog query and returns its rows as text.
func queryPG(t *testing.T, c *Catalog, q string, args ...any) [][]string {
	t.Helper()
	res, err := c.QueryPostgres(context.Background(), q, args, testSession())
	if err != nil {
		tr, _, _ := c.TranslatePostgres(q, testSession())
		t.Fatalf("%s\n=> %v\nSQLite: %s", q, err, tr)
	}
	return textRows(res)
}

func textRows(res *sqltypes.Result) [][]string {
	var out [][]string
	for _, r := range res.Rows {
		var row []string
		for _, v := range r {
			if v == nil {
				row = append(row, "NULL")
			} else {
				row = append(row, fmt.Sprint(v))
			}
		}
		out = append(out, row)
	}
	return out
}

// The queries psql 15 sends for \l \dn \dt \d \d visits \df \du \d clinics
// \dv \di (captured with psql -E against PostgreSQL 15) all run.
func TestPsqlDescribeQueries(t *testing.T) {
	c := newTestCatalog(t)
	for _, q := range readCorpus(t, "testdata/psql15_describe.sql") {
		queryPG(t, c, q)
	}
}

func TestPostgresCatalogShowsThePolicy(t *testing.T) {
	c := newTestCatalog(t)
	tests := []struct {
		name, query string
		want        string
	}{
		{"user relations", `SELECT n.nspname, c.relname, c.relkind FROM pg_catalog.pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2`,
			"[[dpproxy budget v] [public clinics r] [public clinics_pkey i] [public visits r]]"},
		{"row counts are unknown", `SELECT relname, reltuples, relpages FROM pg_class WHERE relname IN ('visits', 'clinics') ORDER BY 1`,
			"[[clinics -1 0] [visits -1 0]]"},
		{"statistics are empty", `SELECT (SELECT count(*) FROM pg_stat_user_tables) + (SELECT count(*) FROM pg_stats) + (SELECT count(*) FROM pg_statistic) + (SELECT count(*) FROM pg_stat_all_tables)`,
			"[[0]]"},
		{"exposed columns only", `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_attribute a
			WHERE a.attrelid = 'visits'::regclass AND a.attnum > 0 ORDER BY a.attnum`,
			"[[patient_id integer false] [cost numeric false] [diagnosis text false]]"},
		{"public key", `SELECT conname, pg_get_constraintdef(oid), conkey FROM pg_constraint WHERE conrelid = 'clinics'::regclass`,
			"[[clinics_pkey PRIMARY KEY (clinic_id) {1}]]"},
		{"one role, the analyst", `SELECT rolname, oid FROM pg_catalog.pg_roles`, "[[alice 10]]"},
		{"owner", `SELECT tablename, tableowner FROM pg_tables ORDER BY 1`, "[[clinics alice] [visits alice]]"},
		{"information_schema", `SELECT table_schema, table_name, table_type FROM information_schema.tables
			WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 2`,
			"[[dpproxy budget VIEW] [public clinics BASE TABLE] [public visits BASE TABLE]]"},
		{"columns", `SELECT column_name, data_type, character_maximum_length, is_nullable FROM information_schema.columns WHERE table_name = 'clinics' ORDER BY ordinal_position`,
			"[[clinic_id integer NULL NO] [city character varying 40 YES]]"},
		{"key usage", `SELECT kcu.column_name FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage kcu
			USING (constraint_name) WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_name = 'clinics'`, "[[clinic_id]]"},
		{"session constants", `SELECT current_user, current_database(), current_schema(), pg_backend_pid(), current_setting('server_version_num')::int / 100`,
			"[[alice demo public 42 1500]]"},
		{"regex and collate", `SELECT c.relname FROM pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(visits)$' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid)`,
			"[[visits]]"},
		{"case-insensitive regex", `SELECT relname FROM pg_class WHERE relname ~* '^VISITS$'`, "[[visits]]"},
		{"any over an array", `SELECT relname FROM pg_class c WHERE c.relkind = ANY (ARRAY['r', 'p']) AND relnamespace = 2200 ORDER BY 1`,
			"[[clinics] [visits]]"},
		{"current_schemas", `SELECT n.nspname = ANY(current_schemas(true)) FROM pg_namespace n WHERE nspname = 'pg_catalog'`, "[[1]]"},
		{"generate_series with alias", `SELECT s.r FROM generate_series(1, 3) AS s(r)`, "[[1] [2] [3]]"},
		{"expandarray", `SELECT r.keys, (r.keys).x FROM (SELECT (information_schema._pg_expandarray(i.indkey)).n AS key_seq,
			information_schema._pg_expandarray(i.indkey) AS keys FROM pg_index i) r`, `[[{"x":1,"n":1} 1]]`},
		{"int2vector subscript", `SELECT i.indkey[0] FROM pg_index i`, "[[1]]"},
		{"E strings", `SELECT array_to_string(ARRAY['a', 'b'], E'\n')`, "[[a\nb]]"},
		{"is distinct from", `SELECT 1 IS DISTINCT FROM 2, NULL IS NOT DISTINCT FROM NULL`, "[[1 1]]"},
		{"parameters", `SELECT relname FROM pg_class WHERE relname = $1`, "[[visits]]"},
		{"constant select", `SELECT 1 AS b WHERE 1=1`, "[[1]]"},
		{"cast forms", `SELECT CAST('visits' AS regclass) = 'visits'::regclass, CAST('t' AS boolean), (SELECT oid FROM pg_class WHERE relname = 'visits')::regclass = attrelid FROM pg_attribute WHERE attname = 'patient_id'`, "[[1 1 1]]"},
		{"like is postgres's", `SELECT 'VISITS' LIKE 'visits', 'a_b' LIKE 'a\_b', 'axb' LIKE 'a\_b', 'VISITS' ILIKE 'vis%', 'visits' NOT ILIKE 'V_S%'`, "[[0 1 0 1 0]]"},
		{"not like with escapes", `SELECT count(*) FROM pg_class WHERE relname NOT LIKE 'pg\_%' AND relnamespace = 11`, "[[0]]"},
		{"empty series", `SELECT count(*) FROM generate_series(5, 1) AS s(x)`, "[[0]]"},
		{"descending series", `SELECT x FROM generate_series(3, 1, -1) AS s(x)`, "[[3] [2] [1]]"},
		{"typed array literals", `SELECT 1 = ANY('{1,2}'::int[]), 'a,b' = ANY('{"a,b",c}'::text[]), array_length('{x,NULL,"y\\"z"}'::text[], 1)`, "[[1 1 3]]"},
		{"keyword calls", `SELECT trim(both '"' from '"x"'), trim(leading 'a' from 'aab'), substring('hello' from 2 for 3), position('l' in 'hello')`, "[[x b ell 3]]"},
		{"casts", `SELECT 'pg_class'::regclass::oid, 23::regtype, '1'::boolean, CAST('5' AS integer) + 1`, "[[1259 23 1 6]]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args []any
			if strings.Contains(tc.query, "$1") {
				args = []any{"visits"}
			}
			got := fmt.Sprint(queryPG(t, c, tc.query, args...))
			if got != tc.want {
				t.Errorf("%s\n got %s\nwant %s", tc.query, got, tc.want)
			}
		})
	}
}

func TestPostgresCatalogRefusals(t *testing.T) {
	c := newTestCatalog(t)
	tests := []struct{ query, want string }{
		{`DELETE FROM pg_class`, "the statement DELETE is not supported"},
		{`WITH x AS (SELECT 1) DELETE FROM pg_class`, "cannot answer this query"},
		{`SELECT * FROM pg_catalog.pg_nonexistent`, "pg_nonexistent is not supported"},
		{`SELECT pg_catalog.pg_frobnicate(1)`, "pg_frobnicate() is not supported"},
		{`SELECT 'nosuch'::regclass`, `relation "nosuch"`},
		{`SELECT current_setting('nosuch')`, `unrecognized configuration parameter "nosuch"`},
		{`SELECT unnest(ARRAY[1]), unnest(ARRAY[2])`, "different arrays"},
		{`SELECT 1; SELECT 2`, "more than one statement"},
		{`SELECT relname FROM pg_class WHERE relname ~* relname`, "case-insensitive match"},
		{`WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r`, "more than 100000 rows"},
		// Client text never becomes SQL structure: a quoted function name
		// is refused, not written out (it once ran as a second statement).
		{`SELECT "1; ATTACH 'x.db' AS e; SELECT 1 --"()`, "a quoted or unusual function name"},
		{`SELECT "lower"('A')`, "a quoted or unusual function name"},
		// Only SELECT, reads and the allowed functions: large values and
		// SQLite's own pragmas are refused by the authorizer.
		{`SELECT length(zeroblob(100000000))`, "not authorized"},
		{`SELECT printf('%.*c', 100000000, 'x')`, "not authorized"},
		{`SELECT * FROM pragma_table_info('pg_class')`, "not authorized"},
		{`WITH RECURSIVE r(s, n) AS (SELECT 'x', 0 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 40) SELECT max(length(s)) FROM r`, "too big"},
		{`SELECT * FROM _pg_expandarray()`, "without arguments"},
		{`SELECT x FROM generate_series(1, 5, 0) AS s(x)`, "step 0"},
	}
	for _, tc := range tests {
		_, err := c.QueryPostgres(context.Background(), tc.query, nil, testSession())
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an *Error containing %q", tc.query, err, tc.want)
		}
	}
	// The catalog is unchanged.
	if got := fmt.Sprint(queryPG(t, c, `SELECT count(*) FROM pg_class WHERE relname = 'visits'`)); got != "[[1]]" {
		t.Errorf("after the refusals: %s", got)
	}
}

func queryMy(t *testing.T, c *Catalog, q string) [][]string {
	t.Helper()
	stmt, err := parser.New().ParseOneStmt(q, "", "")
	if err != nil {
		t.Fatalf("parse %s: %v", q, err)
	}
	res, err := c.QueryMySQL(context.Background(), stmt, nil, testSession())
	if err != nil {
		tr, _ := c.TranslateMySQL(stmt, testSession())
		t.Fatalf("%s\n=> %v\nSQLite: %s", q, err, tr)
	}
	return textRows(res)
}

// Metadata queries of MySQL clients (JDBC drivers' getTables,
// getColumns, getPrimaryKeys, getImportedKeys; ORMs; scripts) all run.
func TestMySQLClientQueries(t *testing.T) {
	c := newTestCatalog(t)
	for _, q := range readCorpus(t, "testdata/mysql_clients.sql") {
		queryMy(t, c, q)
	}
}

func TestMySQLCatalogShowsThePolicy(t *testing.T) {
	c := newTestCatalog(t)
	tests := []struct{ query, want string }{
		{`SELECT TABLE_NAME, TABLE_TYPE, TABLE_ROWS, DATA_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1`,
			"[[clinics BASE TABLE NULL NULL] [visits BASE TABLE NULL NULL]]"},
		{`SELECT column_name, column_type, column_key FROM information_schema.columns WHERE table_name = 'CLINICS' ORDER BY ordinal_position`,
			"[[clinic_id int(11) PRI] [city varchar(40) ]]"},
		{`SELECT INDEX_NAME, COLUMN_NAME, CARDINALITY FROM information_schema.STATISTICS`, "[[PRIMARY clinic_id NULL]]"},
		{`SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY 1`, "[[demo] [dpproxy] [information_schema]]"},
		{`SELECT '' TABLE_SCHEM FROM DUAL WHERE 1=0`, "[]"},
		{`SELECT CONVERT('a' USING utf8mb4), CONVERT('5', SIGNED) + 1, LEAST(2, 1), GREATEST(2, 3)`, "[[a 6 1 3]]"},
		{`SELECT @@version, DATABASE(), CONNECTION_ID(), USER()`, "[[10.11.0-dpproxy demo 42 alice@%]]"},
	}
	for _, tc := range tests {
		if got := fmt.Sprint(queryMy(t, c, tc.query)); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.query, got, tc.want)
		}
	}
}

// The MySQL path refuses what the PostgreSQL path refuses: a function name
// the TiDB parser took from backquotes is never written into the SQL.
func TestMySQLInjectionRefused(t *testing.T) {
	c := newTestCatalog(t)
	for _, q := range []string{
		"SELECT `1; ATTACH 'x.db' AS e; SELECT 1 --`()",
		"SELECT length(zeroblob(100000000))",
	} {
		stmt, err := parser.New().ParseOneStmt(q, "", "")
		if err != nil {
			t.Fatalf("parse %s: %v", q, err)
		}
		if _, err := c.QueryMySQL(context.Background(), stmt, nil, testSession()); err == nil {
			t.Errorf("%s: answered", q)
		}
	}
	if got := fmt.Sprint(queryMy(t, c, "SELECT 'VISITS' LIKE 'visits', 'a_b' LIKE 'a\\_b', 'axb' LIKE 'a\\_b'")); got != "[[1 1 0]]" {
		t.Errorf("MySQL LIKE (case-insensitive, backslash escape): %s", got)
	}
}

func TestMySQLShow(t *testing.T) {
	c := newTestCatalog(t)
	run := func(q string) [][]string {
		t.Helper()
		stmt, err := parser.New().ParseOneStmt(q, "", "")
		if err != nil {
			t.Fatal(err)
		}
		res, ok, err := c.ShowMySQL(context.Background(), stmtShow(stmt), testSession())
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", q, ok, err)
		}
		return textRows(res)
	}
	if got := run("SHOW CREATE TABLE `clinics`")[0][1]; !strings.Contains(got, "`clinic_id` int(11) NOT NULL") || !strings.Contains(got, "PRIMARY KEY (`clinic_id`)") {
		t.Errorf("SHOW CREATE TABLE: %s", got)
	}
	if got := fmt.Sprint(run("SHOW FULL COLUMNS FROM visits LIKE 'c%'")); !strings.HasPrefix(got, "[[cost decimal(65,30) NULL YES") {
		t.Errorf("SHOW FULL COLUMNS: %s", got)
	}
	if got := fmt.Sprint(run("SHOW INDEX FROM clinics")); !strings.Contains(got, "clinics 0 PRIMARY 1 clinic_id A NULL") {
		t.Errorf("SHOW INDEX: %s", got)
	}
	if got := run("SHOW TABLE STATUS WHERE Name = 'visits'"); len(got) != 1 || got[0][4] != "NULL" {
		t.Errorf("SHOW TABLE STATUS: %v (Rows must be NULL)", got)
	}
	stmt, _ := parser.New().ParseOneStmt("SHOW COLUMNS FROM secret_table", "", "")
	_, _, err := c.ShowMySQL(context.Background(), stmtShow(stmt), testSession())
	var missing *TableMissingError
	if !errors.As(err, &missing) {
		t.Errorf("SHOW COLUMNS of an unknown table: %v", err)
	}
}

func stmtShow(n any) *ast.ShowStmt { return n.(*ast.ShowStmt) }

func TestSelectListSetReturningFunctions(t *testing.T) {
	c := newTestCatalog(t)
	got := fmt.Sprint(queryPG(t, c, `SELECT a.attname FROM pg_attribute a JOIN (
		SELECT unnest(ix.indkey) attnum, generate_subscripts(ix.indkey, 1) ord FROM pg_index ix
		WHERE ix.indrelid = 'clinics'::regclass AND ix.indisprimary) k ON a.attnum = k.attnum
		WHERE a.attrelid = 'clinics'::regclass ORDER BY k.ord`))
	if got != "[[clinic_id]]" {
		t.Errorf("primary key columns: %s", got)
	}
	if got := fmt.Sprint(queryPG(t, c, `SELECT unnest(ARRAY['a', 'b']) AS x, generate_subscripts(ARRAY['a', 'b'], 1) AS i`)); got != "[[a 1] [b 2]]" {
		t.Errorf("without FROM: %s", got)
	}
}

// Sessions share one catalog: concurrent queries of both front ends, with
// their own session constants, do not disturb each other.
func TestConcurrentSessions(t *testing.T) {
	c := newTestCatalog(t)
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			sess := &Session{User: fmt.Sprintf("user%d", i), Database: "demo"}
			for range 20 {
				res, err := c.QueryPostgres(context.Background(), `SELECT rolname FROM pg_roles`, nil, sess)
				if err != nil {
					done <- err
					return
				}
				if got := fmt.Sprint(res.Rows); got != fmt.Sprintf("[[user%d]]", i) {
					done <- fmt.Errorf("session user%d saw %s", i, got)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// The translation memo is shared by an analyst's sessions but never hands
// one session another's own values (process id, settings).
func TestTranslationMemo(t *testing.T) {
	c := newTestCatalog(t)
	a := &Session{User: "alice", Database: "demo", BackendPID: 1}
	b := &Session{User: "alice", Database: "demo", BackendPID: 2}
	for _, s := range []*Session{a, b} {
		res, err := c.QueryPostgres(context.Background(), `SELECT pg_backend_pid()`, nil, s)
		if err != nil || fmt.Sprint(res.Rows) != fmt.Sprintf("[[%d]]", s.BackendPID) {
			t.Errorf("session %d: %v %v", s.BackendPID, res, err)
		}
	}
	q := `SELECT relname FROM pg_class WHERE relname = 'visits'`
	if _, err := c.QueryPostgres(context.Background(), q, nil, a); err != nil {
		t.Fatal(err)
	}
	before := c.translations.Len()
	if _, err := c.QueryPostgres(context.Background(), q, nil, b); err != nil || c.translations.Len() != before {
		t.Errorf("the same text for the same analyst translated again (%d → %d entries): %v", before, c.translations.Len(), err)
	}
}
