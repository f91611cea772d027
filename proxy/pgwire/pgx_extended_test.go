package pgwire

import (
	"bytes"
	"context"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// pgxModes are pgx's query execution modes by their connection-string
// names ("" is the default, cache_statement).
var pgxModes = []string{"", "cache_describe", "describe_exec", "exec"}

func connectPgxMode(t *testing.T, ts *testServer, mode, extra string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ts.connStringMode(testUser, testPassword, mode, extra))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// traceMessages records the protocol messages of conn as "F Parse",
// "B RowDescription" lines.
type traceMessages struct{ buf bytes.Buffer }

func traceConn(conn *pgx.Conn) *traceMessages {
	tr := &traceMessages{}
	conn.PgConn().Frontend().Trace(&tr.buf, pgproto3.TracerOptions{SuppressTimestamps: true})
	return tr
}

var traceLine = regexp.MustCompile(`(?m)^([FB])\t(\w+)\t\d+(.*)$`)

// names returns the message names sent (F) or received (B) so far, and
// resets the trace.
func (tr *traceMessages) names() []string {
	var out []string
	for _, m := range traceLine.FindAllStringSubmatch(tr.buf.String(), -1) {
		out = append(out, m[1]+" "+m[2])
	}
	tr.buf.Reset()
	return out
}

// bindFormats returns the parameter and result format codes of the Bind
// messages traced so far, as their trace text.
func (tr *traceMessages) binds() []string {
	var out []string
	for _, m := range traceLine.FindAllStringSubmatch(tr.buf.String(), -1) {
		if m[1] == "F" && m[2] == "Bind" {
			out = append(out, strings.TrimSpace(m[3]))
		}
	}
	return out
}

func TestPgxCacheStatementProtocolFlow(t *testing.T) {
	ts := startServer(t, Options{})
	conn := connectPgxMode(t, ts, "", "")
	tr := traceConn(conn)
	ctx := context.Background()
	for range 2 {
		var n int64
		var s string
		if err := conn.QueryRow(ctx, "echo int8,text", int64(7), "x").Scan(&n, &s); err != nil {
			t.Fatal(err)
		}
		if n != 7 || s != "x" {
			t.Errorf("got %d %q", n, s)
		}
	}
	got := strings.Join(tr.names(), ", ")
	// Prepared once (named statement, Describe 'S', Sync), then executed
	// twice (Bind, Execute, Sync).
	want := "F Parse, F Describe, F Sync, B ParseComplete, B ParameterDescription, B RowDescription, B ReadyForQuery, " +
		"F Bind, F Execute, F Sync, B BindComplete, B DataRow, B CommandComplete, B ReadyForQuery, " +
		"F Bind, F Execute, F Sync, B BindComplete, B DataRow, B CommandComplete, B ReadyForQuery"
	if got != want {
		t.Errorf("messages:\n%s\nwant:\n%s", got, want)
	}
	if n := len(ts.sessions.preparedCalls()); n != 1 {
		t.Errorf("prepared %d times", n)
	}
}

// TestPgxExecModeParsesFromTheMemo: a driver that sends Parse before
// every Execute (pgx's exec mode) gets each statement after the first from
// the session's memo, with the same messages and results.
func TestPgxExecModeParsesFromTheMemo(t *testing.T) {
	ts := startServer(t, Options{})
	ts.sessions.mu.Lock()
	ts.sessions.memoize = true
	ts.sessions.mu.Unlock()
	conn := connectPgxMode(t, ts, "exec", "")
	tr := traceConn(conn)
	ctx := context.Background()
	for i := range 3 {
		var n int64
		if err := conn.QueryRow(ctx, "echo int8", int64(i)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != int64(i) {
			t.Errorf("execution %d returned %d", i, n)
		}
	}
	// A text that fails to prepare is not memoized: it fails every time,
	// and the connection goes on.
	for range 2 {
		if _, err := conn.Exec(ctx, "bad", int64(1)); err == nil || !strings.Contains(err.Error(), "42601") {
			t.Fatalf("bad statement: %v", err)
		}
	}
	var n int64
	if err := conn.QueryRow(ctx, "echo int8", int64(9)).Scan(&n); err != nil || n != 9 {
		t.Fatalf("after the errors: %d, %v", n, err)
	}
	// A memoized statement is refused in a failed transaction like any
	// other.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "bad", int64(1)); err == nil {
		t.Fatal("no error")
	}
	err = tx.QueryRow(ctx, "echo int8", int64(2)).Scan(&n)
	if pgErr := pgError(t, err); pgErr.Code != "25P02" {
		t.Errorf("a memoized statement in a failed transaction: %+v", pgErr)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	round := "F Parse, F Bind, F Describe, F Execute, F Sync, B ParseComplete, B BindComplete, B RowDescription, B DataRow, B CommandComplete, B ReadyForQuery"
	if got := strings.Join(tr.names(), ", "); !strings.HasPrefix(got, round+", "+round+", "+round+", F Parse") {
		t.Errorf("messages:\n%s\nwant three rounds of:\n%s", got, round)
	}
	var echoes, bads int
	for _, c := range ts.sessions.preparedCalls() {
		switch c.sql {
		case "echo int8":
			echoes++
		case "bad":
			bads++
		}
	}
	if echoes != 1 || bads != 3 {
		t.Errorf("Prepare called %d times for the memoized text, %d for the failing one; want 1 and 3", echoes, bads)
	}
}

func TestPgxBinaryParametersAndResults(t *testing.T) {
	ts := startServer(t, Options{})
	conn := connectPgxMode(t, ts, "", "")
	tr := traceConn(conn)
	ctx := context.Background()

	var amount pgtype.Numeric
	if err := amount.Scan("-12345678901234567890.000123"); err != nil {
		t.Fatal(err)
	}
	berlin := time.FixedZone("CEST", 2*3600)
	at := time.Date(2024, 3, 15, 14, 30, 45, 123456000, berlin)
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	wall := time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	args := []any{int64(math.MinInt64), 0.1, amount, true, "ünïcode", day, at, int32(-7), int16(300), float32(1.5), wall, []byte{0, 1, 255}, uint32(4000000000), "v", nil}
	sql := "echo int8,float8,numeric,bool,text,date,timestamptz,int4,int2,float4,timestamp,bytea,oid,varchar,numeric"

	var (
		i8     int64
		f8     float64
		num    pgtype.Numeric
		b      bool
		txt    string
		d      time.Time
		tstz   time.Time
		i4     int32
		i2     int16
		f4     float32
		ts2    time.Time
		by     []byte
		oid    uint32
		vc     string
		numNil pgtype.Numeric
	)
	if err := conn.QueryRow(ctx, sql, args...).Scan(&i8, &f8, &num, &b, &txt, &d, &tstz, &i4, &i2, &f4, &ts2, &by, &oid, &vc, &numNil); err != nil {
		t.Fatal(err)
	}
	// Parameters and results went in binary where pgx prefers it.
	binds := tr.binds()
	if len(binds) != 1 || !strings.HasPrefix(binds[0], `"" "stmtcache_`) {
		t.Fatalf("binds %q", binds)
	}
	fields := strings.Fields(binds[0])
	// Portal, statement, 15 format codes for 15 parameters...
	if fields[2] != "15" || strings.Join(fields[3:18], "") != "111101111111101" {
		t.Errorf("parameter formats %v", fields[2:18])
	}
	if last := fields[len(fields)-16:]; last[0] != "15" || strings.Join(last[1:], "") != "111101111111101" {
		t.Errorf("result formats %v", last)
	}

	// What the engine received.
	got := ts.sessions.lastExecuted().params
	want := []any{int64(math.MinInt64), 0.1, sqltypes.Decimal("-12345678901234567890.000123"), true, "ünïcode", day, at.UTC(),
		int64(-7), int64(300), 1.5, wall, "\x00\x01\xff", int64(4000000000), "v", nil}
	if len(got) != len(want) {
		t.Fatalf("engine got %d parameters", len(got))
	}
	for i := range want {
		if tw, ok := want[i].(time.Time); ok {
			tg, ok := got[i].(time.Time)
			if !ok || !tg.Equal(tw) || tg.Location() != time.UTC {
				t.Errorf("parameter %d: got %#v, want %v", i+1, got[i], tw)
			}
			continue
		}
		if got[i] != want[i] {
			t.Errorf("parameter %d: got %#v (%T), want %#v (%T)", i+1, got[i], got[i], want[i], want[i])
		}
	}

	// What came back.
	numStr, _ := num.Value()
	if i8 != math.MinInt64 || f8 != 0.1 || numStr != "-12345678901234567890.000123" || !b || txt != "ünïcode" ||
		i4 != -7 || i2 != 300 || f4 != 1.5 || string(by) != "\x00\x01\xff" || oid != 4000000000 || vc != "v" || numNil.Valid {
		t.Errorf("got %v %v %v %v %q %v %v %v %q %v %q %v", i8, f8, numStr, b, txt, i4, i2, f4, by, oid, vc, numNil)
	}
	if !d.Equal(day) || !tstz.Equal(at) || !ts2.Equal(wall) {
		t.Errorf("times %v %v %v", d, tstz, ts2)
	}
}

func TestPgxQueryExecModes(t *testing.T) {
	ts := startServer(t, Options{})
	for _, mode := range pgxModes {
		t.Run("mode="+mode, func(t *testing.T) {
			conn := connectPgxMode(t, ts, mode, "")
			ctx := context.Background()
			var amount pgtype.Numeric
			amount.Scan("0.0001")
			at := time.Date(2024, 3, 15, 12, 0, 0, 0, time.UTC)
			var (
				n   int64
				s   string
				num pgtype.Numeric
				d   time.Time
				b   bool
				nul *string
			)
			err := conn.QueryRow(ctx, "echo int8,text,numeric,timestamptz,bool,text", int64(42), "it's", amount, at, false, nil).
				Scan(&n, &s, &num, &d, &b, &nul)
			if err != nil {
				t.Fatal(err)
			}
			v, _ := num.Value()
			if n != 42 || s != "it's" || v != "0.0001" || !d.Equal(at) || b || nul != nil {
				t.Errorf("got %d %q %v %v %v %v", n, s, v, d, b, nul)
			}
			// The canned result, in whatever formats the mode picks.
			rows, err := conn.Query(ctx, "select canned")
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			var amounts []string
			for rows.Next() {
				var id int64
				var a pgtype.Numeric
				var r float64
				var name string
				var day time.Time
				var flag bool
				var missing *string
				var at time.Time
				if err := rows.Scan(&id, &a, &r, &name, &day, &flag, &missing, &at); err != nil {
					t.Fatal(err)
				}
				av, _ := a.Value()
				ids, amounts = append(ids, id), append(amounts, av.(string))
				if id == 1 && (r != 0.1 || name != "ünïcode 'quoted'" || !flag || missing != nil || !at.Equal(cannedTime) ||
					!day.Equal(time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC))) {
					t.Errorf("row 1: %v %q %v %v %v %v", r, name, flag, missing, at, day)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(ids) != 2 || ids[1] != math.MinInt64 || amounts[0] != "12.50" || amounts[1] != "-0.001" {
				t.Errorf("got %v %v", ids, amounts)
			}
			if tag := rows.CommandTag().String(); tag != "SELECT 2" {
				t.Errorf("tag %q", tag)
			}
			// Errors keep the connection usable.
			_, err = conn.Exec(ctx, "echo int8", "not a number")
			if mode == "simple_protocol" || mode == "exec" {
				// The value goes as text: the server refuses it.
				if pgErr := pgError(t, err); pgErr.Code != "22P02" {
					t.Errorf("got %+v", pgErr)
				}
			} else if err == nil {
				t.Error("pgx encoded a string as int8")
			}
			if _, err := conn.Exec(ctx, "bad", 1); pgError(t, err).Code != "42601" {
				t.Errorf("got %v", err)
			}
			if err := conn.QueryRow(ctx, "echo int4", 5).Scan(&n); err != nil || n != 5 {
				t.Errorf("after errors: %v %d", err, n)
			}
		})
	}
}

func TestPgxUnknownParameterTypes(t *testing.T) {
	ts := startServer(t, Options{})
	for _, mode := range pgxModes {
		t.Run("mode="+mode, func(t *testing.T) {
			conn := connectPgxMode(t, ts, mode, "")
			ctx := context.Background()
			// Unknown parameters are described as OID 0: pgx sends any
			// value as text, and the engine gets that text.
			for _, tc := range []struct {
				arg  any
				want string
			}{{"text", "text"}, {int64(12), "12"}, {1.5, "1.5"}, {true, "t"}, {[]byte{1}, `\x01`}} {
				var s string
				if err := conn.QueryRow(ctx, "echo unknown", tc.arg).Scan(&s); err != nil {
					t.Errorf("%T: %v", tc.arg, err)
					continue
				}
				if got := ts.sessions.lastExecuted().params[0]; got != tc.want || s != tc.want {
					t.Errorf("%T: engine got %#v, client %q, want %q", tc.arg, got, s, tc.want)
				}
			}
		})
	}
}

func TestPgxBatchPipelined(t *testing.T) {
	ts := startServer(t, Options{})
	for _, mode := range pgxModes {
		t.Run("mode="+mode, func(t *testing.T) {
			conn := connectPgxMode(t, ts, mode, "")
			ctx := context.Background()
			batch := &pgx.Batch{}
			var got []int64
			for i := range 5 {
				batch.Queue("echo int8", int64(i)).QueryRow(func(row pgx.Row) error {
					var n int64
					err := row.Scan(&n)
					got = append(got, n)
					return err
				})
			}
			batch.Queue("rows 3")
			if err := conn.SendBatch(ctx, batch).Close(); err != nil {
				t.Fatal(err)
			}
			if len(got) != 5 || got[4] != 4 {
				t.Errorf("got %v", got)
			}

			// An error in the middle: the queries before it ran, the
			// batch reports the error, and the connection goes on.
			batch = &pgx.Batch{}
			batch.Queue("echo int8", int64(1))
			batch.Queue("fail")
			batch.Queue("echo int8", int64(3))
			br := conn.SendBatch(ctx, batch)
			var n int64
			if err := br.QueryRow().Scan(&n); err != nil || n != 1 {
				t.Errorf("first: %v %d", err, n)
			}
			_, err := br.Exec()
			if pgErr := pgError(t, err); pgErr.Code != "22012" {
				t.Errorf("second: %+v", pgErr)
			}
			if _, err := br.Exec(); err == nil {
				t.Error("third ran after the error")
			}
			br.Close()
			if err := conn.QueryRow(ctx, "echo int8", int64(9)).Scan(&n); err != nil || n != 9 {
				t.Errorf("after batch: %v %d", err, n)
			}

			// An error at prepare time.
			batch = &pgx.Batch{}
			batch.Queue("echo int8", int64(1))
			batch.Queue("bad")
			err = conn.SendBatch(ctx, batch).Close()
			if pgErr := pgError(t, err); pgErr.Code != "42601" {
				t.Errorf("got %+v", pgErr)
			}
			if err := conn.QueryRow(ctx, "echo int8", int64(10)).Scan(&n); err != nil || n != 10 {
				t.Errorf("after failed batch: %v %d", err, n)
			}
			if conn.PgConn().TxStatus() != 'I' {
				t.Errorf("tx status %c", conn.PgConn().TxStatus())
			}
		})
	}
}

func TestPgxTransactions(t *testing.T) {
	ts := startServer(t, Options{})
	for _, mode := range pgxModes {
		t.Run("mode="+mode, func(t *testing.T) {
			conn := connectPgxMode(t, ts, mode, "")
			ctx := context.Background()
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if s := conn.PgConn().TxStatus(); s != 'T' {
				t.Errorf("after BEGIN: %c", s)
			}
			var n int64
			if err := tx.QueryRow(ctx, "echo int8", int64(1)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if s := conn.PgConn().TxStatus(); s != 'I' {
				t.Errorf("after COMMIT: %c", s)
			}

			// A failed transaction: statements are refused until the end,
			// and COMMIT reports that it rolled back.
			tx, err = conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "bad"); err == nil {
				t.Fatal("no error")
			}
			if s := conn.PgConn().TxStatus(); s != 'E' {
				t.Errorf("after error: %c", s)
			}
			err = tx.QueryRow(ctx, "echo int8", int64(2)).Scan(&n)
			if pgErr := pgError(t, err); pgErr.Code != "25P02" {
				t.Errorf("in failed transaction: %+v", pgErr)
			}
			if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
				t.Errorf("commit of failed transaction: %v", err)
			}
			if s := conn.PgConn().TxStatus(); s != 'I' {
				t.Errorf("after failed COMMIT: %c", s)
			}

			tx, err = conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := conn.QueryRow(ctx, "echo int8", int64(3)).Scan(&n); err != nil || n != 3 {
				t.Errorf("after rollback: %v %d", err, n)
			}
		})
	}
}

func TestStatementTimeout(t *testing.T) {
	ts := startServer(t, Options{StatementTimeout: 300 * time.Millisecond})
	for _, mode := range []string{"", "simple_protocol"} {
		t.Run("mode="+mode, func(t *testing.T) {
			conn := connectPgxMode(t, ts, mode, "")
			ctx := context.Background()
			start := time.Now()
			var ok bool
			err := conn.QueryRow(ctx, "wait").Scan(&ok)
			pgErr := pgError(t, err)
			if pgErr.Code != "57014" || pgErr.Message != "canceling statement due to statement timeout" {
				t.Errorf("got %s %q", pgErr.Code, pgErr.Message)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			<-ts.sessions.started
			var echo string
			if err := conn.QueryRow(ctx, "hello").Scan(&echo); err != nil || echo != "hello" {
				t.Errorf("after timeout: %v %q", err, echo)
			}
			// Each statement has the whole timeout from its own start
			// (one timer per connection, re-armed for each statement),
			// and a longer one is still ended.
			for i := range 3 {
				if err := conn.QueryRow(ctx, "pause 200").Scan(&ok); err != nil || !ok {
					t.Fatalf("statement %d of 200 ms: %v", i, err)
				}
			}
			err = conn.QueryRow(ctx, "pause 2000").Scan(&ok)
			if pgErr := pgError(t, err); pgErr.Code != "57014" || pgErr.Message != "canceling statement due to statement timeout" {
				t.Errorf("statement of 2 s: got %s %q", pgErr.Code, pgErr.Message)
			}
		})
	}
}

func TestPgxExtendedCancelRequest(t *testing.T) {
	ts := startServer(t, Options{})
	conn := connectPgxMode(t, ts, "", "")
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		var ok bool
		errc <- conn.QueryRow(ctx, "wait").Scan(&ok)
	}()
	<-ts.sessions.started
	if err := conn.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if pgErr := pgError(t, err); pgErr.Code != "57014" || pgErr.Message != "canceling statement due to user request" {
			t.Errorf("got %+v", pgErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("query was not canceled")
	}
	var n int64
	if err := conn.QueryRow(ctx, "echo int8", int64(1)).Scan(&n); err != nil {
		t.Fatalf("connection unusable after cancel: %v", err)
	}
}

func TestPgxPgconnExecParamsFormats(t *testing.T) {
	ts := startServer(t, Options{})
	conn := connectPgxMode(t, ts, "", "")
	ctx := context.Background()
	// Text parameters with explicit types, mixed result formats.
	res := conn.PgConn().ExecParams(ctx, "echo int4,text,numeric", [][]byte{[]byte("-5"), []byte("x"), []byte("1.50")},
		[]uint32{23, 25, 1700}, []int16{0}, []int16{1, 0, 1}).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	row := res.Rows[0]
	if int32(uint32(row[0][0])<<24|uint32(row[0][1])<<16|uint32(row[0][2])<<8|uint32(row[0][3])) != -5 || string(row[1]) != "x" ||
		!bytes.Equal(row[2], []byte{0, 2, 0, 0, 0, 0, 0, 2, 0, 1, 0x13, 0x88}) {
		t.Errorf("row %x", row)
	}
	if f := res.FieldDescriptions; f[0].Format != 1 || f[1].Format != 0 || f[2].Format != 1 {
		t.Errorf("formats %+v", f)
	}
	if _, err := conn.PgConn().Prepare(ctx, "named", "echo int8", nil); err != nil {
		t.Fatal(err)
	}
	_, err := conn.PgConn().Prepare(ctx, "named", "echo int8", nil)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P05" {
		t.Errorf("redefining: %v", err)
	}
	if err := conn.PgConn().Deallocate(ctx, "named"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.PgConn().Prepare(ctx, "named", "echo int8", nil); err != nil {
		t.Errorf("after Deallocate: %v", err)
	}
}
