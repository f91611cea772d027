package budget

import (
	"fmt"
	"time"
)

// Window makes a budget renew: its limit applies to the charges of the
// current period — a calendar day, week (from Monday) or month in UTC, or
// the last Rolling — while a lifetime cap, when set, bounds all charges
// (SetWindow). The ledger keeps every charge; a window's spending is
// computed from their times. The current time is never taken earlier than
// the latest charge, so setting the clock back cannot reopen a spent
// period (a clock set forward renews early, as time passing would).
type Window struct {
	// Period is "day", "week" or "month"; or "" with Rolling > 0.
	Period  string
	Rolling time.Duration
}

// MaxWindow bounds a rolling window. The accountant keeps the times and
// costs of the charges of the last MaxWindow (before the latest time it
// has seen) in memory, for every analyst and table, so that any window —
// also one set by a later policy — can be computed: charges made within
// windowResolution of each other on one UTC day are kept as one span (64
// bytes), so a scope holds at most one span per second of the window
// however fast it is charged, and one per charge when charged slower.
const MaxWindow = 31 * 24 * time.Hour

// windowResolution is how long a span of charges kept for windows may
// last. A calendar window (starting at a UTC midnight, which no span
// crosses) counts exactly the charges in it; a rolling window counts a
// span that ends in it whole, so it may count charges up to
// windowResolution older than it: never fewer than it holds.
const windowResolution = time.Second

// IsZero reports whether w is no window (the budget does not renew).
func (w Window) IsZero() bool { return w.Period == "" && w.Rolling == 0 }

// Validate checks w.
func (w Window) Validate() error {
	switch {
	case w.IsZero():
	case w.Period == "day" || w.Period == "week" || w.Period == "month":
		if w.Rolling != 0 {
			return fmt.Errorf("budget: a window is a calendar period or a rolling duration, not both")
		}
	case w.Period == "" && w.Rolling > 0 && w.Rolling <= MaxWindow:
	default:
		return fmt.Errorf("budget: invalid window %+v: expected day, week, month or a rolling duration up to %v", w, MaxWindow)
	}
	return nil
}

// Start is the start of the window containing now.
func (w Window) Start(now time.Time) time.Time {
	now = now.UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	switch w.Period {
	case "day":
		return day
	case "week":
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7)) // back to Monday
	case "month":
		return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return now.Add(-w.Rolling)
}

// String says what the window is, as refusals and status print it.
func (w Window) String() string {
	if w.Period != "" {
		return "this " + w.Period
	}
	return "the last " + w.Rolling.String()
}

// timedCost is the total cost of the charges made from from to at, kept
// for windows (see MaxWindow).
type timedCost struct {
	from, at time.Time
	cost     Cost
}

// chargeAt is one charge's timedCost.
func chargeAt(at time.Time, c Cost) timedCost { return timedCost{from: at, at: at, cost: c} }

// add keeps c for windows: in the last span when it falls within
// windowResolution of the span's start on the same UTC day, else as a
// span of its own.
func (acct *account) add(c timedCost) {
	if n := len(acct.recent); n > 0 {
		last := &acct.recent[n-1]
		if !c.from.Before(last.from) && c.at.Sub(last.from) < windowResolution && sameUTCDay(last.from, c.at) {
			last.at = later(last.at, c.at)
			last.cost = last.cost.Add(c.cost)
			return
		}
	}
	acct.recent = append(acct.recent, c)
}

func sameUTCDay(a, b time.Time) bool {
	ay, am, ad := a.UTC().Date()
	by, bm, bd := b.UTC().Date()
	return ay == by && am == bm && ad == bd
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// SetTableWindow makes a protected table's own budget renew with w,
// under an optional lifetime cap (nil: none), at start or on a policy
// reload; a zero w makes it a lifetime budget again.
func (a *Accountant) SetTableWindow(table string, w Window, lifetime *Cost) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if lifetime != nil {
		if err := lifetime.Validate(); err != nil {
			return fmt.Errorf("budget: lifetime of table %q: %w", table, err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tables[table]
	if t == nil {
		t = &account{}
		a.tables[table] = t
	}
	t.window, t.hasLifetime = w, lifetime != nil
	if lifetime != nil {
		t.lifetime = *lifetime
	}
	return nil
}
