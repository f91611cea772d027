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
	acct.closeBlocks()
}

// spanBlockLen is how many spans a spanBlock sums.
const spanBlockLen = 512

// spanBlock sums recent[k·spanBlockLen:(k+1)·spanBlockLen] for a window
// that starts over (windowMemo): a rolling window charged less than once
// a second starts over at each charge, and once full of spans (a 30-day
// window charged every 3 s holds 864,000) a pass over every span took
// about 6 ms under the accountant's lock, at each charge. With the sums
// of blocks whose spans all end in the window, it adds those, and looks at
// the spans of the one or two blocks the window's start falls in (more
// only where charges' times went back), and those not yet in a block.
type spanBlock struct {
	sum Cost
	// earliest and latest are the earliest and latest end (at) of the
	// block's spans.
	earliest, latest time.Time
}

// closeBlocks sums the blocks of recent that are full and none of whose
// spans can still grow (the last span can, add).
func (acct *account) closeBlocks() {
	for (len(acct.blocks)+1)*spanBlockLen < len(acct.recent) {
		k := len(acct.blocks)
		spans := acct.recent[k*spanBlockLen : (k+1)*spanBlockLen]
		b := spanBlock{earliest: spans[0].at, latest: spans[0].at}
		for _, c := range spans {
			b.sum = b.sum.Add(c.cost)
			if c.at.Before(b.earliest) {
				b.earliest = c.at
			}
			b.latest = later(b.latest, c.at)
		}
		acct.blocks = append(acct.blocks, b)
	}
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

// remember keeps a charge's time and cost for windows — every account's,
// so that a window set later (a policy reload, a new team) counts what
// was spent before it — dropping those no window can reach any more
// (older than MaxWindow before latest) as the list grows.
func (acct *account) remember(c timedCost, latest time.Time) {
	acct.add(c)
	if len(acct.recent) < acct.pruneAt {
		return
	}
	horizon := latest.Add(-MaxWindow)
	kept := acct.recent[:0]
	for _, r := range acct.recent {
		if !r.at.Before(horizon) {
			kept = append(kept, r)
		}
	}
	acct.recent = kept
	acct.pruneAt = 2*len(kept) + 64
	acct.memos = acct.memos[:0] // their spans moved
	acct.blocks = acct.blocks[:0]
	acct.closeBlocks()
}

// windowSpent is what the account's charges in w's period containing now
// spent.
func (acct *account) windowSpent(w Window, now time.Time) Cost {
	if acct.windowSums != nil {
		if spent, ok := acct.windowSums[w]; ok {
			return spent
		}
		return acct.spent // not read: all of it, to be safe
	}
	return acct.memo(w).spent(acct.recent, acct.blocks, w.Start(now))
}

// windowMemo is a window's spending over recent[:counted], the spans
// windowSpent has summed: all but the last, which later charges may still
// grow. A calendar window's start stays put for its period, so each span
// is added once; a rolling window's start moves on, and the sum holds
// while it has not passed the earliest span summed (a span counted
// stays counted, one left out stays out). Otherwise the sum starts over:
// for a full rolling window, about once a second when charged at least
// once a second (a span's length), at every charge when charged slower.
// Starting over adds the blocks' sums where a block is wholly in the
// window (spanBlock) and the spans one by one elsewhere; sums are made in
// recent's order, a whole block as its sum, so a sum may differ from one
// span-by-span pass in its last bits.
type windowMemo struct {
	window  Window
	start   time.Time // the latest start the sum holds for
	counted int
	sum     Cost
	first   time.Time // the earliest end of a span in sum (zero: none)
}

// memo is w's memo, made if needed. An account answers for its own window
// and its teams': a few memos at most.
func (acct *account) memo(w Window) *windowMemo {
	for i := range acct.memos {
		if acct.memos[i].window == w {
			return &acct.memos[i]
		}
	}
	acct.memos = append(acct.memos, windowMemo{window: w})
	return &acct.memos[len(acct.memos)-1]
}

// spent is the spending of recent's spans ending at or after start;
// blocks are recent's (account.blocks).
func (m *windowMemo) spent(recent []timedCost, blocks []spanBlock, start time.Time) Cost {
	if start.Before(m.start) || (!m.first.IsZero() && start.After(m.first)) || m.counted > len(recent) {
		*m = windowMemo{window: m.window}
	}
	m.start = start
	if m.counted == 0 {
		for k, b := range blocks {
			switch {
			case b.latest.Before(start): // none in the window
			case !b.earliest.Before(start):
				m.sum = m.sum.Add(b.sum)
				if m.first.IsZero() || b.earliest.Before(m.first) {
					m.first = b.earliest
				}
			default:
				m.addSpans(recent[k*spanBlockLen:(k+1)*spanBlockLen], start)
			}
		}
		m.counted = len(blocks) * spanBlockLen // < len(recent)
	}
	if n := len(recent) - 1; m.counted < n {
		m.addSpans(recent[m.counted:n], start)
		m.counted = n
	}
	spent := m.sum
	if n := len(recent); n > 0 && !recent[n-1].at.Before(start) {
		spent = spent.Add(recent[n-1].cost)
	}
	return spent
}

// addSpans adds to the sum the spans ending at or after start.
func (m *windowMemo) addSpans(spans []timedCost, start time.Time) {
	for _, c := range spans {
		if !c.at.Before(start) {
			m.sum = m.sum.Add(c.cost)
			if m.first.IsZero() || c.at.Before(m.first) {
				m.first = c.at
			}
		}
	}
}
