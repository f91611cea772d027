package pgwire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

func connectPgx(t *testing.T, ts *testServer, extra string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ts.connString(testUser, testPassword, extra))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func pgError(t *testing.T, err error) *pgconn.PgError {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("expected a *pgconn.PgError, got %T: %v", err, err)
	}
	return pgErr
}

func TestPgxQueryDecodesTypes(t *testing.T) {
	ts := startServer(t, Options{})
	conn := connectPgx(t, ts, "")
	ctx := context.Background()

	rows, err := conn.Query(ctx, "select canned")
	if err != nil {
		t.Fatal(err)
	}
	wantOIDs := []uint32{20, 1700, 701, 25, 1082, 16, 25, 1184}
	for i, fd := range rows.FieldDescriptions() {
		if fd.DataTypeOID != wantOIDs[i] {
			t.Errorf("column %s: OID %d, want %d", fd.Name, fd.DataTypeOID, wantOIDs[i])
		}
	}
	type row struct {
		id      int64
		amount  pgtype.Numeric
		ratio   float64
		name    string
		day     time.Time
		flag    bool
		missing *string
		at      time.Time
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.amount, &r.ratio, &r.name, &r.day, &r.flag, &r.missing, &r.at); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if tag := rows.CommandTag().String(); tag != "SELECT 2" {
		t.Errorf("tag %q", tag)
	}
	if len(got) != 2 {
		t.Fatalf("%d rows", len(got))
	}
	r := got[0]
	amount, _ := r.amount.Value()
	if r.id != 1 || amount != "12.50" || r.ratio != 0.1 || r.name != "ünïcode 'quoted'" || !r.flag || r.missing != nil {
		t.Errorf("row 0: %+v (amount %v)", r, amount)
	}
	if !r.day.Equal(time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day %v", r.day)
	}
	if !r.at.Equal(cannedTime) {
		t.Errorf("timestamptz %v, want %v", r.at, cannedTime)
	}
	r = got[1]
	amount, _ = r.amount.Value()
	if r.id != -9223372036854775808 || amount != "-0.001" || r.ratio != 1e20 || r.name != "" || r.flag || r.missing != nil {
		t.Errorf("row 1: %+v (amount %v)", r, amount)
	}
	if !r.at.Equal(cannedTime.Add(-123456 * time.Microsecond)) {
		t.Errorf("timestamptz %v", r.at)
	}
}

func TestPgxWrongPassword(t *testing.T) {
	ts := startServer(t, Options{})
	ctx := context.Background()
	_, err := pgx.Connect(ctx, ts.connString(testUser, "wrong", ""))
	pgErr := pgError(t, err)
	if pgErr.Code != "28P01" || pgErr.Severity != "FATAL" || pgErr.Message != `password authentication failed for user "alice"` {
		t.Errorf("got %s %s %q", pgErr.Severity, pgErr.Code, pgErr.Message)
	}
	if ts.sessions.closedCount() != 0 || len(ts.sessions.opened) != 0 {
		t.Error("a session was opened for a failed login")
	}
}

func TestPgxUnknownUserLooksLikeWrongPassword(t *testing.T) {
	ts := startServer(t, Options{})
	ctx := context.Background()
	_, err := pgx.Connect(ctx, ts.connString("mallory", "whatever", ""))
	pgErr := pgError(t, err)
	if pgErr.Code != "28P01" || pgErr.Message != `password authentication failed for user "mallory"` {
		t.Errorf("got %s %q", pgErr.Code, pgErr.Message)
	}
}

func TestUnknownUserGetsStableSalt(t *testing.T) {
	ts := startServer(t, Options{})
	salt := func(user string) string {
		c := dialRaw(t, ts.addr)
		c.write(startupMessage(map[string]string{"user": user}))
		if _, ok := c.receive().(*pgproto3.AuthenticationSASL); !ok {
			t.Fatal("no AuthenticationSASL")
		}
		c.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abc")})
		cont, ok := c.receive().(*pgproto3.AuthenticationSASLContinue)
		if !ok {
			t.Fatal("no AuthenticationSASLContinue")
		}
		for _, kv := range strings.Split(string(cont.Data), ",") {
			if strings.HasPrefix(kv, "s=") {
				return kv
			}
		}
		t.Fatal("no salt")
		return ""
	}
	if a, b := salt("mallory"), salt("mallory"); a != b {
		t.Errorf("unknown user's salt changes between attempts: %s vs %s", a, b)
	}
	if a, b := salt("mallory"), salt("trudy"); a == b {
		t.Errorf("two unknown users share a salt")
	}
}

func TestPgxErrorsKeepConnectionUsable(t *testing.T) {
	ts := startServer(t, Options{})
	conn := connectPgx(t, ts, "")
	ctx := context.Background()

	_, err := conn.Exec(ctx, "bad")
	pgErr := pgError(t, err)
	if pgErr.Severity != "ERROR" || pgErr.Code != "42601" || pgErr.Message != `syntax error at or near "bad"` ||
		pgErr.Detail != "some detail" || pgErr.Hint != "some hint" || pgErr.Position != 1 {
		t.Errorf("got %+v", pgErr)
	}

	_, err = conn.Exec(ctx, "boom")
	pgErr = pgError(t, err)
	if pgErr.Code != "XX000" || pgErr.Message != "internal error" || pgErr.Detail != "" {
		t.Errorf("got %+v", pgErr)
	}
	if strings.Contains(fmt.Sprintf("%+v", pgErr), "salary") {
		t.Error("the text of a non-sqlerr error reached the client")
	}
	if !strings.Contains(ts.logs.String(), "salary") {
		t.Error("the internal error was not logged")
	}

	for _, q := range []string{"badresult", "badvalue"} {
		_, err = conn.Exec(ctx, q)
		if pgErr = pgError(t, err); pgErr.Code != "XX000" {
			t.Errorf("%s: got %+v", q, pgErr)
		}
	}

	var n int64
	if err := conn.QueryRow(ctx, "select canned").Scan(&n, nil, nil, nil, nil, nil, nil, nil); err != nil {
		t.Fatalf("query after errors: %v", err)
	}
	if n != 1 {
		t.Errorf("n = %d", n)
	}
}

func TestPgxPingEmptyQueryAndTags(t *testing.T) {
	ts := startServer(t, Options{})
	conn := connectPgx(t, ts, "")
	ctx := context.Background()
	if err := conn.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	for _, q := range []string{";", "", "  "} {
		res := conn.PgConn().Exec(ctx, q)
		results, err := res.ReadAll()
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if len(results) != 1 || results[0].CommandTag.String() != "" || len(results[0].FieldDescriptions) != 0 {
			t.Errorf("%q: %+v", q, results)
		}
	}
	tag, err := conn.Exec(ctx, "set x")
	if err != nil || tag.String() != "SET" {
		t.Errorf("set: %q %v", tag, err)
	}
	results, err := conn.PgConn().Exec(ctx, "multi").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].CommandTag.String() != "SELECT 1" || results[1].CommandTag.String() != "SELECT 2" ||
		string(results[1].Rows[1][0]) != "y" || results[0].FieldDescriptions[0].DataTypeOID != 23 {
		t.Errorf("multi: %+v", results)
	}
}

func TestPgxLargeResult(t *testing.T) {
	ts := startServer(t, Options{})
	conn := connectPgx(t, ts, "")
	rows, err := conn.Query(context.Background(), "rows 20000")
	if err != nil {
		t.Fatal(err)
	}
	var i int64
	for rows.Next() {
		var n int64
		var pad string
		if err := rows.Scan(&n, &pad); err != nil {
			t.Fatal(err)
		}
		if n != i || len(pad) != 100 {
			t.Fatalf("row %d: %d %d", i, n, len(pad))
		}
		i++
	}
	if rows.Err() != nil || i != 20000 {
		t.Fatalf("%d rows, %v", i, rows.Err())
	}
}

func TestPgxStartupAndParameterStatus(t *testing.T) {
	ts := startServer(t, Options{})
	conn := connectPgx(t, ts, "application_name=grafana&search_path=public&extra_float_digits=3")
	pc := conn.PgConn()
	want := map[string]string{
		"server_version":              "15.0 (dpproxy)",
		"server_version_num":          "150000",
		"server_encoding":             "UTF8",
		"client_encoding":             "UTF8",
		"DateStyle":                   "ISO, MDY",
		"IntervalStyle":               "postgres",
		"TimeZone":                    "UTC",
		"integer_datetimes":           "on",
		"standard_conforming_strings": "on",
		"application_name":            "grafana",
		"is_superuser":                "off",
		"session_authorization":       testUser,
	}
	for k, v := range want {
		if got := pc.ParameterStatus(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if pc.PID() == 0 || len(pc.SecretKey()) != 4 {
		t.Errorf("BackendKeyData: pid %d, key %x", pc.PID(), pc.SecretKey())
	}
	if pc.TxStatus() != 'I' {
		t.Errorf("tx status %c", pc.TxStatus())
	}
	open := ts.sessions.lastOpen()
	if open.user != testUser || open.database != testDatabase || open.params["application_name"] != "grafana" ||
		open.params["search_path"] != "public" || open.params["extra_float_digits"] != "3" {
		t.Errorf("Open got %+v", open)
	}
}

func TestPgxOpenErrors(t *testing.T) {
	ts := startServer(t, Options{})
	ctx := context.Background()
	url := strings.Replace(ts.connString(testUser, testPassword, ""), "/"+testDatabase+"?", "/nosuchdb?", 1)
	_, err := pgx.Connect(ctx, url)
	if pgErr := pgError(t, err); pgErr.Code != "3D000" || pgErr.Severity != "FATAL" {
		t.Errorf("got %+v", pgErr)
	}
	url = strings.Replace(ts.connString(testUser, testPassword, ""), "/"+testDatabase+"?", "/brokendb?", 1)
	_, err = pgx.Connect(ctx, url)
	if pgErr := pgError(t, err); pgErr.Code != "XX000" || strings.Contains(pgErr.Message, "salary") {
		t.Errorf("got %+v", pgErr)
	}
}

func TestPgxSSLModePreferFallsBackToPlaintext(t *testing.T) {
	ts := startServer(t, Options{})
	url := strings.Replace(ts.connString(testUser, testPassword, ""), "sslmode=disable", "sslmode=prefer", 1)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestPgxCancelRequest(t *testing.T) {
	ts := startServer(t, Options{})
	conn := connectPgx(t, ts, "")
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "wait")
		errc <- err
	}()
	<-ts.sessions.started
	if err := conn.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if pgErr := pgError(t, err); pgErr.Code != "57014" {
			t.Errorf("got %+v", pgErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("query was not canceled")
	}
	if err := conn.Ping(ctx); err != nil {
		t.Fatalf("connection unusable after cancel: %v", err)
	}
}

func TestConcurrentPgxClients(t *testing.T) {
	ts := startServer(t, Options{})
	const clients = 50
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, ts.connString(testUser, testPassword, ""))
			if err != nil {
				errs <- fmt.Errorf("client %d: connect: %w", i, err)
				return
			}
			defer conn.Close(ctx)
			for j := range 10 {
				q := fmt.Sprintf("client %d query %d", i, j)
				var echo string
				if err := conn.QueryRow(ctx, q).Scan(&echo); err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				if echo != q {
					errs <- fmt.Errorf("client %d: got %q, want %q", i, echo, q)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := ts.sessions.closedCount(); n != clients {
		// Close is called when each connection's goroutine ends, which
		// may trail the client's Close a little.
		deadline := time.Now().Add(5 * time.Second)
		for ts.sessions.closedCount() != clients && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := ts.sessions.closedCount(); n != clients {
			t.Errorf("%d sessions closed, want %d", n, clients)
		}
	}
}
