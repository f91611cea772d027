package backend

import (
	"context"
	"fmt"
	"github.com/dpproxy/dpproxy/directio"
	"net"
	"time"
)

// Ending a MySQL statement when its context ends, without the driver's
// watcher.
//
// Given a context that can end, go-sql-driver hands it to a goroutine of
// the connection before each statement and signals that goroutine again
// after it: two goroutine wake-ups per statement, each of which may wake
// a thread on another core. On a two-core machine that cost the MySQL
// front end's passthrough about a fifth of its one-client latency (p50
// 345-390 µs against 260-325 µs without; with 16 clients, whose
// goroutines keep both cores busy, 2-3 µs of CPU per query). Here the
// driver sees a context
// that cannot end, and the statement's own context closes the
// connection's socket if it ends first (context.AfterFunc: no goroutine
// until then), as the driver's watcher would: the statement fails at
// once, the driver marks the connection bad and the pool drops it.

// dialedSocketKey is the context key under which Connect asks dialMySQL
// for the socket it dials (a *dialedSocket).
type dialedSocketKey struct{}

type dialedSocket struct{ conn net.Conn }

// dialMySQL dials as go-sql-driver does by default and tells Connect the
// socket (go-sql-driver's Config.DialFunc).
func dialMySQL(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	conn = directio.Wrap(conn)
	if s, ok := ctx.Value(dialedSocketKey{}).(*dialedSocket); ok {
		s.conn = conn
	}
	return conn, nil
}

// cancelByClosing runs f with ctx's values but not its end; if ctx ends
// before f returns, socket is closed (which ends f's statement) and ctx's
// error (context.Canceled or DeadlineExceeded, as the driver would)
// returned. Without a socket, f gets ctx itself (the driver's
// watcher then ends it).
func cancelByClosing[T any](ctx context.Context, socket net.Conn, f func(context.Context) (T, error)) (T, error) {
	if socket == nil || ctx.Done() == nil {
		return f(ctx)
	}
	stop := context.AfterFunc(ctx, func() {
		// An immediate deadline wakes a blocked read or write even where
		// Close alone would wait for it (TLS); Close then frees the socket.
		_ = socket.SetDeadline(time.Unix(1, 0))
		_ = socket.Close()
	})
	res, err := f(context.WithoutCancel(ctx))
	if !stop() {
		// ctx ended first: the socket is closed, whatever f returned.
		var zero T
		return zero, fmt.Errorf("mysql: statement ended: %w", ctx.Err())
	}
	return res, err
}
