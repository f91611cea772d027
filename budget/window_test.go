package budget

import (
	"context"
	"errors"
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
