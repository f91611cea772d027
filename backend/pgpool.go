package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgPool is a small pool of *pgx.Conn.
//
// It stands in for pgxpool, whose dependency (github.com/jackc/puddle/v2)
// is not in this module's go.sum. It keeps at most max connections open
// (idle plus in use), hands idle connections out most recently used first,
// pings a connection that sat idle for longer than pingAfterIdle before
// handing it out, and discards connections that are broken, left inside a
// transaction, or older than maxLifetime.
type pgPool struct {
	cfg          *pgx.ConnConfig
	afterConnect func(context.Context, *pgx.Conn) error

	// tokens holds one token per connection in use or being opened.
	tokens chan struct{}

	mu     sync.Mutex
	idle   []*pgPoolConn // most recently released last
	closed bool

	// waits counts acquires that found every connection in use, and
	// waited the total time they waited.
	waits  atomic.Int64
	waited atomic.Int64 // nanoseconds
}

// pgPoolConn is a pooled connection.
type pgPoolConn struct {
	conn     *pgx.Conn
	created  time.Time
	released time.Time
	// pipeline is the connection's state for combined batches (nil until
	// its first).
	pipeline *pipelineConn
}

const (
	pgPingAfterIdle = time.Second
	pgMaxIdleTime   = 30 * time.Minute
	pgMaxLifetime   = time.Hour
	pgCloseTimeout  = 5 * time.Second
)

var errPoolClosed = errors.New("connection pool closed")

func newPgPool(cfg *pgx.ConnConfig, maxConns int, afterConnect func(context.Context, *pgx.Conn) error) *pgPool {
	return &pgPool{
		cfg:          cfg,
		afterConnect: afterConnect,
		tokens:       make(chan struct{}, maxConns),
	}
}

// acquire returns a connection for the caller's exclusive use; it must be
// given back with release. Its errors mean no connection could be had.
func (p *pgPool) acquire(ctx context.Context) (*pgPoolConn, error) {
	select {
	case p.tokens <- struct{}{}:
	default:
		start := time.Now()
		p.waits.Add(1)
		select {
		case p.tokens <- struct{}{}:
			p.waited.Add(int64(time.Since(start)))
		case <-ctx.Done():
			p.waited.Add(int64(time.Since(start)))
			return nil, fmt.Errorf("wait for a free connection: %w", ctx.Err())
		}
	}
	pc, err := p.get(ctx)
	if err != nil {
		<-p.tokens
		return nil, err
	}
	return pc, nil
}

func (p *pgPool) get(ctx context.Context) (*pgPoolConn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errPoolClosed
		}
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		pc := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()

		idleFor := time.Since(pc.released)
		if idleFor > pgMaxIdleTime || time.Since(pc.created) > pgMaxLifetime {
			closePgConn(pc.conn)
			continue
		}
		if idleFor > pgPingAfterIdle {
			if err := pc.conn.Ping(ctx); err != nil {
				closePgConn(pc.conn)
				if ctx.Err() != nil {
					return nil, fmt.Errorf("check idle connection: %w", err)
				}
				continue
			}
		}
		return pc, nil
	}

	conn, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if p.afterConnect != nil {
		if err := p.afterConnect(ctx, conn); err != nil {
			closePgConn(conn)
			return nil, fmt.Errorf("set up connection: %w", err)
		}
	}
	return &pgPoolConn{conn: conn, created: time.Now()}, nil
}

// release gives pc back to the pool, or closes it if it cannot be reused.
func (p *pgPool) release(pc *pgPoolConn) {
	defer func() { <-p.tokens }()
	c := pc.conn
	reusable := !c.IsClosed() && !c.PgConn().IsBusy() && c.PgConn().TxStatus() == 'I' &&
		time.Since(pc.created) < pgMaxLifetime
	if reusable {
		p.mu.Lock()
		if !p.closed {
			pc.released = time.Now()
			p.idle = append(p.idle, pc)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	closePgConn(c)
}

// close closes the idle connections and makes later acquires fail;
// connections in use are closed when released.
func (p *pgPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.closed = true
	p.mu.Unlock()
	for _, pc := range idle {
		closePgConn(pc.conn)
	}
}

// stats reports the pool's use.
func (p *pgPool) stats() PoolStats {
	p.mu.Lock()
	idle := len(p.idle)
	p.mu.Unlock()
	inUse := len(p.tokens)
	return PoolStats{Max: cap(p.tokens), Open: inUse + idle, InUse: inUse, Idle: idle, Waits: p.waits.Load(), Waited: time.Duration(p.waited.Load())}
}

// idleCount is the number of idle connections (for tests).
func (p *pgPool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

func closePgConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), pgCloseTimeout)
	defer cancel()
	_ = c.Close(ctx) // best effort: the connection is being discarded
}
