package netserver

import (
	"context"
	"net"
	"sync"
	"time"
)

// Limits caps the connections of every Server that shares it: MaxConns in
// all, MaxHandshakes of them not yet logged in (0: no limit). A connection
// over either limit is not served: the server's Config.Refuse answers it
// with the protocol's "too many connections" error, and sessions already
// open keep working. Create one Limits per process and pass it to each
// front end's Server.
type Limits struct {
	MaxConns      int
	MaxHandshakes int

	mu         sync.Mutex
	conns      int
	handshakes int
}

// admit counts a new connection, still in its handshake, if both limits
// allow it.
func (l *Limits) admit() bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if (l.MaxConns > 0 && l.conns >= l.MaxConns) || (l.MaxHandshakes > 0 && l.handshakes >= l.MaxHandshakes) {
		return false
	}
	l.conns++
	l.handshakes++
	return true
}

// Counts reports the connections open now, and how many of them are
// still in their handshake (not logged in).
func (l *Limits) Counts() (conns, handshakes int) {
	if l == nil {
		return 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns, l.handshakes
}

// loggedIn moves an admitted connection out of its handshake.
func (l *Limits) loggedIn() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.handshakes--
	l.mu.Unlock()
}

// leave forgets an admitted connection.
func (l *Limits) leave(loggedIn bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.conns--
	if !loggedIn {
		l.handshakes--
	}
	l.mu.Unlock()
}

// refuseTimeout bounds the time a refused connection is kept to tell its
// client why, and maxRefusing how many are being told at once; beyond
// that, refused connections are closed without a word.
const (
	refuseTimeout = 5 * time.Second
	maxRefusing   = 64
)

// refuse answers a connection over the limits with Config.Refuse, within
// refuseTimeout, or closes it at once when too many are being refused.
func (s *Server[C]) refuse(nc net.Conn) {
	if s.cfg.Refuse == nil {
		nc.Close()
		return
	}
	select {
	case s.refusing <- struct{}{}:
	default:
		nc.Close()
		return
	}
	go func() {
		defer func() { <-s.refusing }()
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(refuseTimeout))
		s.cfg.Refuse(nc)
	}()
}

// RemoteIP is the client's address without its port, as login throttling
// counts it.
func RemoteIP(nc net.Conn) string {
	addr := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// SleepCtx waits for d or until ctx ends.
func SleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
