package budget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// opKind is what a ledgerOp asks of the shared ledger's writer.
type opKind int

const (
	opHold   opKind = iota // reserve: decide on the locked totals, record a hold
	opSettle               // charge: turn a hold (or nothing, for Append) into a charge
	opDrop                 // release: delete a hold
)

// ledgerOp is one operation queued for the writer goroutine.
type ledgerOp struct {
	kind   opKind
	hold   *holdRequest
	holdID int64
	charge Charge
	state  atomic.Int32
	done   chan opResult // buffered: the writer never blocks on it
}

type opResult struct {
	holdID int64
	charge Charge
	err    error
}

// batchTimeout bounds one transaction of the writer, so that an
// unreachable ledger fails queries promptly.
const batchTimeout = 10 * time.Second

// submit queues op for the writer and waits for its outcome or ctx.
func (s *PostgresStore) submit(ctx context.Context, op *ledgerOp) (opResult, error) {
	op.done = make(chan opResult, 1)
	if s.readOnly {
		return opResult{}, errors.New("budget: the ledger was opened read-only")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return opResult{}, errClosed
	}
	s.senders.Add(1)
	s.mu.Unlock()
	select {
	case s.ops <- op:
		s.senders.Done()
	case <-ctx.Done():
		s.senders.Done()
		return opResult{}, ctx.Err()
	}
	select {
	case r := <-op.done:
		return r, r.err
	case <-ctx.Done():
		if op.state.CompareAndSwap(reqPending, reqAbandoned) {
			return opResult{}, ctx.Err()
		}
		// The writer has it: a hold granted to nobody is given back.
		go func() {
			if r := <-op.done; op.kind == opHold && r.err == nil {
				s.drop(r.holdID)
			}
		}()
		return opResult{}, ctx.Err()
	}
}

// writer runs the ledger's transactions: each takes every operation queued
// meanwhile (group commit); every Lease/3 this process's holds are renewed.
func (s *PostgresStore) writer() {
	defer close(s.done)
	// Renewals run apart, so that a long transaction here cannot let
	// the holds of queries in progress expire.
	stopRenew := make(chan struct{})
	defer close(stopRenew)
	go func() {
		renew := time.NewTicker(s.lease / 3)
		defer renew.Stop()
		vacuum := time.NewTicker(vacuumEvery)
		defer vacuum.Stop()
		vacuumed := uint64(0)
		for {
			select {
			case <-renew.C:
				s.renew()
			case <-vacuum.C:
				// Every charge deletes a hold and every reservation
				// updates its scopes' rows: under load their dead
				// versions pile up faster than autovacuum (once a
				// minute) clears them, and every decision wades through
				// them. A process that charged lately vacuums both.
				if n := s.charges.Load(); n != vacuumed {
					vacuumed = n
					s.vacuum()
				}
			case <-stopRenew:
				return
			}
		}
	}()
	for op := range s.ops {
		batch, open := []*ledgerOp{op}, true
	drain:
		for len(batch) < maxBatch {
			select {
			case op, ok := <-s.ops:
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, op)
			default:
				break drain
			}
		}
		s.run(batch)
		if !open {
			return
		}
	}
}

// run carries out a batch in two transactions at once: the charges of
// holds, which lock no scope but wait for the disk, and everything else
// (reservations, releases, charges without a hold), which lock the scopes
// they read. A charge's disk wait thus never holds a scope's lock.
func (s *PostgresStore) run(batch []*ledgerOp) {
	var settles, locking []*ledgerOp
	for _, op := range batch {
		if !op.state.CompareAndSwap(reqPending, reqTaken) {
			continue
		}
		if op.kind == opSettle && op.holdID != 0 {
			settles = append(settles, op)
		} else {
			locking = append(locking, op)
		}
	}
	var wg sync.WaitGroup
	for _, ops := range [][]*ledgerOp{settles, locking} {
		if len(ops) > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.runGroup(ops)
			}()
		}
	}
	wg.Wait()
}

// runGroup carries out ops in one transaction, retried when PostgreSQL
// aborts it for a serialization failure or deadlock, and reports each
// operation's outcome.
func (s *PostgresStore) runGroup(ops []*ledgerOp) {
	var results []opResult
	var err error
	start := time.Now()
	for attempt := 0; attempt < 5; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		results, err = s.runTx(ctx, ops)
		cancel()
		if !retryable(err) {
			break
		}
	}
	if err == nil {
		s.txs.Add(1)
		s.txNanos.Add(int64(time.Since(start)))
	}
	for i, op := range ops {
		r := opResult{err: fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)}
		if err == nil {
			r = results[i]
			switch {
			case op.kind == opHold && r.err == nil:
				s.liveMu.Lock()
				s.live[r.holdID] = struct{}{}
				s.liveMu.Unlock()
			case op.kind == opSettle && r.err == nil:
				s.charges.Add(1)
				s.forget(op.holdID)
			}
		}
		op.done <- r
	}
}

// retryable reports whether err is PostgreSQL aborting a transaction that
// may succeed when run again.
func retryable(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40001" || pg.Code == "40P01")
}

// renew extends this process's live holds by a lease. A hold another
// process has just reclaimed (it had expired) is gone and stays gone: the
// row lock orders the two.
func (s *PostgresStore) renew() {
	s.liveMu.Lock()
	ids := make([]int64, 0, len(s.live))
	for id := range s.live {
		ids = append(ids, id)
	}
	s.liveMu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	start := time.Now()
	_, err := s.pool.Exec(ctx, `UPDATE `+s.schema+`.holds SET expires_at = clock_timestamp() + make_interval(secs => $2)
		WHERE hold_id = ANY($1) AND expires_at > clock_timestamp()`, ids, s.lease.Seconds())
	if err != nil {
		slog.Warn("budget: renewing holds on the shared ledger", "err", err)
		return
	}
	s.txs.Add(1)
	s.txNanos.Add(int64(time.Since(start)))
}

// vacuumEvery is how often a process that charged vacuums the holds and
// scopes tables.
const vacuumEvery = time.Second

// vacuum clears the dead versions of holds and scope rows (skipping a
// table another process is vacuuming).
func (s *PostgresStore) vacuum() {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `DELETE FROM `+s.schema+`.releases WHERE expires_at < clock_timestamp()`); err != nil {
		slog.Warn("budget: clearing expired releases", "err", err)
	}
	if _, err := s.pool.Exec(ctx, `VACUUM (SKIP_LOCKED) `+s.schema+`.holds, `+s.schema+`.scopes`); err != nil {
		slog.Warn("budget: vacuuming the shared ledger", "err", err)
	}
}
