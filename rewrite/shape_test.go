package rewrite

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// passthroughOf analyzes sql (a public-table query, MySQL front end)
// for a MySQL backend, or another dialect.
func passthroughOf(t *testing.T, sql string, d Dialect) *Passthrough {
	t.Helper()
	stmts, err := Parse(sql, MySQLFrontEnd)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	q, err := Analyze(stmts[0], testPolicy(t), Options{Dialect: d, Epsilon: 1, FrontEnd: MySQLFrontEnd})
	if err != nil || q.Passthrough == nil {
		t.Fatalf("%s: %v %v", sql, q, err)
	}
	return q.Passthrough
}

// shapeOf is sql's shape (passthroughOf).
func shapeOf(t *testing.T, sql string, d Dialect) string {
	t.Helper()
	return passthroughOf(t, sql, d).Shape
}

// TestUnionShape: queries that differ in constants outside what they
// select share a shape; one that selects a constant, a cast or a window,
// sorts, groups or is not one plain SELECT has none, and none but a
// MySQL backend's queries have one.
func TestUnionShape(t *testing.T) {
	for _, group := range [][]string{
		{
			"SELECT clinic_id, name, city FROM clinics WHERE clinic_id = 1",
			"select clinic_id, name, city from clinics where clinic_id = 25",
			"SELECT clinic_id, name, city FROM clinics WHERE clinic_id = ?",
		},
		{
			"SELECT name FROM clinics WHERE city = 'Oakford' LIMIT 5",
			"SELECT name FROM clinics WHERE city = 'it''s' LIMIT 1",
		},
		{
			"SELECT COUNT(*) FROM clinics WHERE clinic_id IN (1, 2)",
			"SELECT COUNT(*) FROM clinics WHERE clinic_id IN (3, 4)",
		},
		{
			"SELECT c.name FROM clinics c WHERE c.clinic_id IN (SELECT clinic_id FROM clinics WHERE city = 'a')",
			"SELECT c.name FROM clinics c WHERE c.clinic_id IN (SELECT clinic_id FROM clinics WHERE city = 'b')",
		},
	} {
		first := shapeOf(t, group[0], MySQL)
		if first == "" {
			t.Errorf("%s: no shape", group[0])
			continue
		}
		for _, sql := range group[1:] {
			if got := shapeOf(t, sql, MySQL); got != first {
				t.Errorf("%s: shape %q, want that of %s, %q", sql, got, group[0], first)
			}
		}
	}
	for _, pair := range [][2]string{
		{"SELECT name FROM clinics WHERE clinic_id = 1", "SELECT city FROM clinics WHERE clinic_id = 1"},
		{"SELECT name FROM clinics WHERE clinic_id = 1", "SELECT Name FROM clinics WHERE clinic_id = 1"},
		{"SELECT name FROM clinics WHERE clinic_id IN (1, 2)", "SELECT name FROM clinics WHERE clinic_id IN (1, 2, 3)"},
		{"SELECT name FROM clinics WHERE city = 'a'", "SELECT name FROM clinics WHERE city = `a`"},
	} {
		if a, b := shapeOf(t, pair[0], MySQL), shapeOf(t, pair[1], MySQL); a == b {
			t.Errorf("%s and %s: one shape %q", pair[0], pair[1], a)
		}
	}
	for _, sql := range []string{
		"SELECT clinic_id, 1 FROM clinics WHERE clinic_id = 2",
		"SELECT clinic_id + 1 FROM clinics",
		"SELECT ? FROM clinics WHERE clinic_id = 2",
		"SELECT LEFT(name, 3) FROM clinics",
		"SELECT CAST(name AS CHAR(3)) FROM clinics",
		"SELECT (SELECT 1 FROM clinics LIMIT 1) FROM clinics",
		"SELECT name FROM clinics ORDER BY name",
		"SELECT city, COUNT(*) FROM clinics GROUP BY city",
		"SELECT COUNT(*) FROM clinics HAVING COUNT(*) > 1",
		"SELECT DISTINCT city FROM clinics",
		"SELECT name, ROW_NUMBER() OVER (ORDER BY clinic_id) FROM clinics",
		"SELECT name FROM clinics UNION ALL SELECT city FROM clinics",
		"SELECT NOW()",
		"SELECT /*+ MAX_EXECUTION_TIME(10) */ name FROM clinics WHERE clinic_id = 1",
		"SELECT HIGH_PRIORITY name FROM clinics WHERE clinic_id = 1",
		"SELECT SQL_NO_CACHE name FROM clinics WHERE clinic_id = 1",
		"SELECT SQL_BUFFER_RESULT name FROM clinics WHERE clinic_id = 1",
		"SELECT SQL_SMALL_RESULT name FROM clinics WHERE clinic_id = 1",
		"SELECT STRAIGHT_JOIN name FROM clinics WHERE clinic_id = 1",
		"SELECT SQL_CALC_FOUND_ROWS name FROM clinics WHERE clinic_id = 1",
		"SELECT * FROM (VALUES ROW(1, 'a')) AS v",
		"SELECT * FROM (TABLE clinics) AS c",
	} {
		if got := shapeOf(t, sql, MySQL); got != "" {
			t.Errorf("%s: shape %q, want none", sql, got)
		}
	}
	stmts, err := Parse("WITH c AS (SELECT name FROM clinics) SELECT name FROM c", MySQLFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	if unionSafe(stmts[0].(*ast.SelectStmt)) {
		t.Error("a query with a WITH clause can be a branch")
	}
	if got := shapeOf(t, "SELECT name FROM clinics WHERE clinic_id = 1", Postgres); got != "" {
		t.Errorf("a PostgreSQL backend's query has shape %q", got)
	}
}

func TestMaskConstants(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{"SELECT `a` FROM `t` WHERE `b`=1", "SELECT `a` FROM `t` WHERE `b`=?"},
		{"SELECT `A1` FROM `t2` WHERE `b`=-1.5e-3 AND `c`=.5 AND `d`=0x1F", "SELECT `A1` FROM `t2` WHERE `b`=-? AND `c`=? AND `d`=?"},
		{"SELECT `a` FROM `t` WHERE `s`='it''s' AND `u`='back" + `\\slash\\` + "' AND `v`=_UTF8MB4'x'", "SELECT `a` FROM `t` WHERE `s`=? AND `u`=? AND `v`=_UTF8MB4?"},
		{"SELECT `a` FROM `t` WHERE `s`='q" + `\'` + "s' AND `b`=2", "SELECT `a` FROM `t` WHERE `s`=? AND `b`=?"},
		{"SELECT `we``ird 1` FROM `t` LIMIT 5,10", "SELECT `we``ird 1` FROM `t` LIMIT ?,?"},
		{"SELECT `a` FROM `t` WHERE `b` IN (1,2) AND LOG10(`c`)>X'0A'", "SELECT `a` FROM `t` WHERE `b` IN (?,?) AND LOG10(`c`)>X?"},
		{"SELECT `a` FROM `t` WHERE `b`='unterminated", "SELECT `a` FROM `t` WHERE `b`=?"},
	} {
		if got := maskConstants(c.sql); got != c.want {
			t.Errorf("maskConstants(%q) = %q, want %q", c.sql, got, c.want)
		}
	}
}

// lookupOf is sql's Lookup (passthroughOf).
func lookupOf(t *testing.T, sql string, d Dialect) Lookup {
	t.Helper()
	return passthroughOf(t, sql, d).Lookup
}

// TestLookupShape: a plain SELECT of columns from one table whose WHERE
// is only an integer literal or a parameter compared with = to a column
// is a lookup by key, lookups of one shape sharing their prefix; anything
// that would not give each key's rows alone in a list of keys is not.
func TestLookupShape(t *testing.T) {
	for _, c := range []struct{ sql, prefix, key string }{
		{"SELECT clinic_id, name, city FROM clinics WHERE clinic_id = 5",
			"SELECT `clinic_id`, `name`, `city`,`clinic_id` AS `dpproxy_key` FROM `clinics` WHERE `clinic_id` IN (", "5"},
		{"select clinic_id, name, city from clinics where clinic_id = 0017",
			"SELECT `clinic_id`, `name`, `city`,`clinic_id` AS `dpproxy_key` FROM `clinics` WHERE `clinic_id` IN (", "17"},
		{"SELECT name AS n, c.city FROM clinics c WHERE 9 = c.clinic_id",
			"SELECT `name` AS `n`, `c`.`city`,`c`.`clinic_id` AS `dpproxy_key` FROM `clinics` AS `c` WHERE `c`.`clinic_id` IN (", "9"},
		{"SELECT * FROM clinics WHERE clinic_id = ?",
			"SELECT *,`clinic_id` AS `dpproxy_key` FROM `clinics` WHERE `clinic_id` IN (", ""},
		{"SELECT c.* FROM clinics AS c USE INDEX (PRIMARY) WHERE c.clinic_id = 18446744073709551615",
			"SELECT `c`.*,`c`.`clinic_id` AS `dpproxy_key` FROM `clinics` AS `c` USE INDEX (`PRIMARY`) WHERE `c`.`clinic_id` IN (", "18446744073709551615"},
	} {
		got := lookupOf(t, c.sql, MySQL)
		if got.Prefix != c.prefix || got.Key != c.key {
			t.Errorf("%s:\n got %q key %q\nwant %q key %q", c.sql, got.Prefix, got.Key, c.prefix, c.key)
		}
	}
	for _, sql := range []string{
		"SELECT COUNT(*) FROM clinics WHERE clinic_id = 5",  // an aggregate counts every key's rows
		"SELECT MAX(name) FROM clinics WHERE clinic_id = 5", // likewise
		"SELECT name FROM clinics WHERE clinic_id = 5 LIMIT 1",
		"SELECT LEFT(name, 3) FROM clinics WHERE clinic_id = 5",
		"SELECT name, (SELECT city FROM clinics WHERE clinic_id = 1) FROM clinics WHERE clinic_id = 5",
		"SELECT name FROM clinics WHERE clinic_id = 5 AND city = 'a'",
		"SELECT name FROM clinics WHERE clinic_id = 5 OR clinic_id = 6",
		"SELECT name FROM clinics WHERE (clinic_id = 5)",
		"SELECT name FROM clinics WHERE clinic_id > 5",
		"SELECT name FROM clinics WHERE clinic_id IN (5, 6)",
		"SELECT name FROM clinics WHERE clinic_id = '5'", // a string: '5x' = 5
		"SELECT name FROM clinics WHERE clinic_id = 5.0",
		"SELECT name FROM clinics WHERE clinic_id = 1e1",
		"SELECT name FROM clinics WHERE clinic_id = -5",
		"SELECT name FROM clinics WHERE clinic_id = TRUE",
		"SELECT name FROM clinics WHERE clinic_id = 0x1F",
		"SELECT name FROM clinics WHERE clinic_id = 99999999999999999999999",
		"SELECT name FROM clinics WHERE clinic_id = clinic_id",
		"SELECT name FROM clinics WHERE clinic_id = 5 + 1",
		"SELECT name FROM clinics",
		"SELECT a.name FROM clinics a JOIN clinics b ON a.clinic_id = b.clinic_id WHERE a.clinic_id = 5",
		"SELECT a.name FROM clinics a, clinics b WHERE a.clinic_id = 5",
		"SELECT name FROM (SELECT * FROM clinics) AS c WHERE clinic_id = 5",
		"SELECT name FROM clinics WHERE clinic_id = 5 ORDER BY name",
		"SELECT DISTINCT name FROM clinics WHERE clinic_id = 5",
		"SELECT SQL_NO_CACHE name FROM clinics WHERE clinic_id = 5",
		"SELECT name FROM clinics WHERE clinic_id = 5 GROUP BY name",
		"SELECT name FROM clinics WHERE clinic_id = 5 HAVING name > 'a'",
	} {
		if got := lookupOf(t, sql, MySQL); got != (Lookup{}) {
			t.Errorf("%s: lookup %+v, want none", sql, got)
		}
		// lookupShape refuses it by itself too, union shape or not.
		stmts, err := Parse(sql, MySQLFrontEnd)
		if err != nil {
			t.Fatal(err)
		}
		if got := lookupShape(stmts[0], MySQL); got != (Lookup{}) {
			t.Errorf("%s: lookupShape gives %+v, want none", sql, got)
		}
	}
	if got := lookupOf(t, "SELECT name FROM clinics WHERE clinic_id = 5", Postgres); got != (Lookup{}) {
		t.Errorf("a PostgreSQL backend's query has lookup %+v", got)
	}
	// A locking read never reaches it (dpproxy is read-only), and would
	// be none either.
	stmts, err := Parse("SELECT name FROM clinics WHERE clinic_id = 5 FOR UPDATE", MySQLFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	if got := lookupShape(stmts[0], MySQL); got != (Lookup{}) {
		t.Errorf("FOR UPDATE: lookupShape gives %+v, want none", got)
	}
}
