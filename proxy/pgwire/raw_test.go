package pgwire

import (
	"context"
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"
	"github.com/jackc/pgx/v5"
)

// assertServes checks that the server still accepts and serves a client.
func assertServes(t *testing.T, ts *testServer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ts.connString(testUser, testPassword, ""))
	if err != nil {
		t.Fatalf("server no longer serves: %v", err)
	}
	defer conn.Close(ctx)
	if err := conn.Ping(ctx); err != nil {
		t.Fatalf("server no longer serves: %v", err)
	}
}

func packet(words ...uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+4*len(words)))
	for _, w := range words {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	return b
}

func TestRawOversizedMessageRejectedWithoutAllocation(t *testing.T) {
	ts := startServer(t, Options{MaxMessageSize: 64 << 10})
	c := dialRaw(t, ts.addr)
	c.loginReady()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c.write(header('Q', 0x7fffffff)) // declares a 2 GiB query
	e := c.expectError()
	runtime.ReadMemStats(&after)
	if e.Severity != "FATAL" || e.Code != "54000" {
		t.Errorf("got %s %s %q", e.Severity, e.Code, e.Message)
	}
	c.expectClosed()
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("server allocated %d bytes for a refused message", grew)
	}

	// Just over the limit is refused too; at the limit is fine.
	c = dialRaw(t, ts.addr)
	c.loginReady()
	q := strings.Repeat("x", 64<<10-1) // + NUL = 64 KiB body
	c.send(&pgproto3.Query{String: q})
	for {
		msg := c.receive()
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("query at the limit refused: %s", e.Message)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	c.send(&pgproto3.Query{String: q + "x"})
	if e := c.expectError(); e.Code != "54000" {
		t.Errorf("got %s %q", e.Code, e.Message)
	}
	c.expectClosed()
	assertServes(t, ts)
}

func TestRawOversizedStartupPacket(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.write([]byte{0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0})
	c.expectClosed()
	assertServes(t, ts)
}

func TestRawGarbageClosesAndServerSurvives(t *testing.T) {
	ts := startServer(t, Options{})
	for _, garbage := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", // a TLS ClientHello
		"\x00\x00\x00\x08\x00\x00\x00\x00",             // protocol 0.0
		"\x00\x00\x00\x03",                             // length below minimum
	} {
		c := dialRaw(t, ts.addr)
		c.write([]byte(garbage))
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 1024)
		for {
			if _, err := c.nc.Read(buf); err != nil {
				break // closed, possibly after an ErrorResponse
			}
		}
	}
	// Garbage after login: an unknown message type.
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.write([]byte("\x01\x00\x00\x00\x04"))
	if e := c.expectError(); e.Code != "08P01" || e.Message != "invalid frontend message type 1" {
		t.Errorf("got %s %q", e.Code, e.Message)
	}
	c.expectClosed()
	// A message length below 4.
	c = dialRaw(t, ts.addr)
	c.loginReady()
	c.write(header('Q', 2))
	if e := c.expectError(); e.Code != "08P01" {
		t.Errorf("got %s %q", e.Code, e.Message)
	}
	c.expectClosed()
	// A Query without its terminating NUL.
	c = dialRaw(t, ts.addr)
	c.loginReady()
	c.write(append(header('Q', 7), "abc"...))
	if e := c.expectError(); e.Code != "08P01" || e.Message != "invalid message format" {
		t.Errorf("got %s %q", e.Code, e.Message)
	}
	c.expectClosed()
	assertServes(t, ts)
}

func TestRawTruncatedStartup(t *testing.T) {
	ts := startServer(t, Options{AuthTimeout: 500 * time.Millisecond})
	// The client goes away in the middle of the startup packet.
	c := dialRaw(t, ts.addr)
	full := startupMessage(map[string]string{"user": testUser})
	c.write(full[:len(full)/2])
	c.nc.Close()

	// The client stalls in the middle: the authentication timeout ends it.
	c = dialRaw(t, ts.addr)
	c.write(full[:len(full)/2])
	start := time.Now()
	c.expectClosed()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stalled startup closed after %v", d)
	}

	// The client stalls during SCRAM.
	c = dialRaw(t, ts.addr)
	c.write(full)
	if _, ok := c.receive().(*pgproto3.AuthenticationSASL); !ok {
		t.Fatal("no AuthenticationSASL")
	}
	c.expectClosed()
	assertServes(t, ts)
}

func TestRawProtocolVersion2Refused(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	b := []byte{0, 0, 0, 0, 0, 2, 0, 0}
	b = append(b, "user\x00alice\x00\x00"...)
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	c.write(b)
	e := c.expectError()
	if e.Severity != "FATAL" || e.Code != "08P01" || !strings.Contains(e.Message, "unsupported frontend protocol 2.0") {
		t.Errorf("got %s %s %q", e.Severity, e.Code, e.Message)
	}
	c.expectClosed()
}

func TestRawNegotiateProtocolVersion(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	b, _ := (&pgproto3.StartupMessage{ProtocolVersion: 3<<16 | 2, Parameters: map[string]string{
		"user": testUser, "database": testDatabase, "_pq_.some_option": "x",
	}}).Encode(nil)
	c.write(b)
	// pgproto3 v2's Frontend does not know 'v': read it by hand.
	hdr := make([]byte, 5)
	if _, err := readFull(c, hdr); err != nil {
		t.Fatal(err)
	}
	if hdr[0] != 'v' {
		t.Fatalf("got message %q, want NegotiateProtocolVersion", hdr[0])
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[1:])-4)
	if _, err := readFull(c, body); err != nil {
		t.Fatal(err)
	}
	if minor, n := binary.BigEndian.Uint32(body), binary.BigEndian.Uint32(body[4:]); minor != 0 || n != 1 || string(body[8:]) != "_pq_.some_option\x00" {
		t.Errorf("NegotiateProtocolVersion body %q", body)
	}
	// The session then continues with 3.0.
	msg, err := scramLogin(c.fe, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := msg.(*pgproto3.AuthenticationOk); !ok {
		t.Fatalf("got %T", msg)
	}
	if _, ok := ts.sessions.lastOpen().params["_pq_.some_option"]; ok {
		t.Error("_pq_ option passed on as a parameter")
	}
}

func readFull(c *rawClient, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.nc.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func TestRawSSLAndGSSENCRequestsAnsweredN(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	for _, code := range []uint32{gssEncRequestCode, sslRequestCode} {
		c.write(packet(code))
		b := make([]byte, 1)
		if _, err := readFull(c, b); err != nil || b[0] != 'N' {
			t.Fatalf("code %d: got %q %v", code, b, err)
		}
	}
	if _, ok := c.login(testUser, testPassword).(*pgproto3.AuthenticationOk); !ok {
		t.Fatal("login after SSLRequest failed")
	}
	// A second SSLRequest is a protocol violation.
	c = dialRaw(t, ts.addr)
	c.write(packet(sslRequestCode))
	b := make([]byte, 1)
	readFull(c, b)
	c.write(packet(sslRequestCode))
	if e := c.expectError(); e.Code != "08P01" {
		t.Errorf("got %s %q", e.Code, e.Message)
	}
}

func TestRawCancelRequestClosesQuietly(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.write(packet(cancelRequestCode, 12345, 67890))
	c.expectClosed()
	assertServes(t, ts)
}

func TestRawMissingUser(t *testing.T) {
	ts := startServer(t, Options{})
	for _, params := range []map[string]string{{"database": "x"}, {}} {
		c := dialRaw(t, ts.addr)
		if len(params) == 0 {
			c.write([]byte{0, 0, 0, 9, 0, 3, 0, 0, 0}) // no parameters at all
		} else {
			c.write(startupMessage(params))
		}
		e := c.expectError()
		if e.Severity != "FATAL" || e.Code != "28000" || e.Message != "no PostgreSQL user name specified in startup packet" {
			t.Errorf("got %s %s %q", e.Severity, e.Code, e.Message)
		}
		c.expectClosed()
	}
}

func TestRawChannelBindingRefused(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.write(startupMessage(map[string]string{"user": testUser}))
	c.receive()
	c.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256-PLUS", Data: []byte("p=tls-server-end-point,,n=,r=abc")})
	e := c.expectError()
	if e.Code != "0A000" || !strings.Contains(e.Message, "channel binding") || e.Hint == "" {
		t.Errorf("got %s %q %q", e.Code, e.Message, e.Hint)
	}
	c.expectClosed()
}

func TestRawMalformedSASL(t *testing.T) {
	ts := startServer(t, Options{})
	for _, body := range [][]byte{
		[]byte("SCRAM-SHA-256\x00"),                    // no length word: pgproto3 would slice out of range
		[]byte("SCRAM-SHA-256\x00\x00\x00\x00\x03abc"), // not a SCRAM message
		[]byte("MD5\x00\x00\x00\x00\x00"),
	} {
		c := dialRaw(t, ts.addr)
		c.write(startupMessage(map[string]string{"user": testUser}))
		c.receive()
		c.write(append(header('p', uint32(4+len(body))), body...))
		if e := c.expectError(); e.Code != "08P01" || e.Severity != "FATAL" {
			t.Errorf("%q: got %s %q", body, e.Code, e.Message)
		}
		c.expectClosed()
	}
	// A Query instead of a SASL response.
	c := dialRaw(t, ts.addr)
	c.write(startupMessage(map[string]string{"user": testUser}))
	c.receive()
	c.send(&pgproto3.Query{String: "select 1"})
	if e := c.expectError(); e.Code != "08P01" {
		t.Errorf("got %s %q", e.Code, e.Message)
	}
	assertServes(t, ts)
}

func TestRawExtendedErrorSkipsToSync(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	// A node-postgres style pipeline whose Parse fails, then a simple query.
	c.sendAll(
		&pgproto3.Parse{Query: "bad"},
		&pgproto3.Bind{},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{},
		&pgproto3.Query{String: "ignored: before Sync"},
		&pgproto3.Flush{},
		&pgproto3.Sync{},
		&pgproto3.Query{String: "after"},
	)
	r := c.untilReady()
	if r.seq != "EZ" || r.errs[0].Code != "42601" || r.errs[0].Severity != "ERROR" {
		t.Errorf("got %s %+v", r.seq, r.errs)
	}
	r = c.untilReady()
	if r.seq != "TDCZ" || string(r.rows[0][0]) != "after" {
		t.Errorf("got %s %q", r.seq, r.rows)
	}
}

func TestRawTerminateAndStraySync(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.send(&pgproto3.Sync{})
	if _, ok := c.receive().(*pgproto3.ReadyForQuery); !ok {
		t.Error("no ReadyForQuery for a stray Sync")
	}
	c.send(&pgproto3.CopyDone{}) // ignored outside COPY
	c.send(&pgproto3.Terminate{})
	c.expectClosed()
}

func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, Options{IdleTimeout: 300 * time.Millisecond})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	e := c.expectError()
	if e.Severity != "FATAL" || e.Code != "57P05" {
		t.Errorf("got %s %s %q", e.Severity, e.Code, e.Message)
	}
	c.expectClosed()
}

// A connection that sends a message more often than its idle timeout
// stays open however long it lasts: the idle deadline is moved only now
// and then (netserver.Deadline), but never falls sooner than the idle
// timeout after the last message. Closed once it is idle.
func TestIdleTimeoutSparesAnActiveConnection(t *testing.T) {
	const idle = 300 * time.Millisecond
	ts := startServer(t, Options{IdleTimeout: idle})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	for start := time.Now(); time.Since(start) < 5*idle; {
		time.Sleep(idle * 2 / 3)
		c.send(&pgproto3.Sync{})
		if _, ok := c.receive().(*pgproto3.ReadyForQuery); !ok {
			t.Fatalf("after %v of activity: not ready", time.Since(start))
		}
	}
	start := time.Now()
	e := c.expectError()
	if e.Code != "57P05" {
		t.Errorf("got %s %s %q", e.Severity, e.Code, e.Message)
	}
	if d := time.Since(start); d < idle {
		t.Errorf("closed after %v idle, sooner than the idle timeout of %v", d, idle)
	}
	c.expectClosed()
}

// A message begun in the packet of the one before is read without moving
// the idle deadline, unless a statement ran meanwhile: here the rest of
// a Sync comes after a statement longer than the idle timeout, and the
// connection lives on.
func TestIdleTimeoutAfterALongStatementInAPipeline(t *testing.T) {
	const idle = 300 * time.Millisecond
	ts := startServer(t, Options{IdleTimeout: idle})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.write(msgBytes(&pgproto3.Parse{Query: "pause 600"}, &pgproto3.Bind{}, &pgproto3.Execute{}))
	sync := msgBytes(&pgproto3.Sync{})
	c.write(sync[:2])
	time.Sleep(700 * time.Millisecond)
	c.write(sync[2:])
	if r := c.untilReady(); r.seq != "12DCZ" {
		t.Fatalf("got %s %+v", r.seq, r.errs)
	}
	assertServes(t, ts)
}

// Nor does a client that keeps sending lose its connection to the idle
// timeout while each packet ends in the middle of a message: here the
// messages after a failed Parse, discarded up to the Sync, keep coming for
// three idle timeouts.
func TestIdleTimeoutSparesAStreamOfMessages(t *testing.T) {
	const idle = 300 * time.Millisecond
	ts := startServer(t, Options{IdleTimeout: idle})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	flush := msgBytes(&pgproto3.Flush{})
	c.write(append(msgBytes(&pgproto3.Parse{Query: "bad"}), flush[:2]...))
	for range 9 {
		time.Sleep(idle / 3)
		c.write(append(slices.Clone(flush[2:]), flush[:2]...))
	}
	c.write(append(slices.Clone(flush[2:]), msgBytes(&pgproto3.Sync{})...))
	if r := c.untilReady(); r.seq != "EZ" || r.errs[0].Code != "42601" {
		t.Fatalf("got %s %+v", r.seq, r.errs)
	}
	assertServes(t, ts)
}

func TestPanicInSessionDropsOnlyThatConnection(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.send(&pgproto3.Query{String: "panic"})
	e := c.expectError()
	if e.Severity != "FATAL" || e.Code != "XX000" || e.Message != "internal error" {
		t.Errorf("got %s %s %q", e.Severity, e.Code, e.Message)
	}
	c.expectClosed()
	if !strings.Contains(ts.logs.String(), "engine bug") {
		t.Error("panic not logged")
	}
	assertServes(t, ts)
	if ts.sessions.closedCount() < 1 {
		t.Error("session of the panicked connection not closed")
	}
}
