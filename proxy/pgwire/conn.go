package pgwire

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgproto3/v2"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/proxy/netserver"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// fatalWriteTimeout bounds the write of a last FATAL message to a client
// whose connection is being closed anyway.
const fatalWriteTimeout = 5 * time.Second

// maxRetainedWriteBuf is the write buffer capacity kept between messages;
// a larger buffer (left by a big result) is dropped after a flush.
const maxRetainedWriteBuf = 64 << 10

// flushThreshold is how much result data is buffered before it is written
// out in the middle of a result.
const flushThreshold = 32 << 10

// conn is one client connection. Its fields are owned by the goroutine
// running Serve, except those under mu, which Shutdown and CancelRequests
// from other connections touch.
type conn struct {
	srv *Server
	// raw is the accepted connection; nc is what the protocol runs over:
	// raw, or a TLS connection on top of it once SSLRequest upgraded it
	// (during startup, before any other goroutine reads nc).
	raw    net.Conn
	nc     net.Conn
	tls    bool
	id     uint64
	log    *slog.Logger
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc
	// stmtCtx is the context statements run in (runSession), ended by
	// stmtCancel: kept from one statement to the next until one is
	// canceled, since a context of its own for each statement cost three
	// or four allocations and a registration with ctx. Only the running
	// statement can end it: a cancel request and the statement timer
	// reach it only while the statement runs (cancelQuery, stmtTimer).
	stmtCtx    context.Context
	stmtCancel context.CancelCauseFunc

	rd *limitedReader
	be *pgproto3.Backend
	// msgs reads the messages once authentication is over (loop); be
	// reads the startup and authentication messages.
	msgs *messageReader
	// readDeadlineStale is set once a statement ran, something was
	// written or more was read from the socket since the idle deadline
	// was last moved (loop).
	readDeadlineStale bool
	// deadlines (the idle timeout's and the writes') are moved only when
	// outside their slack (netserver.Deadline): from the end of
	// authentication on, they are the only writers of nc's deadlines but
	// for the last words of ShutdownIfIdle.
	deadlines netserver.ConnDeadlines
	wbuf      []byte
	werr      error // sticky encoding error, reported by the next flush
	// sendDeadline ends the sending of a statement's results: the
	// statement timeout (plus fatalWriteTimeout to deliver its error)
	// covers them too. Zero between statements.
	sendDeadline time.Time

	// pid and secret are the BackendKeyData; set by Server.addPID before
	// Serve starts and read-only afterwards.
	pid, secret uint32

	user, database string
	session        Session
	// txStatus is sent in every ReadyForQuery: 'I' idle, 'T' in a
	// transaction block, 'E' in a failed transaction block.
	txStatus byte
	// ignoreTillSync is set after an error in extended-protocol mode:
	// messages are discarded until the next Sync.
	ignoreTillSync bool
	// stmts and portals are the extended protocol's prepared statements
	// and portals by name ("" is the unnamed one).
	stmts   map[string]*preparedStatement
	portals map[string]*portal

	// life is the connection's phase as Shutdown sees it.
	life netserver.ConnState

	mu          sync.Mutex
	cancelQuery context.CancelCauseFunc // non-nil while a query runs
	canceled    bool                    // a CancelRequest hit the running query
	// stmtTimer ends a statement that outlives the statement timeout:
	// one timer for the connection, seldom moved (netserver.StatementTimer).
	stmtTimer netserver.StatementTimer
}

// newConn prepares a connection accepted by Serve. Its context keeps the
// values of Serve's ctx but not its cancellation (see
// netserver.ConnContext); cancelling it closes the socket.
func (s *Server) newConn(ctx context.Context, nc net.Conn) *conn {
	ctx, cancel := netserver.ConnContext(ctx, nc)
	c := &conn{
		srv:      s,
		raw:      nc,
		nc:       nc,
		id:       s.nextConnID.Add(1),
		ctx:      ctx,
		cancel:   cancel,
		txStatus: txIdle,
		stmts:    make(map[string]*preparedStatement),
		portals:  make(map[string]*portal),
	}
	c.log = s.log.With("conn", c.id, "remote", nc.RemoteAddr().String())
	c.deadlines = netserver.NewConnDeadlines(func() net.Conn { return c.nc })
	c.rd = newLimitedReader(nc, maxStartupPacketLen)
	c.be = pgproto3.NewBackend(c.rd, nc)
	return c
}

// Serve runs the connection to its end. It never panics. The server's
// registry drops the connection when Serve returns.
func (c *conn) Serve() {
	defer c.cancel()
	defer c.raw.Close()
	defer c.stmtTimer.Close()
	defer c.recoverPanic()

	err := c.run()
	if err != nil {
		c.log.Debug("pgwire: connection closed", "err", err)
	} else {
		c.log.Debug("pgwire: connection closed")
	}
}

func (c *conn) recoverPanic() {
	r := recover()
	if r == nil {
		return
	}
	c.log.Error("pgwire: panic while serving connection", "panic", r, "stack", string(debug.Stack()))
	c.wbuf, c.werr = c.wbuf[:0], nil
	_ = c.fatal(&sqlerr.Error{Code: sqlerr.InternalError, Message: "internal error"})
}

// run handles startup, authentication and then messages until the client
// leaves or the connection must close.
func (c *conn) run() error {
	if err := c.nc.SetDeadline(time.Now().Add(c.srv.opts.AuthTimeout)); err != nil {
		return fmt.Errorf("pgwire: setting authentication deadline: %w", err)
	}
	params, err := c.startup()
	if err != nil {
		return err
	}
	c.user = params["user"]
	if c.user == "" {
		return c.fatal(sqlerr.New(sqlerr.InvalidAuthorization, "no PostgreSQL user name specified in startup packet"))
	}
	c.database = params["database"]
	if c.database == "" {
		c.database = c.user
	}
	if isReplication(params["replication"]) {
		return c.fatal(sqlerr.New(sqlerr.FeatureNotSupported, "replication connections are not supported"))
	}
	c.log = c.log.With("user", c.user, "database", c.database)

	if err := c.srv.opts.Throttle.Wait(c.ctx, c.user, netserver.RemoteIP(c.raw), c.srv.opts.AuthTimeout/2); err != nil {
		if errors.Is(err, auth.ErrThrottled) {
			c.log.Warn("pgwire: login refused: locked out after failed logins", "user", c.user)
			return c.fatal(sqlerr.New(sqlerr.InvalidAuthorization, "too many failed logins for this user name or client address; try again later"))
		}
		return err
	}
	if err := c.authenticate(); err != nil {
		return err
	}
	c.srv.opts.Throttle.Succeeded(c.user)
	sess, err := c.srv.sessions.Open(c.ctx, c.user, c.database, params)
	if err != nil {
		return c.fatal(c.clientError(err))
	}
	c.session = sess
	defer sess.Close()
	c.srv.ns.LoggedIn(c)

	// From the first ReadyForQuery on, a Shutdown must tell the client
	// (FATAL 57P01) rather than drop it: the connection counts as busy
	// until loop marks it idle, and EnterIdle then does the telling.
	if !c.life.EnterActive() {
		return errClosedByServer
	}
	c.sendParameterStatus(params)
	c.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret})
	c.sendReadyForQuery()
	if err := c.deadlines.Clear(); err != nil {
		return fmt.Errorf("pgwire: clearing authentication deadline: %w", err)
	}
	c.rd.max = c.srv.opts.MaxMessageSize
	if err := c.flush(); err != nil {
		return err
	}
	c.log.Debug("pgwire: session started", "application_name", params["application_name"], "tls", c.tls)
	return c.loop()
}

func isReplication(v string) bool {
	switch v {
	case "", "false", "off", "no", "0":
		return false
	}
	return true
}

func (c *conn) sendParameterStatus(params map[string]string) {
	for _, p := range [...]struct{ name, value string }{
		{"application_name", params["application_name"]},
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"integer_datetimes", "on"},
		{"IntervalStyle", "postgres"},
		{"is_superuser", "off"},
		{"server_encoding", "UTF8"},
		{"server_version", c.srv.opts.ServerVersion},
		{"server_version_num", c.srv.versionNum},
		{"session_authorization", c.user},
		{"standard_conforming_strings", "on"},
		{"TimeZone", "UTC"},
	} {
		c.send(&pgproto3.ParameterStatus{Name: p.name, Value: noNUL(p.value)})
	}
}

// loop reads and handles messages after authentication.
//
// A message already begun in what was read with the last one (a driver's
// Parse, Bind, Describe, Execute and Sync come in one packet) is read
// without the connection turning idle in between: Shutdown lets the
// client's pipeline finish, and neither the phase nor the idle deadline
// is touched (a clock read and two locks per message). The deadline is
// moved all the same when the handling since it was last moved may have
// taken long, or the client sent more meanwhile (readDeadlineStale): the
// rest of a message begun may still have to come from the socket. A
// client that stops in the middle of a message is not idle to Shutdown,
// which waits for it until its idle timeout (or ForceClose).
func (c *conn) loop() error {
	c.msgs = &messageReader{rd: c.rd}
	for {
		waits := c.rd.buffered() == 0 // the next message starts on the socket
		if waits {
			ok, notify := c.life.EnterIdle(c.srv.ns.ShuttingDown())
			if !ok {
				if notify {
					return c.fatal(sqlerr.New(sqlerr.AdminShutdown, "terminating connection due to administrator command"))
				}
				return errClosedByServer
			}
		}
		if waits || c.readDeadlineStale {
			if err := c.deadlines.Idle(c.srv.opts.IdleTimeout); err != nil {
				return fmt.Errorf("pgwire: setting read deadline: %w", err)
			}
			c.readDeadlineStale = false
		}
		read := c.rd.src.n
		msg, err := c.receive()
		if !waits && c.rd.src.n != read {
			// The rest of a message begun came from the socket: the
			// client is sending, and what follows gets the idle timeout
			// from now, not from before the message began.
			c.readDeadlineStale = true
		}
		if waits && !c.life.EnterActive() {
			return errClosedByServer
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return c.fatal(&sqlerr.Error{Code: "57P05", Message: "terminating connection due to idle-session timeout"})
			}
			return c.readFailed(err)
		}
		done, err := c.handleMessage(msg)
		c.sendDeadline = time.Time{}
		if err != nil || done {
			return err
		}
	}
}

// handleMessage handles one message after authentication. done means the
// client asked to close the connection.
func (c *conn) handleMessage(msg pgproto3.FrontendMessage) (done bool, err error) {
	if c.ignoreTillSync {
		switch msg.(type) {
		case *pgproto3.Sync:
			return false, c.handleSync()
		case *pgproto3.Terminate:
			return true, nil
		}
		return false, nil
	}
	switch m := msg.(type) {
	case *pgproto3.Query:
		if err := c.handleQuery(m.String); err != nil {
			return false, err
		}
		c.sendReadyForQuery()
		return false, c.flush()
	case *pgproto3.Terminate:
		return true, nil
	case *pgproto3.Parse:
		return false, c.handleParse(m)
	case *pgproto3.Bind:
		return false, c.handleBind(m)
	case *pgproto3.Describe:
		return false, c.handleDescribe(m)
	case *pgproto3.Execute:
		return false, c.handleExecute(m)
	case *pgproto3.Close:
		return false, c.handleClose(m)
	case *pgproto3.Sync:
		return false, c.handleSync()
	case *pgproto3.Flush:
		return false, c.flush()
	case *pgproto3.FunctionCall:
		c.sendError(sqlerr.New(sqlerr.FeatureNotSupported, "fastpath function calls are not supported"))
		c.sendReadyForQuery()
		return false, c.flush()
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// Outside COPY these are ignored, as PostgreSQL does: a client may
		// still be sending data for a COPY that failed.
		return false, nil
	default:
		c.log.Info("pgwire: unexpected message", "type", fmt.Sprintf("%T", msg))
		return false, c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "unexpected message type %q", messageTypeName(msg)))
	}
}

// handleQuery runs a simple-protocol query and queues its responses, but
// not the ReadyForQuery. Errors it returns are connection failures;
// query errors go to the client. Like PostgreSQL, a simple query replaces
// the unnamed prepared statement and portal, and when it leaves no
// transaction block open, the portals of the implicit transaction go.
func (c *conn) handleQuery(sql string) error {
	delete(c.stmts, "")
	delete(c.portals, "")
	defer func() {
		if c.txStatus == txIdle {
			clear(c.portals)
		}
	}()
	if e := c.failedTransactionError(sql); e != nil {
		c.sendError(e)
		return nil
	}
	var results []*sqltypes.Result
	qerr, connErr := c.runSession(func(ctx context.Context) error {
		var err error
		results, err = c.session.Execute(ctx, sql)
		return err
	})
	if connErr != nil {
		return connErr
	}
	if qerr != nil {
		c.sendError(qerr)
		return nil
	}
	if len(results) == 0 {
		c.send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	return c.writeResults(results)
}

// runSession calls f, one call into the session on the client's behalf,
// with a context that a CancelRequest for this connection cancels and
// that Options.StatementTimeout ends. qerr is f's error as the client
// should see it: 57014 when the statement was canceled or timed out,
// unless f explains its failure with its own *sqlerr.Error. connErr is set
// (and the FATAL already sent) when Shutdown gave up waiting and the
// connection must end, whatever f returned.
func (c *conn) runSession(f func(ctx context.Context) error) (qerr, connErr error) {
	c.readDeadlineStale = true
	if c.stmtCtx == nil || c.stmtCtx.Err() != nil {
		c.stmtCtx, c.stmtCancel = context.WithCancelCause(c.ctx)
	}
	ctx, cancel := c.stmtCtx, c.stmtCancel
	var timeoutAt time.Time
	if d := c.srv.opts.StatementTimeout; d > 0 {
		timeoutAt = time.Now().Add(d)
		c.sendDeadline = timeoutAt.Add(fatalWriteTimeout)
	}
	c.mu.Lock()
	c.cancelQuery, c.canceled = cancel, false
	c.mu.Unlock()
	if !timeoutAt.IsZero() {
		c.stmtTimer.Start(timeoutAt, cancel)
		defer c.stmtTimer.Stop()
	}

	err := f(ctx)

	c.mu.Lock()
	canceled := c.canceled
	c.cancelQuery = nil
	c.mu.Unlock()

	if c.ctx.Err() != nil {
		// Shutdown gave up waiting: the connection is being torn down,
		// whatever the query returned.
		return nil, c.fatal(sqlerr.New(sqlerr.AdminShutdown, "terminating connection due to administrator command"))
	}
	if err == nil {
		return nil, nil
	}
	var e *sqlerr.Error
	if errors.As(err, &e) && e.Code != sqlerr.InternalError {
		return err, nil
	}
	switch {
	case canceled:
		c.log.Debug("pgwire: statement canceled", "err", err)
		return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request"), nil
	case errors.Is(context.Cause(ctx), netserver.ErrStatementTimeout):
		c.log.Debug("pgwire: statement timed out", "err", err)
		return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to statement timeout"), nil
	}
	return err, nil
}

// cancelRunningQuery cancels the running query, if any, when secret
// matches. It is called from the goroutine of another connection.
func (c *conn) cancelRunningQuery(secret uint32) bool {
	if subtle.ConstantTimeEq(int32(secret), int32(c.secret)) != 1 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancelQuery == nil {
		return false
	}
	c.canceled = true
	c.cancelQuery(context.Canceled)
	return true
}

// ShutdownIfIdle is Shutdown's part: an idle session is told and closed,
// a connection still authenticating is closed, a busy one is left to
// finish its query (it closes itself in enterIdle).
func (c *conn) ShutdownIfIdle() {
	phase, take := c.life.TakeOverIfNotActive()
	if !take {
		return
	}
	if phase == netserver.Idle {
		// The serving goroutine is blocked reading and writes nothing
		// until EnterActive, which now fails: this goroutine may write.
		msg, err := errorResponse("FATAL", sqlerr.New(sqlerr.AdminShutdown, "terminating connection due to administrator command")).Encode(nil)
		if err == nil {
			_ = c.nc.SetWriteDeadline(time.Now().Add(fatalWriteTimeout))
			_, _ = c.nc.Write(msg)
		}
	}
	c.cancel()
	c.raw.Close()
}

// ForceClose closes the connection whatever it is doing.
func (c *conn) ForceClose() {
	c.life.TakeOver()
	// The socket first: the serving goroutine, woken by the cancel, must
	// find it closed rather than write its FATAL to a client Shutdown has
	// stopped waiting for (found in CI: the client read the FATAL's "E"
	// when the goroutine ran between the two).
	c.raw.Close()
	c.cancel()
}

// clientError turns err into what the client may see. Errors that are not
// *sqlerr.Error are logged and become XX000 "internal error": their text may
// depend on protected data.
func (c *conn) clientError(err error) *sqlerr.Error {
	var e *sqlerr.Error
	if errors.As(err, &e) {
		if e.Code == sqlerr.InternalError && e.Err != nil {
			c.log.Error("pgwire: internal error", "err", e.Err)
		}
		return e
	}
	c.log.Error("pgwire: internal error", "err", err)
	return &sqlerr.Error{Code: sqlerr.InternalError, Message: "internal error"}
}

// sendError queues an ErrorResponse (severity ERROR) for err. An error
// inside a transaction block fails the block, as in PostgreSQL.
func (c *conn) sendError(err error) {
	c.send(errorResponse("ERROR", c.clientError(err)))
	if c.txStatus == txInBlock {
		c.txStatus = txFailed
	}
}

// fatal sends a FATAL ErrorResponse and returns the error that ends the
// connection.
func (c *conn) fatal(e *sqlerr.Error) error {
	c.send(errorResponse("FATAL", e))
	_ = c.deadlines.Write.Exactly(time.Now().Add(fatalWriteTimeout))
	c.flushNoDeadline()
	return &fatalError{e: e}
}

// readFailed ends the connection after c.receive failed: protocol
// violations and oversized messages are reported to the client, a
// vanished client is not.
func (c *conn) readFailed(err error) error {
	var tl *tooLargeError
	if errors.As(err, &tl) {
		c.log.Info("pgwire: message too large", "size", tl.size, "max", tl.max)
		return c.fatal(sqlerr.New(sqlerr.ProgramLimitExceeded, "message of %d bytes exceeds the maximum message size of %d bytes", tl.size, tl.max))
	}
	var pe *protocolError
	if errors.As(err, &pe) {
		c.log.Info("pgwire: protocol violation", "err", pe)
		return c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "%s", pe.msg))
	}
	return fmt.Errorf("pgwire: reading from client: %w", err)
}

// send queues msg for the next flush.
// sendReadyForQuery queues a ReadyForQuery with the transaction status,
// written as pgproto3 encodes it but without a message value to allocate
// (one per statement).
func (c *conn) sendReadyForQuery() {
	c.wbuf = append(c.wbuf, 'Z', 0, 0, 0, 5, c.txStatus)
}

// sendCommandComplete queues a CommandComplete with tag, written as
// pgproto3 encodes it without allocating (one per statement).
func (c *conn) sendCommandComplete(tag string) {
	c.wbuf = appendCommandComplete(c.wbuf, tag)
}

func appendCommandComplete(dst []byte, tag string) []byte {
	start := len(dst)
	dst = append(dst, 'C', 0, 0, 0, 0)
	dst = append(dst, tag...)
	dst = append(dst, 0)
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
	return dst
}

func (c *conn) send(msg pgproto3.BackendMessage) {
	buf, err := msg.Encode(c.wbuf)
	if err != nil {
		if c.werr == nil {
			c.werr = fmt.Errorf("pgwire: encoding %T: %w", msg, err)
		}
		return
	}
	c.wbuf = buf
}

// flush writes the queued messages, within Options.WriteTimeout and, while
// a statement's results are being sent, its send deadline.
func (c *conn) flush() error {
	if len(c.wbuf) > 0 {
		// A zero deadline clears one left by an earlier statement.
		if err := c.deadlines.Write.Within(writeDeadline(c.srv.opts.WriteTimeout, c.sendDeadline), netserver.Slack(c.srv.opts.WriteTimeout)); err != nil {
			return fmt.Errorf("pgwire: setting write deadline: %w", err)
		}
	}
	err := c.flushNoDeadline()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.log.Info("pgwire: closing a connection whose client does not read what is sent to it", "write_timeout", c.srv.opts.WriteTimeout, "statement_deadline", c.sendDeadline)
	}
	return err
}

// writeDeadline is the earlier of now + timeout (0: none) and the
// statement's send deadline (zero: none).
func writeDeadline(timeout time.Duration, send time.Time) time.Time {
	var d time.Time
	if timeout > 0 {
		d = time.Now().Add(timeout)
	}
	if !send.IsZero() && (d.IsZero() || send.Before(d)) {
		d = send
	}
	return d
}

func (c *conn) flushNoDeadline() error {
	if c.werr != nil {
		err := c.werr
		c.werr = nil
		c.wbuf = c.wbuf[:0]
		return err
	}
	if len(c.wbuf) == 0 {
		return nil
	}
	c.readDeadlineStale = true
	_, err := c.nc.Write(c.wbuf)
	if cap(c.wbuf) > maxRetainedWriteBuf {
		c.wbuf = nil
	} else {
		c.wbuf = c.wbuf[:0]
	}
	if err != nil {
		return fmt.Errorf("pgwire: writing to client: %w", err)
	}
	return nil
}

// receive reads one message (through the pgproto3 Backend until
// authentication is over, then messageReader), turning decode
// failures (including panics in decoders fed malformed bodies) into
// *protocolError. The message is valid until the next receive.
func (c *conn) receive() (msg pgproto3.FrontendMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Debug("pgwire: decoder panicked on malformed message", "panic", r)
			msg, err = nil, &protocolError{msg: "invalid message format"}
		}
	}()
	if c.msgs != nil {
		msg, err = c.msgs.receive()
	} else {
		msg, err = c.be.Receive()
	}
	if err == nil {
		return msg, nil
	}
	if msg != nil {
		// The body was read but did not decode.
		return nil, &protocolError{msg: "invalid message format", err: err}
	}
	if c.rd.err != nil {
		return nil, err // reading failed or the message is too large
	}
	// The header was read, then refused: an unknown type or a bad length.
	if h := c.rd.last; len(h) == 5 {
		if !knownFrontendType(h[0]) {
			return nil, &protocolError{msg: fmt.Sprintf("invalid frontend message type %d", h[0]), err: err}
		}
		return nil, &protocolError{msg: "invalid message length", err: err}
	}
	return nil, &protocolError{msg: "invalid message", err: err}
}

func knownFrontendType(t byte) bool {
	switch t {
	case 'B', 'C', 'D', 'E', 'F', 'f', 'd', 'c', 'H', 'P', 'p', 'Q', 'S', 'X':
		return true
	}
	return false
}

func messageTypeName(msg pgproto3.FrontendMessage) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3.")
}

// errClosedByServer ends a connection that Shutdown or ForceClose closed.
var errClosedByServer = errors.New("pgwire: connection closed by server")

// fatalError ends a connection after a FATAL ErrorResponse was sent.
type fatalError struct{ e *sqlerr.Error }

func (f *fatalError) Error() string {
	return fmt.Sprintf("pgwire: sent FATAL %s: %s", f.e.Code, f.e.Message)
}

func (f *fatalError) Unwrap() error { return f.e }

// protocolError is a message the client should not have sent.
type protocolError struct {
	msg string
	err error
}

func (p *protocolError) Error() string {
	if p.err != nil {
		return p.msg + ": " + p.err.Error()
	}
	return p.msg
}

func (p *protocolError) Unwrap() error { return p.err }
