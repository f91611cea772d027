package netserver

import (
	"context"
	"errors"
	"fmt"
	"github.com/dpproxy/dpproxy/directio"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Conn is one accepted connection as a front end serves it.
type Conn interface {
	// Serve runs the connection to its end in the calling goroutine. It
	// must not panic. The Server removes the connection from its registry
	// once Serve returns.
	Serve()
	// ShutdownIfIdle is called by Shutdown: a connection waiting for its
	// client's next command is closed now; a busy one finishes its command
	// and then closes itself (see Server.ShuttingDown).
	ShutdownIfIdle()
	// ForceClose closes the connection whatever it is doing. It is called
	// when Shutdown's deadline passes, and on a connection accepted while
	// Shutdown began, which is never served.
	ForceClose()
}

// Config configures a Server.
type Config[C Conn] struct {
	// Name prefixes log messages and errors, e.g. "pgwire".
	Name string
	// Logger receives accept failures. It must not be nil.
	Logger *slog.Logger
	// ErrServerClosed is returned by Serve after Shutdown has been called.
	ErrServerClosed error
	// NewConn prepares a connection accepted by Serve; ctx is Serve's.
	NewConn func(ctx context.Context, nc net.Conn) C
	// OnAdd and OnRemove, when set, are called with the server's lock
	// held as a connection enters and leaves the registry; OnAdd only
	// for connections that are accepted (not once Shutdown has begun).
	OnAdd, OnRemove func(C)
	// Limits, when set, caps connections (shared by the front ends).
	Limits *Limits
	// Refuse tells a client over Limits that there are too many
	// connections, in the protocol's words, and returns; the connection
	// has a deadline and is closed afterwards. Nil closes it silently.
	Refuse func(nc net.Conn)
}

// Server accepts connections and tracks them until they end. Create it
// with New; it is safe for concurrent use.
type Server[C interface {
	comparable
	Conn
}] struct {
	cfg Config[C]

	shuttingDown atomic.Bool

	// refusing holds a token per connection being refused (see refuse).
	refusing chan struct{}

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	// conns maps each live connection to whether it has logged in.
	conns     map[C]bool
	drained   chan struct{} // closed once shutting down with no connections left
	isDrained bool
}

// New returns a server configured by cfg.
func New[C interface {
	comparable
	Conn
}](cfg Config[C]) *Server[C] {
	return &Server[C]{
		cfg:       cfg,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[C]bool),
		drained:   make(chan struct{}),
		refusing:  make(chan struct{}, maxRefusing),
	}
}

// Serve accepts connections on ln until ctx is cancelled, ln is closed or
// Shutdown is called, serving each connection in its own goroutine. It
// may be called for several listeners.
//
// Serve returns ctx.Err() once ctx is cancelled, Config.ErrServerClosed
// after Shutdown, and the wrapped Accept error when ln fails; it closes ln
// in the first two cases. Established connections outlive Serve; Shutdown
// drains them.
func (s *Server[C]) Serve(ctx context.Context, ln net.Listener) error {
	if !s.trackListener(ln) {
		ln.Close()
		return s.cfg.ErrServerClosed
	}
	defer s.untrackListener(ln)
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			switch {
			case s.shuttingDown.Load():
				return s.cfg.ErrServerClosed
			case ctx.Err() != nil:
				return ctx.Err()
			case isTemporaryAcceptError(err):
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.cfg.Logger.Warn(s.cfg.Name+": accept failed; retrying", "err", err, "retry_in", backoff)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
				}
				continue
			}
			return fmt.Errorf("%s: accept: %w", s.cfg.Name, err)
		}
		backoff = 0
		if !s.cfg.Limits.admit() {
			s.cfg.Logger.Warn(s.cfg.Name+": connection refused: too many connections", "remote", nc.RemoteAddr().String())
			s.refuse(nc)
			continue
		}
		nc = directio.Wrap(nc)
		c := s.cfg.NewConn(ctx, nc)
		if !s.Add(c) {
			s.cfg.Limits.leave(false)
			c.ForceClose()
			nc.Close()
			continue
		}
		go s.serveConn(c)
	}
}

// serveConn serves c and then removes it from the registry.
func (s *Server[C]) serveConn(c C) {
	defer s.Remove(c)
	c.Serve()
}

// Shutdown stops accepting connections, calls ShutdownIfIdle on every
// live connection and waits for all of them to end. If ctx ends first,
// the remaining connections are force-closed and ctx's error is returned,
// wrapped.
func (s *Server[C]) Shutdown(ctx context.Context) error {
	s.shuttingDown.Store(true)
	s.mu.Lock()
	for ln := range s.listeners {
		ln.Close()
	}
	conns := s.connsLocked(nil)
	s.checkDrainedLocked()
	s.mu.Unlock()

	for _, c := range conns {
		c.ShutdownIfIdle()
	}
	select {
	case <-s.drained:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	conns = s.connsLocked(conns[:0])
	s.mu.Unlock()
	for _, c := range conns {
		c.ForceClose()
	}
	return fmt.Errorf("%s: shutdown: %w", s.cfg.Name, ctx.Err())
}

// ShuttingDown reports whether Shutdown has been called. A busy connection
// checks it when its command ends and closes itself if so.
func (s *Server[C]) ShuttingDown() bool {
	return s.shuttingDown.Load()
}

// Add registers c as a live connection (calling Config.OnAdd); it refuses
// once Shutdown has begun. Serve adds the connections it accepts.
func (s *Server[C]) Add(c C) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown.Load() {
		return false
	}
	if s.cfg.OnAdd != nil {
		s.cfg.OnAdd(c)
	}
	s.conns[c] = false
	return true
}

// LoggedIn records that c has authenticated: it no longer counts against
// Limits.MaxHandshakes.
func (s *Server[C]) LoggedIn(c C) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if loggedIn, ok := s.conns[c]; ok && !loggedIn {
		s.conns[c] = true
		s.cfg.Limits.loggedIn()
	}
}

// Remove unregisters c (calling Config.OnRemove) once it has ended.
func (s *Server[C]) Remove(c C) {
	s.mu.Lock()
	defer s.mu.Unlock()
	loggedIn, ok := s.conns[c]
	if !ok {
		return
	}
	delete(s.conns, c)
	s.cfg.Limits.leave(loggedIn)
	if s.cfg.OnRemove != nil {
		s.cfg.OnRemove(c)
	}
	s.checkDrainedLocked()
}

// Len returns the number of live connections.
func (s *Server[C]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server[C]) connsLocked(buf []C) []C {
	for c := range s.conns {
		buf = append(buf, c)
	}
	return buf
}

func (s *Server[C]) checkDrainedLocked() {
	if s.shuttingDown.Load() && len(s.conns) == 0 && !s.isDrained {
		s.isDrained = true
		close(s.drained)
	}
}

func (s *Server[C]) trackListener(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown.Load() {
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

func (s *Server[C]) untrackListener(ln net.Listener) {
	s.mu.Lock()
	delete(s.listeners, ln)
	s.mu.Unlock()
}

// isTemporaryAcceptError reports whether an Accept failure may pass:
// timeouts and running out of descriptors, buffers or memory.
func isTemporaryAcceptError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS) ||
		errors.Is(err, syscall.ENOMEM)
}
