package netserver

import (
	"context"
	"net"
)

// ConnContext returns the context of a connection accepted by Serve. It
// keeps the values of Serve's ctx but not its cancellation: connections
// outlive Serve and end through their clients, Shutdown or ForceClose.
// Cancelling it closes nc, which unblocks any read or write in progress.
// It carries the client's address (RemoteAddr).
func ConnContext(ctx context.Context, nc net.Conn) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), remoteAddrKey{}, nc.RemoteAddr().String()))
	context.AfterFunc(ctx, func() { nc.Close() })
	return ctx, cancel
}

type remoteAddrKey struct{}

// RemoteAddr is the client's address of a connection's context
// (ConnContext); "" for another context.
func RemoteAddr(ctx context.Context) string {
	addr, _ := ctx.Value(remoteAddrKey{}).(string)
	return addr
}
