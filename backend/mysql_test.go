package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// mysqlDSN returns the test server's DSN or skips the test.
func mysqlDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("DPPROXY_TEST_MYSQL_DSN")
	if dsn == "" {
		t.Skip("DPPROXY_TEST_MYSQL_DSN not set: skipping MySQL/MariaDB test (scripts/test.sh starts a throwaway MariaDB)")
	}
	return dsn
}

// mysqlDatabase creates a fresh database with a table t(id, v, d, c)
// holding three rows, through an ordinary (writable) connection, and
// returns its name and a DSN that selects it.
func mysqlDatabase(t *testing.T, dsn string) (name, dbDSN string) {
	t.Helper()
	ctx := context.Background()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin := mysqlAdmin(t, dsn)
	name = fmt.Sprintf("backend_test_%d", time.Now().UnixNano())
	cfg.DBName = name
	for _, s := range []string{
		"CREATE DATABASE `" + name + "`",
		"CREATE TABLE `" + name + "`.t (id INT PRIMARY KEY, v VARCHAR(10), d DATE, c DECIMAL(10,2))",
		"INSERT INTO `" + name + "`.t VALUES (1, 'a', '2024-01-01', 10.50), (2, 'b', '2024-06-30', 20.00), (3, 'c', '2025-01-01', 30.25)",
	} {
		if _, err := admin.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() { // runs before admin.Close above
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE `"+name+"`"); err != nil {
			t.Errorf("drop database: %v", err)
		}
	})
	return name, cfg.FormatDSN()
}

func openMySQLT(t *testing.T, dsn string, maxConns int) *MySQL {
	t.Helper()
	m, err := OpenMySQL(context.Background(), dsn, maxConns)
	if err != nil {
		t.Fatalf("OpenMySQL: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestMySQLConfigForcesOptions(t *testing.T) {
	cfg, err := mysqlConfig("u:p@tcp(db:3306)/x?parseTime=false&interpolateParams=true&multiStatements=true&allowAllFiles=true&sql_mode=%27ANSI_QUOTES%27&time_zone=%27%2B02:00%27&autocommit=0&tx_isolation=%27READ-UNCOMMITTED%27&wait_timeout=60")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.ParseTime || cfg.InterpolateParams || cfg.MultiStatements || cfg.AllowAllFiles || cfg.Loc != time.UTC {
		t.Errorf("options not forced: %+v", cfg)
	}
	if cfg.Timeout != defaultConnectTimeout {
		t.Errorf("connect timeout %v, want %v", cfg.Timeout, defaultConnectTimeout)
	}
	if want := map[string]string{"wait_timeout": "60"}; !reflect.DeepEqual(cfg.Params, want) {
		t.Errorf("params %v, want %v", cfg.Params, want)
	}
	if _, err := OpenMySQL(context.Background(), "not a dsn", 1); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("OpenMySQL(bad dsn): err = %v, want a configuration error", err)
	}
}

func TestMySQLColumnDecoders(t *testing.T) {
	d := time.Date(2024, 2, 3, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   any
		typ  sqltypes.Type
		want any
	}{
		{"TINYINT", int64(1), sqltypes.Int2, int64(1)},
		{"INT", []byte("-7"), sqltypes.Int4, int64(-7)},
		{"UNSIGNED INT", uint64(4000000000), sqltypes.Int8, int64(4000000000)},
		{"BIGINT", int64(-9007199254740993), sqltypes.Int8, int64(-9007199254740993)},
		{"UNSIGNED BIGINT", uint64(18446744073709551615), sqltypes.Numeric, sqltypes.Decimal("18446744073709551615")},
		{"DECIMAL", []byte("0012.50"), sqltypes.Numeric, sqltypes.Decimal("12.50")},
		{"DECIMAL", []byte("-0.00"), sqltypes.Numeric, sqltypes.Decimal("0.00")},
		{"FLOAT", float32(0.1), sqltypes.Float4, 0.1},
		{"DOUBLE", []byte("1e300"), sqltypes.Float8, 1e300},
		{"VARCHAR", []byte("héllo"), sqltypes.Text, "héllo"},
		{"DATE", d, sqltypes.Date, d},
		{"DATE", time.Time{}, sqltypes.Date, "0000-00-00"},
		{"DATETIME", []byte("2024-02-03 04:05:06.5"), sqltypes.Timestamp, time.Date(2024, 2, 3, 4, 5, 6, 5e8, time.UTC)},
		{"VARBINARY", []byte{0, 0xff}, sqltypes.Text, `\x00ff`},
		{"TIME", []byte("-838:59:59"), sqltypes.Text, "-838:59:59"},
	} {
		typ, dec := mysqlColumnDecoder(tc.name)
		if got := dec(tc.in); typ != tc.typ || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %#v: %v %#v, want %v %#v", tc.name, tc.in, typ, got, tc.typ, tc.want)
		}
	}
}

func TestMySQLTypes(t *testing.T) {
	name, dsn := mysqlDatabase(t, mysqlDSN(t))
	m := openMySQLT(t, dsn, 2)
	rows := mustQuery(t, m, `SELECT
		CAST(9007199254740993 AS SIGNED) AS i8, 2 AS lit, CAST(18446744073709551615 AS UNSIGNED) AS u8, TRUE AS b,
		1.5e0 AS f8, CAST(0.1 AS FLOAT) AS f4,
		CAST(1234.5 AS DECIMAL(10,2)) AS n, -0.5 AS nneg, 123456789012345678901234567890.000001 AS nbig,
		'héllo' AS t, CAST('v' AS CHAR(5)) AS vc, X'00FF' AS bin,
		DATE '2024-03-01' AS d, TIMESTAMP '2024-03-01 10:11:12.123456' AS ts,
		CAST('2024-03-01 10:11:12' AS DATETIME) AS dt, TIME '12:34:56' AS tm,
		NULL AS nul`)
	want := []Column{
		{Name: "i8", Type: sqltypes.Int8}, {Name: "lit", Type: sqltypes.Int4}, {Name: "u8", Type: sqltypes.Numeric}, {Name: "b", Type: sqltypes.Int4},
		{Name: "f8", Type: sqltypes.Float8}, {Name: "f4", Type: sqltypes.Float4},
		{Name: "n", Type: sqltypes.Numeric}, {Name: "nneg", Type: sqltypes.Numeric}, {Name: "nbig", Type: sqltypes.Numeric},
		{Name: "t", Type: sqltypes.Text}, {Name: "vc", Type: sqltypes.Text}, {Name: "bin", Type: sqltypes.Text},
		{Name: "d", Type: sqltypes.Date}, {Name: "ts", Type: sqltypes.Timestamp}, {Name: "dt", Type: sqltypes.Timestamp}, {Name: "tm", Type: sqltypes.Text},
		{Name: "nul", Type: sqltypes.Text},
	}
	if !reflect.DeepEqual(rows.Columns, want) {
		t.Errorf("columns:\n got %v\nwant %v", rows.Columns, want)
	}
	wantRow := []any{
		int64(9007199254740993), int64(2), sqltypes.Decimal("18446744073709551615"), int64(1),
		1.5, 0.1,
		sqltypes.Decimal("1234.50"), sqltypes.Decimal("-0.5"), sqltypes.Decimal("123456789012345678901234567890.000001"),
		"héllo", "v", `\x00ff`,
		time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 3, 1, 10, 11, 12, 123456000, time.UTC),
		time.Date(2024, 3, 1, 10, 11, 12, 0, time.UTC), "12:34:56",
		nil,
	}
	if len(rows.Values) != 1 || !reflect.DeepEqual(rows.Values[0], wantRow) {
		t.Errorf("values:\n got %#v\nwant %#v", rows.Values, wantRow)
	}

	// Table columns, aggregates, and the same through server-side
	// prepared statements (binary protocol, with an argument).
	for _, args := range [][]any{nil, {int64(0)}} {
		q := "SELECT id, v, d, c, COUNT(*) OVER () AS n, SUM(c) OVER () AS s, AVG(id) OVER () AS a FROM `" + name + "`.t"
		if args != nil {
			q += " WHERE id > ?"
		}
		rows = mustQuery(t, m, q+" ORDER BY id", args...)
		wantCols := []Column{{Name: "id", Type: sqltypes.Int4}, {Name: "v", Type: sqltypes.Text}, {Name: "d", Type: sqltypes.Date}, {Name: "c", Type: sqltypes.Numeric},
			{Name: "n", Type: sqltypes.Int8}, {Name: "s", Type: sqltypes.Numeric}, {Name: "a", Type: sqltypes.Numeric}}
		if !reflect.DeepEqual(rows.Columns, wantCols) {
			t.Errorf("args %v: columns %v, want %v", args, rows.Columns, wantCols)
		}
		wantVals := [][]any{
			{int64(1), "a", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), sqltypes.Decimal("10.50"), int64(3), sqltypes.Decimal("60.75"), sqltypes.Decimal("2.0000")},
			{int64(2), "b", time.Date(2024, 6, 30, 0, 0, 0, 0, time.UTC), sqltypes.Decimal("20.00"), int64(3), sqltypes.Decimal("60.75"), sqltypes.Decimal("2.0000")},
			{int64(3), "c", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), sqltypes.Decimal("30.25"), int64(3), sqltypes.Decimal("60.75"), sqltypes.Decimal("2.0000")},
		}
		if !reflect.DeepEqual(rows.Values, wantVals) {
			t.Errorf("args %v: values\n got %#v\nwant %#v", args, rows.Values, wantVals)
		}
	}

	// Arguments of every normalized Go type bind.
	d := time.Date(2024, 6, 30, 0, 0, 0, 0, time.UTC)
	rows = mustQuery(t, m, "SELECT COUNT(*) FROM `"+name+"`.t WHERE d >= ? AND c > ? AND v <> ? AND id < ?",
		d, sqltypes.Decimal("19.99"), "zz", int64(10))
	if !reflect.DeepEqual(rows.Values, [][]any{{int64(2)}}) {
		t.Errorf("bound arguments: %#v", rows.Values)
	}
	// The strings the MySQL dialect writes: backslash escapes, doubled
	// quotes, backquoted identifiers.
	rows = mustQuery(t, m, "SELECT 'a\\\\b''c' AS `we``ird`, 'x\"y' AS q")
	if !reflect.DeepEqual(rows.Values, [][]any{{`a\b'c`, `x"y`}}) || rows.Columns[0].Name != "we`ird" {
		t.Errorf("quoting: %v %#v", rows.Columns, rows.Values)
	}
}

func TestMySQLReadOnly(t *testing.T) {
	name, dsn := mysqlDatabase(t, mysqlDSN(t))
	m := openMySQLT(t, dsn, 1) // one connection: every statement below shares it
	ctx := context.Background()
	tbl := "`" + name + "`.t"

	rows := mustQuery(t, m, `SELECT @@SESSION.sql_mode, @@SESSION.time_zone, @@SESSION.tx_isolation`)
	if !reflect.DeepEqual(rows.Values, [][]any{{mysqlSQLMode, "+00:00", "REPEATABLE-READ"}}) {
		t.Errorf("session: %#v", rows.Values)
	}
	// A statement that changes the session default does not open the
	// door for the next one: a connection on which a statement returned
	// no result set is discarded.
	for _, q := range []string{`SET SESSION TRANSACTION READ WRITE`, `SET SESSION sql_mode = 'ANSI_QUOTES'`} {
		_, _ = m.Query(ctx, q)
	}
	for _, q := range []string{
		`INSERT INTO ` + tbl + ` VALUES (9, 'z', NULL, NULL)`,
		`UPDATE ` + tbl + ` SET v = 'q'`,
		`DELETE FROM ` + tbl,
		`REPLACE INTO ` + tbl + ` VALUES (1, 'z', NULL, NULL)`,
		`TRUNCATE ` + tbl,
		`CREATE TABLE ` + "`" + name + "`" + `.u (x INT)`,
		`CREATE TEMPORARY TABLE ` + "`" + name + "`" + `.tmp (x INT)`,
		`DROP TABLE ` + tbl,
		`CREATE DATABASE ` + "`" + name + "_2`",
		`SELECT 1; INSERT INTO ` + tbl + ` VALUES (9, 'z', NULL, NULL)`,
		`COMMIT; INSERT INTO ` + tbl + ` VALUES (9, 'z', NULL, NULL)`,
		`LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE ` + tbl,
	} {
		_, err := m.Query(ctx, q)
		if err == nil {
			t.Errorf("%q succeeded on a read-only backend", q)
			continue
		}
		if errors.Is(err, ErrUnavailable) {
			t.Errorf("%q: refusal reported as ErrUnavailable: %v", q, err)
		}
		if testing.Verbose() {
			t.Logf("%s: %v", q, err)
		}
	}
	rows = mustQuery(t, m, `SELECT @@SESSION.sql_mode, @@SESSION.tx_read_only`)
	if !reflect.DeepEqual(rows.Values, [][]any{{mysqlSQLMode, int64(1)}}) {
		t.Errorf("session after SETs: %#v, want the connection's setup", rows.Values)
	}
	var me *mysql.MySQLError
	if _, err := m.Query(ctx, `INSERT INTO `+tbl+` VALUES (9, 'z', NULL, NULL)`); !errors.As(err, &me) || me.Number != 1792 {
		t.Errorf("INSERT: err = %v, want error 1792 (ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION)", err)
	}
	rows = mustQuery(t, m, `SELECT COUNT(*), GROUP_CONCAT(v ORDER BY id SEPARATOR ',') FROM `+tbl)
	if !reflect.DeepEqual(rows.Values, [][]any{{int64(3), "a,b,c"}}) {
		t.Errorf("table changed: %#v", rows.Values)
	}
	rows = mustQuery(t, m, `SHOW TABLES FROM `+"`"+name+"`")
	if len(rows.Values) != 1 {
		t.Errorf("tables: %#v", rows.Values)
	}
}

func TestMySQLErrors(t *testing.T) {
	m := openMySQLT(t, mysqlDSN(t), 1)
	ctx := context.Background()
	for _, q := range []string{`SELEC 1`, `SELECT nope`, `SELECT * FROM no_such_db.t`} {
		_, err := m.Query(ctx, q)
		if err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: err = %v, want a statement error", q, err)
		}
	}
	// A canceled statement is not unavailability; the backend keeps
	// working.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Query(cctx, `SELECT SLEEP(20)`)
	if err == nil || errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("canceled SLEEP: err = %v, want the context's error (DeadlineExceeded), not ErrUnavailable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancel took %v", d)
	}
	if rows := mustQuery(t, m, `SELECT CAST(1 AS SIGNED)`); !reflect.DeepEqual(rows.Values, [][]any{{int64(1)}}) {
		t.Errorf("after cancel: %#v", rows.Values)
	}
	// The same for a statement with parameters (a prepared statement the
	// connection keeps), canceled by its caller.
	cctx2, cancel2 := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancel2)
	start = time.Now()
	_, err = m.Query(cctx2, `SELECT SLEEP(?)`, int64(20))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Errorf("canceled prepared SLEEP: err = %v, want context.Canceled, not ErrUnavailable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancel took %v", d)
	}
	if rows := mustQuery(t, m, `SELECT CAST(2 AS SIGNED)`); !reflect.DeepEqual(rows.Values, [][]any{{int64(2)}}) {
		t.Errorf("after the second cancel: %#v", rows.Values)
	}
}

func TestMySQLUnavailable(t *testing.T) {
	ctx := context.Background()
	const closed = "root@tcp(127.0.0.1:1)/x?timeout=2s"
	if _, err := OpenMySQL(ctx, closed, 1); !errors.Is(err, ErrUnavailable) {
		t.Errorf("OpenMySQL(closed port): err = %v, want ErrUnavailable", err)
	}
	m, err := newMySQL(closed, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Query(ctx, `SELECT 1`); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Query(closed port): err = %v, want ErrUnavailable", err)
	}
	if err := m.Ping(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ping(closed port): err = %v, want ErrUnavailable", err)
	}
	m.Close()

	dsn := mysqlDSN(t)
	live := openMySQLT(t, dsn, 1)

	// All connections busy until the deadline: unavailable.
	conn, err := live.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = live.Query(wctx, `SELECT 1`)
	cancel()
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Query with the pool exhausted: err = %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	conn.Close()

	// Already canceled.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := live.Query(cctx, `SELECT 1`); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Query with a canceled context: err = %v, want ErrUnavailable", err)
	}

	// Closed backend.
	closedBackend, err := OpenMySQL(ctx, dsn, 1)
	if err != nil {
		t.Fatal(err)
	}
	closedBackend.Close()
	if _, err := closedBackend.Query(ctx, `SELECT 1`); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Query after Close: err = %v, want ErrUnavailable", err)
	}
}

// TestMySQLServerGone reaches the server through a TCP relay, then takes
// the relay down: the pool's idle connection is found dead and no new one
// can be made.
func TestMySQLServerGone(t *testing.T) {
	cfg, err := mysql.ParseDSN(mysqlDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Net != "tcp" {
		t.Skip("relay test needs a TCP DSN")
	}
	r := startRelay(t, cfg.Addr)
	cfg.Addr = net.JoinHostPort("127.0.0.1", fmt.Sprint(r.port()))
	cfg.Timeout = 2 * time.Second
	m := openMySQLT(t, cfg.FormatDSN(), 2)
	mustQuery(t, m, `SELECT 1`)
	r.stop()
	time.Sleep(100 * time.Millisecond)
	_, err = m.Query(context.Background(), `SELECT 1`)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Query after the server went away: err = %v, want ErrUnavailable", err)
	}
}

func TestMySQLConcurrent(t *testing.T) {
	m := openMySQLT(t, mysqlDSN(t), 3)
	var mu sync.Mutex
	ids := map[any]bool{}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 10 {
				rows, err := m.Query(context.Background(), `SELECT ? * 2, CONNECTION_ID()`, int64(g*100+i))
				if err != nil {
					t.Error(err)
					return
				}
				if got := rows.Values[0][0]; got != int64(2*(g*100+i)) {
					t.Errorf("got %#v", got)
				}
				mu.Lock()
				ids[rows.Values[0][1]] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(ids) > 3 {
		t.Errorf("%d server connections used, want at most 3", len(ids))
	}
	if n := m.db.Stats().Idle; n > 3 {
		t.Errorf("%d idle connections, want at most 3", n)
	}
}
