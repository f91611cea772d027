package backend

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/demo"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// newSQLiteFile creates a database file with the given statements, using
// a read-write connection of its own.
func newSQLiteFile(t *testing.T, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

func openSQLiteT(t *testing.T, path string) *SQLite {
	t.Helper()
	s, err := OpenSQLite(context.Background(), path, 4)
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func mustQuery(t *testing.T, b Backend, q string, args ...any) *Rows {
	t.Helper()
	rows, err := b.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("Query(%q): %v", q, err)
	}
	checkConsistent(t, rows)
	return rows
}

// checkConsistent checks the Rows invariant: every value has its column's
// Go type.
func checkConsistent(t *testing.T, rows *Rows) {
	t.Helper()
	for i, row := range rows.Values {
		if len(row) != len(rows.Columns) {
			t.Fatalf("row %d has %d values, %d columns", i, len(row), len(rows.Columns))
		}
		for j, v := range row {
			if !fits(rows.Columns[j].Type, v) {
				t.Errorf("row %d column %q (%s): value %#v of type %T", i, rows.Columns[j].Name, rows.Columns[j].Type, v, v)
			}
		}
	}
}

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

const typedTable = `CREATE TABLE typed (
	i INTEGER, n_int INT, bi BIGINT, r REAL, dbl DOUBLE, fl FLOAT,
	num NUMERIC, dec DECIMAL(10,2), t TEXT, vc VARCHAR(20), d DATE,
	b BOOLEAN, ts DATETIME, bl BLOB, odd WHATEVER)`

func TestSQLiteTypes(t *testing.T) {
	path := newSQLiteFile(t, typedTable,
		`INSERT INTO typed VALUES (1, 2, 9007199254740993, 1.5, 0.1, -2.25,
			'1234.50', 12.5, 'héllo', 'vc', '2024-03-01',
			1, '2024-03-01 10:11:12', x'616263', 'w')`,
		`INSERT INTO typed VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		`INSERT INTO typed VALUES (-7, 0, -1, 3, 2, 0, 7, 3, '', 'x', '2025-12-31', 0, '2025-01-01', x'', 5)`,
	)
	s := openSQLiteT(t, path)
	rows := mustQuery(t, s, `SELECT * FROM typed ORDER BY rowid`)

	wantTypes := []sqltypes.Type{
		sqltypes.Int8, sqltypes.Int8, sqltypes.Int8, sqltypes.Float8, sqltypes.Float8, sqltypes.Float8,
		sqltypes.Numeric, sqltypes.Numeric, sqltypes.Text, sqltypes.Text, sqltypes.Date,
		sqltypes.Bool, sqltypes.Timestamp, sqltypes.Text, sqltypes.Text,
	}
	wantNames := []string{"i", "n_int", "bi", "r", "dbl", "fl", "num", "dec", "t", "vc", "d", "b", "ts", "bl", "odd"}
	for j, c := range rows.Columns {
		if c.Name != wantNames[j] || c.Type != wantTypes[j] {
			t.Errorf("column %d = %s %s, want %s %s", j, c.Name, c.Type, wantNames[j], wantTypes[j])
		}
	}
	want := [][]any{
		{int64(1), int64(2), int64(9007199254740993), 1.5, 0.1, -2.25,
			sqltypes.Decimal("1234.5"), sqltypes.Decimal("12.5"), "héllo", "vc", date(2024, 3, 1),
			true, time.Date(2024, 3, 1, 10, 11, 12, 0, time.UTC), "abc", "w"},
		make([]any, 15),
		{int64(-7), int64(0), int64(-1), 3.0, 2.0, 0.0,
			sqltypes.Decimal("7"), sqltypes.Decimal("3"), "", "x", date(2025, 12, 31),
			false, date(2025, 1, 1), "", "5"},
	}
	if !reflect.DeepEqual(rows.Values, want) {
		t.Errorf("values:\n got %#v\nwant %#v", rows.Values, want)
	}
}

func TestSQLiteExpressionColumns(t *testing.T) {
	path := newSQLiteFile(t, typedTable,
		`INSERT INTO typed (i, r, t, d) VALUES (1, 1.5, 'a', '2024-01-01'), (2, 2.5, 'b', '2024-01-02'), (3, NULL, NULL, NULL)`)
	s := openSQLiteT(t, path)

	rows := mustQuery(t, s, `SELECT count(*) AS c, sum(r) AS s, 'lit' AS l, NULL AS z, max(d) AS md, avg(i) AS a, sum(i) AS si FROM typed`)
	wantTypes := []sqltypes.Type{sqltypes.Int8, sqltypes.Float8, sqltypes.Text, sqltypes.Text, sqltypes.Text, sqltypes.Float8, sqltypes.Int8}
	for j, c := range rows.Columns {
		if c.Type != wantTypes[j] {
			t.Errorf("column %s: type %s, want %s", c.Name, c.Type, wantTypes[j])
		}
	}
	want := []any{int64(3), 4.0, "lit", nil, "2024-01-02", 2.0, int64(6)}
	if !reflect.DeepEqual(rows.Values[0], want) {
		t.Errorf("values %#v, want %#v", rows.Values[0], want)
	}

	// Mixed integers and reals in an expression column: Float8.
	rows = mustQuery(t, s, `SELECT x FROM (SELECT 1 AS x UNION ALL SELECT 2.5) ORDER BY x`)
	if rows.Columns[0].Type != sqltypes.Float8 || !reflect.DeepEqual(rows.Values, [][]any{{1.0}, {2.5}}) {
		t.Errorf("mixed int/real: %s %#v", rows.Columns[0].Type, rows.Values)
	}
	// Numbers and text: Text.
	rows = mustQuery(t, s, `SELECT x FROM (SELECT 1 AS x UNION ALL SELECT 'b') ORDER BY x`)
	if rows.Columns[0].Type != sqltypes.Text || !reflect.DeepEqual(rows.Values, [][]any{{"1"}, {"b"}}) {
		t.Errorf("mixed int/text: %s %#v", rows.Columns[0].Type, rows.Values)
	}
	// An empty result still has columns.
	rows = mustQuery(t, s, `SELECT i, t FROM typed WHERE 0`)
	if len(rows.Columns) != 2 || rows.Values == nil || len(rows.Values) != 0 {
		t.Errorf("empty result: %#v", rows)
	}
	if rows.Columns[0].Type != sqltypes.Int8 || rows.Columns[1].Type != sqltypes.Text {
		t.Errorf("empty result types: %v", rows.Columns)
	}
}

// TestSQLiteMisfits covers values that do not fit their declared column
// type (SQLite does not enforce declared types).
func TestSQLiteMisfits(t *testing.T) {
	path := newSQLiteFile(t,
		`CREATE TABLE m (i INTEGER, d DATE, n NUMERIC, b BOOLEAN, r REAL)`,
		`INSERT INTO m VALUES (1, '2024-01-01', 1.25, 1, 1.5), ('abc', 'soon', 'many', 2, 'x'), (2.5, '2024-01-02 03:04:05', 2, 0, 2)`,
	)
	s := openSQLiteT(t, path)
	rows := mustQuery(t, s, `SELECT i FROM m ORDER BY rowid`)
	if rows.Columns[0].Type != sqltypes.Text || !reflect.DeepEqual(rows.Values, [][]any{{"1"}, {"abc"}, {"2.5"}}) {
		t.Errorf("INTEGER column with text: %s %#v", rows.Columns[0].Type, rows.Values)
	}
	rows = mustQuery(t, s, `SELECT i FROM m WHERE typeof(i) <> 'text' ORDER BY rowid`)
	if rows.Columns[0].Type != sqltypes.Float8 || !reflect.DeepEqual(rows.Values, [][]any{{1.0}, {2.5}}) {
		t.Errorf("INTEGER column with a real: %s %#v", rows.Columns[0].Type, rows.Values)
	}
	rows = mustQuery(t, s, `SELECT d FROM m WHERE rowid <> 2 ORDER BY rowid`)
	if rows.Columns[0].Type != sqltypes.Timestamp ||
		!reflect.DeepEqual(rows.Values, [][]any{{date(2024, 1, 1)}, {time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}}) {
		t.Errorf("DATE column with a time of day: %s %#v", rows.Columns[0].Type, rows.Values)
	}
	rows = mustQuery(t, s, `SELECT b FROM m ORDER BY rowid`)
	if rows.Columns[0].Type != sqltypes.Int8 || !reflect.DeepEqual(rows.Values, [][]any{{int64(1)}, {int64(2)}, {int64(0)}}) {
		t.Errorf("BOOLEAN column with a 2: %s %#v", rows.Columns[0].Type, rows.Values)
	}
	rows = mustQuery(t, s, `SELECT d, n, r FROM m ORDER BY rowid`)
	for _, c := range rows.Columns {
		if c.Type != sqltypes.Text {
			t.Errorf("column %s: %s, want text", c.Name, c.Type)
		}
	}
	want := [][]any{
		{"2024-01-01", "1.25", "1.5"},
		{"soon", "many", "x"},
		{"2024-01-02 03:04:05", "2", "2"},
	}
	if !reflect.DeepEqual(rows.Values, want) {
		t.Errorf("values %#v, want %#v", rows.Values, want)
	}
}

func TestSQLiteArgs(t *testing.T) {
	path := newSQLiteFile(t, typedTable,
		`INSERT INTO typed (i, t, d, num) VALUES (1, 'a', '2024-01-01', 10.5), (2, 'b', '2024-06-30', 20), (3, 'c', '2025-01-01', 30.25)`)
	s := openSQLiteT(t, path)
	rows := mustQuery(t, s, `SELECT i FROM typed WHERE i >= ? AND t <> ? ORDER BY i`, int64(2), "c")
	if !reflect.DeepEqual(rows.Values, [][]any{{int64(2)}}) {
		t.Errorf("int/text args: %#v", rows.Values)
	}
	rows = mustQuery(t, s, `SELECT i FROM typed WHERE d >= ? AND d < ? ORDER BY i`, date(2024, 1, 1), "2025-01-01")
	if !reflect.DeepEqual(rows.Values, [][]any{{int64(1)}, {int64(2)}}) {
		t.Errorf("date args: %#v", rows.Values)
	}
	rows = mustQuery(t, s, `SELECT i FROM typed WHERE num > ? ORDER BY i`, sqltypes.Decimal("20.00"))
	if !reflect.DeepEqual(rows.Values, [][]any{{int64(3)}}) {
		t.Errorf("decimal arg: %#v", rows.Values)
	}
}

func TestSQLiteReadOnly(t *testing.T) {
	path := newSQLiteFile(t, `CREATE TABLE t (x INTEGER)`, `INSERT INTO t VALUES (1)`)
	other := filepath.Join(t.TempDir(), "other.db")
	s := openSQLiteT(t, path)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO t VALUES (2)`,
		`UPDATE t SET x = 3`,
		`DELETE FROM t`,
		`CREATE TABLE u (y INTEGER)`,
		`CREATE TEMP TABLE u (y INTEGER)`,
		`DROP TABLE t`,
		`PRAGMA query_only = 0`,
		`PRAGMA journal_mode = DELETE`,
		`ATTACH DATABASE '` + other + `' AS o`,
		`ATTACH DATABASE 'file:` + other + `?mode=rwc' AS o`,
		`BEGIN IMMEDIATE`,
		`VACUUM`,
		`SELECT 1; INSERT INTO t VALUES (4)`,
		`WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x`,
	} {
		if _, err := s.Query(ctx, q); err == nil {
			t.Errorf("%q succeeded on a read-only backend", q)
		} else if testing.Verbose() {
			t.Logf("%s: %v", q, err)
		} else if errors.Is(err, ErrUnavailable) {
			t.Errorf("%q: refusal reported as ErrUnavailable: %v", q, err)
		}
	}
	rows := mustQuery(t, s, `SELECT count(*), sum(x) FROM t`)
	if !reflect.DeepEqual(rows.Values, [][]any{{int64(1), int64(1)}}) {
		t.Errorf("table changed: %#v", rows.Values)
	}
	if _, err := os.Stat(other); err == nil {
		t.Error("ATTACH created a file")
	}
	// Introspection pragmas are allowed.
	rows = mustQuery(t, s, `SELECT name, type FROM pragma_table_info('t')`)
	if !reflect.DeepEqual(rows.Values, [][]any{{"x", "INTEGER"}}) {
		t.Errorf("pragma_table_info: %#v", rows.Values)
	}
}

func TestSQLiteUnavailable(t *testing.T) {
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "missing.db")
	_, err := OpenSQLite(ctx, missing, 1)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("OpenSQLite(missing): err = %v, want ErrUnavailable", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("OpenSQLite created the missing file")
	}

	// Not opened eagerly: the query is what fails.
	s, err := newSQLite(missing, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Query(ctx, `SELECT 1`); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Query on missing file: err = %v, want ErrUnavailable", err)
	}

	// A statement error is not unavailability.
	good := openSQLiteT(t, newSQLiteFile(t, `CREATE TABLE t (x INTEGER)`))
	if _, err := good.Query(ctx, `SELECT nope FROM t`); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("bad column: err = %v, want a non-ErrUnavailable error", err)
	}
	// A canceled context: never reached the database.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := good.Query(cctx, `SELECT 1`); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: err = %v, want ErrUnavailable and context.Canceled", err)
	}
}

func TestSQLiteOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "we?ird #dir%20")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.db")
	rw, err := newRW(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Exec(`CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	s := openSQLiteT(t, path)
	rows := mustQuery(t, s, `SELECT x FROM t`)
	if !reflect.DeepEqual(rows.Values, [][]any{{int64(7)}}) {
		t.Errorf("values %#v", rows.Values)
	}
}

// newRW opens path read-write through a URI with the same escaping as the
// backend (a plain file name would be cut at '?').
func newRW(path string) (*sql.DB, error) {
	dsn := sqliteReadOnlyDSN(path)
	return sql.Open("sqlite", dsn[:strings.IndexByte(dsn, '?')]+"?mode=rwc")
}

func TestSQLiteConcurrent(t *testing.T) {
	path := newSQLiteFile(t, `CREATE TABLE t (x INTEGER)`,
		`WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) INSERT INTO t SELECT n FROM c`)
	s := openSQLiteT(t, path)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for range 20 {
				rows, err := s.Query(context.Background(), `SELECT sum(x) + ? FROM t`, int64(g))
				if err != nil {
					t.Error(err)
					return
				}
				if got := rows.Values[0][0]; got != int64(500500+g) {
					t.Errorf("sum = %v", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestSQLiteDemo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLiteWith(context.Background(), path, demo.GenerateOptions{Patients: 100}); err != nil {
		t.Fatal(err)
	}
	s := openSQLiteT(t, path)
	rows := mustQuery(t, s, `SELECT visit_id, visit_date, cost, diagnosis FROM visits ORDER BY visit_id LIMIT 50`)
	want := []sqltypes.Type{sqltypes.Int8, sqltypes.Date, sqltypes.Numeric, sqltypes.Text}
	for j, c := range rows.Columns {
		if c.Type != want[j] {
			t.Errorf("column %s: %s, want %s", c.Name, c.Type, want[j])
		}
	}
	var i int
	for v := range demo.NewDataset(demo.GenerateOptions{Patients: 100}).Visits() {
		if i == 50 {
			break
		}
		row := rows.Values[i]
		if row[0] != v.ID || !row[1].(time.Time).Equal(v.Date) {
			t.Errorf("row %d: %#v, want visit %+v", i, row, v)
		}
		// SQLite keeps no scale: 123.40 reads back as 123.4.
		if got, err := decimalCents(string(row[2].(sqltypes.Decimal))); err != nil || got != v.CostCents {
			t.Errorf("row %d: cost %v, want %s", i, row[2], v.Cost())
		}
		i++
	}
	p, _ := demo.Stats()
	if p != demo.DefaultPatients {
		t.Errorf("demo.Stats patients = %d", p)
	}
}

// decimalCents parses a decimal with at most two places into cents.
func decimalCents(s string) (int64, error) {
	var whole, frac int64
	var fracDigits int
	seenPoint := false
	for _, c := range s {
		switch {
		case c == '.':
			seenPoint = true
		case c >= '0' && c <= '9' && !seenPoint:
			whole = whole*10 + int64(c-'0')
		case c >= '0' && c <= '9' && fracDigits < 2:
			frac = frac*10 + int64(c-'0')
			fracDigits++
		default:
			return 0, errors.New("bad decimal " + s)
		}
	}
	for ; fracDigits < 2; fracDigits++ {
		frac *= 10
	}
	return whole*100 + frac, nil
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFile(t, `CREATE TABLE t (x INTEGER)`)
	b, err := Open(ctx, config.Backend{Kind: config.BackendSQLite, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.(*SQLite); !ok {
		t.Errorf("Open(sqlite) = %T", b)
	}
	b.Close()

	b, err = Open(ctx, config.Backend{Kind: config.BackendSQLite, Path: filepath.Join(t.TempDir(), "missing.db")})
	if b != nil || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Open(sqlite, missing) = %v, %v; want nil, ErrUnavailable", b, err)
	}
	b, err = Open(ctx, config.Backend{Kind: config.BackendMySQL, DSN: "user@tcp(127.0.0.1:1)/db?timeout=2s"})
	if b != nil || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Open(mysql, closed port) = %v, %v; want nil, ErrUnavailable", b, err)
	}
	b, err = Open(ctx, config.Backend{Kind: "oracle", DSN: "x"})
	if b != nil || !errors.Is(err, ErrNotSupported) {
		t.Errorf("Open(oracle) = %v, %v; want nil, ErrNotSupported", b, err)
	}
	b, err = Open(ctx, config.Backend{Kind: config.BackendPostgres, DSN: "postgres://postgres@127.0.0.1:1/x?connect_timeout=2"})
	if b != nil || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Open(postgres, closed port) = %v, %v; want nil, ErrUnavailable", b, err)
	}
}

// TestSQLiteDSNReadOnly checks the layers under the authorizer: the DSN
// alone opens the file read-only with query_only set.
func TestSQLiteDSNReadOnly(t *testing.T) {
	path := newSQLiteFile(t, `CREATE TABLE t (x INTEGER)`)
	db, err := sql.Open("sqlite", sqliteReadOnlyDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var qo, bt int64
	if err := db.QueryRow(`PRAGMA query_only`).Scan(&qo); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA busy_timeout`).Scan(&bt); err != nil {
		t.Fatal(err)
	}
	if qo != 1 || bt != sqliteBusyTimeout.Milliseconds() {
		t.Errorf("query_only = %d, busy_timeout = %d", qo, bt)
	}
	if _, err := db.Exec(`PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO t VALUES (1)`)
	if err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("INSERT with query_only off on a mode=ro file: err = %v, want a readonly error", err)
	}
}
