package netserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"
)

var errTestClosed = errors.New("test: server closed")

// testConn echoes until its client leaves; busy ones ignore ShutdownIfIdle.
type testConn struct {
	nc     net.Conn
	busy   bool
	mu     sync.Mutex
	forced bool
}

func (c *testConn) Serve() {
	defer c.nc.Close()
	_, _ = io.Copy(c.nc, c.nc)
}

func (c *testConn) ShutdownIfIdle() {
	if !c.busy {
		c.nc.Close()
	}
}

func (c *testConn) ForceClose() {
	c.mu.Lock()
	c.forced = true
	c.mu.Unlock()
	c.nc.Close()
}

func newTestServer(t *testing.T, busy bool) (*Server[*testConn], chan *testConn) {
	t.Helper()
	conns := make(chan *testConn, 10)
	s := New(Config[*testConn]{
		Name:            "test",
		Logger:          slog.New(slog.DiscardHandler),
		ErrServerClosed: errTestClosed,
		NewConn: func(_ context.Context, nc net.Conn) *testConn {
			c := &testConn{nc: nc, busy: busy}
			conns <- c
			return c
		},
	})
	return s, conns
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func TestShutdownClosesIdleConnections(t *testing.T) {
	s, conns := newTestServer(t, false)
	ln := listen(t)
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.Serve(context.Background(), ln) }()

	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	<-conns
	for s.Len() != 1 {
		time.Sleep(time.Millisecond)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-serveErr; !errors.Is(err, errTestClosed) {
		t.Fatalf("Serve returned %v, want errTestClosed", err)
	}
	if n := s.Len(); n != 0 {
		t.Fatalf("%d connections left", n)
	}
	if err := s.Serve(context.Background(), listen(t)); !errors.Is(err, errTestClosed) {
		t.Fatalf("Serve after Shutdown returned %v", err)
	}
}

func TestShutdownForceClosesAtDeadline(t *testing.T) {
	s, conns := newTestServer(t, true)
	ln := listen(t)
	go s.Serve(context.Background(), ln)

	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c := <-conns
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown returned %v, want DeadlineExceeded", err)
	}
	c.mu.Lock()
	forced := c.forced
	c.mu.Unlock()
	if !forced {
		t.Fatal("busy connection was not force-closed")
	}
}

func TestServeReturnsContextError(t *testing.T) {
	s, _ := newTestServer(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.Serve(ctx, listen(t)) }()
	cancel()
	if err := <-serveErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve returned %v, want Canceled", err)
	}
}

func TestOnAddOnRemove(t *testing.T) {
	var added, removed int
	s := New(Config[*testConn]{
		Name:     "test",
		Logger:   slog.New(slog.DiscardHandler),
		OnAdd:    func(*testConn) { added++ },
		OnRemove: func(*testConn) { removed++ },
	})
	a, b := net.Pipe()
	defer b.Close()
	c := &testConn{nc: a}
	if !s.Add(c) || s.Len() != 1 || added != 1 {
		t.Fatalf("Add: len %d, added %d", s.Len(), added)
	}
	s.Remove(c)
	if s.Len() != 0 || removed != 1 {
		t.Fatalf("Remove: len %d, removed %d", s.Len(), removed)
	}
	_ = s.Shutdown(context.Background())
	if s.Add(&testConn{nc: a}) {
		t.Fatal("Add accepted a connection after Shutdown")
	}
	if added != 1 {
		t.Fatal("OnAdd called for a refused connection")
	}
}
