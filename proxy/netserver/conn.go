package netserver

import (
	"context"
	"net"
)

// ConnContext returns the context of a connection accepted by Serve. It
// keeps the values of Serve's ctx but not its cancellation: connections
// outlive Serve and end through their clients, Shutdown or ForceClose.
// Cancelling it closes nc, which unblocks any read or write in progress.
func ConnContext(ctx context.Context, nc net.Conn) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	context.AfterFunc(ctx, func() { nc.Close() })
	return ctx, cancel
}
