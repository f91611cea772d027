package pgwire

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/proxy/netserver"
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxMessageSize = 1 << 20
	DefaultServerVersion  = "15.0 (dpproxy)"
	DefaultAuthTimeout    = time.Minute
)

// fallbackVersionNum is reported as server_version_num when ServerVersion
// does not start with a version number.
const fallbackVersionNum = "150000"

// ErrServerClosed is returned by Serve after Shutdown has been called.
var ErrServerClosed = errors.New("pgwire: server closed")

// Options configures a Server. The zero value gives the defaults.
type Options struct {
	// MaxMessageSize is the largest message body, in bytes, accepted from a
	// client after startup. Longer messages are refused with FATAL 54000
	// before any buffer for them is allocated. Default 1 MiB.
	MaxMessageSize int
	// ServerVersion is reported as server_version; server_version_num is
	// derived from its leading version number. Default "15.0 (dpproxy)".
	ServerVersion string
	// Logger receives connection-level events. Default slog.Default().
	Logger *slog.Logger
	// IdleTimeout closes a session that sends nothing for this long while
	// waiting for its next message (FATAL 57P05). Zero means no limit.
	IdleTimeout time.Duration
	// AuthTimeout bounds startup and authentication, like PostgreSQL's
	// authentication_timeout. Default 1 minute.
	AuthTimeout time.Duration
	// WriteTimeout bounds each write to a client, so that a client that
	// stops reading cannot hold a connection forever. Zero means no limit.
	WriteTimeout time.Duration
	// StatementTimeout bounds each statement the engine runs for a client
	// (a simple Query, the first Execute of a portal, and Parse, which
	// may ask the backend to describe a statement), like PostgreSQL's
	// statement_timeout: its context ends and the client gets 57014
	// "canceling statement due to statement timeout"; the connection stays
	// usable. Zero means no limit.
	StatementTimeout time.Duration
	// TLS, when set, makes the server accept SSLRequest ('S') and run TLS
	// with this configuration (see LoadTLS); otherwise SSLRequest is
	// answered 'N'. Clients may still connect without TLS unless
	// RequireTLS is set. SCRAM does not offer channel binding either way.
	TLS *tls.Config
	// RequireTLS refuses a StartupMessage that did not come over TLS
	// (FATAL 28000, like a hostssl-only pg_hba.conf). It needs TLS.
	RequireTLS bool
	// Limits, when set, caps connections (shared with the other front
	// end); a client over them gets FATAL 53300.
	Limits *netserver.Limits
	// Throttle, when set, slows down password guessing (shared with the
	// other front end): see auth.Throttle.
	Throttle *auth.Throttle
	// MockSecret keys the SCRAM salts shown for unknown user names, so
	// they stay the same across restarts as real users' salts do (see
	// auth.LoadOrCreateSecret). Nil: a random secret per start.
	MockSecret []byte
}

// Server accepts PostgreSQL client connections and serves each in its own
// goroutine. Create it with NewServer.
type Server struct {
	sessions   Sessions
	opts       Options
	log        *slog.Logger
	versionNum string
	// mockSecret keys the salts of mock verifiers for unknown users, so that
	// an unknown user sees the same salt on every attempt, as a real one does.
	mockSecret [32]byte

	nextConnID atomic.Uint64
	// ns accepts connections and drains them on Shutdown.
	ns *netserver.Server[*conn]

	// byPID finds live connections by process ID, for CancelRequest. The
	// registry hooks of ns keep it in step with ns's connections.
	pidMu sync.Mutex
	byPID map[uint32]*conn
}

// NewServer returns a server that authenticates clients and opens sessions
// through sessions.
func NewServer(sessions Sessions, opts Options) *Server {
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = DefaultServerVersion
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.AuthTimeout <= 0 {
		opts.AuthTimeout = DefaultAuthTimeout
	}
	s := &Server{
		sessions: sessions,
		opts:     opts,
		log:      opts.Logger,
		byPID:    make(map[uint32]*conn),
	}
	s.ns = netserver.New(netserver.Config[*conn]{
		Name:            "pgwire",
		Logger:          s.log,
		ErrServerClosed: ErrServerClosed,
		NewConn:         s.newConn,
		OnAdd:           s.addPID,
		OnRemove:        s.removePID,
		Limits:          opts.Limits,
		Refuse:          s.refuseTooMany,
	})
	if n, ok := versionNum(opts.ServerVersion); ok {
		s.versionNum = n
	} else {
		s.versionNum = fallbackVersionNum
		s.log.Warn("pgwire: server version does not start with a version number; reporting server_version_num "+fallbackVersionNum,
			"server_version", opts.ServerVersion)
	}
	if opts.MockSecret != nil {
		// Derive the key rather than use the secret itself: the secret
		// is shared with other uses.
		m := hmac.New(sha256.New, opts.MockSecret)
		m.Write([]byte("pgwire mock SCRAM salt key"))
		copy(s.mockSecret[:], m.Sum(nil))
	} else if _, err := rand.Read(s.mockSecret[:]); err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(fmt.Sprintf("pgwire: reading random secret: %v", err))
	}
	return s
}

// Serve accepts connections on ln until ctx is cancelled, ln is closed or
// Shutdown is called, serving each connection in its own goroutine. Serve
// may be called for several listeners.
//
// Serve returns ctx.Err() once ctx is cancelled, ErrServerClosed after
// Shutdown, and the wrapped Accept error when ln fails; it closes ln in the
// first two cases. It does not end established connections: they keep
// running (and their queries keep their contexts) until their clients
// leave or Shutdown drains them, so the usual pattern works —
// cancel Serve's ctx on a signal, then call Shutdown with a deadline.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.ns.Serve(ctx, ln)
}

// Shutdown stops accepting connections, closes idle sessions (they get
// FATAL 57P01) and waits for running queries to deliver their results,
// closing each connection as its query ends. If ctx ends first, the
// remaining connections are closed at once and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.ns.Shutdown(ctx)
}

// addPID gives a connection that is being registered a process ID that no
// other live connection has, and its secret key. It is ns's OnAdd hook.
func (s *Server) addPID(c *conn) {
	s.pidMu.Lock()
	defer s.pidMu.Unlock()
	for {
		c.pid = randUint32() & 0x7fffffff // positive, like a real PID
		if _, taken := s.byPID[c.pid]; !taken && c.pid != 0 {
			break
		}
	}
	c.secret = randUint32()
	s.byPID[c.pid] = c
}

// removePID forgets the process ID of a connection that ended. It is ns's
// OnRemove hook.
func (s *Server) removePID(c *conn) {
	s.pidMu.Lock()
	defer s.pidMu.Unlock()
	if s.byPID[c.pid] == c {
		delete(s.byPID, c.pid)
	}
}

// connByPID returns the live connection with process ID pid, if any.
func (s *Server) connByPID(pid uint32) *conn {
	s.pidMu.Lock()
	defer s.pidMu.Unlock()
	return s.byPID[pid]
}

// versionNum derives server_version_num from a version string the way
// PostgreSQL does: "15.4 (x)" → "150004", "9.6.3" → "90603".
func versionNum(v string) (string, bool) {
	end := 0
	for end < len(v) && (v[end] == '.' || (v[end] >= '0' && v[end] <= '9')) {
		end++
	}
	parts := strings.Split(strings.Trim(v[:end], "."), ".")
	nums := make([]int, 3)
	for i, p := range parts {
		if i >= len(nums) {
			break
		}
		n, err := strconv.Atoi(p)
		if err != nil || n > 9999 || (i > 0 && n > 99) {
			return "", false
		}
		nums[i] = n
	}
	if nums[0] == 0 {
		return "", false
	}
	if nums[0] >= 10 {
		return strconv.Itoa(nums[0]*10000 + nums[1]), true
	}
	return strconv.Itoa(nums[0]*10000 + nums[1]*100 + nums[2]), true
}

func randUint32() uint32 {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("pgwire: reading random bytes: %v", err))
	}
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
