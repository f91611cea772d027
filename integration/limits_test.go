package integration

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/demo"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Connection limits at their edges, over both protocols together:
// listen.max_connections_per_analyst = 2, max_connections = 3 and
// max_handshakes = 2. The connection just under each limit is served, the
// one over it is refused with 53300 / ERR 1040 and a message naming the
// limit, sessions already open keep working, and a closed connection
// makes room again.
func TestConnectionLimits(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writeMySQLPolicy(t, "listen:\n  max_connections: 3\n  max_connections_per_analyst: 2\n  max_handshakes: 2\n"+
		"backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	pgURL := "postgres://analyst:analyst@" + p.addr + "/demo?sslmode=disable"
	mysqlDSN := "analyst:analyst@tcp(" + p.mysqlAddress(t) + ")/demo?timeout=10s"

	pgConnect := func() (*pgx.Conn, error) { return pgx.Connect(ctx, pgURL) }
	pgCode := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return ""
	}
	mysqlPing := func() (*sql.DB, error) {
		db, err := sql.Open("mysql", mysqlDSN)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxIdleConns(1)
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}
	mysqlCode := func(err error) uint16 {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			return me.Number
		}
		return 0
	}
	works := func(name string, c *pgx.Conn) {
		t.Helper()
		var clinic string
		if err := c.QueryRow(ctx, "SELECT name FROM clinics ORDER BY clinic_id LIMIT 1").Scan(&clinic); err != nil || clinic == "" {
			t.Errorf("%s: an open session stopped working: %q %v", name, clinic, err)
		}
	}
	// eventually retries connect until the server has seen a close.
	eventually := func(name string, connect func() error) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := connect()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still refused after a connection closed: %v", name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Per analyst: two sessions (one per protocol), the third refused on
	// either protocol.
	a, err := pgConnect()
	if err != nil {
		t.Fatal(err)
	}
	b, err := mysqlPing()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgConnect(); pgCode(err) != "53300" {
		t.Fatalf("third session of the analyst (PostgreSQL): %v, want 53300", err)
	}
	if _, err := mysqlPing(); mysqlCode(err) != 1040 {
		t.Fatalf("third session of the analyst (MySQL): %v, want ERR 1040", err)
	}
	works("per analyst", a)
	b.Close()
	eventually("per analyst", func() error {
		db, err := mysqlPing()
		if err == nil {
			b = db
		}
		return err
	})

	// Handshakes: one half-open connection is within max_handshakes = 2,
	// a second fills max_connections = 3 with the two sessions; the next
	// client is refused.
	raw, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgConnect(); pgCode(err) != "53300" {
		t.Fatalf("a client over max_connections (PostgreSQL): %v, want 53300", err)
	}
	if _, err := mysqlPing(); mysqlCode(err) != 1040 {
		t.Fatalf("a client over max_connections (MySQL): %v, want ERR 1040", err)
	}
	works("over max_connections", a)
	raw.Close()
	b.Close()
	a.Close(ctx)

	// Two half-open connections fill max_handshakes: a real client is
	// refused though max_connections has room, and served once one of
	// them goes.
	time.Sleep(200 * time.Millisecond)
	raw1, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	raw2, err := net.Dial("tcp", p.mysqlAddress(t))
	if err != nil {
		t.Fatal(err)
	}
	defer raw2.Close()
	time.Sleep(200 * time.Millisecond)
	if _, err := pgConnect(); pgCode(err) != "53300" {
		t.Fatalf("a client over max_handshakes: %v, want 53300", err)
	}
	raw1.Close()
	eventually("handshakes", func() error {
		c, err := pgConnect()
		if err == nil {
			works("after handshakes", c)
			c.Close(ctx)
		}
		return err
	})
}

// listen.max_result_rows at its edge on both protocols: a public-table
// result of exactly the cap is returned, a larger one ends with 54000 /
// ERR 1104 naming the setting, and the same connection keeps working.
func TestResultCaps(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writeMySQLPolicy(t, "listen:\n  max_result_rows: 10\n"+
		"backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")

	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(sql string) (int, error) {
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			return 0, err
		}
		n := 0
		for rows.Next() {
			n++
		}
		return n, rows.Err()
	}
	if n, err := count("SELECT name FROM clinics LIMIT 10"); err != nil || n != 10 {
		t.Fatalf("10 rows at a cap of 10: %d %v", n, err)
	}
	var pe *pgconn.PgError
	if _, err := count("SELECT name FROM clinics LIMIT 11"); !errors.As(err, &pe) || pe.Code != "54000" || !strings.Contains(pe.Message, "max_result_rows") {
		t.Fatalf("11 rows at a cap of 10: %v, want 54000 naming listen.max_result_rows", err)
	}
	if n, err := count("SELECT name FROM clinics LIMIT 3"); err != nil || n != 3 {
		t.Fatalf("the connection after the refusal: %d %v", n, err)
	}

	db, err := sql.Open("mysql", "analyst:analyst@tcp("+p.mysqlAddress(t)+")/demo?timeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var me *mysql.MySQLError
	var n int
	if rows, err := db.Query("SELECT name FROM clinics LIMIT 10"); err != nil {
		t.Fatalf("10 rows at a cap of 10 (MySQL): %v", err)
	} else {
		for rows.Next() {
			n++
		}
		rows.Close()
	}
	if n != 10 {
		t.Fatalf("10 rows at a cap of 10 (MySQL): got %d", n)
	}
	if _, err := db.Query("SELECT name FROM clinics"); !errors.As(err, &me) || me.Number != 1104 || !strings.Contains(me.Message, "max_result_rows") {
		t.Fatalf("25 rows at a cap of 10 (MySQL): %v, want ERR 1104", err)
	}
	var name string
	if err := db.QueryRow("SELECT name FROM clinics LIMIT 1").Scan(&name); err != nil {
		t.Fatalf("the MySQL connection after the refusal: %v", err)
	}
}

// A client that sends a query and never reads the result cannot hold its
// connection: the statement timeout covers sending the result, so the
// server gives up on it and closes the connection, freeing its place
// (here the only one: max_connections = 1).
func TestSlowReaderIsCutOff(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t, "listen:\n  statement_timeout: 3s\n  write_timeout: 1h\n  max_connections: 1\n  max_result_rows: 5000000\n"+
		"backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	url := "postgres://analyst:analyst@" + p.addr + "/demo?sslmode=disable"
	slow, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close(ctx)
	// 25⁴ = 390,625 rows of four clinic names, about 40 MB: more than the
	// socket buffers hold. Sent by hand, and never read.
	msg, err := (&pgproto3.Query{String: "SELECT a.name, b.name, c.name, d.name FROM clinics a, clinics b, clinics c, clinics d"}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slow.PgConn().Conn().Write(msg); err != nil {
		t.Fatal(err)
	}
	waitForSlowReaderCutOff(t, func() error {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "53300" {
				return errRefused
			}
			return err
		}
		return c.Close(ctx)
	})
}

var errRefused = errors.New("refused: too many connections")

// waitForSlowReaderCutOff connects until the server has cut off a slow
// reader holding its only connection: connect returns errRefused while
// the place is taken. The first attempt must be refused (otherwise the
// test proves nothing), and the place must free within 30 s.
func waitForSlowReaderCutOff(t *testing.T, connect func() error) {
	t.Helper()
	start := time.Now()
	for refused := 0; ; refused++ {
		err := connect()
		if err == nil {
			if refused == 0 {
				t.Fatal("no connection was refused: the slow reader did not hold its place, the test proves nothing")
			}
			t.Logf("the slow reader was cut off after %v", time.Since(start).Round(100*time.Millisecond))
			return
		}
		if !errors.Is(err, errRefused) {
			t.Fatalf("while the slow reader holds the only connection: %v, want a too-many-connections refusal", err)
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the slow reader still holds its connection after %v", time.Since(start))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Failed logins are throttled per analyst name and per client address,
// with the same message and the same timing for an unknown user as for a
// wrong password: with login_backoff 200ms (max 800ms) the first three
// failures of psql take 0.2, 0.4 and 0.8 s, on a server where the name
// exists and on one where it does not. The MySQL front end shares the
// throttle, and the right password still gets in.
func TestLoginThrottling(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	start := func() *proxyProcess {
		policy := writeMySQLPolicy(t, "listen:\n  login_backoff: 200ms\n  login_backoff_max: 800ms\n"+
			"backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
		return startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	}
	series := func(p *proxyProcess, user string) (times []time.Duration, messages []string) {
		for range 3 {
			begin := time.Now()
			r := psql(t, p, user, "wrong password", "SELECT 1;\n")
			times = append(times, time.Since(begin))
			if r.err == nil {
				t.Fatalf("%s logged in with a wrong password", user)
			}
			msg := r.stderr[strings.Index(r.stderr, "FATAL"):]
			messages = append(messages, strings.ReplaceAll(strings.TrimSpace(msg), user, "USER"))
		}
		return times, messages
	}
	known, unknown := start(), start()
	kt, km := series(known, "analyst")
	ut, um := series(unknown, "nobody")
	t.Logf("wrong password: %v; unknown user: %v", kt, ut)
	for i, want := range []time.Duration{200, 400, 800} {
		want *= time.Millisecond
		if kt[i] < want || ut[i] < want {
			t.Errorf("failure %d took %v (known) and %v (unknown); want at least %v", i+1, kt[i], ut[i], want)
		}
		if d := kt[i] - ut[i]; d > 250*time.Millisecond || d < -250*time.Millisecond {
			t.Errorf("failure %d: %v for a wrong password, %v for an unknown user: the timing tells them apart", i+1, kt[i], ut[i])
		}
		if km[i] != um[i] {
			t.Errorf("failure %d: %q for a wrong password, %q for an unknown user", i+1, km[i], um[i])
		}
	}

	// The MySQL front end counts in the same throttle: the address is at
	// its longest lockout.
	begin := time.Now()
	db, err := sql.Open("mysql", "analyst:wrong@tcp("+known.mysqlAddress(t)+")/demo?timeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var me *mysql.MySQLError
	if err := db.PingContext(ctx); !errors.As(err, &me) || me.Number != 1045 {
		t.Fatalf("wrong password over MySQL: %v, want ERR 1045", err)
	}
	if d := time.Since(begin); d < 800*time.Millisecond {
		t.Errorf("a MySQL failure after three PostgreSQL ones took %v; want the 800ms lockout", d)
	}
	if r := psql(t, known, "analyst", "analyst", "SELECT 1;\n"); r.err != nil {
		t.Errorf("the right password after the failures: %v\n%s", r.err, r.stderr)
	}
}

// The salt a SCRAM exchange shows for an unknown user name is derived
// from a secret kept beside the ledger: it is the same across restarts,
// as a real user's is, so a restart does not tell which names exist.
func TestUnknownUserSaltStableAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t, "backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	salts := func() (known, unknown string) {
		p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
		defer p.stop(t)
		return scramSalt(t, p.addr, "analyst"), scramSalt(t, p.addr, "nobody")
	}
	k1, u1 := salts()
	k2, u2 := salts()
	if k1 != k2 || u1 != u2 {
		t.Errorf("salts across a restart: analyst %s → %s, nobody %s → %s; want both unchanged", k1, k2, u1, u2)
	}
	if u1 == k1 || len(u1) != len(k1) {
		t.Errorf("unknown user's salt %q beside a real one %q", u1, k1)
	}
}

// scramSalt starts a SCRAM-SHA-256 exchange as user and returns the salt
// of the server-first message.
func scramSalt(t *testing.T, addr, user string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": user, "database": "demo"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	if msg, err := fe.Receive(); err != nil {
		t.Fatal(err)
	} else if _, ok := msg.(*pgproto3.AuthenticationSASL); !ok {
		t.Fatalf("got %T, want AuthenticationSASL", msg)
	}
	fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=clientnonce0123456789")})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	msg, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	cont, ok := msg.(*pgproto3.AuthenticationSASLContinue)
	if !ok {
		t.Fatalf("got %T, want AuthenticationSASLContinue", msg)
	}
	for _, part := range strings.Split(string(cont.Data), ",") {
		if s, ok := strings.CutPrefix(part, "s="); ok {
			return s
		}
	}
	t.Fatalf("no salt in %q", cont.Data)
	return ""
}

// listen.max_message_size bounds a logged-in client's statement on both
// protocols: a statement just under it runs, one just over is refused
// (FATAL 54000 / ERR 1153, which end that connection as PostgreSQL and
// MySQL do), and the server keeps serving new connections.
func TestMaxMessageSize(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writeMySQLPolicy(t, "listen:\n  max_message_size: 8192\n"+
		"backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	padded := func(n int) string { // a statement of n bytes
		const q = "SELECT name FROM clinics LIMIT 1 /**/"
		return q[:len(q)-2] + strings.Repeat("x", n-len(q)) + "*/"
	}
	pgURL := "postgres://analyst:analyst@" + p.addr + "/demo?sslmode=disable&default_query_exec_mode=simple_protocol"
	pgRun := func(sql string) error {
		c, err := pgx.Connect(ctx, pgURL)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		var name string
		return c.QueryRow(ctx, sql).Scan(&name)
	}
	// A Query message's body is its statement and a NUL.
	if err := pgRun(padded(8192 - 1)); err != nil {
		t.Fatalf("PostgreSQL, a message body of exactly 8192 bytes: %v", err)
	}
	var pe *pgconn.PgError
	if err := pgRun(padded(8192)); !errors.As(err, &pe) || pe.Code != "54000" {
		t.Fatalf("PostgreSQL, one byte over: %v, want 54000", err)
	}
	myRun := func(stmt string) error {
		db, err := sql.Open("mysql", "analyst:analyst@tcp("+p.mysqlAddress(t)+")/demo?timeout=10s")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var name string
		return db.QueryRow(stmt).Scan(&name)
	}
	// A COM_QUERY packet is one command byte and the statement.
	if err := myRun(padded(8192 - 1)); err != nil {
		t.Fatalf("MySQL, a packet of exactly 8192 bytes: %v", err)
	}
	var me *mysql.MySQLError
	if err := myRun(padded(8192)); !errors.As(err, &me) || me.Number != 1153 {
		t.Fatalf("MySQL, one byte over: %v, want ERR 1153", err)
	}
	if err := pgRun("SELECT name FROM clinics LIMIT 1"); err != nil {
		t.Fatalf("the server after the refusals: %v", err)
	}
}

// The same on the MySQL front end: a go-sql-driver client that starts
// reading a 40 MB result and stops is cut off once the statement timeout
// (plus the time to deliver an error) has passed, freeing the only
// connection.
func TestSlowReaderIsCutOffMySQL(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writeMySQLPolicy(t, "listen:\n  postgres: \"\"\n  mysql: 127.0.0.1:0\n  statement_timeout: 3s\n  write_timeout: 1h\n  max_connections: 1\n  max_result_rows: 5000000\n"+
		"backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--mysql-addr", "127.0.0.1:0")
	dsn := "analyst:analyst@tcp(" + p.mysqlAddress(t) + ")/demo?timeout=5s"
	slow, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	rows, err := slow.QueryContext(ctx, "SELECT a.name, b.name, c.name, d.name FROM clinics a, clinics b, clinics c, clinics d")
	if err != nil {
		t.Fatal(err)
	}
	rows.Next() // one row read, the rest never
	waitForSlowReaderCutOff(t, func() error {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		err = db.PingContext(ctx)
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1040 {
			return errRefused
		}
		return err
	})
}

// A CancelRequest is served even when the connection that carries it is
// over the limits: here the only connection runs a long query, and
// cancelling it from a second (refused) connection works.
func TestCancelAtTheConnectionLimit(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t, "listen:\n  max_connections: 1\n"+
		"backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	go func() {
		time.Sleep(500 * time.Millisecond)
		conn.PgConn().CancelRequest(ctx)
	}()
	start := time.Now()
	var n int64
	// 25⁶ ≈ 244 million rows: far longer than the test.
	err = conn.QueryRow(ctx, "SELECT COUNT(*) FROM clinics a, clinics b, clinics c, clinics d, clinics e, clinics f").Scan(&n)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("the long query: %v after %v, want it cancelled (57014)", err, time.Since(start))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the cancel took %v", d)
	}
}
