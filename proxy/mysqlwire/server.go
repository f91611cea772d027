package mysqlwire

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/proxy/netserver"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxPacketSize = 1 << 20
	DefaultServerVersion = "8.0.36-dpproxy"
	DefaultAuthTimeout   = 30 * time.Second
	// DefaultMaxStatements bounds the prepared statements one connection
	// may hold (MySQL's max_prepared_stmt_count is global; this is per
	// connection).
	DefaultMaxStatements = 1024
)

// ErrServerClosed is returned by Serve after Shutdown has been called.
var ErrServerClosed = errors.New("mysqlwire: server closed")

// Options configures a Server. The zero value gives the defaults.
type Options struct {
	// MaxPacketSize is the largest logical packet (command) accepted from
	// a logged-in client, like max_allowed_packet. A longer one is refused
	// with ERR 1153 before any of it is read, and the connection is closed.
	// Before login a fixed 16 KiB applies. Default 1 MiB, PostgreSQL's
	// default too.
	MaxPacketSize int
	// ServerVersion is sent in the handshake and returned by VERSION().
	// Default "8.0.36-dpproxy".
	ServerVersion string
	// AuthPlugin is the authentication method announced in the handshake:
	// "caching_sha2_password" (the default) or "mysql_native_password".
	// Clients may answer with another; see doc.go.
	AuthPlugin string
	// Logger receives connection-level events. Default slog.Default().
	Logger *slog.Logger
	// IdleTimeout closes a connection that sends no command for this long.
	// Zero means no limit.
	IdleTimeout time.Duration
	// AuthTimeout bounds the handshake and authentication. Default 30 s.
	AuthTimeout time.Duration
	// WriteTimeout bounds each write to a client. Zero means no limit.
	WriteTimeout time.Duration
	// StatementTimeout bounds each command the engine runs; the client
	// gets ERR 3024 and the connection stays usable. Zero means no limit.
	StatementTimeout time.Duration
	// TLS, when set, makes the server offer CLIENT_SSL; clients may still
	// connect without TLS unless RequireTLS is set.
	TLS *tls.Config
	// RequireTLS refuses clients that do not switch to TLS (ERR 3159, as
	// MySQL's require_secure_transport). It needs TLS.
	// MaxStatements bounds the prepared statements per connection.
	// Default DefaultMaxStatements.
	MaxStatements int
	RequireTLS    bool
	// Limits, when set, caps connections (shared with the other front
	// end); a client over them gets ERR 1040.
	Limits *netserver.Limits
	// Throttle, when set, slows down password guessing (shared with the
	// other front end): see auth.Throttle.
	Throttle *auth.Throttle
}

// Sessions checks credentials and opens per-connection sessions. It must
// be safe for concurrent use.
type Sessions interface {
	// MySQLVerifiers returns the analyst's stored verifiers: the 20-byte
	// SHA1(SHA1(password)) of mysql_native_password and the 32-byte
	// SHA256(SHA256(password)) of caching_sha2_password, nil when the
	// analyst has none of that kind; ok is false for an unknown user.
	// The slices are not modified.
	MySQLVerifiers(user string) (native, sha2 []byte, ok bool)
	// Open starts a session for an authenticated user. database is the
	// one the client asked for ("" for none); an *sqlerr.Error is sent to
	// the client as an ERR packet (e.g. 3D000 → 1049 Unknown database)
	// and the connection is closed.
	Open(ctx context.Context, user, database string) (Session, error)
}

// Session is one client connection's conversation with dpproxy. Its
// methods are never called concurrently.
type Session interface {
	// Execute runs one COM_QUERY string. Errors that are *sqlerr.Error are
	// sent mapped to MySQL error numbers (see doc.go); any other error as
	// 1105 "internal error", its text only logged.
	Execute(ctx context.Context, sql string) ([]*sqltypes.Result, error)
	// Prepare checks and describes a statement with ? markers
	// (COM_STMT_PREPARE); paramTypes is nil (MySQL clients declare types
	// only when executing).
	Prepare(ctx context.Context, sql string, paramTypes []sqltypes.Type) (*sqltypes.Prepared, error)
	// ExecutePrepared runs a prepared statement with one value per
	// parameter, of the Go types package sqltypes lists (nil for NULL).
	ExecutePrepared(ctx context.Context, p *sqltypes.Prepared, params []any) (*sqltypes.Result, error)
	// UseDatabase changes the current database (COM_INIT_DB).
	UseDatabase(name string) error
	// FieldList lists a table's columns (COM_FIELD_LIST); an unknown
	// table gives an error.
	FieldList(ctx context.Context, table string) ([]sqltypes.Column, error)
	// Autocommit reports the session's autocommit setting, sent in every
	// status flag.
	Autocommit() bool
	// Close releases the session; called exactly once.
	Close()
}

// Server accepts MySQL client connections and serves each in its own
// goroutine. Create it with NewServer.
type Server struct {
	sessions Sessions
	opts     Options
	log      *slog.Logger
	started  time.Time

	nextConnID atomic.Uint32
	queries    atomic.Uint64
	// ns accepts connections and drains them on Shutdown.
	ns *netserver.Server[*conn]
}

// NewServer returns a server that authenticates clients and opens
// sessions through sessions.
func NewServer(sessions Sessions, opts Options) *Server {
	if opts.MaxPacketSize <= 0 {
		opts.MaxPacketSize = DefaultMaxPacketSize
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = DefaultServerVersion
	}
	if opts.AuthPlugin != pluginNative {
		opts.AuthPlugin = pluginSHA2
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.AuthTimeout <= 0 {
		opts.AuthTimeout = DefaultAuthTimeout
	}
	if opts.MaxStatements <= 0 {
		opts.MaxStatements = DefaultMaxStatements
	}
	s := &Server{
		sessions: sessions,
		opts:     opts,
		log:      opts.Logger,
		started:  time.Now(),
	}
	s.ns = netserver.New(netserver.Config[*conn]{
		Name:            "mysqlwire",
		Logger:          s.log,
		ErrServerClosed: ErrServerClosed,
		NewConn:         s.newConn,
		Limits:          opts.Limits,
		Refuse:          refuseTooMany,
	})
	return s
}

// refuseTooMany answers a connection over the server's limits as MySQL
// does when max_connections is reached: ERR 1040 in place of the
// handshake.
func refuseTooMany(nc net.Conn) {
	var seq uint8
	e := mysqlError{ErrTooManyConnections, "08004", "Too many connections: dpproxy's listen.max_connections or listen.max_handshakes is reached; try again later"}
	_, _ = nc.Write(appendPacket(nil, appendErr(nil, e), &seq))
}

// Serve accepts connections on ln until ctx is cancelled, ln is closed or
// Shutdown is called. It returns ctx.Err() once ctx is cancelled,
// ErrServerClosed after Shutdown, and the wrapped Accept error when ln
// fails. Established connections outlive Serve; Shutdown drains them.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.ns.Serve(ctx, ln)
}

// Shutdown stops accepting connections, closes idle connections at once
// and lets running commands finish and deliver their results before
// closing their connections. If ctx ends first, the remaining connections
// are closed and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.ns.Shutdown(ctx)
}
