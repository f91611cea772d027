package engine

import (
	"context"
	"sync/atomic"

	"github.com/dpproxy/dpproxy/budget"
)

// earlyCommit is a DP query's charge, made durable while the database
// runs the query: the backend calls start once the bounded statement is
// sent (backend.WithSent), and the ledger's group commit (its fsync, the
// transaction in progress before it) then overlaps the database's work
// instead of following it. The answer still waits for the charge (wait):
// none leaves uncharged. A commit started early runs to its end whatever
// the query's caller does; the caller's wait for it ends with its context
// (a statement timeout, a cancel request), the answer withheld. A query
// refused before it was sent is refunded (refund); once start has run,
// the charge stands whatever the query returns, which errs on the safe
// side: a backend hook fires only for a text that ran successfully
// before, so a refusal after it means a schema changed since.
type earlyCommit struct {
	r     *budget.Reservation
	query string // the ledger's text
	ctx   context.Context
	// claimed is set by whichever comes first: start (the commit runs
	// from then on), refund or wait (nothing was sent early).
	claimed atomic.Bool
	done    chan struct{} // closed when the early commit has returned
	err     error
}

func newEarlyCommit(ctx context.Context, r *budget.Reservation, query string) *earlyCommit {
	return &earlyCommit{r: r, query: query, ctx: context.WithoutCancel(ctx), done: make(chan struct{})}
}

// start commits the charge from a goroutine of its own; only its first
// call, and only before refund or wait, does anything. It never blocks:
// the backend calls it from the goroutine sending a whole batch.
func (c *earlyCommit) start() {
	if !c.claimed.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer close(c.done)
		_, c.err = c.r.Commit(c.ctx, c.query)
	}()
}

// refund gives the reservation back and reports true when the charge was
// not started; false means it is under way (or made), and stands.
func (c *earlyCommit) refund() bool {
	if !c.claimed.CompareAndSwap(false, true) {
		return false
	}
	c.r.Release()
	return true
}

// wait returns once the charge is durable, committing it now, with ctx,
// when nothing started it early; an error means it could not be recorded
// or that ctx ended first (a charge started early then goes on, and
// stands).
func (c *earlyCommit) wait(ctx context.Context) error {
	if c.claimed.CompareAndSwap(false, true) {
		_, err := c.r.Commit(ctx, c.query)
		return err
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
