package backend

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// A statement with parameters is prepared once per backend connection and
// executed again afterwards (the server counts one COM_STMT_PREPARE for
// many executions), gives the same rows as before, survives a change of
// its table, and the cache is bounded.
func TestMySQLPreparedStatementCache(t *testing.T) {
	dsn := mysqlDSN(t)
	name, dbDSN := mysqlDatabase(t, dsn)
	m := openMySQLT(t, dbDSN, 1)
	ctx := context.Background()
	status := func(v string) int64 {
		t.Helper()
		rows, err := m.Query(ctx, "SHOW SESSION STATUS LIKE '"+v+"'")
		if err != nil || len(rows.Values) != 1 {
			t.Fatalf("SHOW STATUS: %v %v", rows, err)
		}
		var n int64
		fmt.Sscan(rows.Values[0][1].(string), &n)
		return n
	}
	q := "SELECT id, v FROM t WHERE id = ?"
	prepares := status("Com_stmt_prepare")
	for i := 0; i < 5; i++ {
		rows, err := m.Query(ctx, q, int64(i%3+1))
		if err != nil {
			t.Fatal(err)
		}
		if want := [][]any{{int64(i%3 + 1), string(rune('a' + i%3))}}; !reflect.DeepEqual(rows.Values, want) {
			t.Fatalf("execution %d: %v, want %v", i, rows.Values, want)
		}
	}
	if got := status("Com_stmt_prepare") - prepares; got != 1 {
		t.Errorf("5 executions prepared %d times, want once", got)
	}
	if got := status("Com_stmt_close"); got != 0 {
		t.Errorf("%d statements closed, want none", got)
	}

	// The table changes under the prepared statement.
	cfg, _ := mysql.ParseDSN(dsn)
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("ALTER TABLE `" + name + "`.t MODIFY v VARCHAR(20)"); err != nil {
		t.Fatal(err)
	}
	rows, err := m.Query(ctx, q, int64(2))
	if err != nil || len(rows.Values) != 1 || rows.Values[0][1] != "b" {
		t.Errorf("after ALTER TABLE: %v %v", rows, err)
	}

	// More statements than the cache holds: the oldest are closed.
	for i := 0; i < mysqlStmtCacheSize+3; i++ {
		if _, err := m.Query(ctx, fmt.Sprintf("SELECT id + %d FROM t WHERE id = ?", i), int64(1)); err != nil {
			t.Fatal(err)
		}
	}
	if got := status("Com_stmt_close"); got < 3 {
		t.Errorf("%d statements closed after overflowing the cache, want at least 3", got)
	}
}
