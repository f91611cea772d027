package netserver

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSlack(t *testing.T) {
	for _, c := range []struct{ timeout, want time.Duration }{
		{time.Hour, time.Second},
		{time.Minute, time.Second},
		{8 * time.Second, 500 * time.Millisecond},
		{300 * time.Millisecond, 18750 * time.Microsecond},
		{0, 0},
	} {
		if got := Slack(c.timeout); got != c.want {
			t.Errorf("Slack(%v) = %v, want %v", c.timeout, got, c.want)
		}
	}
}

// The socket's deadline moves only when the one in force is outside
// [want, want+slack], and never falls before want.
func TestDeadlineWithin(t *testing.T) {
	var sets []time.Time
	d := NewDeadline(func(at time.Time) error { sets = append(sets, at); return nil })
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	slack := time.Second
	steps := []struct {
		want    time.Time
		moves   bool
		atLeast time.Time
	}{
		{base, true, base}, // none in force
		{base.Add(300 * time.Millisecond), false, time.Time{}}, // within the slack
		{base.Add(time.Second), false, time.Time{}},            // at its edge
		{base.Add(1001 * time.Millisecond), true, base.Add(1001 * time.Millisecond)},
		{base.Add(-time.Minute), true, base.Add(-time.Minute)}, // much sooner: moved back
		{time.Time{}, true, time.Time{}},                       // cleared
		{time.Time{}, false, time.Time{}},                      // already clear
	}
	for i, s := range steps {
		n := len(sets)
		if err := d.Within(s.want, slack); err != nil {
			t.Fatal(err)
		}
		moved := len(sets) > n
		if moved != s.moves {
			t.Fatalf("step %d (want %v): moved %v, want %v", i, s.want, moved, s.moves)
		}
		if moved {
			at := sets[len(sets)-1]
			if s.want.IsZero() {
				if !at.IsZero() {
					t.Errorf("step %d: set %v, want it cleared", i, at)
				}
				continue
			}
			if at.Before(s.atLeast) || at.Sub(s.want) > slack {
				t.Errorf("step %d: set %v, want within [%v, %v]", i, at, s.want, s.want.Add(slack))
			}
		}
	}
	if err := d.Exactly(base); err != nil || !sets[len(sets)-1].Equal(base) {
		t.Errorf("Exactly: %v, last set %v", err, sets[len(sets)-1])
	}
}

// A statement that outlives its time is ended with ErrStatementTimeout as
// the cause; one that ends in time is not; back-to-back statements each
// get their whole time though the timer was armed for the first.
func TestStatementTimer(t *testing.T) {
	var st StatementTimer
	defer st.Close()
	const limit = 150 * time.Millisecond

	// Statements of 50 ms, one after another for 4 limits' time.
	for start := time.Now(); time.Since(start) < 4*limit; {
		ctx, cancel := context.WithCancelCause(context.Background())
		st.Start(time.Now().Add(limit), cancel)
		time.Sleep(50 * time.Millisecond)
		st.Stop()
		if err := context.Cause(ctx); err != nil {
			t.Fatalf("a statement of 50 ms against a limit of %v was ended: %v", limit, err)
		}
		cancel(nil)
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	start := time.Now()
	st.Start(start.Add(limit), cancel)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a statement past its limit was not ended")
	}
	if took := time.Since(start); took < limit {
		t.Errorf("ended after %v, before its limit of %v", took, limit)
	}
	if !errors.Is(context.Cause(ctx), ErrStatementTimeout) {
		t.Errorf("cause %v, want ErrStatementTimeout", context.Cause(ctx))
	}
	st.Stop()

	// Nothing running: a firing ends nothing, and the timer is disarmed
	// until the next Start.
	time.Sleep(2 * limit)
	st.mu.Lock()
	armed := !st.firesAt.IsZero()
	st.mu.Unlock()
	if armed {
		t.Error("the timer is still armed with no statement running")
	}
}

// A statement whose limit comes before the armed firing re-arms the timer
// (a shorter timeout than the one before).
func TestStatementTimerShorterLimit(t *testing.T) {
	var st StatementTimer
	defer st.Close()
	_, cancelLong := context.WithCancelCause(context.Background())
	st.Start(time.Now().Add(time.Hour), cancelLong)
	st.Stop()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	st.Start(time.Now().Add(50*time.Millisecond), cancel)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the shorter limit was not kept")
	}
}
