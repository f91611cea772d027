package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// pgDSN returns the test server's DSN or skips the test.
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("DPPROXY_TEST_PG_DSN")
	if dsn == "" {
		t.Skip("DPPROXY_TEST_PG_DSN not set: skipping PostgreSQL test (testdata/start-postgres.sh starts a throwaway server)")
	}
	return dsn
}

func openPostgresT(t *testing.T, dsn string, maxConns int) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), dsn, maxConns)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// pgSchema creates a fresh schema with a table t(id, v) holding two rows,
// through an ordinary (writable) connection, and returns its quoted name.
func pgSchema(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	schema := pgx.Identifier{fmt.Sprintf("backend_test_%d", time.Now().UnixNano())}.Sanitize()
	for _, s := range []string{
		`CREATE SCHEMA ` + schema,
		`CREATE TABLE ` + schema + `.t (id integer PRIMARY KEY, v text, d date, c numeric(10,2))`,
		`INSERT INTO ` + schema + `.t VALUES (1, 'a', '2024-01-01', 10.50), (2, 'b', '2024-06-30', 20.00), (3, 'c', '2025-01-01', 30.25)`,
		`CREATE SEQUENCE ` + schema + `.s`,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() { // runs before the conn.Close cleanup above
		if _, err := conn.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return schema
}

func TestPostgresTypes(t *testing.T) {
	p := openPostgresT(t, pgDSN(t), 2)
	rows := mustQuery(t, p, `SELECT
		1::int2 AS i2, 2::int4 AS i4, 9007199254740993::int8 AS i8,
		1.5::float4 AS f4, 0.1::float4 AS f4b, 0.1::float8 AS f8, 1e300::float8 AS f8big,
		1234.50::numeric(10,2) AS n, 123456789012345678901234567890.000001::numeric AS nbig,
		(-0.5)::numeric AS nneg, 1e-20::numeric AS nsmall, 1e20::numeric AS nlarge,
		'héllo'::text AS t, 'v'::varchar(5) AS vc, 'ab'::char(3) AS bp, 'nm'::name AS nm, 'lit' AS lit,
		'2024-03-01'::date AS d, '0044-03-15 BC'::date AS dbc,
		'2024-03-01 10:11:12.123456'::timestamp AS ts,
		'2024-03-01 10:11:12+02'::timestamptz AS tstz,
		true AS b, false AS bf, NULL::int4 AS nul, NULL AS nul2,
		26::oid AS o,
		'00000000-0000-0000-0000-000000000001'::uuid AS u, '{"a": 1}'::jsonb AS j,
		'1 day 02:00'::interval AS iv, '\x6162'::bytea AS byt, ARRAY[1, 2] AS arr`)

	want := []struct {
		name string
		typ  sqltypes.Type
		val  any
	}{
		{"i2", sqltypes.Int2, int64(1)},
		{"i4", sqltypes.Int4, int64(2)},
		{"i8", sqltypes.Int8, int64(9007199254740993)},
		{"f4", sqltypes.Float4, 1.5},
		{"f4b", sqltypes.Float4, 0.1},
		{"f8", sqltypes.Float8, 0.1},
		{"f8big", sqltypes.Float8, 1e300},
		{"n", sqltypes.Numeric, sqltypes.Decimal("1234.50")},
		{"nbig", sqltypes.Numeric, sqltypes.Decimal("123456789012345678901234567890.000001")},
		{"nneg", sqltypes.Numeric, sqltypes.Decimal("-0.5")},
		{"nsmall", sqltypes.Numeric, sqltypes.Decimal("0.00000000000000000001")},
		{"nlarge", sqltypes.Numeric, sqltypes.Decimal("100000000000000000000")},
		{"t", sqltypes.Text, "héllo"},
		{"vc", sqltypes.Varchar, "v"},
		{"bp", sqltypes.Bpchar, "ab "},
		{"nm", sqltypes.Name, "nm"},
		{"lit", sqltypes.Text, "lit"},
		{"d", sqltypes.Date, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"dbc", sqltypes.Date, time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC)},
		{"ts", sqltypes.Timestamp, time.Date(2024, 3, 1, 10, 11, 12, 123456000, time.UTC)},
		{"tstz", sqltypes.Timestamptz, time.Date(2024, 3, 1, 8, 11, 12, 0, time.UTC)},
		{"b", sqltypes.Bool, true},
		{"bf", sqltypes.Bool, false},
		{"nul", sqltypes.Int4, nil},
		{"nul2", sqltypes.Text, nil},
		{"o", sqltypes.OID, int64(26)},
		{"u", sqltypes.Text, "00000000-0000-0000-0000-000000000001"},
		{"j", sqltypes.Text, `{"a": 1}`},
		{"iv", sqltypes.Text, "1 day 02:00:00"},
		{"byt", sqltypes.Text, `\x6162`},
		{"arr", sqltypes.Text, "{1,2}"},
	}
	if len(rows.Columns) != len(want) || len(rows.Values) != 1 {
		t.Fatalf("got %d columns, %d rows", len(rows.Columns), len(rows.Values))
	}
	for i, w := range want {
		c, v := rows.Columns[i], rows.Values[0][i]
		if c.Name != w.name || c.Type != w.typ {
			t.Errorf("column %d: %s %s, want %s %s", i, c.Name, c.Type, w.name, w.typ)
		}
		if !reflect.DeepEqual(v, w.val) {
			t.Errorf("column %s: %#v (%T), want %#v (%T)", w.name, v, v, w.val, w.val)
		}
	}
	if tm, ok := rows.Values[0][20].(time.Time); ok && tm.Location() != time.UTC {
		t.Errorf("timestamptz location %v, want UTC", tm.Location())
	}
}

func TestPostgresSpecialValues(t *testing.T) {
	p := openPostgresT(t, pgDSN(t), 1)
	rows := mustQuery(t, p, `SELECT 'NaN'::float8, 'Infinity'::float8, '-Infinity'::float4`)
	f := rows.Values[0]
	if x, ok := f[0].(float64); !ok || !math.IsNaN(x) {
		t.Errorf("NaN: %#v", f[0])
	}
	if !reflect.DeepEqual(f[1:], []any{math.Inf(1), math.Inf(-1)}) {
		t.Errorf("infinities: %#v", f[1:])
	}

	// Values without a Go form demote their column to Text.
	rows = mustQuery(t, p, `SELECT d, n, ts FROM (VALUES
		('2024-01-01'::date, 1.50::numeric, '2024-01-01 01:02:03'::timestamp),
		('infinity', 'NaN', '-infinity')) v(d, n, ts)`)
	for _, c := range rows.Columns {
		if c.Type != sqltypes.Text {
			t.Errorf("column %s: %s, want text", c.Name, c.Type)
		}
	}
	want := [][]any{{"2024-01-01", "1.50", "2024-01-01 01:02:03"}, {"infinity", "NaN", "-infinity"}}
	if !reflect.DeepEqual(rows.Values, want) {
		t.Errorf("values %#v, want %#v", rows.Values, want)
	}

	// An empty result still has typed columns; a statement without a
	// result has none.
	rows = mustQuery(t, p, `SELECT 1::int8 AS x, 'a'::text AS y WHERE false`)
	if !reflect.DeepEqual(rows.Columns, []Column{{Name: "x", Type: sqltypes.Int8}, {Name: "y", Type: sqltypes.Text}}) || rows.Values == nil || len(rows.Values) != 0 {
		t.Errorf("empty result: %#v", rows)
	}
	rows = mustQuery(t, p, `SET LOCAL work_mem = '8MB'`)
	if len(rows.Columns) != 0 || len(rows.Values) != 0 {
		t.Errorf("SET result: %#v", rows)
	}
}

func TestPostgresArgs(t *testing.T) {
	dsn := pgDSN(t)
	schema := pgSchema(t, dsn)
	p := openPostgresT(t, dsn, 2)
	rows := mustQuery(t, p, `SELECT $1::int + 1, $2 || 'x'`, int64(41), "ab")
	if !reflect.DeepEqual(rows.Values, [][]any{{int64(42), "abx"}}) {
		t.Errorf("values %#v", rows.Values)
	}
	for _, tc := range []struct {
		q    string
		args []any
		want [][]any
	}{
		{`SELECT id FROM ` + schema + `.t WHERE id >= $1 AND v <> $2 ORDER BY id`, []any{int64(2), "c"}, [][]any{{int64(2)}}},
		{`SELECT id FROM ` + schema + `.t WHERE d >= $1 AND d < $2 ORDER BY id`, []any{"2024-01-01", "2025-01-01"}, [][]any{{int64(1)}, {int64(2)}}},
		{`SELECT id FROM ` + schema + `.t WHERE d >= $1 ORDER BY id`, []any{time.Date(2024, 6, 30, 0, 0, 0, 0, time.UTC)}, [][]any{{int64(2)}, {int64(3)}}},
		{`SELECT id FROM ` + schema + `.t WHERE c > $1 ORDER BY id`, []any{sqltypes.Decimal("20.00")}, [][]any{{int64(3)}}},
		{`SELECT id FROM ` + schema + `.t WHERE c > $1 ORDER BY id`, []any{15.5}, [][]any{{int64(2)}, {int64(3)}}},
		{`SELECT sum(c), avg(c)::numeric(10,3) FROM ` + schema + `.t WHERE $1`, []any{true}, [][]any{{sqltypes.Decimal("60.75"), sqltypes.Decimal("20.250")}}},
	} {
		// The first run uses the unnamed statement, the second the
		// statement prepared for the repeated text.
		for run := range 2 {
			rows := mustQuery(t, p, tc.q, tc.args...)
			if !reflect.DeepEqual(rows.Values, tc.want) {
				t.Errorf("%s %v, run %d: %#v, want %#v", tc.q, tc.args, run, rows.Values, tc.want)
			}
		}
	}
}

// TestPostgresReadOnly: writes fail on the pool (dpproxy's own SQL runs
// with the read-only session default).
func TestPostgresReadOnly(t *testing.T) {
	dsn := pgDSN(t)
	schema := pgSchema(t, dsn)
	p := openPostgresT(t, dsn, 1) // one connection: every statement below shares it
	checkWritesRefused(t, p, schema)
}

func checkWritesRefused(t *testing.T, p *Postgres, schema string) {
	t.Helper()
	ctx := context.Background()
	rows := mustQuery(t, p, `SELECT current_setting('transaction_read_only')`)
	if !reflect.DeepEqual(rows.Values, [][]any{{"on"}}) {
		t.Errorf("transaction_read_only: %#v, want on", rows.Values)
	}
	for _, q := range []string{
		`INSERT INTO ` + schema + `.t VALUES (9, 'z')`,
		`UPDATE ` + schema + `.t SET v = 'q'`,
		`DELETE FROM ` + schema + `.t`,
		`WITH x AS (INSERT INTO ` + schema + `.t VALUES (9, 'z') RETURNING id) SELECT * FROM x`,
		`SELECT nextval('` + schema + `.s')`,
		`CREATE TABLE ` + schema + `.u (x int)`,
		`CREATE TEMP TABLE u (x int)`,
		`SELECT 1; INSERT INTO ` + schema + `.t VALUES (9, 'z')`,
		`SET TRANSACTION READ WRITE; INSERT INTO ` + schema + `.t VALUES (9, 'z')`,
		`COMMIT; INSERT INTO ` + schema + `.t VALUES (9, 'z')`,
	} {
		_, err := p.Query(ctx, q)
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
	var pgErr *pgconn.PgError
	if _, err := p.Query(ctx, `INSERT INTO `+schema+`.t VALUES (9, 'z')`); !errors.As(err, &pgErr) || pgErr.Code != "25006" {
		t.Errorf("INSERT: err = %v, want SQLSTATE 25006 (read_only_sql_transaction)", err)
	}
	// SET TRANSACTION READ WRITE alone may pass; it cannot carry a write.
	_, _ = p.Query(ctx, `SET TRANSACTION READ WRITE`)
	rows = mustQuery(t, p, `SELECT count(*), string_agg(v, ',' ORDER BY id) FROM `+schema+`.t`)
	if !reflect.DeepEqual(rows.Values, [][]any{{int64(3), "a,b,c"}}) {
		t.Errorf("table changed: %#v", rows.Values)
	}
	if n := p.pool.idleCount(); n != 1 {
		t.Errorf("idle connections after failed statements: %d, want 1 (reused)", n)
	}
}

func TestPostgresErrorsKeepConnection(t *testing.T) {
	p := openPostgresT(t, pgDSN(t), 1)
	ctx := context.Background()
	pid := mustQuery(t, p, `SELECT pg_backend_pid()`).Values[0][0]
	for _, q := range []string{`SELECT 1/0`, `SELEC 1`, `SELECT nope`, `SELECT $1::int`} {
		_, err := p.Query(ctx, q, "x")
		if err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: err = %v, want a statement error", q, err)
		}
	}
	if got := mustQuery(t, p, `SELECT pg_backend_pid()`).Values[0][0]; got != pid {
		t.Errorf("backend pid %v after errors, want %v (connection reused)", got, pid)
	}

	// A canceled statement: the server is asked to stop; the error is not
	// unavailability, and the backend keeps working.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Query(cctx, `SELECT pg_sleep(20)`)
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("canceled pg_sleep: err = %v, want a non-ErrUnavailable error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancel took %v", d)
	}
	if rows := mustQuery(t, p, `SELECT 1::int8`); !reflect.DeepEqual(rows.Values, [][]any{{int64(1)}}) {
		t.Errorf("after cancel: %#v", rows.Values)
	}
}

func TestPostgresUnavailable(t *testing.T) {
	ctx := context.Background()
	const closed = "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2"
	if _, err := OpenPostgres(ctx, closed, 1); !errors.Is(err, ErrUnavailable) {
		t.Errorf("OpenPostgres(closed port): err = %v, want ErrUnavailable", err)
	}
	p, err := newPostgres(closed, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Query(ctx, `SELECT 1`); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Query(closed port): err = %v, want ErrUnavailable", err)
	}
	if err := p.Ping(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ping(closed port): err = %v, want ErrUnavailable", err)
	}
	if _, err := OpenPostgres(ctx, "not a dsn ://", 1); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("OpenPostgres(bad dsn): err = %v, want a configuration error", err)
	}

	dsn := pgDSN(t)
	live := openPostgresT(t, dsn, 1)

	// All connections busy until the deadline: unavailable.
	pc, err := live.pool.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = live.Query(wctx, `SELECT 1`)
	cancel()
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Query with the pool exhausted: err = %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	live.pool.release(pc)

	// Already canceled.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := live.Query(cctx, `SELECT 1`); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Query with a canceled context: err = %v, want ErrUnavailable", err)
	}

	// Closed backend.
	closedBackend, err := OpenPostgres(ctx, dsn, 1)
	if err != nil {
		t.Fatal(err)
	}
	closedBackend.Close()
	if _, err := closedBackend.Query(ctx, `SELECT 1`); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Query after Close: err = %v, want ErrUnavailable", err)
	}
}

// TestPostgresServerGone reaches the server through a TCP relay, then
// takes the relay down: the pool's idle connection is found dead and no
// new one can be made.
func TestPostgresServerGone(t *testing.T) {
	dsn := pgDSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Password != "" {
		t.Skip("relay test needs a password-less DSN")
	}
	relay := startRelay(t, net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	relayDSN := fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?connect_timeout=2&sslmode=disable", cfg.User, relay.port(), cfg.Database)

	p := openPostgresT(t, relayDSN, 2)
	mustQuery(t, p, `SELECT 1`)
	relay.stop()
	time.Sleep(pgPingAfterIdle + 200*time.Millisecond)
	_, err = p.Query(context.Background(), `SELECT 1`)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Query after the server went away: err = %v, want ErrUnavailable", err)
	}
}

type relay struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln}
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, up)
			r.mu.Unlock()
			r.wg.Go(func() { _, _ = io.Copy(up, c); up.Close() })
			r.wg.Go(func() { _, _ = io.Copy(c, up); c.Close() })
		}
	})
	t.Cleanup(r.stop)
	return r
}

func (r *relay) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

func (r *relay) stop() {
	r.ln.Close()
	r.mu.Lock()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
}

func TestPostgresConcurrent(t *testing.T) {
	p := openPostgresT(t, pgDSN(t), 3)
	var mu sync.Mutex
	pids := map[any]bool{}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 10 {
				rows, err := p.Query(context.Background(), `SELECT $1::int8 * 2, pg_backend_pid()`, int64(g*100+i))
				if err != nil {
					t.Error(err)
					return
				}
				if got := rows.Values[0][0]; got != int64(2*(g*100+i)) {
					t.Errorf("got %v", got)
				}
				mu.Lock()
				pids[rows.Values[0][1]] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(pids) > 3 {
		t.Errorf("%d server connections used, want at most 3", len(pids))
	}
	if n := p.pool.idleCount(); n > 3 {
		t.Errorf("%d idle connections, want at most 3", n)
	}
}

// TestPostgresPreparesRepeatedStatements: a text runs as the unnamed
// statement the first time and is prepared on its connection from the
// second; one-off texts are never prepared.
func TestPostgresPreparesRepeatedStatements(t *testing.T) {
	dsn := pgDSN(t)
	schema := pgSchema(t, dsn)
	p := openPostgresT(t, dsn, 1) // one connection: pg_prepared_statements is its own
	prepared := func(p *Postgres) []any {
		t.Helper()
		rows := mustQuery(t, p, `SELECT statement FROM pg_prepared_statements ORDER BY statement /* `+t.Name()+` */`)
		var out []any
		for _, r := range rows.Values {
			out = append(out, r[0])
		}
		return out
	}
	repeated := `SELECT v FROM ` + schema + `.t WHERE id = $1`
	once := `SELECT v FROM ` + schema + `.t WHERE id = 3`
	for i, want := range []string{"a", "b"} {
		rows := mustQuery(t, p, repeated, int64(i+1))
		if !reflect.DeepEqual(rows.Values, [][]any{{want}}) {
			t.Fatalf("run %d: %#v", i, rows.Values)
		}
	}
	mustQuery(t, p, once)
	if got := prepared(p); !reflect.DeepEqual(got, []any{repeated}) {
		t.Errorf("prepared statements %#v, want only the repeated text", got)
	}
}

// TestPostgresPreparedStatementSurvivesTableChange: when a table changes
// under a prepared statement, PostgreSQL refuses the statement once
// ("cached plan must not change result type"); the backend prepares it
// again and the query succeeds.
func TestPostgresPreparedStatementSurvivesTableChange(t *testing.T) {
	dsn := pgDSN(t)
	schema := pgSchema(t, dsn)
	p := openPostgresT(t, dsn, 1)
	q := `SELECT * FROM ` + schema + `.t WHERE id = 1`
	mustQuery(t, p, q)
	if rows := mustQuery(t, p, q); len(rows.Columns) != 4 {
		t.Fatalf("columns %#v", rows.Columns)
	}
	admin, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), `ALTER TABLE `+schema+`.t ADD COLUMN w int DEFAULT 7`); err != nil {
		t.Fatal(err)
	}
	rows := mustQuery(t, p, q)
	if len(rows.Columns) != 5 || rows.Values[0][4] != int64(7) {
		t.Errorf("after ALTER TABLE: %#v %#v", rows.Columns, rows.Values)
	}
}
