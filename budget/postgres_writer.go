package budget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
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
// meanwhile (group commit), and every Lease/3 it renews this process's
// holds.
func (s *PostgresStore) writer() {
	defer close(s.done)
	renew := time.NewTicker(s.lease / 3)
	defer renew.Stop()
	for {
		select {
		case op, ok := <-s.ops:
			if !ok {
				return
			}
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
		case <-renew.C:
			s.renew()
		}
	}
}

// run carries out a batch in one transaction, retried when PostgreSQL
// aborts it for a serialization failure or deadlock, and reports each
// operation's outcome.
func (s *PostgresStore) run(batch []*ledgerOp) {
	ops := batch[:0]
	for _, op := range batch {
		if op.state.CompareAndSwap(reqPending, reqTaken) {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return
	}
	var results []opResult
	var err error
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
			case op.kind == opSettle && errors.Is(r.err, ErrHoldLost):
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

// runTx is one writer transaction: lock the scopes the batch touches (in
// one order, so that processes cannot deadlock), read their totals, settle
// and drop holds, decide the reservations in order on the updated totals,
// and write charges, totals and holds.
func (s *PostgresStore) runTx(ctx context.Context, ops []*ledgerOp) ([]opResult, error) {
	var scopes []string
	var drops, settleIDs []int64
	holding := false
	windows := map[string]Window{}
	for _, op := range ops {
		switch op.kind {
		case opHold:
			holding = true
			scopes = append(scopes, op.hold.scopes...)
			for sc, w := range op.hold.windows {
				windows[sc] = w
			}
		case opSettle:
			scopes = append(scopes, chargeScopes(op.charge)...)
			if op.holdID != 0 {
				settleIDs = append(settleIDs, op.holdID)
			}
		case opDrop:
			drops = append(drops, op.holdID)
		}
	}
	scopes = slices.Compact(slices.Sorted(slices.Values(scopes)))

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	totals := map[string]*scopeTotals{}
	var latest time.Time
	settled := map[int64]Charge{} // holds charged by an earlier attempt
	liveHolds := map[int64]bool{} // holds this transaction deleted to charge
	var ids []int64               // charge ids, one per settle op
	var clock time.Time
	b := &pgx.Batch{}
	if len(scopes) > 0 {
		b.Queue(`INSERT INTO `+s.schema+`.scopes (scope) SELECT x FROM unnest($1::text[]) AS x ORDER BY x ON CONFLICT DO NOTHING`, scopes)
		b.Queue(`SELECT scope, epsilon, delta, squares, excess, latest FROM `+s.schema+`.scopes WHERE scope = ANY($1) ORDER BY scope FOR UPDATE`, scopes).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var sc string
				var t scopeTotals
				var at *time.Time
				if err := rows.Scan(&sc, &t.spent.Epsilon, &t.spent.Delta, &t.spentMoments.squares, &t.spentMoments.excess, &at); err != nil {
					return err
				}
				if at != nil && at.After(latest) {
					latest = *at
				}
				totals[sc] = &t
			}
			return rows.Err()
		})
	}
	if len(drops) > 0 {
		b.Queue(`DELETE FROM `+s.schema+`.holds WHERE hold_id = ANY($1)`, drops)
	}
	if len(settleIDs) > 0 {
		b.Queue(`SELECT hold_id, id, at FROM `+s.schema+`.charges WHERE hold_id = ANY($1)`, settleIDs).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var hold int64
				var c Charge
				if err := rows.Scan(&hold, &c.ID, &c.At); err != nil {
					return err
				}
				settled[hold] = c
			}
			return rows.Err()
		})
		// After the scope locks: a hold that expired before this point
		// may already have been left out of another process's decision.
		b.Queue(`DELETE FROM `+s.schema+`.holds WHERE hold_id = ANY($1) AND expires_at > clock_timestamp() RETURNING hold_id`, settleIDs).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var hold int64
				if err := rows.Scan(&hold); err != nil {
					return err
				}
				liveHolds[hold] = true
			}
			return rows.Err()
		})
	}
	if n := countSettles(ops); n > 0 {
		b.Queue(`SELECT array_agg(nextval(pg_get_serial_sequence($1, 'id'))) FROM generate_series(1, $2)`, s.schema+".charges", n).QueryRow(func(row pgx.Row) error {
			return row.Scan(&ids)
		})
	}
	b.Queue(`SELECT clock_timestamp()`).QueryRow(func(row pgx.Row) error { return row.Scan(&clock) })
	if holding {
		b.Queue(`SELECT scope, sum(epsilon), sum(delta), sum(squares), sum(excess) FROM `+s.schema+`.holds WHERE scope = ANY($1) AND expires_at > clock_timestamp() GROUP BY scope`, scopes).Query(func(rows pgx.Rows) error {
			return scanHoldSums(rows, totals)
		})
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	for _, sc := range scopes {
		if totals[sc] == nil {
			totals[sc] = &scopeTotals{}
		}
	}
	// The ledger's clock, never before the latest charge of a scope
	// touched: setting a server's clock back cannot reopen a window.
	now := clock.UTC()
	if latest.After(now) {
		now = latest.UTC()
	}
	if holding && len(windows) > 0 {
		if err := s.readWindows(ctx, tx, now, windows, totals); err != nil {
			return nil, err
		}
	}

	results := make([]opResult, len(ops))
	var charges []pendingCharge
	deltas := map[string]*scopeTotals{}
	next := 0
	for i, op := range ops {
		if op.kind != opSettle {
			continue
		}
		c := op.charge
		c.ID, next = ids[next], next+1
		if op.holdID != 0 {
			if prev, ok := settled[op.holdID]; ok {
				c.ID, c.At = prev.ID, prev.At.UTC()
				results[i] = opResult{charge: c}
				continue
			}
			if !liveHolds[op.holdID] {
				results[i] = opResult{err: ErrHoldLost}
				continue
			}
		}
		if c.At.IsZero() || op.holdID != 0 {
			c.At = now
		}
		charges = append(charges, pendingCharge{c, op.holdID})
		results[i] = opResult{charge: c}
		for _, sc := range chargeScopes(c) {
			for _, t := range []*scopeTotals{totals[sc], deltaOf(deltas, sc)} {
				t.spent = t.spent.Add(c.Cost)
				t.spentMoments = t.spentMoments.add(momentsOf(c.Cost))
			}
			if _, ok := windows[sc]; ok {
				totals[sc].windowSpent = totals[sc].windowSpent.Add(c.Cost)
			}
		}
	}
	var newHolds []holdRow
	for i, op := range ops {
		if op.kind != opHold {
			continue
		}
		view := make(map[string]*scopeTotals, len(op.hold.scopes))
		for _, sc := range op.hold.scopes {
			view[sc] = totals[sc]
		}
		if err := op.hold.decide(now, view); err != nil {
			results[i] = opResult{err: err}
			continue
		}
		id := randomID()
		for _, sc := range op.hold.scopes {
			totals[sc].reserved = totals[sc].reserved.Add(op.hold.cost)
			totals[sc].reservedMoments = totals[sc].reservedMoments.add(momentsOf(op.hold.cost))
			newHolds = append(newHolds, holdRow{id, sc, op.hold.cost})
		}
		results[i] = opResult{holdID: id}
	}
	if err := s.write(ctx, tx, now, charges, deltas, newHolds); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return results, nil
}

// pendingCharge is a charge to insert with the hold it settles (0: none).
type pendingCharge struct {
	Charge
	holdID int64
}

// holdRow is a hold's share on one scope.
type holdRow struct {
	id    int64
	scope string
	cost  Cost
}

// chargeScopes are the scopes a charge adds to: its analyst and every
// table it read.
func chargeScopes(c Charge) []string {
	out := []string{analystScope(c.Analyst)}
	for _, t := range c.Tables {
		out = append(out, tableScope(t))
	}
	return out
}

func countSettles(ops []*ledgerOp) int {
	n := 0
	for _, op := range ops {
		if op.kind == opSettle {
			n++
		}
	}
	return n
}

func deltaOf(deltas map[string]*scopeTotals, sc string) *scopeTotals {
	if deltas[sc] == nil {
		deltas[sc] = &scopeTotals{}
	}
	return deltas[sc]
}

// scanHoldSums adds the live holds' sums per scope to totals.
func scanHoldSums(rows pgx.Rows, totals map[string]*scopeTotals) error {
	for rows.Next() {
		var sc string
		var c Cost
		var m moments
		if err := rows.Scan(&sc, &c.Epsilon, &c.Delta, &m.squares, &m.excess); err != nil {
			return err
		}
		if totals[sc] == nil {
			totals[sc] = &scopeTotals{}
		}
		totals[sc].reserved, totals[sc].reservedMoments = c, m
	}
	return rows.Err()
}

// readWindows sets the current window's spending of the analyst scopes
// whose budgets renew.
func (s *PostgresStore) readWindows(ctx context.Context, tx pgx.Tx, now time.Time, windows map[string]Window, totals map[string]*scopeTotals) error {
	var analysts []string
	var since []time.Time
	for sc, w := range windows {
		analysts = append(analysts, sc[len("analyst:"):])
		since = append(since, w.Start(now))
	}
	rows, err := tx.Query(ctx, `SELECT w.a, coalesce(sum(c.epsilon), 0), coalesce(sum(c.delta), 0)
		FROM unnest($1::text[], $2::timestamptz[]) AS w(a, since)
		LEFT JOIN `+s.schema+`.charges c ON c.analyst = w.a AND c.at >= w.since
		GROUP BY w.a`, analysts, since)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var a string
		var c Cost
		if err := rows.Scan(&a, &c.Epsilon, &c.Delta); err != nil {
			return err
		}
		if t := totals[analystScope(a)]; t != nil {
			t.windowSpent = c
		}
	}
	return rows.Err()
}

// write records a transaction's charges, the scopes' new totals and the
// new holds.
func (s *PostgresStore) write(ctx context.Context, tx pgx.Tx, now time.Time, charges []pendingCharge, deltas map[string]*scopeTotals, holds []holdRow) error {
	b := &pgx.Batch{}
	if len(charges) > 0 {
		var (
			ids      []int64
			analysts []string
			eps, dls []float64
			queries  []string
			ats      []time.Time
			tables   []string
			holdIDs  []int64
		)
		for _, c := range charges {
			tj, err := json.Marshal(append([]string{}, c.Tables...))
			if err != nil {
				return err
			}
			ids, analysts, eps, dls = append(ids, c.ID), append(analysts, c.Analyst), append(eps, c.Cost.Epsilon), append(dls, c.Cost.Delta)
			queries, ats, tables = append(queries, c.Query), append(ats, c.At), append(tables, string(tj))
			holdIDs = append(holdIDs, c.holdID)
		}
		b.Queue(`INSERT INTO `+s.schema+`.charges (id, analyst, epsilon, delta, query, at, tables, hold_id)
			SELECT id, a, e, d, q, at, t::jsonb, nullif(h, 0) FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::float8[], $5::text[], $6::timestamptz[], $7::text[], $8::bigint[]) AS u(id, a, e, d, q, at, t, h)`,
			ids, analysts, eps, dls, queries, ats, tables, holdIDs)
	}
	if len(deltas) > 0 {
		var scs []string
		var e, d, sq, ex []float64
		for sc, t := range deltas {
			scs, e, d = append(scs, sc), append(e, t.spent.Epsilon), append(d, t.spent.Delta)
			sq, ex = append(sq, t.spentMoments.squares), append(ex, t.spentMoments.excess)
		}
		b.Queue(`UPDATE `+s.schema+`.scopes AS s SET epsilon = s.epsilon + u.e, delta = s.delta + u.d,
				squares = s.squares + u.sq, excess = s.excess + u.ex, latest = greatest(s.latest, $6)
			FROM unnest($1::text[], $2::float8[], $3::float8[], $4::float8[], $5::float8[]) AS u(scope, e, d, sq, ex)
			WHERE s.scope = u.scope`, scs, e, d, sq, ex, now)
	}
	if len(holds) > 0 {
		var hid []int64
		var scs []string
		var e, d, sq, ex []float64
		for _, h := range holds {
			m := momentsOf(h.cost)
			hid, scs, e, d = append(hid, h.id), append(scs, h.scope), append(e, h.cost.Epsilon), append(d, h.cost.Delta)
			sq, ex = append(sq, m.squares), append(ex, m.excess)
		}
		b.Queue(`INSERT INTO `+s.schema+`.holds (hold_id, scope, epsilon, delta, squares, excess, instance, expires_at)
			SELECT h, sc, e, d, sq, ex, $7, clock_timestamp() + make_interval(secs => $8)
			FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::float8[], $5::float8[], $6::float8[]) AS u(h, sc, e, d, sq, ex)`,
			hid, scs, e, d, sq, ex, s.instance, s.lease.Seconds())
	}
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// renew extends this process's live holds by a lease, under the locks of
// their scopes (a hold found expired by another process's decision must
// stay expired), and deletes holds long expired.
func (s *PostgresStore) renew() {
	s.liveMu.Lock()
	ids := make([]int64, 0, len(s.live))
	for id := range s.live {
		ids = append(ids, id)
	}
	s.liveMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		if len(ids) > 0 {
			b.Queue(`SELECT scope FROM `+s.schema+`.scopes WHERE scope IN (SELECT scope FROM `+s.schema+`.holds WHERE hold_id = ANY($1)) ORDER BY scope FOR UPDATE`, ids)
			b.Queue(`UPDATE `+s.schema+`.holds SET expires_at = clock_timestamp() + make_interval(secs => $2) WHERE hold_id = ANY($1) AND expires_at > clock_timestamp()`, ids, s.lease.Seconds())
		}
		b.Queue(`DELETE FROM ` + s.schema + `.holds WHERE expires_at < clock_timestamp() - interval '1 hour'`)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		slog.Warn("budget: renewing holds on the shared ledger", "err", err)
		return
	}
	s.txs.Add(1)
}

// readTotals reads scopes' totals in tx without locking them (for
// status), and the ledger's clock.
func (s *PostgresStore) readTotals(ctx context.Context, tx pgx.Tx, scopes []string, windows map[string]Window) (time.Time, map[string]*scopeTotals, error) {
	totals := make(map[string]*scopeTotals, len(scopes))
	for _, sc := range scopes {
		totals[sc] = &scopeTotals{}
	}
	var clock time.Time
	b := &pgx.Batch{}
	b.Queue(`SELECT scope, epsilon, delta, squares, excess FROM `+s.schema+`.scopes WHERE scope = ANY($1)`, scopes).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var sc string
			var t scopeTotals
			if err := rows.Scan(&sc, &t.spent.Epsilon, &t.spent.Delta, &t.spentMoments.squares, &t.spentMoments.excess); err != nil {
				return err
			}
			totals[sc] = &t
		}
		return rows.Err()
	})
	b.Queue(`SELECT greatest(clock_timestamp(), (SELECT max(latest) FROM ` + s.schema + `.scopes))`).QueryRow(func(row pgx.Row) error { return row.Scan(&clock) })
	b.Queue(`SELECT scope, sum(epsilon), sum(delta), sum(squares), sum(excess) FROM `+s.schema+`.holds WHERE scope = ANY($1) AND expires_at > clock_timestamp() GROUP BY scope`, scopes).Query(func(rows pgx.Rows) error {
		return scanHoldSums(rows, totals)
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return time.Time{}, nil, err
	}
	now := clock.UTC()
	if len(windows) > 0 {
		if err := s.readWindows(ctx, tx, now, windows, totals); err != nil {
			return time.Time{}, nil, err
		}
	}
	return now, totals, nil
}
