package pgwire

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

const (
	testUser     = "alice"
	testPassword = "correct horse battery staple"
	testDatabase = "sales"
)

// secretInError is the text of a non-sqlerr error the test engine returns;
// it must never reach a client.
const secretInError = "backend said: salary of bob is 123456"

// testSessions is an in-test Sessions: one user, canned results chosen by
// the query text.
type testSessions struct {
	verifiers map[string]auth.SCRAMVerifier

	mu       sync.Mutex
	opened   []openCall
	closed   int
	prepared []prepareCall
	executed []executeCall
	// memoize keeps what Prepare describes, by text and declared types,
	// for PrepareMemoized (as the engine does for public-table queries).
	memoize bool
	memo    map[string]*sqltypes.Prepared
	release chan struct{} // "wait" queries block until this is closed
	started chan string   // receives the text of "wait"/"sleep" queries when they start
}

type prepareCall struct {
	sql        string
	paramTypes []sqltypes.Type
}

type executeCall struct {
	sql    string
	params []any
}

type openCall struct {
	user, database string
	params         map[string]string
}

func newTestSessions(t testing.TB, iterations int) *testSessions {
	t.Helper()
	return &testSessions{
		verifiers: map[string]auth.SCRAMVerifier{testUser: makeVerifier(t, testPassword, iterations)},
		release:   make(chan struct{}),
		started:   make(chan string, 100),
	}
}

// makeVerifier derives a SCRAM-SHA-256 verifier with the given iteration
// count (fuzzing uses 1 to stay fast).
func makeVerifier(t testing.TB, password string, iterations int) auth.SCRAMVerifier {
	t.Helper()
	salt := make([]byte, 16)
	rand.Read(salt)
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	clientKey := hmacSum(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	return auth.SCRAMVerifier{Iterations: iterations, Salt: salt, StoredKey: stored[:], ServerKey: hmacSum(salted, "Server Key")}
}

func hmacSum(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func (s *testSessions) SCRAMVerifier(user string) (auth.SCRAMVerifier, bool) {
	v, ok := s.verifiers[user]
	return v, ok
}

func (s *testSessions) Open(ctx context.Context, user, database string, params map[string]string) (Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opened = append(s.opened, openCall{user, database, params})
	switch database {
	case "nosuchdb":
		return nil, sqlerr.New(sqlerr.InvalidCatalogName, "database %q does not exist", database)
	case "brokendb":
		return nil, errors.New(secretInError)
	}
	return &testSession{s: s}, nil
}

func (s *testSessions) lastOpen() openCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened[len(s.opened)-1]
}

func (s *testSessions) lastExecuted() executeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.executed) == 0 {
		return executeCall{}
	}
	return s.executed[len(s.executed)-1]
}

func (s *testSessions) preparedCalls() []prepareCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]prepareCall(nil), s.prepared...)
}

func (s *testSessions) closedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

type testSession struct {
	s      *testSessions
	closed bool
}

var cannedTime = time.Date(2024, 3, 15, 12, 30, 45, 123456000, time.UTC)

func cannedResult() *sqltypes.Result {
	return &sqltypes.Result{
		Columns: []sqltypes.Column{
			{Name: "id", Type: sqltypes.Int8},
			{Name: "amount", Type: sqltypes.Numeric},
			{Name: "ratio", Type: sqltypes.Float8},
			{Name: "name", Type: sqltypes.Text},
			{Name: "day", Type: sqltypes.Date},
			{Name: "flag", Type: sqltypes.Bool},
			{Name: "missing", Type: sqltypes.Text},
			{Name: "at", Type: sqltypes.Timestamptz},
		},
		Rows: [][]any{
			{int64(1), sqltypes.Decimal("12.50"), 0.1, "ünïcode 'quoted'", time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC), true, nil, cannedTime},
			{int64(-9223372036854775808), sqltypes.Decimal("-0.001"), 1e20, "", time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), false, nil, cannedTime.Add(-123456 * time.Microsecond)},
		},
	}
}

func (t *testSession) Execute(ctx context.Context, sql string) ([]*sqltypes.Result, error) {
	if t.closed {
		panic("Execute after Close")
	}
	q := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sql), ";"))
	switch {
	case q == "select canned":
		return []*sqltypes.Result{cannedResult()}, nil
	case q == "bad":
		return nil, &sqlerr.Error{Code: sqlerr.SyntaxError, Message: `syntax error at or near "bad"`, Detail: "some detail", Hint: "some hint", Position: 1}
	case q == "boom":
		return nil, fmt.Errorf("engine: %w", errors.New(secretInError))
	case q == "" || q == "-- ping":
		return nil, nil
	case q == "set x":
		return []*sqltypes.Result{{Tag: "SET"}}, nil
	case txTags[strings.ToLower(q)] != "":
		return []*sqltypes.Result{{Tag: txTags[strings.ToLower(q)]}}, nil
	case q == "multi":
		return []*sqltypes.Result{
			{Columns: []sqltypes.Column{{Name: "a", Type: sqltypes.Int4}}, Rows: [][]any{{int64(1)}}},
			{Columns: []sqltypes.Column{{Name: "b", Type: sqltypes.Text}}, Rows: [][]any{{"x"}, {"y"}}, Tag: "SELECT 2"},
		}, nil
	case q == "wait":
		t.s.started <- q
		select {
		case <-t.s.release:
			return []*sqltypes.Result{{Columns: []sqltypes.Column{{Name: "done", Type: sqltypes.Bool}}, Rows: [][]any{{true}}}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case strings.HasPrefix(q, "pause "):
		var ms int
		fmt.Sscanf(q, "pause %d", &ms)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return []*sqltypes.Result{{Columns: []sqltypes.Column{{Name: "done", Type: sqltypes.Bool}}, Rows: [][]any{{true}}}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case q == "wait ignoring ctx":
		t.s.started <- q
		<-t.s.release
		return nil, nil
	case q == "panic":
		panic("engine bug")
	case q == "badresult":
		return []*sqltypes.Result{{Columns: []sqltypes.Column{{Name: "a", Type: sqltypes.Int8}}, Rows: [][]any{{int64(1), int64(2)}}}}, nil
	case q == "badvalue":
		return []*sqltypes.Result{{Columns: []sqltypes.Column{{Name: "a", Type: sqltypes.Int8}}, Rows: [][]any{{struct{}{}}}}}, nil
	case strings.HasPrefix(q, "rows "):
		var n int
		fmt.Sscanf(q, "rows %d", &n)
		r := &sqltypes.Result{Columns: []sqltypes.Column{{Name: "n", Type: sqltypes.Int8}, {Name: "pad", Type: sqltypes.Text}}}
		for i := range n {
			r.Rows = append(r.Rows, []any{int64(i), strings.Repeat("x", 100)})
		}
		return []*sqltypes.Result{r}, nil
	}
	return []*sqltypes.Result{{
		Columns: []sqltypes.Column{{Name: "echo", Type: sqltypes.Text}},
		Rows:    [][]any{{sql}},
	}}, nil
}

// txTags are the tags the engine gives transaction statements.
var txTags = map[string]string{
	"begin": "BEGIN", "start transaction": "BEGIN", "commit": "COMMIT", "end": "COMMIT",
	"rollback": "ROLLBACK", "abort": "ROLLBACK", "/* a comment */ commit": "COMMIT",
}

// testTypes names the sqltypes for "echo" statements.
var testTypes = map[string]sqltypes.Type{
	"unknown": sqltypes.Unknown, "bool": sqltypes.Bool, "int2": sqltypes.Int2, "int4": sqltypes.Int4,
	"int8": sqltypes.Int8, "float4": sqltypes.Float4, "float8": sqltypes.Float8, "numeric": sqltypes.Numeric,
	"text": sqltypes.Text, "varchar": sqltypes.Varchar, "bpchar": sqltypes.Bpchar, "date": sqltypes.Date,
	"timestamp": sqltypes.Timestamp, "timestamptz": sqltypes.Timestamptz, "bytea": sqltypes.Bytea,
	"name": sqltypes.Name, "oid": sqltypes.OID,
}

// Prepare describes the statements Execute answers, for the extended
// protocol. Besides those:
//
//	echo T1,T2,...  takes one parameter per type name (a declared type
//	                overrides it, as in the engine) and returns one row
//	                with the parameters as columns c1, c2, ...
//	fail            prepares, then fails with 22012 when executed
//	mismatch        is described as int8 but returns text
//	huge int4       returns 2^40 in an int4 column (no binary form)
func memoKey(sql string, paramTypes []sqltypes.Type) string {
	return fmt.Sprint(sql, paramTypes)
}

func (t *testSession) PrepareMemoized(sql string, paramTypes []sqltypes.Type) (*sqltypes.Prepared, bool) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	p, ok := t.s.memo[memoKey(sql, paramTypes)]
	return p, ok
}

func (t *testSession) Prepare(ctx context.Context, sql string, paramTypes []sqltypes.Type) (p *sqltypes.Prepared, err error) {
	if t.closed {
		panic("Prepare after Close")
	}
	defer func() {
		t.s.mu.Lock()
		defer t.s.mu.Unlock()
		if err == nil && t.s.memoize {
			if t.s.memo == nil {
				t.s.memo = map[string]*sqltypes.Prepared{}
			}
			t.s.memo[memoKey(sql, paramTypes)] = p
		}
	}()
	t.s.mu.Lock()
	t.s.prepared = append(t.s.prepared, prepareCall{sql, append([]sqltypes.Type(nil), paramTypes...)})
	t.s.mu.Unlock()
	q := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sql), ";"))
	p = &sqltypes.Prepared{SQL: sql}
	switch {
	case q == "bad":
		return nil, &sqlerr.Error{Code: sqlerr.SyntaxError, Message: `syntax error at or near "bad"`, Position: 1}
	case q == "" || q == "-- ping":
	case strings.HasPrefix(q, "echo "):
		for i, name := range strings.Split(strings.TrimPrefix(q, "echo "), ",") {
			typ, ok := testTypes[strings.TrimSpace(name)]
			if !ok {
				return nil, sqlerr.New(sqlerr.UndefinedFunction, "type %q does not exist", name)
			}
			if i < len(paramTypes) && paramTypes[i] != sqltypes.Unknown {
				typ = paramTypes[i]
			}
			p.Params = append(p.Params, typ)
			p.Columns = append(p.Columns, sqltypes.Column{Name: fmt.Sprintf("c%d", i+1), Type: typ})
		}
	case q == "set x":
		p.Tag = "SET"
	case txTags[strings.ToLower(q)] != "":
		p.Tag = txTags[strings.ToLower(q)]
	case q == "mismatch":
		p.Columns = []sqltypes.Column{{Name: "a", Type: sqltypes.Int8}}
	case q == "huge int4":
		p.Columns = []sqltypes.Column{{Name: "a", Type: sqltypes.Int4}}
	case q == "wait" || q == "wait ignoring ctx" || q == "boom" || q == "fail" || q == "panic" || strings.HasPrefix(q, "pause "):
		// Described without running them.
		p.Columns = []sqltypes.Column{{Name: "done", Type: sqltypes.Bool}}
	default:
		res, err := t.Execute(ctx, q)
		if err != nil {
			return nil, err
		}
		if len(res) != 1 {
			return nil, sqlerr.New(sqlerr.SyntaxError, "cannot insert multiple commands into a prepared statement")
		}
		p.Columns, p.Tag = res[0].Columns, res[0].Tag
		if len(p.Columns) > 0 {
			p.Tag = ""
		}
	}
	return p, nil
}

// ExecutePrepared runs what Prepare described.
func (t *testSession) ExecutePrepared(ctx context.Context, p *sqltypes.Prepared, params []any) (*sqltypes.Result, error) {
	if t.closed {
		panic("ExecutePrepared after Close")
	}
	t.s.mu.Lock()
	t.s.executed = append(t.s.executed, executeCall{p.SQL, append([]any(nil), params...)})
	t.s.mu.Unlock()
	if len(params) != len(p.Params) {
		return nil, fmt.Errorf("%d params for %d", len(params), len(p.Params))
	}
	q := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(p.SQL), ";"))
	switch {
	case q == "" || q == "-- ping":
		return nil, nil
	case strings.HasPrefix(q, "echo "):
		return &sqltypes.Result{Columns: p.Columns, Rows: [][]any{append([]any(nil), params...)}}, nil
	case q == "fail":
		return nil, sqlerr.New(sqlerr.DivisionByZero, "division by zero")
	case q == "mismatch":
		return &sqltypes.Result{Columns: []sqltypes.Column{{Name: "a", Type: sqltypes.Text}}, Rows: [][]any{{"x"}}}, nil
	case q == "huge int4":
		return &sqltypes.Result{Columns: p.Columns, Rows: [][]any{{int64(1)}, {int64(1) << 40}}}, nil
	}
	res, err := t.Execute(ctx, p.SQL)
	if err != nil || len(res) == 0 {
		return nil, err
	}
	return res[0], nil
}

func (t *testSession) Close() {
	t.closed = true
	t.s.mu.Lock()
	t.s.closed++
	t.s.mu.Unlock()
}

// logBuffer collects a server's log for inspection and for failed tests.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type testServer struct {
	srv      *Server
	sessions *testSessions
	addr     string
	port     string
	logs     *logBuffer
	serveErr chan error
	cancel   context.CancelFunc
}

// startServer serves on 127.0.0.1:0 until the test ends, then shuts down
// and checks that every connection was closed.
func startServer(t *testing.T, opts Options) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ts := &testServer{
		sessions: newTestSessions(t, auth.SCRAMIterations),
		addr:     ln.Addr().String(),
		logs:     logs,
		serveErr: make(chan error, 1),
	}
	_, ts.port, _ = net.SplitHostPort(ts.addr)
	ts.srv = NewServer(ts.sessions, opts)
	ctx, cancel := context.WithCancel(context.Background())
	ts.cancel = cancel
	go func() { ts.serveErr <- ts.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		defer cancel()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		select {
		case <-ts.sessions.release:
		default:
			close(ts.sessions.release)
		}
		if err := ts.srv.Shutdown(sctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		select {
		case err := <-ts.serveErr:
			if err != nil && !errors.Is(err, ErrServerClosed) && !errors.Is(err, context.Canceled) {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return")
		}
		if strings.Contains(logs.String(), "panic while serving") && !strings.Contains(t.Name(), "Panic") {
			t.Errorf("a connection panicked")
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return ts
}

func (ts *testServer) connString(user, password, extra string) string {
	return ts.connStringMode(user, password, "simple_protocol", extra)
}

// connStringMode is connString with another default_query_exec_mode
// ("" for pgx's default, cache_statement).
func (ts *testServer) connStringMode(user, password, mode, extra string) string {
	s := fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable",
		user, strings.ReplaceAll(password, " ", "%20"), ts.addr, testDatabase)
	if mode != "" {
		s += "&default_query_exec_mode=" + mode
	}
	if extra != "" {
		s += "&" + extra
	}
	return s
}

// rawClient speaks the protocol by hand, for what real drivers never send.
type rawClient struct {
	t  testing.TB
	nc net.Conn
	fe *pgproto3.Frontend
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return newRawClient(t, nc)
}

func newRawClient(t testing.TB, nc net.Conn) *rawClient {
	return &rawClient{t: t, nc: nc, fe: pgproto3.NewFrontend(pgproto3.NewChunkReader(nc), nc)}
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawClient) send(msg pgproto3.FrontendMessage) {
	c.t.Helper()
	if err := c.fe.Send(msg); err != nil {
		c.t.Fatalf("send %T: %v", msg, err)
	}
}

func (c *rawClient) receive() pgproto3.BackendMessage {
	c.t.Helper()
	msg, err := c.fe.Receive()
	if err != nil {
		c.t.Fatalf("receive: %v", err)
	}
	return msg
}

// expectError reads until an ErrorResponse and returns it.
func (c *rawClient) expectError() *pgproto3.ErrorResponse {
	c.t.Helper()
	for {
		msg := c.receive()
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			cp := *e
			return &cp
		}
	}
}

// expectClosed asserts that the server closes the connection without
// sending anything more.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 1)
	n, err := c.nc.Read(b)
	if err == nil {
		c.t.Fatalf("expected close, read %d bytes: %q", n, b[:n])
	}
	if errors.Is(err, io.EOF) || isConnReset(err) {
		return
	}
	c.t.Fatalf("expected close, got %v", err)
}

func isConnReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

func startupMessage(params map[string]string) []byte {
	b, _ := (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: params}).Encode(nil)
	return b
}

// login sends a startup message and runs SCRAM with password, returning the
// first message after the exchange (AuthenticationOk or an ErrorResponse).
func (c *rawClient) login(user, password string) pgproto3.BackendMessage {
	c.t.Helper()
	c.write(startupMessage(map[string]string{"user": user, "database": testDatabase}))
	msg, err := scramLogin(c.fe, password)
	if err != nil {
		c.t.Fatal(err)
	}
	return msg
}

// loginReady logs in and reads up to ReadyForQuery.
func (c *rawClient) loginReady() {
	c.t.Helper()
	if _, ok := c.login(testUser, testPassword).(*pgproto3.AuthenticationOk); !ok {
		c.t.Fatal("login failed")
	}
	for {
		if _, ok := c.receive().(*pgproto3.ReadyForQuery); ok {
			return
		}
	}
}

// scramLogin is the client side of SCRAM-SHA-256, written from RFC 5802.
func scramLogin(fe *pgproto3.Frontend, password string) (pgproto3.BackendMessage, error) {
	msg, err := fe.Receive()
	if err != nil {
		return nil, err
	}
	sasl, ok := msg.(*pgproto3.AuthenticationSASL)
	if !ok {
		return msg, fmt.Errorf("expected AuthenticationSASL, got %T", msg)
	}
	if len(sasl.AuthMechanisms) != 1 || sasl.AuthMechanisms[0] != "SCRAM-SHA-256" {
		return nil, fmt.Errorf("mechanisms %v", sasl.AuthMechanisms)
	}
	nonceBytes := make([]byte, 18)
	rand.Read(nonceBytes)
	clientFirstBare := "n=,r=" + base64.StdEncoding.EncodeToString(nonceBytes)
	if err := fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,," + clientFirstBare)}); err != nil {
		return nil, err
	}
	msg, err = fe.Receive()
	if err != nil {
		return nil, err
	}
	cont, ok := msg.(*pgproto3.AuthenticationSASLContinue)
	if !ok {
		return msg, fmt.Errorf("expected AuthenticationSASLContinue, got %T", msg)
	}
	serverFirst := string(cont.Data)
	attrs := map[string]string{}
	for _, kv := range strings.Split(serverFirst, ",") {
		attrs[kv[:1]] = kv[2:]
	}
	salt, _ := base64.StdEncoding.DecodeString(attrs["s"])
	var iters int
	fmt.Sscan(attrs["i"], &iters)
	salted, err := pbkdf2.Key(sha256.New, password, salt, iters, sha256.Size)
	if err != nil {
		return nil, err
	}
	clientKey := hmacSum(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	withoutProof := "c=biws,r=" + attrs["r"]
	authMessage := clientFirstBare + "," + serverFirst + "," + withoutProof
	sig := hmacSum(stored[:], authMessage)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	if err := fe.Send(&pgproto3.SASLResponse{Data: []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof))}); err != nil {
		return nil, err
	}
	msg, err = fe.Receive()
	if err != nil {
		return nil, err
	}
	if _, ok := msg.(*pgproto3.AuthenticationSASLFinal); !ok {
		return msg, nil
	}
	return fe.Receive()
}

// header builds a message header with an arbitrary length word.
func header(typ byte, length uint32) []byte {
	b := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], length)
	return b
}

// sendAll writes messages in one write, the way pipelining drivers do.
func (c *rawClient) sendAll(msgs ...pgproto3.FrontendMessage) {
	c.t.Helper()
	c.write(msgBytes(msgs...))
}

// record is what a raw client received, one letter per message in seq
// (the protocol's type bytes, with '1' ParseComplete, '2' BindComplete,
// '3' CloseComplete, 't' ParameterDescription, 'n' NoData, 's'
// PortalSuspended, 'I' EmptyQueryResponse, 'N' NoticeResponse), with
// copies of the contents tests look at.
type record struct {
	seq       string
	rows      [][][]byte
	tags      []string
	errs      []*pgproto3.ErrorResponse
	notices   []string // SQLSTATEs
	fields    [][]pgproto3.FieldDescription
	paramOIDs [][]uint32
	status    byte // of the last ReadyForQuery
}

// add records msg and reports whether it was a ReadyForQuery.
func (r *record) add(t testing.TB, msg pgproto3.BackendMessage) bool {
	switch m := msg.(type) {
	case *pgproto3.ParseComplete:
		r.seq += "1"
	case *pgproto3.BindComplete:
		r.seq += "2"
	case *pgproto3.CloseComplete:
		r.seq += "3"
	case *pgproto3.ParameterDescription:
		r.seq += "t"
		r.paramOIDs = append(r.paramOIDs, append([]uint32(nil), m.ParameterOIDs...))
	case *pgproto3.RowDescription:
		r.seq += "T"
		fields := make([]pgproto3.FieldDescription, len(m.Fields))
		for i, f := range m.Fields {
			fields[i] = f
			fields[i].Name = append([]byte(nil), f.Name...)
		}
		r.fields = append(r.fields, fields)
	case *pgproto3.NoData:
		r.seq += "n"
	case *pgproto3.DataRow:
		r.seq += "D"
		row := make([][]byte, len(m.Values))
		for i, v := range m.Values {
			if v != nil {
				row[i] = append([]byte{}, v...)
			}
		}
		r.rows = append(r.rows, row)
	case *pgproto3.CommandComplete:
		r.seq += "C"
		r.tags = append(r.tags, string(m.CommandTag))
	case *pgproto3.PortalSuspended:
		r.seq += "s"
	case *pgproto3.EmptyQueryResponse:
		r.seq += "I"
	case *pgproto3.ErrorResponse:
		r.seq += "E"
		cp := *m
		r.errs = append(r.errs, &cp)
	case *pgproto3.NoticeResponse:
		r.seq += "N"
		r.notices = append(r.notices, m.Code)
	case *pgproto3.ReadyForQuery:
		r.seq += "Z"
		r.status = m.TxStatus
		return true
	default:
		t.Fatalf("unexpected %T", msg)
	}
	return false
}

// untilReady reads messages up to and including a ReadyForQuery.
func (c *rawClient) untilReady() record {
	c.t.Helper()
	var r record
	for !r.add(c.t, c.receive()) {
	}
	return r
}

// readN reads exactly n messages.
func (c *rawClient) readN(n int) record {
	c.t.Helper()
	var r record
	for range n {
		r.add(c.t, c.receive())
	}
	return r
}

// expectNothing asserts that the server sends nothing for a while.
func (c *rawClient) expectNothing(d time.Duration) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(d))
	defer c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	b := make([]byte, 1)
	if n, err := c.nc.Read(b); err == nil {
		c.t.Fatalf("expected nothing, read %d bytes: %q", n, b[:n])
	}
}
