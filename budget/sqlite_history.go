package budget

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// History reads the ledger's history (see History): the latest time, then
// every charge in one pass in the table's own order (no sort), summing
// each analyst's and table's charges, counting each analyst's charges by
// ε and summing those of the last MaxWindow per analyst, tables and
// second. What it keeps grows with the analysts, tables, distinct ε and
// tables lists charged and with the spans, at most one per analyst, tables
// and second of the window, not with the charges.
func (s *SQLiteStore) History(ctx context.Context) (History, error) {
	if s.isClosed() {
		return History{}, ErrClosed
	}
	h := History{Spent: map[string]Cost{}, TableSpent: map[string]Cost{}, Epsilons: map[string]map[float64]int64{}}
	var latest sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT max(at_ns) FROM charges`).Scan(&latest); err != nil {
		return History{}, fmt.Errorf("budget: reading the latest charge: %w", err)
	}
	if !latest.Valid {
		return h, nil
	}
	h.Latest = time.Unix(0, latest.Int64).UTC()
	since := h.Latest.Add(-MaxWindow).UnixNano()

	// A version 1 ledger (read-only) records no tables.
	tables := "tables"
	if s.version == 1 {
		tables = "'[]'"
	}
	rows, err := s.db.QueryContext(ctx, `SELECT analyst, epsilon, delta, at_ns, `+tables+` FROM charges`)
	if err != nil {
		return History{}, fmt.Errorf("budget: reading the charges: %w", err)
	}
	type spanKey struct{ analyst, tables string }
	open := map[spanKey]int{} // the index in h.Spans of each key's latest span
	parsed := map[string][]string{}
	spent := map[string]*costSum{}
	tableSpent := map[string]*costSum{}
	var analyst, list sql.RawBytes
	for rows.Next() {
		var c Cost
		var ns int64
		if err := rows.Scan(&analyst, &c.Epsilon, &c.Delta, &ns, &list); err != nil {
			rows.Close()
			return History{}, fmt.Errorf("budget: reading the charges: %w", err)
		}
		total := spent[string(analyst)]
		if total == nil {
			total = &costSum{}
			spent[string(analyst)] = total
			h.Epsilons[string(analyst)] = map[float64]int64{}
		}
		total.add(c)
		h.Epsilons[string(analyst)][c.Epsilon]++
		tabs, ok := parsed[string(list)]
		if !ok {
			if err := json.Unmarshal(list, &tabs); err != nil {
				rows.Close()
				return History{}, fmt.Errorf("budget: reading the charges: a charge's tables %q: %w", list, err)
			}
			parsed[string(list)] = tabs
		}
		for _, t := range tabs {
			if tableSpent[t] == nil {
				tableSpent[t] = &costSum{}
			}
			tableSpent[t].add(c)
		}
		if ns < since {
			continue
		}
		at := time.Unix(0, ns).UTC()
		key := spanKey{string(analyst), string(list)}
		if i, ok := open[key]; ok {
			if sp := &h.Spans[i]; sp.From.Unix() == at.Unix() {
				sp.From, sp.To = earlier(sp.From, at), later(sp.To, at)
				sp.Cost = sp.Cost.Add(c)
				continue
			}
		}
		open[key] = len(h.Spans)
		h.Spans = append(h.Spans, ChargeSpan{Analyst: key.analyst, Tables: tabs, From: at, To: at, Cost: c})
	}
	err = rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return History{}, fmt.Errorf("budget: reading the charges: %w", err)
	}
	for analyst, total := range spent {
		h.Spent[analyst] = total.cost()
	}
	for table, total := range tableSpent {
		h.TableSpent[table] = total.cost()
	}
	return h, nil
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
