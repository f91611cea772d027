package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// How the shared ledger stays consistent across processes:
//
//   - A scope's row totals its committed charges and the holds still in
//     the holds table: a reservation adds its cost to the rows of its
//     scopes when it is granted, so settling it into a charge changes no
//     total (it only deletes the hold and inserts the charge).
//   - Reservations are decided under the row locks of every scope they
//     read, taken in one order. Before deciding, the transaction reclaims
//     the expired holds of those scopes (deletes them and subtracts their
//     cost); every hold it does not reclaim stays counted.
//   - A settle locks its hold's rows and charges only a hold all of whose
//     rows are still there. Reclaiming and settling a hold thus contend
//     for the same rows: whichever comes second finds them gone. A settle
//     takes no scope lock, so charges from several processes commit in
//     parallel; only reservations of one scope are serialized.
//   - A release marks the hold expired; the next reservation on its
//     scopes reclaims it.

// runTx is one writer transaction for a batch of operations.
func (s *PostgresStore) runTx(ctx context.Context, ops []*ledgerOp) ([]opResult, error) {
	var locks []string // scopes of reservations and appends: locked and read
	var drops, settleIDs []int64
	holding, durable := false, false
	var windows []scopeWindow
	for _, op := range ops {
		switch op.kind {
		case opHold:
			holding = true
			locks = append(locks, op.hold.scopes...)
			windows = append(windows, op.hold.windows...)
		case opSettle:
			durable = true
			if op.holdID != 0 {
				settleIDs = append(settleIDs, op.holdID)
			} else {
				locks = append(locks, chargeScopes(op.charge)...)
			}
		case opDrop:
			drops = append(drops, op.holdID)
		}
	}
	locks = slices.Compact(slices.Sorted(slices.Values(locks)))

	// BEGIN travels with the reads and COMMIT with the writes: two round
	// trips. A connection left in a failed transaction is closed, not
	// returned to the pool.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			conn.Conn().Close(context.Background())
		}
		conn.Release()
	}()
	var fresh []string // scopes without a row yet, as far as this process knows
	s.knownMu.Lock()
	for _, sc := range locks {
		if !s.known[sc] {
			fresh = append(fresh, sc)
		}
	}
	s.knownMu.Unlock()
	rows := map[string]*scopeTotals{}      // the locked scopes' rows
	reclaimed := map[string]*scopeTotals{} // expired holds deleted, per scope
	held := map[string]*scopeTotals{}      // holds remaining, per scope
	settled := map[int64]Charge{}          // holds charged by an earlier attempt
	holdRows := map[int64]int{}            // rows of the holds to settle, locked
	granted := map[int64]time.Time{}       // when they were granted
	var ids []int64                        // charge ids, one per settle op
	var clock, latest time.Time
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	if durable {
		// A charge is durable before its answer leaves, whatever the
		// server's or role's setting.
		b.Queue("SET LOCAL synchronous_commit = on")
	} else {
		// Only reservations and releases: a hold lost in a crash of the
		// ledger cannot be charged (its rows are gone), so the commit need
		// not wait for the disk, and the scopes' locks go sooner.
		b.Queue("SET LOCAL synchronous_commit = off")
	}
	if len(fresh) > 0 {
		b.Queue(`INSERT INTO `+s.schema+`.scopes (scope) SELECT x FROM unnest($1::text[]) AS x ORDER BY x ON CONFLICT DO NOTHING`, fresh)
	}
	if len(locks) > 0 {
		b.Queue(`SELECT scope, epsilon, delta, squares, excess, latest FROM `+s.schema+`.scopes WHERE scope = ANY($1) ORDER BY scope FOR UPDATE`, locks).Query(func(r pgx.Rows) error {
			return scanTotals(r, rows, &latest)
		})
	}
	if len(drops) > 0 {
		b.Queue(`UPDATE `+s.schema+`.holds SET expires_at = '-infinity' WHERE hold_id = ANY($1)`, drops)
	}
	if len(locks) > 0 {
		b.Queue(`DELETE FROM `+s.schema+`.holds WHERE scope = ANY($1) AND expires_at <= clock_timestamp() RETURNING scope, epsilon, delta, squares, excess`, locks).Query(func(r pgx.Rows) error {
			return addSums(r, reclaimed)
		})
	}
	if len(settleIDs) > 0 {
		b.Queue(`SELECT hold_id, id, at FROM `+s.schema+`.charges WHERE hold_id = ANY($1)`, settleIDs).Query(func(r pgx.Rows) error {
			for r.Next() {
				var hold int64
				var c Charge
				if err := r.Scan(&hold, &c.ID, &c.At); err != nil {
					return err
				}
				settled[hold] = c
			}
			return r.Err()
		})
		b.Queue(`SELECT hold_id, granted_at FROM `+s.schema+`.holds WHERE hold_id = ANY($1) ORDER BY hold_id, scope FOR UPDATE`, settleIDs).Query(func(r pgx.Rows) error {
			for r.Next() {
				var hold int64
				var at *time.Time
				if err := r.Scan(&hold, &at); err != nil {
					return err
				}
				holdRows[hold]++
				if at != nil && at.After(granted[hold]) {
					granted[hold] = *at
				}
			}
			return r.Err()
		})
	}
	if n := countSettles(ops); n > 0 {
		b.Queue(`SELECT array_agg(nextval($1::regclass)) FROM generate_series(1, $2)`, s.chargeSeq, n).QueryRow(func(r pgx.Row) error {
			return r.Scan(&ids)
		})
	}
	b.Queue(`SELECT clock_timestamp()`).QueryRow(func(r pgx.Row) error { return r.Scan(&clock) })
	if holding {
		// Read before the windows' charges: a hold settled in between is
		// then counted twice, never missed.
		b.Queue(`SELECT scope, sum(epsilon), sum(delta), sum(squares), sum(excess) FROM `+s.schema+`.holds WHERE scope = ANY($1) GROUP BY scope`, locks).Query(func(r pgx.Rows) error {
			return addSums(r, held)
		})
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	// The ledger's clock, never before the latest reservation of a scope
	// read: setting a server's clock back cannot reopen a window.
	now := clock.UTC()
	if latest.After(now) {
		now = latest.UTC()
	}
	// What the locked scopes have spent (committed) and hold.
	totals := map[string]*scopeTotals{}
	rowDelta := map[string]*scopeTotals{} // added to the rows: holds granted, appends, less reclaimed
	for _, sc := range locks {
		t := &scopeTotals{}
		if r := rows[sc]; r != nil {
			t.spent, t.spentMoments = r.spent, r.spentMoments
		}
		for _, sub := range []*scopeTotals{reclaimed[sc], held[sc]} {
			if sub != nil {
				t.spent = nonNegative(Cost{Epsilon: t.spent.Epsilon - sub.spent.Epsilon, Delta: t.spent.Delta - sub.spent.Delta})
				t.spentMoments = t.spentMoments.sub(sub.spentMoments)
			}
		}
		if h := held[sc]; h != nil {
			t.reserved, t.reservedMoments = h.spent, h.spentMoments
		}
		totals[sc] = t
		d := deltaOf(rowDelta, sc)
		if r := reclaimed[sc]; r != nil {
			d.spent = Cost{Epsilon: -r.spent.Epsilon, Delta: -r.spent.Delta}
			d.spentMoments = moments{squares: -r.spentMoments.squares, excess: -r.spentMoments.excess}
		}
	}
	if holding && len(windows) > 0 {
		if err := s.readWindows(ctx, conn, now, windows, totals); err != nil {
			return nil, err
		}
	}

	results := make([]opResult, len(ops))
	var charges []pendingCharge
	var settledHolds []int64
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
			// Every row of the hold must still be there: a scope that
			// reclaimed its share may have granted it to others.
			if holdRows[op.holdID] != len(chargeScopes(c)) {
				results[i] = opResult{err: ErrHoldLost}
				continue
			}
			settledHolds = append(settledHolds, op.holdID)
			// Never dated before the decision: a ledger clock set back
			// while the query ran cannot move the charge into a spent
			// window.
			c.At = now
			if g := granted[op.holdID].UTC(); g.After(c.At) {
				c.At = g
			}
		} else {
			c.At = now // the ledger's clock, not the caller's
			for _, sc := range chargeScopes(c) {
				totals[sc].spent = totals[sc].spent.Add(c.Cost)
				totals[sc].spentMoments = totals[sc].spentMoments.add(momentsOf(c.Cost))
				addCost(deltaOf(rowDelta, sc), c.Cost)
			}
		}
		charges = append(charges, pendingCharge{c, op.holdID})
		results[i] = opResult{charge: c}
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
		for _, sc := range op.hold.charged {
			totals[sc].reserved = totals[sc].reserved.Add(op.hold.cost)
			totals[sc].reservedMoments = totals[sc].reservedMoments.add(momentsOf(op.hold.cost))
			addCost(deltaOf(rowDelta, sc), op.hold.cost)
			newHolds = append(newHolds, holdRow{id, sc, op.hold.cost})
		}
		results[i] = opResult{holdID: id}
	}
	w, err := s.writes(now, settledHolds, charges, rowDelta, newHolds)
	if err != nil {
		return nil, err
	}
	var tag pgconn.CommandTag
	w.Queue("COMMIT").Exec(func(ct pgconn.CommandTag) error { tag = ct; return nil })
	if err := conn.SendBatch(ctx, w).Close(); err != nil {
		return nil, err
	}
	if tag.String() != "COMMIT" { // a transaction that failed ends in ROLLBACK
		return nil, fmt.Errorf("budget: the ledger transaction ended in %q", tag.String())
	}
	committed = true
	s.knownMu.Lock()
	for _, sc := range fresh {
		s.known[sc] = true
	}
	s.knownMu.Unlock()
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

// chargeScopes are the scopes a charge counts in: its analyst and every
// table it read.
func chargeScopes(c Charge) []string {
	out := []string{analystScope(c.Analyst)}
	for _, t := range c.Tables {
		out = append(out, tableScope(t))
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
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

// addCost adds c and its moments to t's spent.
func addCost(t *scopeTotals, c Cost) {
	t.spent = t.spent.Add(c)
	t.spentMoments = t.spentMoments.add(momentsOf(c))
}

// scanTotals reads scope rows (scope, ε, δ, Σε², Σε(e^ε−1), latest) into
// out's spent, and the latest time into latest.
func scanTotals(r pgx.Rows, out map[string]*scopeTotals, latest *time.Time) error {
	for r.Next() {
		var sc string
		var t scopeTotals
		var at *time.Time
		if err := r.Scan(&sc, &t.spent.Epsilon, &t.spent.Delta, &t.spentMoments.squares, &t.spentMoments.excess, &at); err != nil {
			return err
		}
		if at != nil && at.After(*latest) {
			*latest = *at
		}
		out[sc] = &t
	}
	return r.Err()
}

// addSums adds rows of (scope, ε, δ, Σε², Σε(e^ε−1)) to out's spent.
func addSums(r pgx.Rows, out map[string]*scopeTotals) error {
	for r.Next() {
		var sc string
		var c Cost
		var m moments
		if err := r.Scan(&sc, &c.Epsilon, &c.Delta, &m.squares, &m.excess); err != nil {
			return err
		}
		t := deltaOf(out, sc)
		t.spent = t.spent.Add(c)
		t.spentMoments = t.spentMoments.add(m)
	}
	return r.Err()
}

// querier is a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readWindows sets the current windows' spending of scopes whose budgets
// renew: an analyst's charges (through the (analyst, at) index), or those
// that read a table (every charge of the period, scanned by time).
func (s *PostgresStore) readWindows(ctx context.Context, q querier, now time.Time, windows []scopeWindow, totals map[string]*scopeTotals) error {
	queries := map[string]string{
		"analyst": `SELECT w.i, coalesce(sum(c.epsilon), 0), coalesce(sum(c.delta), 0)
			FROM unnest($1::text[], $2::timestamptz[], $3::int[]) AS w(name, since, i)
			LEFT JOIN ` + s.schema + `.charges c ON c.analyst = w.name AND c.at >= w.since
			GROUP BY w.i`,
		"table": `SELECT w.i, coalesce(sum(c.epsilon), 0), coalesce(sum(c.delta), 0)
			FROM unnest($1::text[], $2::timestamptz[], $3::int[]) AS w(name, since, i)
			LEFT JOIN ` + s.schema + `.charges c ON c.at >= w.since AND c.tables ? w.name
			GROUP BY w.i`,
	}
	for kind, sql := range queries {
		var names []string
		var since []time.Time
		var index []int32
		for i, sw := range windows {
			if k, name, _ := strings.Cut(sw.scope, ":"); k == kind {
				names, since, index = append(names, name), append(since, sw.w.Start(now)), append(index, int32(i))
			}
		}
		if len(names) == 0 {
			continue
		}
		if err := s.readWindowSums(ctx, q, sql, windows, totals, names, since, index); err != nil {
			return err
		}
	}
	return nil
}

// readWindowSums runs one of readWindows' queries.
func (s *PostgresStore) readWindowSums(ctx context.Context, q querier, sql string, windows []scopeWindow, totals map[string]*scopeTotals, args ...any) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		var c Cost
		if err := rows.Scan(&i, &c.Epsilon, &c.Delta); err != nil {
			return err
		}
		sw := windows[i]
		t := totals[sw.scope]
		if t == nil {
			continue
		}
		if t.windowSpent == nil {
			t.windowSpent = map[Window]Cost{}
		}
		t.windowSpent[sw.w] = c
	}
	return rows.Err()
}

// writes are the statements recording a transaction's outcome: the
// settled holds deleted, the charges, the scopes' rows changed, the new
// holds.
func (s *PostgresStore) writes(now time.Time, settledHolds []int64, charges []pendingCharge, rowDelta map[string]*scopeTotals, holds []holdRow) (*pgx.Batch, error) {
	b := &pgx.Batch{}
	if len(settledHolds) > 0 {
		b.Queue(`DELETE FROM `+s.schema+`.holds WHERE hold_id = ANY($1)`, settledHolds)
	}
	if len(charges) > 0 {
		var (
			ids, holdIDs []int64
			analysts, qs []string
			tables       []string
			eps, dls     []float64
			ats          []time.Time
		)
		for _, c := range charges {
			tj, err := json.Marshal(append([]string{}, c.Tables...))
			if err != nil {
				return nil, err
			}
			ids, holdIDs, analysts, qs = append(ids, c.ID), append(holdIDs, c.holdID), append(analysts, c.Analyst), append(qs, c.Query)
			eps, dls, ats, tables = append(eps, c.Cost.Epsilon), append(dls, c.Cost.Delta), append(ats, c.At), append(tables, string(tj))
		}
		b.Queue(`INSERT INTO `+s.schema+`.charges (id, analyst, epsilon, delta, query, at, tables, hold_id)
			SELECT id, a, e, d, q, at, t::jsonb, nullif(h, 0) FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::float8[], $5::text[], $6::timestamptz[], $7::text[], $8::bigint[]) AS u(id, a, e, d, q, at, t, h)`,
			ids, analysts, eps, dls, qs, ats, tables, holdIDs)
	}
	if len(rowDelta) > 0 {
		var scs []string
		var e, d, sq, ex []float64
		for sc, t := range rowDelta {
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
		b.Queue(`INSERT INTO `+s.schema+`.holds (hold_id, scope, epsilon, delta, squares, excess, instance, expires_at, granted_at)
			SELECT h, sc, e, d, sq, ex, $7, clock_timestamp() + make_interval(secs => $8), $9
			FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::float8[], $5::float8[], $6::float8[]) AS u(h, sc, e, d, sq, ex)`,
			hid, scs, e, d, sq, ex, s.instance, s.lease.Seconds(), now)
	}
	return b, nil
}

// readTotals reads scopes' totals in a read-only snapshot, without
// locking them (for status), and the ledger's clock: spent is a row less
// its holds, reserved its live holds.
func (s *PostgresStore) readTotals(ctx context.Context, tx pgx.Tx, scopes []string, windows []scopeWindow) (time.Time, map[string]*scopeTotals, error) {
	rows, all, live := map[string]*scopeTotals{}, map[string]*scopeTotals{}, map[string]*scopeTotals{}
	var clock, latest time.Time
	b := &pgx.Batch{}
	b.Queue(`SELECT scope, epsilon, delta, squares, excess, latest FROM `+s.schema+`.scopes WHERE scope = ANY($1)`, scopes).Query(func(r pgx.Rows) error {
		return scanTotals(r, rows, &latest)
	})
	b.Queue(`SELECT clock_timestamp()`).QueryRow(func(r pgx.Row) error { return r.Scan(&clock) })
	b.Queue(`SELECT scope, sum(epsilon), sum(delta), sum(squares), sum(excess) FROM `+s.schema+`.holds WHERE scope = ANY($1) GROUP BY scope`, scopes).Query(func(r pgx.Rows) error {
		return addSums(r, all)
	})
	b.Queue(`SELECT scope, sum(epsilon), sum(delta), sum(squares), sum(excess) FROM `+s.schema+`.holds WHERE scope = ANY($1) AND expires_at > clock_timestamp() GROUP BY scope`, scopes).Query(func(r pgx.Rows) error {
		return addSums(r, live)
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return time.Time{}, nil, err
	}
	now := clock.UTC()
	if latest.After(now) {
		now = latest.UTC()
	}
	totals := make(map[string]*scopeTotals, len(scopes))
	for _, sc := range scopes {
		t := &scopeTotals{}
		if r := rows[sc]; r != nil {
			t.spent, t.spentMoments = r.spent, r.spentMoments
		}
		if h := all[sc]; h != nil {
			t.spent = nonNegative(Cost{Epsilon: t.spent.Epsilon - h.spent.Epsilon, Delta: t.spent.Delta - h.spent.Delta})
			t.spentMoments = t.spentMoments.sub(h.spentMoments)
		}
		if h := live[sc]; h != nil {
			t.reserved, t.reservedMoments = h.spent, h.spentMoments
		}
		totals[sc] = t
	}
	if len(windows) > 0 {
		if err := s.readWindows(ctx, tx, now, windows, totals); err != nil {
			return time.Time{}, nil, err
		}
	}
	return now, totals, nil
}
