package pgwire

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"

	"github.com/dpproxy/dpproxy/internal/testcert"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// panicRecorder is a slog.Handler that remembers connection panics, which
// the server recovers from but which are bugs all the same.
type panicRecorder struct {
	mu     sync.Mutex
	panics []string
}

func (p *panicRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (p *panicRecorder) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p *panicRecorder) WithGroup(string) slog.Handler            { return p }
func (p *panicRecorder) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "panic while serving") {
		return nil
	}
	var detail strings.Builder
	detail.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		detail.WriteString(" " + a.String())
		return true
	})
	p.mu.Lock()
	p.panics = append(p.panics, detail.String())
	p.mu.Unlock()
	return nil
}

func (p *panicRecorder) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.panics
	p.panics = nil
	return out
}

// fuzzSessions answers every query with the canned result, "bad" with an
// error and blank queries with nothing.
type fuzzSessions struct{ *testSessions }

type fuzzSession struct{}

func (f fuzzSessions) Open(context.Context, string, string, map[string]string) (Session, error) {
	return fuzzSession{}, nil
}

func (fuzzSession) Execute(_ context.Context, sql string) ([]*sqltypes.Result, error) {
	switch strings.TrimSpace(sql) {
	case "":
		return nil, nil
	case "bad":
		return nil, sqlerr.New(sqlerr.SyntaxError, "bad")
	}
	return []*sqltypes.Result{cannedResult(), {Tag: "SET"}}, nil
}

func (fuzzSession) PrepareMemoized(string, []sqltypes.Type) (*sqltypes.Prepared, bool) {
	return nil, false
}

func (fuzzSession) Prepare(_ context.Context, sql string, paramTypes []sqltypes.Type) (*sqltypes.Prepared, error) {
	p := &sqltypes.Prepared{SQL: sql}
	switch strings.TrimSpace(sql) {
	case "":
		return p, nil
	case "bad":
		return nil, sqlerr.New(sqlerr.SyntaxError, "bad")
	case "set":
		p.Tag = "SET"
		return p, nil
	case "begin", "commit", "rollback":
		p.Tag = strings.ToUpper(strings.TrimSpace(sql))
		return p, nil
	}
	// Parameters: the declared ones, then one of each type.
	p.Params = append(p.Params, paramTypes...)
	if len(p.Params) < 3 {
		p.Params = append(p.Params, sqltypes.Int4, sqltypes.Numeric, sqltypes.Timestamptz)[:3]
	}
	p.Columns = cannedResult().Columns
	return p, nil
}

func (fuzzSession) ExecutePrepared(_ context.Context, p *sqltypes.Prepared, params []any) (*sqltypes.Result, error) {
	switch {
	case strings.TrimSpace(p.SQL) == "":
		return nil, nil
	case p.Tag != "":
		return &sqltypes.Result{Tag: p.Tag}, nil
	case len(params) > 0 && params[0] == int64(0):
		return nil, sqlerr.New(sqlerr.DivisionByZero, "division by zero")
	}
	return cannedResult(), nil
}

func (fuzzSession) Close() {}

func newFuzzServer(t testing.TB) (*Server, *panicRecorder) {
	rec := &panicRecorder{}
	certFile, keyFile := testcert.Write(t, t.TempDir())
	tlsConfig, err := LoadTLS(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(fuzzSessions{newTestSessions(t, 1)}, Options{
		Logger:           slog.New(rec),
		AuthTimeout:      2 * time.Second,
		IdleTimeout:      2 * time.Second,
		MaxMessageSize:   4096,
		StatementTimeout: time.Second,
		TLS:              tlsConfig,
	})
	return s, rec
}

// runPipeConn serves one connection over net.Pipe. client runs against the
// other end (it may log in first); then data is written, the client end is
// closed, and the server must finish within the deadline without panicking.
func runPipeConn(t *testing.T, s *Server, rec *panicRecorder, login bool, data []byte) {
	srvEnd, cliEnd := net.Pipe()
	c := s.newConn(context.Background(), srvEnd)
	if !s.ns.Add(c) {
		t.Fatal("register refused")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer s.ns.Remove(c)
		c.Serve()
	}()

	clientDone := make(chan struct{})
	go func() {
		defer close(clientDone)
		defer cliEnd.Close()
		cliEnd.SetDeadline(time.Now().Add(5 * time.Second))
		if login {
			fe := pgproto3.NewFrontend(pgproto3.NewChunkReader(cliEnd), cliEnd)
			if err := fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
				Parameters: map[string]string{"user": testUser}}); err != nil {
				return
			}
			msg, err := scramLogin(fe, testPassword)
			if err != nil {
				return
			}
			if _, ok := msg.(*pgproto3.AuthenticationOk); !ok {
				return
			}
			for {
				msg, err := fe.Receive()
				if err != nil {
					return
				}
				if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
					break
				}
			}
		}
		// Drain what the server sends while writing, so neither side
		// blocks on the synchronous pipe.
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			io.Copy(io.Discard, cliEnd)
		}()
		cliEnd.Write(data)
		// Let the server answer what it read before hanging up.
		select {
		case <-drained:
		case <-time.After(20 * time.Millisecond):
		}
	}()

	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("connection handler did not finish for input %q", data)
	}
	<-clientDone
	if p := rec.take(); len(p) > 0 {
		t.Fatalf("connection panicked on input %q: %v", data, p)
	}
}

func msgBytes(msgs ...pgproto3.FrontendMessage) []byte {
	var b []byte
	for _, m := range msgs {
		b, _ = m.Encode(b)
	}
	return b
}

func FuzzStartup(f *testing.F) {
	withLen := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(4+len(body))), body...)
	}
	f.Add(startupMessage(map[string]string{"user": testUser, "database": "db"}))
	f.Add(append(packet(sslRequestCode), startupMessage(map[string]string{"user": testUser})...))
	f.Add(append(packet(gssEncRequestCode), packet(sslRequestCode)...))
	f.Add(append(packet(sslRequestCode), packet(sslRequestCode)...))
	f.Add(packet(cancelRequestCode, 1, 2))
	f.Add(packet(cancelRequestCode, 1))
	f.Add(withLen([]byte{0, 2, 0, 0, 'u', 's', 'e', 'r', 0, 'x', 0, 0}))
	f.Add(withLen([]byte{0, 3, 0, 1, '_', 'p', 'q', '_', '.', 'x', 0, 'y', 0, 0}))
	f.Add(withLen([]byte{0, 3, 0, 0, 0}))
	f.Add(withLen([]byte{0, 3, 0, 0, 'u', 's', 'e', 'r', 0}))
	f.Add([]byte{0, 0, 0, 3})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add(append(startupMessage(map[string]string{"user": testUser}),
		msgBytes(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abc")},
			&pgproto3.SASLResponse{Data: []byte("c=biws,r=abc,p=AAAA")})...))
	f.Add(append(startupMessage(map[string]string{"user": "nobody"}), 'p', 0, 0, 0, 5, 0))
	f.Add(append(startupMessage(map[string]string{"user": testUser}), msgBytes(&pgproto3.Terminate{})...))
	f.Add(append(packet(sslRequestCode), "\x16\x03\x01\x00\x05hello"...)) // a ClientHello sent too early
	s, rec := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		runPipeConn(t, s, rec, false, data)
	})
}

func FuzzMessages(f *testing.F) {
	f.Add(msgBytes(&pgproto3.Query{String: "select canned"}))
	f.Add(msgBytes(&pgproto3.Query{String: "bad"}, &pgproto3.Query{String: ""}, &pgproto3.Terminate{}))
	f.Add(msgBytes(&pgproto3.Parse{Query: "select 1"}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{}, &pgproto3.Sync{}, &pgproto3.Query{String: "x"}))
	f.Add(msgBytes(&pgproto3.Sync{}, &pgproto3.Flush{}, &pgproto3.CopyData{Data: []byte("x")}, &pgproto3.CopyDone{},
		&pgproto3.CopyFail{Message: "m"}, &pgproto3.FunctionCall{Function: 1}))
	f.Add(msgBytes(&pgproto3.PasswordMessage{Password: "x"}))
	f.Add(append(header('Q', 0x7fffffff), 'x'))
	f.Add(header('Q', 3))
	f.Add(append(header('Q', 7), "abc"...))
	f.Add(append(header('B', 6), 0, 0))
	f.Add(append(header('D', 5), 'S'))
	f.Add([]byte{0x01, 0, 0, 0, 4})
	f.Add(append(header('Q', 4096+4), make([]byte, 10)...))
	// The extended protocol: node-postgres and pgx pipelines, row limits,
	// errors, transactions.
	int4 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	ts := binary.BigEndian.AppendUint64(nil, uint64(cannedTime.Sub(pgEpoch).Microseconds()))
	num := numericBytes(2, 0, 0x4000, 2, 12, 5000)
	good := [][]byte{[]byte("1"), []byte("-12.50"), []byte("2024-03-15 12:00:00+01")}
	f.Add(msgBytes(&pgproto3.Parse{Query: "select"}, &pgproto3.Bind{Parameters: good},
		&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{}))
	f.Add(msgBytes(&pgproto3.Parse{Name: "s", Query: "select"}, &pgproto3.Describe{ObjectType: 'S', Name: "s"}, &pgproto3.Sync{},
		&pgproto3.Bind{PreparedStatement: "s", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{int4(1), num, ts}, ResultFormatCodes: []int16{1}},
		&pgproto3.Execute{}, &pgproto3.Sync{}))
	f.Add(msgBytes(&pgproto3.Parse{Name: "s", Query: "select", ParameterOIDs: []uint32{23, 1700, 1184}},
		&pgproto3.Bind{PreparedStatement: "s", DestinationPortal: "p", ParameterFormatCodes: []int16{0, 1, 1}, Parameters: [][]byte{[]byte("5"), num, ts}, ResultFormatCodes: []int16{0, 1, 1, 0, 1, 1, 0, 1}},
		&pgproto3.Describe{ObjectType: 'P', Name: "p"}, &pgproto3.Execute{Portal: "p", MaxRows: 1}, &pgproto3.Flush{},
		&pgproto3.Execute{Portal: "p", MaxRows: 1}, &pgproto3.Execute{Portal: "p"}, &pgproto3.Close{ObjectType: 'P', Name: "p"},
		&pgproto3.Close{ObjectType: 'S', Name: "s"}, &pgproto3.Sync{}))
	f.Add(msgBytes(&pgproto3.Parse{Query: "bad"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Flush{}, &pgproto3.Sync{},
		&pgproto3.Parse{Query: "select"}, &pgproto3.Bind{Parameters: [][]byte{[]byte("0"), nil, nil}}, &pgproto3.Execute{}, &pgproto3.Sync{},
		&pgproto3.Bind{Parameters: [][]byte{[]byte("x")}}, &pgproto3.Sync{},
		&pgproto3.Bind{ParameterFormatCodes: []int16{1, 1, 1}, Parameters: [][]byte{{1}, {0, 1}, {2}}}, &pgproto3.Sync{},
		&pgproto3.Bind{ParameterFormatCodes: []int16{0, 1}, Parameters: good, ResultFormatCodes: []int16{2}}, &pgproto3.Sync{},
		&pgproto3.Execute{Portal: "nope"}, &pgproto3.Describe{ObjectType: 'X'}, &pgproto3.Close{ObjectType: 'X'}, &pgproto3.Sync{}))
	f.Add(msgBytes(&pgproto3.Parse{Query: "begin"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{},
		&pgproto3.Parse{Name: "c", Query: "select"}, &pgproto3.Bind{PreparedStatement: "c", DestinationPortal: "cur", Parameters: good},
		&pgproto3.Execute{Portal: "cur", MaxRows: 1}, &pgproto3.Sync{}, &pgproto3.Query{String: "bad"},
		&pgproto3.Execute{Portal: "cur"}, &pgproto3.Sync{}, &pgproto3.Parse{Query: "rollback"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}))
	f.Add(msgBytes(&pgproto3.Parse{Query: ""}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Execute{}, &pgproto3.Parse{Name: "x", Query: "set"},
		&pgproto3.Parse{Name: "x", Query: "set"}, &pgproto3.Sync{}, &pgproto3.Bind{PreparedStatement: "x"}, &pgproto3.Execute{}, &pgproto3.Execute{}, &pgproto3.Sync{}))
	f.Add(append(header('B', 16), "\x00\x00\x00\x00\x00\x01\xff\xff\xff\xfe\x00\x00"...)) // a negative parameter length
	f.Add(append(header('P', 12), "s\x00q\x00\xff\xff\x00\x00"...))                       // more parameter types than data
	s, rec := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		runPipeConn(t, s, rec, true, data)
	})
}
