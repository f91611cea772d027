package budget

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"time"
)

// History is what an accountant starting over an embedded ledger reads
// besides the totals: enough to compose advanced composition's sums and
// every window's spending, in memory that grows with the analysts, tables,
// distinct ε and tables lists charged and the spans of the last
// MaxWindow, not with the charges.
type History struct {
	// Spent and TableSpent are the totals of every charge per analyst and
	// per table read (analysts and tables without charges absent).
	Spent, TableSpent map[string]Cost
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

// readHistory reads store's history.
func readHistory(ctx context.Context, store Store) (History, error) {
	hs, ok := store.(historyStore)
	if !ok {
		return History{}, errors.New("budget: the ledger cannot give the history an accountant starts from")
	}
	return hs.History(ctx)
}

// loadHistory sets the accountant's composition sums, latest time and
// window spans from h (the totals are set apart). a is not yet shared.
func (a *Accountant) loadHistory(h History) {
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
}

// costSum adds costs with Neumaier's compensation, as SQLite's total()
// does: a ledger's total read at start is as close to the exact sum as
// the SQL totals the shared ledger and the tools read.
type costSum struct{ eps, epsC, delta, deltaC float64 }

func (s *costSum) add(c Cost) {
	s.eps, s.epsC = compensated(s.eps, s.epsC, c.Epsilon)
	s.delta, s.deltaC = compensated(s.delta, s.deltaC, c.Delta)
}

func (s *costSum) cost() Cost { return Cost{Epsilon: s.eps + s.epsC, Delta: s.delta + s.deltaC} }

// compensated adds x to sum, carrying what rounding lost in c; an
// overflowed sum carries nothing (as SQLite's total(): +Inf stays +Inf,
// which Validate refuses, rather than becoming NaN).
func compensated(sum, c, x float64) (float64, float64) {
	t := sum + x
	if math.IsInf(t, 0) {
		return t, c
	}
	if math.Abs(sum) >= math.Abs(x) {
		c += (sum - t) + x
	} else {
		c += (x - t) + sum
	}
	return t, c
}
