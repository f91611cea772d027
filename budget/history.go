package budget

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"
)

// History is what an accountant starting over an embedded ledger reads
// besides the totals: enough to compose advanced composition's sums and
// every window's spending, in memory that grows with the distinct ε
// charged and the spans of the last MaxWindow, not with the charges.
type History struct {
	// Latest is the time of the latest charge (zero on an empty ledger).
	Latest time.Time
	// Epsilons counts each analyst's charges by their ε: advanced
	// composition's sums over every charge.
	Epsilons map[string]map[float64]int64
	// Spans are the charges of the last MaxWindow before Latest, those of
	// one analyst reading the same tables in one second merged, oldest
	// first.
	Spans []ChargeSpan
}

// ChargeSpan is the total cost of an analyst's charges that read Tables,
// made from From to To.
type ChargeSpan struct {
	Analyst  string
	Tables   []string
	From, To time.Time
	Cost     Cost
}

// historyStore is a ledger an accountant reads its history from when it
// starts (the embedded one; a shared ledger hands its sums over at each
// decision instead).
type historyStore interface {
	History(ctx context.Context) (History, error)
}

// loadHistory sets the accountant's composition sums, latest time and
// window spans from store's history. a is not yet shared.
func (a *Accountant) loadHistory(ctx context.Context, store Store) error {
	hs, ok := store.(historyStore)
	if !ok {
		return errors.New("budget: the ledger cannot give the history an accountant starts from")
	}
	h, err := hs.History(ctx)
	if err != nil {
		return err
	}
	a.latest = h.Latest
	for analyst, counts := range h.Epsilons {
		acct := a.accountLocked(analyst)
		// In ε's order, so that every start sums alike.
		for _, eps := range slices.Sorted(maps.Keys(counts)) {
			acct.spentMoments = acct.spentMoments.add(momentsOf(Cost{Epsilon: eps}).times(counts[eps]))
		}
	}
	horizon := a.latest.Add(-MaxWindow)
	for _, s := range h.Spans {
		if s.To.Before(horizon) {
			continue
		}
		span := timedCost{from: s.From, at: s.To, cost: s.Cost}
		a.accountLocked(s.Analyst).add(span)
		for _, table := range s.Tables {
			if t := a.tables[table]; t != nil {
				t.add(span)
			}
		}
	}
	return nil
}
