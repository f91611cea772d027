package budget

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// A budget that renews per day under a lifetime cap: a day's charges fill
// the day's limit, the next day renews it, the lifetime cap ends it; a
// clock set back cannot reopen a spent day; after a restart the day's
// spending comes from the ledger's charge times.
func TestWindowedBudget(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-3 * 24 * time.Hour)
	clock := day.Add(10 * time.Hour)
	a := newTestAccountant(t, store, map[string]Cost{"ana": {Epsilon: 1}})
	a.now = func() time.Time { return clock }
	if err := a.SetWindow("ana", Window{Period: "day"}, &Cost{Epsilon: 2.5}); err != nil {
		t.Fatal(err)
	}
	commit := func(eps float64) error {
		r, err := a.Reserve(context.Background(), "ana", Cost{Epsilon: eps})
		if err != nil {
			return err
		}
		_, err = r.Commit(ctx, "q")
		return err
	}
	for _, eps := range []float64{0.6, 0.4} {
		if err := commit(eps); err != nil {
			t.Fatal(err)
		}
	}
	var ex *ExhaustedError
	if err := commit(0.1); !errors.As(err, &ex) || ex.Window != "this day" || !strings.Contains(err.Error(), `analyst "ana" (this day)`) {
		t.Fatalf("past the day's limit: %v", err)
	}
	// The clock set back an hour: still the same spent day.
	clock = day.Add(9 * time.Hour)
	if err := commit(0.1); !errors.As(err, &ex) {
		t.Errorf("a clock set back reopened the day: %v", err)
	}
	clock = day.Add(34 * time.Hour) // the next day
	if st := mustStatus(t, a, "ana"); !approxCost(st.Spent, Cost{}) || !st.WindowStart.Equal(day.Add(24*time.Hour)) || !approx(st.Remaining.Epsilon, 1) {
		t.Errorf("next day's status %+v", st)
	}
	if err := commit(1); err != nil {
		t.Fatalf("the next day: %v", err)
	}
	clock = day.Add(58 * time.Hour) // a third day: the lifetime cap (2.5) leaves 0.5
	if st := mustStatus(t, a, "ana"); !approx(st.Remaining.Epsilon, 0.5) {
		t.Errorf("third day's remaining %v, want the lifetime's 0.5", st.Remaining)
	}
	if err := commit(0.6); !errors.As(err, &ex) || ex.Window != "lifetime" || !approx(ex.Limit.Epsilon, 2.5) {
		t.Errorf("past the lifetime cap: %v", err)
	}
	if err := commit(0.5); err != nil {
		t.Fatal(err)
	}
	// A restart on the same day: its 0.5 comes from the ledger.
	b := newTestAccountant(t, store, map[string]Cost{"ana": {Epsilon: 1}})
	b.now = func() time.Time { return clock }
	if err := b.SetWindow("ana", Window{Period: "day"}, nil); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, b, "ana"); !approxCost(st.Spent, Cost{Epsilon: 0.5}) {
		t.Errorf("after a restart the day spent %v", st.Spent)
	}
	if err := b.SetWindow("ana", Window{Period: "fortnight"}, nil); err == nil {
		t.Error("an unknown period was accepted")
	}
}

// Window starts: UTC days, weeks from Monday, months, rolling durations.
func TestWindowStart(t *testing.T) {
	now := time.Date(2026, 11, 25, 15, 4, 5, 0, time.UTC) // a Wednesday
	for _, c := range []struct {
		w    Window
		want time.Time
	}{
		{Window{Period: "day"}, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)},
		{Window{Period: "week"}, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)},
		{Window{Period: "month"}, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{Window{Rolling: 7 * 24 * time.Hour}, now.Add(-7 * 24 * time.Hour)},
	} {
		if got := c.w.Start(now); !got.Equal(c.want) {
			t.Errorf("%+v: start %v, want %v", c.w, got, c.want)
		}
	}
	if got := (Window{Period: "week"}).Start(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("a Sunday's week starts %v", got)
	}
}

// A team's and a table's budget may renew too: a team's window adds up
// its members' charges of the period, a table's the charges that read it,
// each under an optional lifetime cap.
func TestTeamAndTableWindows(t *testing.T) {
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-3 * 24 * time.Hour)
	clock := day.Add(10 * time.Hour)
	a := newTestAccountant(t, newMemStore(), map[string]Cost{"bea": {Epsilon: 10}, "cy": {Epsilon: 10}, "dan": {Epsilon: 10}})
	a.now = func() time.Time { return clock }
	if err := a.SetTeams(map[string]Team{"ops": {Limit: Cost{Epsilon: 1}, Members: []string{"bea", "cy"}, Window: Window{Period: "day"}, Lifetime: &Cost{Epsilon: 1.5}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetTableLimits(map[string]Cost{"visits": {Epsilon: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetTableWindow("visits", Window{Period: "day"}, nil); err != nil {
		t.Fatal(err)
	}
	commit := func(who string, tables []string, eps float64) error {
		r, err := a.ReserveFor(ctx, who, tables, Cost{Epsilon: eps})
		if err != nil {
			return err
		}
		_, err = r.Commit(ctx, "q")
		return err
	}
	var ex *ExhaustedError
	if err := commit("bea", nil, 0.6); err != nil {
		t.Fatal(err)
	}
	if err := commit("cy", nil, 0.5); !errors.As(err, &ex) || ex.Team != "ops" || ex.Window != "this day" {
		t.Fatalf("cy past the team's day: %v", err)
	}
	if err := commit("dan", []string{"visits"}, 1); err != nil {
		t.Fatal(err)
	}
	if err := commit("dan", []string{"visits"}, 0.1); !errors.As(err, &ex) || ex.Table != "visits" || ex.Window != "this day" {
		t.Fatalf("past the table's day: %v", err)
	}
	clock = day.Add(34 * time.Hour) // the next day renews both
	if err := commit("cy", []string{"visits"}, 0.5); err != nil {
		t.Fatalf("the next day: %v", err)
	}
	if st, _ := a.TeamStatus("ops"); !approx(st.Spent.Epsilon, 0.5) || st.Window != "this day" || !st.WindowStart.Equal(day.Add(24*time.Hour)) {
		t.Errorf("team status %+v", st)
	}
	if st, _ := a.TableStatus("visits"); !approx(st.Spent.Epsilon, 0.5) || st.Window != "this day" {
		t.Errorf("table status %+v", st)
	}
	// The team's lifetime cap (1.5) leaves 0.4 of the day's 0.5.
	if err := commit("bea", nil, 0.45); !errors.As(err, &ex) || ex.Team != "ops" || ex.Window != "lifetime" {
		t.Errorf("past the team's lifetime cap: %v", err)
	}
	// After a restart the windows' spending comes from the ledger.
	b := newTestAccountant(t, a.store, map[string]Cost{"bea": {Epsilon: 10}, "cy": {Epsilon: 10}})
	b.now = func() time.Time { return clock }
	if err := b.SetTeams(map[string]Team{"ops": {Limit: Cost{Epsilon: 1}, Members: []string{"bea", "cy"}, Window: Window{Period: "day"}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetTableLimits(map[string]Cost{"visits": {Epsilon: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetTableWindow("visits", Window{Period: "day"}, nil); err != nil {
		t.Fatal(err)
	}
	team, _ := b.TeamStatus("ops")
	table, _ := b.TableStatus("visits")
	if !approx(team.Spent.Epsilon, 0.5) || !approx(table.Spent.Epsilon, 0.5) {
		t.Errorf("after a restart the day's team spending is %v and table's %v, want 0.5 and 0.5", team.Spent, table.Spent)
	}
}

// On the shared ledger, teams' and tables' windows are computed from the
// ledger's charges by its clock (here a rolling window of two seconds).
func TestSharedTeamAndTableWindows(t *testing.T) {
	ctx := context.Background()
	schema := newPGSchema(t)
	limits := map[string]Cost{"bea": {Epsilon: 10}, "cy": {Epsilon: 10}}
	w := Window{Rolling: 2 * time.Second}
	var accts []*Accountant
	for i := 0; i < 2; i++ {
		a := newTestAccountant(t, openPG(t, schema, 0), limits)
		if err := a.SetTeams(map[string]Team{"ops": {Limit: Cost{Epsilon: 1}, Members: []string{"bea", "cy"}, Window: w}}); err != nil {
			t.Fatal(err)
		}
		if err := a.SetTableLimits(map[string]Cost{"visits": {Epsilon: 1.5}}); err != nil {
			t.Fatal(err)
		}
		if err := a.SetTableWindow("visits", w, nil); err != nil {
			t.Fatal(err)
		}
		accts = append(accts, a)
	}
	commit := func(a *Accountant, who string, tables []string, eps float64) error {
		r, err := a.ReserveFor(ctx, who, tables, Cost{Epsilon: eps})
		if err != nil {
			return err
		}
		_, err = r.Commit(ctx, "q")
		return err
	}
	var ex *ExhaustedError
	if err := commit(accts[0], "bea", []string{"visits"}, 0.8); err != nil {
		t.Fatal(err)
	}
	if err := commit(accts[1], "cy", nil, 0.3); !errors.As(err, &ex) || ex.Team != "ops" {
		t.Fatalf("cy, on another process, past the team's window: %v", err)
	}
	if err := commit(accts[1], "cy", []string{"visits"}, 0.2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // the window has passed
	if err := commit(accts[1], "cy", []string{"visits"}, 1); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if err := commit(accts[0], "bea", []string{"visits"}, 0.6); !errors.As(err, &ex) || ex.Team != "ops" && ex.Table != "visits" {
		t.Errorf("past the renewed windows: %v", err)
	}
	if err := accts[0].Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := accts[0].TeamStatus("ops"); !approx(st.Spent.Epsilon, 1) {
		t.Errorf("team's window spent %v, want 1", st.Spent)
	}
	if st, _ := accts[0].TableStatus("visits"); !approx(st.Spent.Epsilon, 1) {
		t.Errorf("table's window spent %v, want 1", st.Spent)
	}
}

// Regressions from a review: clock changes and windows set late.
func TestWindowsAgainstClockChanges(t *testing.T) {
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	newDaily := func() (*Accountant, *time.Time) {
		clock := day.Add(10 * time.Hour)
		a := newTestAccountant(t, newMemStore(), map[string]Cost{"ana": {Epsilon: 1}})
		a.now = func() time.Time { return clock }
		if err := a.SetWindow("ana", Window{Period: "day"}, nil); err != nil {
			t.Fatal(err)
		}
		return a, &clock
	}
	commit := func(a *Accountant, eps float64) error {
		r, err := a.Reserve(context.Background(), "ana", Cost{Epsilon: eps})
		if err != nil {
			return err
		}
		_, err = r.Commit(context.Background(), "q")
		return err
	}
	// A clock that jumps more than a month ahead and comes back: time
	// seen is never taken back, so the budget renewed early (as time
	// passing would) but the spent day never reopens: what is charged now
	// is dated in the later day.
	a, clock := newDaily()
	if err := commit(a, 1); err != nil {
		t.Fatal(err)
	}
	*clock = day.Add(40 * 24 * time.Hour)
	a.Status("ana")
	*clock = day.Add(11 * time.Hour)
	if st, _ := a.Status("ana"); !st.WindowStart.Equal(day.Add(40 * 24 * time.Hour)) {
		t.Errorf("after the clock came back the window starts %v, want the day it jumped to", st.WindowStart)
	}
	r, err := a.Reserve(context.Background(), "ana", Cost{Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ch, err := r.Commit(context.Background(), "q"); err != nil || ch.At.Before(day.Add(40*24*time.Hour)) {
		t.Errorf("charged at %v (%v): in the spent day", ch.At, err)
	}
	// A query decided after midnight and charged after the clock was set
	// back before it: charged in the new day, not the spent one.
	a, clock = newDaily()
	if err := commit(a, 1); err != nil {
		t.Fatal(err)
	}
	*clock = day.Add(25 * time.Hour)
	r, err = a.Reserve(context.Background(), "ana", Cost{Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	*clock = day.Add(23 * time.Hour)
	ch, err := r.Commit(context.Background(), "q2")
	if err != nil || ch.At.Before(day.Add(24*time.Hour)) {
		t.Errorf("charge decided in the next day dated %v (%v), in the spent one", ch.At, err)
	}
}

// A team made (or a table's window set) after charges were made counts
// them: every account keeps its recent charges.
func TestWindowsSetLateCountEarlierCharges(t *testing.T) {
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	clock := day.Add(10 * time.Hour)
	a := newTestAccountant(t, newMemStore(), map[string]Cost{"bea": {Epsilon: 10}, "cy": {Epsilon: 10}})
	a.now = func() time.Time { return clock }
	commit := func(who string, tables []string, eps float64) error {
		r, err := a.ReserveFor(context.Background(), who, tables, Cost{Epsilon: eps})
		if err != nil {
			return err
		}
		_, err = r.Commit(context.Background(), "q")
		return err
	}
	if err := commit("bea", []string{"visits"}, 0.9); err != nil {
		t.Fatal(err)
	}
	if err := a.SetTeams(map[string]Team{"ops": {Limit: Cost{Epsilon: 1}, Members: []string{"bea", "cy"}, Window: Window{Period: "day"}}}); err != nil {
		t.Fatal(err)
	}
	if err := commit("cy", nil, 0.5); err == nil {
		t.Error("a team made after bea's 0.9 let cy spend 0.5 of its day's 1")
	}
	if err := a.SetTableLimits(map[string]Cost{"visits": {Epsilon: 5}}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetTableWindow("visits", Window{Period: "day"}, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := a.TableStatus("visits"); !approx(st.Spent.Epsilon, 0.9) {
		t.Errorf("a table window set after a charge shows %v spent today, want 0.9", st.Spent)
	}
}

// Charges made within windowResolution of each other on one UTC day are
// kept as one span: a scope charged a thousand times a second keeps a
// span per second, calendar windows count exactly what they hold, and a
// rolling window counts a span that ends in it whole (never less than it
// holds, at most windowResolution of older charges more).
func TestWindowSpans(t *testing.T) {
	midnight := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	clock := midnight.Add(-4500 * time.Millisecond) // 23:59:55.5 the day before
	a := newTestAccountant(t, newMemStore(), map[string]Cost{"ana": {Epsilon: 1e9}, "bo": {Epsilon: 1e9}})
	a.now = func() time.Time { return clock }
	if err := a.SetWindow("ana", Window{Period: "day"}, nil); err != nil {
		t.Fatal(err)
	}
	commit := func(who string, eps float64) {
		t.Helper()
		r, err := a.ReserveFor(context.Background(), who, []string{"visits"}, Cost{Epsilon: eps})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Commit(context.Background(), "q"); err != nil {
			t.Fatal(err)
		}
	}
	// 10,000 charges a millisecond apart, across midnight.
	for range 10_000 {
		commit("ana", 0.001)
		clock = clock.Add(time.Millisecond)
	}
	for _, acct := range []*account{a.accounts["ana"], a.tables["visits"]} {
		if n := len(acct.recent); n < 10 || n > 12 {
			t.Errorf("%d spans kept for 10,000 charges over 10 s, want 10 to 12 (one per second, split at midnight)", n)
		}
		for _, s := range acct.recent {
			if !sameUTCDay(s.from, s.at) || s.at.Sub(s.from) >= windowResolution {
				t.Errorf("span %v – %v crosses midnight or lasts %v", s.from, s.at, s.at.Sub(s.from))
			}
		}
	}
	// The day since midnight: exactly its 5,500 charges.
	if st := mustStatus(t, a, "ana"); math.Abs(st.Spent.Epsilon-5.5) > 1e-9 {
		t.Errorf("the day's spending %v, want exactly the 5,500 charges since midnight (5.5)", st.Spent.Epsilon)
	}
	if total := a.accounts["ana"].spent.Epsilon; math.Abs(total-10) > 1e-9 {
		t.Errorf("all charges spent %v, want 10", total)
	}

	// A rolling window: two charges half a second apart share a span.
	if err := a.SetWindow("bo", Window{Rolling: 10 * time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	clock = midnight.Add(time.Hour)
	start := clock
	commit("bo", 0.1)
	clock = start.Add(500 * time.Millisecond)
	commit("bo", 0.2)
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{
		{10*time.Second + 100*time.Millisecond, 0.3}, // holds the second only; counts the span whole
		{10*time.Second + 400*time.Millisecond, 0.3},
		{10*time.Second + 600*time.Millisecond, 0}, // past the span's end
	} {
		clock = start.Add(c.at)
		if st := mustStatus(t, a, "bo"); math.Abs(st.Spent.Epsilon-c.want) > 1e-9 {
			t.Errorf("rolling window at +%v: spent %v, want %v", c.at, st.Spent.Epsilon, c.want)
		}
	}
}

// windowSpent's memo gives what a full pass over the spans gives, as
// charges come and the clock moves on: for calendar and rolling windows
// asked of one account in turn, across prunings. Within 1e-12 of it: a
// memo starting over adds whole blocks as their sums (spanBlock), whose
// rounding may differ from a span-by-span pass in the last bits.
func TestWindowMemoMatchesFullSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	windows := []Window{{Period: "day"}, {Period: "week"}, {Rolling: time.Hour}, {Rolling: 10 * time.Second}, {Rolling: 2 * time.Second}}
	for trial := range 8 {
		acct := &account{}
		now := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))
		for i := range 5000 {
			switch r := rng.IntN(100); {
			case r < 60:
				now = now.Add(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
			case r < 99:
				now = now.Add(time.Duration(rng.Int64N(int64(20 * time.Second))))
			default: // some 75 days in all: prunings drop part of the spans
				now = now.Add(time.Duration(rng.Int64N(int64(3 * 24 * time.Hour))))
			}
			acct.remember(chargeAt(now, Cost{Epsilon: float64(rng.IntN(1000)+1) / 997, Delta: 1e-9}), now)
			for range 2 {
				w := windows[rng.IntN(len(windows))]
				at := now.Add(time.Duration(rng.Int64N(int64(3 * time.Second))))
				if got, want := acct.windowSpent(w, at), fullSpent(acct.recent, w.Start(at)); !nearCost(got, want) {
					t.Fatalf("trial %d, charge %d, window %v at %v: memo %v, full pass %v", trial, i, w, at, got, want)
				}
			}
		}
	}
}

// A pruning that drops fewer spans than the memo has counted moves the
// spans under it: the memo starts over.
func TestWindowMemoAfterPruning(t *testing.T) {
	now := time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC)
	acct := &account{pruneAt: 100}
	acct.remember(chargeAt(now.Add(-40*24*time.Hour), Cost{Epsilon: 5}), now) // beyond MaxWindow
	for i := range 98 {
		acct.remember(chargeAt(now.Add(time.Duration(i)*time.Minute), Cost{Epsilon: 1}), now)
	}
	now = now.Add(98 * time.Minute)
	w := Window{Period: "day"}
	if got := acct.windowSpent(w, now); got.Epsilon != 98 {
		t.Fatalf("before the pruning: %v", got)
	}
	acct.remember(chargeAt(now, Cost{Epsilon: 1}), now) // the 100th span: prunes the oldest
	if len(acct.recent) != 99 {
		t.Fatalf("%d spans after the pruning, want 99", len(acct.recent))
	}
	if got := acct.windowSpent(w, now); got.Epsilon != 99 {
		t.Errorf("after the pruning: %v, want 99", got)
	}
}

// A charge and the window check of an analyst charged once a second for
// ten days under a monthly window (864,000 spans kept).
func BenchmarkWindowSpent(b *testing.B) {
	acct := &account{}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for range 864_000 {
		acct.remember(chargeAt(now, Cost{Epsilon: 0.01}), now)
		now = now.Add(time.Second)
	}
	w := Window{Period: "month"}
	acct.windowSpent(w, now)
	for b.Loop() {
		acct.remember(chargeAt(now, Cost{Epsilon: 0.01}), now)
		if acct.windowSpent(w, now).Epsilon <= 0 {
			b.Fatal("nothing spent")
		}
		now = now.Add(time.Second)
	}
}

// oracleCharge is one charge as the oracles below keep it.
type oracleCharge struct {
	at   time.Time
	cost float64
}

// oracleSpent is the exact spending of the charges made at or after start.
func oracleSpent(cs []oracleCharge, start time.Time) (spent float64) {
	for _, c := range cs {
		if !c.at.Before(start) {
			spent += c.cost
		}
	}
	return spent
}

// Charges whose times go back (a clock set back, concurrent commits whose
// batches are timed by their latest charge) against an oracle that keeps
// every charge: a window never counts less than the charges in it, a
// calendar window counts exactly those, a rolling one at most a second's
// more. (From a review: the tests before only charged forwards, and
// merging a late charge into a span without keeping the span's latest end
// under-counted unnoticed.)
func TestWindowsNeverUnderCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	windows := []Window{{Period: "day"}, {Period: "week"}, {Period: "month"}, {Rolling: time.Hour}, {Rolling: 1500 * time.Millisecond}, {Rolling: 3 * time.Second}}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*want+1e-12 }
	for trial := range 12 {
		acct := &account{}
		var cs []oracleCharge
		latest := time.Date(2026, 2, 28, 23, 59, 58, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(4 * time.Second))))
		now := latest
		for i := range 2000 {
			switch r := rng.IntN(100); {
			case r < 50:
				now = now.Add(time.Duration(rng.Int64N(int64(400 * time.Millisecond))))
			case r < 70:
				now = now.Add(-time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))) // back in time
			case r < 99:
				now = now.Add(time.Duration(rng.Int64N(int64(5 * time.Second))))
			default:
				now = now.Add(time.Duration(rng.Int64N(int64(2 * 24 * time.Hour))))
			}
			latest = later(latest, now)
			eps := float64(rng.IntN(1000)+1) / 997
			acct.remember(chargeAt(now, Cost{Epsilon: eps}), latest)
			cs = append(cs, oracleCharge{now, eps})
			for range 3 {
				w := windows[rng.IntN(len(windows))]
				at := latest.Add(time.Duration(rng.Int64N(int64(3 * time.Second))))
				start := w.Start(at)
				got, want := acct.windowSpent(w, at).Epsilon, oracleSpent(cs, start)
				switch {
				case got < want && !near(got, want):
					t.Fatalf("trial %d, charge %d, %v: spent %v, fewer than the %v charged in it", trial, i, w, got, want)
				case w.Period != "" && !near(got, want):
					t.Fatalf("trial %d, charge %d, %v: spent %v, want exactly %v", trial, i, w, got, want)
				case w.Rolling != 0:
					if most := oracleSpent(cs, start.Add(-windowResolution)); got > most && !near(got, most) {
						t.Fatalf("trial %d, charge %d, %v: spent %v, more than the %v charged from a second before it", trial, i, w, got, most)
					}
				}
			}
		}
	}
}

// fullSpent is a span-by-span pass: the spending of the spans of recent
// ending at or after start.
func fullSpent(recent []timedCost, start time.Time) (spent Cost) {
	for _, c := range recent {
		if !c.at.Before(start) {
			spent = spent.Add(c.cost)
		}
	}
	return spent
}

// nearCost reports whether got is want but for rounding.
func nearCost(got, want Cost) bool {
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-12*want }
	return near(got.Epsilon, want.Epsilon) && near(got.Delta, want.Delta)
}

// A window that starts over takes whole blocks' sums (spanBlock): against
// a span-by-span pass over accounts of thousands of spans, some charged
// back in time, across prunings, for windows starting anywhere; and each
// block sums exactly its spans.
func TestWindowBlocksMatchFullSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 4 {
		acct := &account{}
		now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		latest := now
		for i := range 12_000 {
			switch r := rng.IntN(1000); {
			case r < 940:
				now = now.Add(time.Duration(1+rng.Int64N(int64(4*time.Minute))) + windowResolution)
			case r < 998:
				now = now.Add(-time.Duration(rng.Int64N(int64(2 * time.Hour)))) // back in time
			default: // prunings drop part of the spans
				now = now.Add(time.Duration(rng.Int64N(int64(20 * 24 * time.Hour))))
			}
			latest = later(latest, now)
			acct.remember(chargeAt(now, Cost{Epsilon: float64(rng.IntN(1000)+1) / 997, Delta: 1e-9}), latest)
			if i%97 != 0 {
				continue
			}
			if want := max(0, (len(acct.recent)-1)/spanBlockLen); len(acct.blocks) != want {
				t.Fatalf("trial %d: %d blocks over %d spans, want %d", trial, len(acct.blocks), len(acct.recent), want)
			}
			for k, b := range acct.blocks {
				var want spanBlock
				for j, c := range acct.recent[k*spanBlockLen : (k+1)*spanBlockLen] {
					want.sum = want.sum.Add(c.cost)
					if j == 0 || c.at.Before(want.earliest) {
						want.earliest = c.at
					}
					want.latest = later(want.latest, c.at)
				}
				if b != want {
					t.Fatalf("trial %d: block %d is %+v, its spans sum to %+v", trial, k, b, want)
				}
			}
			for range 8 {
				w := Window{Rolling: time.Duration(1 + rng.Int64N(int64(MaxWindow)))}
				start := w.Start(latest)
				m := &windowMemo{window: w}
				got, want := m.spent(acct.recent, acct.blocks, start), fullSpent(acct.recent, start)
				if !nearCost(got, want) {
					t.Fatalf("trial %d, %v at %v: %v, a full pass %v", trial, w, latest, got, want)
				}
				if again := acct.windowSpent(w, latest); !nearCost(again, want) {
					t.Fatalf("trial %d, %v at %v, the account's memo: %v, a full pass %v", trial, w, latest, again, want)
				}
			}
		}
		if len(acct.blocks) < 4 {
			t.Fatalf("trial %d: only %d blocks: the test did not reach them", trial, len(acct.blocks))
		}
	}
}

// A charge and the window check of an analyst charged every 2 s under a
// 7-day rolling window, full (302,400 spans): the window starts over at
// each charge.
func BenchmarkWindowSpentRollingSlow(b *testing.B) {
	acct := &account{}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	w := Window{Rolling: 7 * 24 * time.Hour}
	for range 302_400 {
		acct.remember(chargeAt(now, Cost{Epsilon: 0.01}), now)
		now = now.Add(2 * time.Second)
	}
	acct.windowSpent(w, now)
	for b.Loop() {
		acct.remember(chargeAt(now, Cost{Epsilon: 0.01}), now)
		if acct.windowSpent(w, now).Epsilon <= 0 {
			b.Fatal("nothing spent")
		}
		now = now.Add(2 * time.Second)
	}
}
