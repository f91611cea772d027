package mysqlwire

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/proxy/netserver"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// maxRetainedWriteBuf is the write buffer capacity kept between commands.
const maxRetainedWriteBuf = 64 << 10

// errorWriteTimeout is the time past the statement timeout given to
// deliver a timed-out statement's error.
const errorWriteTimeout = 5 * time.Second

// readBufferSize is the client socket's read buffer: one read system call
// takes every packet that has arrived (a binary-protocol client sends its
// close, prepare and execute back to back), where reading each packet's
// header and body straight from the socket cost two.
const readBufferSize = 4 << 10

// maxHandshakePacket bounds every packet before the client is
// authenticated (handshake response, auth switch and caching_sha2
// exchanges: a few hundred bytes from real clients, connection attributes
// included). Options.MaxPacketSize applies only after login.
const maxHandshakePacket = 16 << 10

// conn is one client connection, owned by the goroutine running Serve
// except for the fields under mu.
type conn struct {
	// warnings is the warning count of the result being written (its
	// notices), sent in its OK and EOF packets.
	warnings uint16
	srv      *Server
	raw      net.Conn
	nc       net.Conn
	tls      bool
	id       uint32
	log      *slog.Logger
	ctx      context.Context
	cancel   context.CancelFunc

	pr  packetReader
	seq uint8
	// deadlines (the idle timeout's and the writes') are moved only when
	// outside their slack (netserver.Deadline).
	deadlines netserver.ConnDeadlines
	wbuf      []byte
	// payload is where a result's packets are built before writePacket
	// frames them into wbuf: kept, so that a result's column definitions
	// and rows allocate nothing.
	payload []byte
	// sendDeadline ends the sending of a command's results: the statement
	// timeout (plus errorWriteTimeout to deliver its error) covers them
	// too. Zero between commands.
	sendDeadline time.Time

	caps    uint32 // capabilities both sides have
	user    string
	session Session
	inTx    bool
	stmts   map[uint32]*statement
	nextID  uint32

	// life is the connection's phase as Shutdown sees it.
	life netserver.ConnState
	// command is the running command's context (commandContext); nil
	// between commands.
	command context.Context
	// cmdCtx is the context commands run in, ended by cmdCancel: kept
	// from one command to the next until one is canceled (a context of
	// its own for each cost three or four allocations and a registration
	// with ctx). Only the running command can end it: the statement
	// timer reaches it only while the command runs (stmtTimer).
	cmdCtx    context.Context
	cmdCancel context.CancelCauseFunc
	// stmtTimer ends a command that outlives the statement timeout: one
	// timer for the connection, seldom moved (netserver.StatementTimer).
	stmtTimer netserver.StatementTimer
}

// newConn prepares a connection accepted by Serve. Its context keeps the
// values of Serve's ctx but not its cancellation (see
// netserver.ConnContext); cancelling it closes the socket.
func (s *Server) newConn(ctx context.Context, nc net.Conn) *conn {
	ctx, cancel := netserver.ConnContext(ctx, nc)
	c := &conn{
		srv:    s,
		raw:    nc,
		nc:     nc,
		id:     s.nextConnID.Add(1),
		ctx:    ctx,
		cancel: cancel,
		stmts:  make(map[uint32]*statement),
	}
	c.log = s.log.With("conn", c.id, "remote", nc.RemoteAddr().String())
	c.deadlines = netserver.NewConnDeadlines(func() net.Conn { return c.nc })
	c.pr = packetReader{r: bufio.NewReaderSize(nc, readBufferSize), max: maxHandshakePacket}
	return c
}

// Serve runs the connection to its end. It never panics. The server's
// registry drops the connection when Serve returns.
func (c *conn) Serve() {
	defer c.cancel()
	defer c.raw.Close()
	defer c.stmtTimer.Close()
	defer c.recoverPanic()
	if err := c.run(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.log.Debug("mysqlwire: connection closed", "err", err)
	} else {
		c.log.Debug("mysqlwire: connection closed")
	}
}

func (c *conn) recoverPanic() {
	r := recover()
	if r == nil {
		return
	}
	c.log.Error("mysqlwire: panic while serving connection", "panic", r, "stack", string(debug.Stack()))
	c.wbuf = c.wbuf[:0]
	c.writeErr(mysqlError{Code: ErrUnknown, SQLState: "HY000", Message: "internal error"})
	_ = c.flushWithin(5 * time.Second)
}

func (c *conn) run() error {
	if err := c.nc.SetDeadline(time.Now().Add(c.srv.opts.AuthTimeout)); err != nil {
		return fmt.Errorf("mysqlwire: setting authentication deadline: %w", err)
	}
	database, err := c.handshake()
	if err != nil {
		return err
	}
	sess, err := c.srv.sessions.Open(c.ctx, c.user, database)
	if err != nil {
		c.writeErr(c.clientError(err))
		_ = c.flush()
		return fmt.Errorf("mysqlwire: opening session: %w", err)
	}
	c.session = sess
	defer sess.Close()
	c.srv.ns.LoggedIn(c)
	if cs, ok := sess.(interface{ SetConnectionID(uint32) }); ok {
		cs.SetConnectionID(c.id) // for CONNECTION_ID()
	}
	c.writeOK(0, "")
	if err := c.flush(); err != nil {
		return err
	}
	c.pr.max = c.srv.opts.MaxPacketSize
	if err := c.deadlines.Clear(); err != nil {
		return fmt.Errorf("mysqlwire: clearing authentication deadline: %w", err)
	}
	c.log = c.log.With("user", c.user)
	c.log.Debug("mysqlwire: session started", "database", database, "tls", c.tls)
	return c.loop()
}

// handshake sends Protocol::HandshakeV10, reads the client's response
// (upgrading to TLS on an SSLRequest) and authenticates. It returns the
// database the client asked for.
func (c *conn) handshake() (string, error) {
	nonce := newNonce()
	caps := serverCapabilities
	if c.srv.opts.TLS != nil {
		caps |= clientSSL
	}
	p := []byte{10}
	p = append(p, c.srv.opts.ServerVersion...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint32(p, c.id)
	p = append(p, nonce[:8]...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint16(p, uint16(caps))
	p = append(p, byte(charsetUTF8MB4))
	p = binary.LittleEndian.AppendUint16(p, statusAutocommit)
	p = binary.LittleEndian.AppendUint16(p, uint16(caps>>16))
	p = append(p, byte(len(nonce)+1))
	p = append(p, make([]byte, 10)...)
	p = append(p, nonce[8:]...)
	p = append(p, 0)
	p = append(p, c.srv.opts.AuthPlugin...)
	p = append(p, 0)
	c.seq = 0
	c.writePacket(p)
	if err := c.flush(); err != nil {
		return "", err
	}

	pkt, err := c.readPacket()
	if err != nil {
		return "", c.readError(err)
	}
	d := &decoder{b: pkt}
	clientCaps := d.uint32()
	if d.err == nil && clientCaps&clientSSL != 0 && len(pkt) == 32 {
		if c.srv.opts.TLS == nil {
			return "", c.fail(mysqlError{ErrUnknown, "08S01", "TLS is not configured on this server"})
		}
		// A client starts TLS right after its SSL request, without
		// waiting for an answer: the first bytes of its handshake may
		// already be in the read buffer.
		tc := tls.Server(bufferedConn{Conn: c.raw, r: c.pr.r}, c.srv.opts.TLS)
		hctx, cancel := context.WithTimeout(c.ctx, c.srv.opts.AuthTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			return "", fmt.Errorf("mysqlwire: TLS handshake: %w", err)
		}
		c.nc, c.tls = tc, true
		c.pr.r = tc // it reads the socket through the buffer above
		if pkt, err = c.readPacket(); err != nil {
			return "", c.readError(err)
		}
		d = &decoder{b: pkt}
		clientCaps = d.uint32()
	}
	if c.srv.opts.RequireTLS && !c.tls {
		c.log.Info("mysqlwire: plaintext connection refused: TLS is required")
		return "", c.fail(mysqlError{ErrSecureTransport, "HY000", "Connections using insecure transport are prohibited: this server requires TLS (connect with --ssl / sslMode=REQUIRED)"})
	}
	resp, err := parseHandshakeResponse(d, clientCaps)
	if err != nil {
		return "", c.fail(mysqlError{ErrUnknown, "08S01", "Bad handshake"})
	}
	if clientCaps&clientProtocol41 == 0 {
		return "", c.fail(mysqlError{ErrNotSupported, "08004", "dpproxy needs a client that speaks protocol 4.1 (CLIENT_PROTOCOL_41)"})
	}
	c.caps = clientCaps & caps
	c.user = resp.user
	if err := c.srv.opts.Throttle.Wait(c.ctx, c.user, netserver.RemoteIP(c.raw), c.srv.opts.AuthTimeout/2); err != nil {
		if errors.Is(err, auth.ErrThrottled) {
			c.log.Warn("mysqlwire: login refused: locked out after failed logins", "user", c.user)
			return "", c.fail(mysqlError{ErrAccessDenied, "28000", "Too many failed logins for this user name or client address; try again later"})
		}
		return "", err
	}
	if err := c.authenticate(resp, nonce); err != nil {
		return "", err
	}
	c.srv.opts.Throttle.Succeeded(c.user)
	return resp.database, nil
}

// handshakeResponse is Protocol::HandshakeResponse41.
type handshakeResponse struct {
	user, database, plugin string
	authData               []byte
}

func parseHandshakeResponse(d *decoder, caps uint32) (*handshakeResponse, error) {
	r := &handshakeResponse{}
	d.uint32() // max packet size
	d.uint8()  // character set
	d.bytes(23)
	r.user = d.nulString()
	switch {
	case caps&clientPluginAuthLenenc != 0:
		r.authData = d.lenEncBytes()
	case caps&clientSecureConnection != 0:
		r.authData = d.bytes(int(d.uint8()))
	default:
		r.authData = []byte(d.nulString())
	}
	if caps&clientConnectWithDB != 0 && d.remaining() > 0 {
		r.database = d.nulString()
	}
	if caps&clientPluginAuth != 0 && d.remaining() > 0 {
		// Some clients omit the terminating NUL of the last field.
		rest := d.b[d.pos:]
		if i := strings.IndexByte(string(rest), 0); i >= 0 {
			r.plugin = d.nulString()
		} else {
			r.plugin = string(d.rest())
		}
	}
	// Connection attributes, if any, are ignored.
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

// authenticate checks the client's scramble against the analyst's
// verifiers, switching plugins when the client used one the analyst has
// no verifier for. Unknown users are checked against random verifiers of
// both kinds, and fail exactly like a wrong password.
func (c *conn) authenticate(resp *handshakeResponse, nonce []byte) error {
	native, sha2, known := c.srv.sessions.MySQLVerifiers(resp.user)
	if !known {
		native, sha2 = randomBytes(20), randomBytes(32)
	}
	plugin := resp.plugin
	if c.caps&clientPluginAuth == 0 {
		plugin = pluginNative
	}
	data := resp.authData
	usable := (plugin == pluginSHA2 && sha2 != nil) || (plugin == pluginNative && native != nil)
	if !usable {
		if c.caps&clientPluginAuth == 0 {
			return c.denied(len(data) > 0)
		}
		plugin = pluginSHA2
		if sha2 == nil {
			plugin = pluginNative
		}
		nonce = newNonce()
		p := []byte{0xfe}
		p = append(p, plugin...)
		p = append(p, 0)
		p = append(p, nonce...)
		p = append(p, 0)
		c.writePacket(p)
		if err := c.flush(); err != nil {
			return err
		}
		pkt, err := c.readPacket()
		if err != nil {
			return c.readError(err)
		}
		data = pkt
	}
	ok := false
	switch plugin {
	case pluginSHA2:
		ok = auth.VerifyCachingSHA2Fast(sha2, nonce, data)
	case pluginNative:
		ok = auth.VerifyMySQLNative(native, nonce, data)
	}
	if !ok || !known {
		return c.denied(len(data) > 0)
	}
	if plugin == pluginSHA2 {
		// dpproxy's verifier is the fast-path cache itself, so the fast
		// path always decides: full authentication is never needed.
		c.writePacket([]byte{0x01, sha2FastAuthSuccess})
	}
	return nil
}

// denied sends ER_ACCESS_DENIED_ERROR, the same for unknown users and
// wrong passwords, and ends the connection.
func (c *conn) denied(withPassword bool) error {
	host := c.raw.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	yes := "YES"
	if !withPassword {
		yes = "NO"
	}
	lock := c.srv.opts.Throttle.Failed(c.user, netserver.RemoteIP(c.raw))
	c.log.Warn("mysqlwire: authentication failed", "user", c.user, "locked_out_for", lock)
	// Unknown names and wrong passwords wait alike before the answer.
	netserver.SleepCtx(c.ctx, lock)
	return c.fail(mysqlError{ErrAccessDenied, "28000", fmt.Sprintf("Access denied for user '%s'@'%s' (using password: %s)", c.user, host, yes)})
}

// loop reads and runs commands until the client quits or the connection
// must close.
func (c *conn) loop() error {
	for {
		if ok, _ := c.life.EnterIdle(c.srv.ns.ShuttingDown()); !ok {
			return nil // MySQL has no message to tell a client it is shut out
		}
		// Left in force while the command runs: nothing reads the
		// connection then.
		if err := c.deadlines.Idle(c.srv.opts.IdleTimeout); err != nil {
			return fmt.Errorf("mysqlwire: setting idle deadline: %w", err)
		}
		c.seq = 0
		pkt, err := c.readPacket()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.log.Debug("mysqlwire: closing idle connection")
				return nil
			}
			return c.readError(err)
		}
		if !c.life.EnterActive() {
			return nil
		}
		quit, err := c.dispatch(pkt)
		if err != nil {
			return err
		}
		err = c.flush()
		c.sendDeadline = time.Time{}
		if err != nil {
			return err
		}
		if quit {
			return nil
		}
	}
}

// ShutdownIfIdle closes the connection now if it waits for a command or
// is logging in; otherwise it closes once the running command has
// answered (EnterIdle refuses it).
func (c *conn) ShutdownIfIdle() {
	if _, take := c.life.TakeOverIfNotActive(); take {
		c.cancel()
	}
}

// ForceClose closes the connection whatever it is doing: cancelling its
// context closes the socket.
func (c *conn) ForceClose() {
	c.life.TakeOver()
	c.cancel()
}

// bufferedConn is a socket whose reads go through a buffer that may
// already hold what was read ahead of the TLS handshake.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (b bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// readPacket reads one logical packet at the expected sequence id.
func (c *conn) readPacket() ([]byte, error) {
	return c.pr.readPacket(&c.seq)
}

// readError turns a read failure into the connection's end, telling the
// client why when the protocol allows it.
func (c *conn) readError(err error) error {
	switch {
	case errors.Is(err, errPacketTooLarge):
		return c.fail(mysqlError{ErrNetPacketTooLarge, "08S01", fmt.Sprintf("Got a packet bigger than 'max_allowed_packet' bytes (%d)", c.pr.max)})
	case errors.Is(err, errSequence):
		return c.fail(mysqlError{ErrNetPacketsOutOfOrder, "08S01", "Got packets out of order"})
	}
	return err
}

// fail sends an ERR packet and returns an error that ends the connection.
func (c *conn) fail(e mysqlError) error {
	c.writeErr(e)
	_ = c.flushWithin(5 * time.Second)
	return fmt.Errorf("mysqlwire: %d %s", e.Code, e.Message)
}

// timedOut reports whether err (se, when it is a *sqlerr.Error) is the
// running command's end by the statement timeout.
func (c *conn) timedOut(err error, se *sqlerr.Error) bool {
	if c.command == nil || !errors.Is(context.Cause(c.command), netserver.ErrStatementTimeout) {
		return false
	}
	return errors.Is(err, context.Canceled) || (se != nil && se.Code == sqlerr.QueryCanceled)
}

// clientError maps an error for the client, logging internal ones.
func (c *conn) clientError(err error) mysqlError {
	var se *sqlerr.Error
	isSQLErr := errors.As(err, &se)
	if c.timedOut(err, se) {
		return mysqlError{ErrQueryTimeout, "HY000", "Query execution was interrupted, maximum statement execution time exceeded"}
	}
	if !isSQLErr {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return mysqlError{ErrQueryInterrupted, "70100", "Query execution was interrupted"}
		}
		c.log.Error("mysqlwire: internal error", "err", err)
	}
	return toMySQLError(err)
}

// Writing.

func (c *conn) writePacket(payload []byte) {
	c.wbuf = appendPacket(c.wbuf, payload, &c.seq)
}

func (c *conn) flush() error {
	if len(c.wbuf) == 0 {
		return nil
	}
	// A zero deadline clears one left by an earlier command.
	if err := c.deadlines.Write.Within(c.sendBy(), netserver.Slack(c.srv.opts.WriteTimeout)); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("mysqlwire: setting write deadline: %w", err)
	}
	return c.write()
}

// flushWithin writes the queued packets within d (a last error message).
func (c *conn) flushWithin(d time.Duration) error {
	if len(c.wbuf) == 0 {
		return nil
	}
	if err := c.deadlines.Write.Exactly(time.Now().Add(d)); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("mysqlwire: setting write deadline: %w", err)
	}
	return c.write()
}

// write writes the queued packets.
func (c *conn) write() error {
	_, err := c.nc.Write(c.wbuf)
	if cap(c.wbuf) > maxRetainedWriteBuf {
		c.wbuf = nil
	} else {
		c.wbuf = c.wbuf[:0]
	}
	if err != nil {
		return fmt.Errorf("mysqlwire: writing: %w", err)
	}
	return nil
}

// sendBy is the earlier of now + Options.WriteTimeout and the command's
// send deadline (zero: neither applies).
func (c *conn) sendBy() time.Time {
	var d time.Time
	if t := c.srv.opts.WriteTimeout; t > 0 {
		d = time.Now().Add(t)
	}
	if !c.sendDeadline.IsZero() && (d.IsZero() || c.sendDeadline.Before(d)) {
		d = c.sendDeadline
	}
	return d
}

// status is the server status flags sent in OK and EOF packets.
func (c *conn) status() uint16 {
	var st uint16
	if c.session == nil || c.session.Autocommit() {
		st |= statusAutocommit
	}
	if c.inTx {
		st |= statusInTrans
	}
	return st
}

func (c *conn) writeOK(affected uint64, info string) {
	c.writeOKHeader(0x00, affected, info)
}

func (c *conn) writeOKHeader(header byte, affected uint64, info string) {
	p := []byte{header}
	p = appendLenEncInt(p, affected)
	p = appendLenEncInt(p, 0) // last insert id
	p = binary.LittleEndian.AppendUint16(p, c.status())
	p = binary.LittleEndian.AppendUint16(p, c.warnings)
	p = append(p, info...)
	c.writePacket(p)
}

// writeEOF ends a row or column list: an EOF packet, or with
// CLIENT_DEPRECATE_EOF an OK packet with the 0xfe header.
func (c *conn) writeEOF() {
	if c.caps&clientDeprecateEOF != 0 {
		c.writeOKHeader(0xfe, 0, "")
		return
	}
	c.writeEOFPacket()
}

// writeEOFPacket writes a real EOF packet (between column definitions and
// rows, only sent without CLIENT_DEPRECATE_EOF).
func (c *conn) writeEOFPacket() {
	p := binary.LittleEndian.AppendUint16([]byte{0xfe}, c.warnings)
	p = binary.LittleEndian.AppendUint16(p, c.status())
	c.writePacket(p)
}

func (c *conn) writeErr(e mysqlError) {
	c.writePacket(appendErr(nil, e))
}

// Helpers.

// newNonce returns 20 random bytes without NUL (the handshake sends the
// second part NUL-terminated), in 1..127 like MySQL's scramble.
func newNonce() []byte {
	b := randomBytes(20)
	for i := range b {
		b[i] = b[i]&0x7f | 1
		if b[i] == '$' { // MySQL avoids '$' too
			b[i] = '#'
		}
	}
	return b
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("mysqlwire: reading random bytes: %v", err))
	}
	return b
}
