package session

import (
	"context"
	"testing"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// MySQL clients' session and catalog questions are answered by the session,
// without the backend and at no cost.
func TestMySQLSessionStatements(t *testing.T) {
	e, acct, be := engineFixture(t)
	serverFor(t, e) // the catalog is built at start, while the backend is up
	be.Close()      // none of this may need the backend
	ctx := context.Background()
	s, _ := New(serverFor(t, e), "ana", rewrite.MySQLFrontEnd)
	if err := s.UseDatabase("unused"); err != nil { // the SQLite file's name
		t.Fatal(err)
	}
	one := func(sql string) *sqltypes.Result {
		t.Helper()
		res, err := s.Execute(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return res[0]
	}
	for _, sql := range []string{"SET NAMES utf8mb4", "SET CHARACTER SET utf8", "SET autocommit=0", "SET SESSION sql_mode='TRADITIONAL'",
		"SET character_set_results = NULL", "SET @@session.wait_timeout = 10", "SET @v = 'x'", "SET SQL_AUTO_IS_NULL = 0"} {
		if r := one(sql); r.Tag != "SET" {
			t.Errorf("%s: tag %q", sql, r.Tag)
		}
	}
	if s.Autocommit() {
		t.Error("autocommit still on")
	}
	// MariaDB Connector/J's connection setup.
	one("SET autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')")
	if r := one("SELECT @@sql_mode"); r.Rows[0][0] != "TRADITIONAL,STRICT_TRANS_TABLES" || !s.Autocommit() {
		t.Errorf("SET ... concat(@@sql_mode, ...): %v, autocommit %v", r.Rows, s.Autocommit())
	}
	one("SET autocommit=0, sql_mode = 'TRADITIONAL'")
	r := one("SELECT @@version_comment limit 1")
	if r.Columns[0].Name != "@@version_comment" || r.Rows[0][0] != mysqlVersionComment {
		t.Errorf("version_comment: %+v", r)
	}
	r = one("SELECT @@session.auto_increment_increment AS auto_increment_increment, @@character_set_results, @@wait_timeout, @@sql_mode, @v, @@session.transaction_read_only")
	want := []any{int64(1), nil, int64(10), "TRADITIONAL", "x", int64(1)}
	for i, w := range want {
		if r.Rows[0][i] != w {
			t.Errorf("column %s = %#v, want %#v", r.Columns[i].Name, r.Rows[0][i], w)
		}
	}
	if r.Columns[0].Name != "auto_increment_increment" || r.Columns[0].Type != sqltypes.Int8 {
		t.Errorf("column 0: %+v", r.Columns[0])
	}
	r = one("SELECT VERSION(), DATABASE(), USER(), CONNECTION_ID()")
	if r.Rows[0][0] != MySQLServerVersion || r.Rows[0][1] != "unused" || r.Rows[0][2] != "ana@%" {
		t.Errorf("functions: %v", r.Rows)
	}
	if r := one("SHOW TABLES"); len(r.Rows) != 2 || r.Columns[0].Name != "Tables_in_unused" {
		t.Errorf("SHOW TABLES: %+v", r)
	}
	if r := one("SHOW FULL TABLES LIKE 'vis%'"); len(r.Rows) != 1 || r.Rows[0][1] != "BASE TABLE" {
		t.Errorf("SHOW FULL TABLES: %+v", r)
	}
	r = one("DESCRIBE visits")
	if len(r.Rows) != 4 || r.Rows[2][0] != "cost" || r.Rows[2][1] != "decimal(65,30)" {
		t.Errorf("DESCRIBE: %+v", r.Rows)
	}
	if r := one("SHOW FULL COLUMNS FROM visits"); len(r.Columns) != 9 {
		t.Errorf("SHOW FULL COLUMNS: %+v", r.Columns)
	}
	if r := one("SHOW DATABASES"); len(r.Rows) != 2 {
		t.Errorf("SHOW DATABASES: %+v", r.Rows)
	}
	if r := one("SHOW VARIABLES LIKE 'character_set_%'"); len(r.Rows) < 5 {
		t.Errorf("SHOW VARIABLES: %+v", r.Rows)
	}
	for _, sql := range []string{"SHOW COLLATION", "SHOW CHARSET", "SHOW CHARACTER SET", "SHOW WARNINGS", "SHOW ENGINES", "SHOW SESSION VARIABLES"} {
		if r := one(sql); len(r.Columns) == 0 {
			t.Errorf("%s: no columns", sql)
		}
	}
	for sql, code := range map[string]sqlerr.Code{
		"USE other":                             sqlerr.InvalidCatalogName,
		"SET GLOBAL wait_timeout = 1":           sqlerr.InsufficientPrivilege,
		"SET sql_mode = 'NO_BACKSLASH_ESCAPES'": sqlerr.FeatureNotSupported,
		"SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')": sqlerr.FeatureNotSupported,
		"SET sql_mode = LOWER('ANSI')":                               sqlerr.FeatureNotSupported,
		"SHOW COLUMNS FROM nosuch":                                   sqlerr.UndefinedTable,
	} {
		if _, err := s.Execute(ctx, sql); err == nil || sqlerr.As(err).Code != code {
			t.Errorf("%s: %v, want %s", sql, err, code)
		}
	}
	// Prepared: described without changing the session.
	p, err := s.Prepare(ctx, "SET autocommit=1", nil)
	if err != nil || s.Autocommit() || p.Tag != "SET" {
		t.Errorf("Prepare SET: %v %+v", err, p)
	}
	if _, err := s.ExecutePrepared(ctx, p, nil); err != nil || !s.Autocommit() {
		t.Errorf("ExecutePrepared SET: %v", err)
	}
	p, err = s.Prepare(ctx, "SELECT @@version", nil)
	if err != nil || len(p.Columns) != 1 {
		t.Errorf("Prepare SELECT @@version: %v %+v", err, p)
	}
	// dpproxy's own settings still work.
	one("SET dpproxy.epsilon = 0.25")
	if s.Epsilon() != 0.25 {
		t.Errorf("epsilon %v", s.Epsilon())
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != 0 {
		t.Errorf("charged %v", st.Spent)
	}
}

func TestLikeMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{{"%", "", true}, {"a%", "abc", true}, {"a_c", "abc", true}, {"a_c", "abbc", false}, {`a\%`, "a%", true}, {`a\%`, "ab", false}, {"%sql%", "my_sql_mode", true}} {
		if got := likeMatch(c.p, c.s); got != c.want {
			t.Errorf("%q LIKE %q = %v", c.s, c.p, got)
		}
	}
}
