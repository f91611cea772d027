package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

var ctx = context.Background()

func TestLimitsRespectedExactly(t *testing.T) {
	a := newTestAccountant(t, newMemStore(), map[string]Cost{"alice": {Epsilon: 10}})
	// 100 × 0.1 sums to 9.99999999999998 or so; all must fit, the 101st not.
	for i := 0; i < 100; i++ {
		r := mustReserve(t, a, "alice", Cost{Epsilon: 0.1})
		if _, err := r.Commit(ctx, fmt.Sprintf("q%d", i)); err != nil {
			t.Fatalf("Commit %d: %v", i, err)
		}
	}
	_, err := a.Reserve(context.Background(), "alice", Cost{Epsilon: 0.1})
	var ex *ExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("101st Reserve: got %v, want *ExhaustedError", err)
	}
	// Even a much smaller request must fail: the tolerance is relative to
	// the limit (1e-8 here), not a free allowance per query.
	if _, err := a.Reserve(context.Background(), "alice", Cost{Epsilon: 1e-6}); !errors.As(err, &ex) {
		t.Fatalf("Reserve(1e-6) at full spend: got %v, want *ExhaustedError", err)
	}
	st := mustStatus(t, a, "alice")
	if !approx(st.Spent.Epsilon, 10) || st.Remaining.Epsilon != 0 || !st.Reserved.IsZero() {
		t.Fatalf("Status = %+v, want spent 10, remaining 0, reserved 0", st)
	}
	// A zero-cost reservation still fits at full spend.
	r := mustReserve(t, a, "alice", Cost{})
	r.Release()
}

func TestLimitsEpsilonAndDeltaSeparately(t *testing.T) {
	a := newTestAccountant(t, newMemStore(), map[string]Cost{"bob": {Epsilon: 100, Delta: 1e-5}})
	for i := 0; i < 10; i++ {
		r := mustReserve(t, a, "bob", Cost{Epsilon: 1, Delta: 1e-6})
		if _, err := r.Commit(ctx, "q"); err != nil {
			t.Fatal(err)
		}
	}
	// ε has room (10 of 100) but δ is exhausted.
	var ex *ExhaustedError
	if _, err := a.Reserve(context.Background(), "bob", Cost{Epsilon: 1, Delta: 1e-6}); !errors.As(err, &ex) {
		t.Fatalf("δ-exhausted Reserve: got %v, want *ExhaustedError", err)
	}
	// Pure-ε queries still fit.
	r := mustReserve(t, a, "bob", Cost{Epsilon: 90})
	if _, err := r.Commit(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reserve(context.Background(), "bob", Cost{Epsilon: 0.5}); !errors.As(err, &ex) {
		t.Fatalf("ε-exhausted Reserve: got %v, want *ExhaustedError", err)
	}

	// Pure-ε analyst (δ limit 0) cannot spend any δ.
	a.SetLimit("carol", Cost{Epsilon: 1})
	if _, err := a.Reserve(context.Background(), "carol", Cost{Epsilon: 0.1, Delta: 1e-12}); !errors.As(err, &ex) {
		t.Fatalf("δ > 0 with δ limit 0: got %v, want *ExhaustedError", err)
	}
}

func TestReservationAccounting(t *testing.T) {
	store := newMemStore()
	a := newTestAccountant(t, store, map[string]Cost{"alice": {Epsilon: 10, Delta: 1e-5}})

	r1 := mustReserve(t, a, "alice", Cost{Epsilon: 3, Delta: 1e-6})
	st := mustStatus(t, a, "alice")
	if !approxCost(st.Reserved, Cost{3, 1e-6}) || !st.Spent.IsZero() || !approxCost(st.Remaining, Cost{7, 9e-6}) {
		t.Fatalf("after Reserve(3): %+v", st)
	}
	r2 := mustReserve(t, a, "alice", Cost{Epsilon: 7})
	// Reserved budget counts against the limit.
	_, err := a.Reserve(context.Background(), "alice", Cost{Epsilon: 0.001})
	var ex *ExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("Reserve with everything reserved: got %v, want *ExhaustedError", err)
	}
	if !approx(ex.Reserved.Epsilon, 10) || !ex.Spent.IsZero() {
		t.Fatalf("ExhaustedError = %+v, want reserved 10, spent 0", ex)
	}

	r1.Release()
	r1.Release() // idempotent
	st = mustStatus(t, a, "alice")
	if !approxCost(st.Reserved, Cost{Epsilon: 7}) || !approxCost(st.Remaining, Cost{3, 1e-5}) {
		t.Fatalf("after Release: %+v", st)
	}
	ch, err := r2.Commit(ctx, "SELECT count(*) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if ch.ID == 0 || ch.Analyst != "alice" || ch.Cost != (Cost{Epsilon: 7}) || ch.Query != "SELECT count(*) FROM t" || ch.At.IsZero() {
		t.Fatalf("Charge = %+v", ch)
	}
	st = mustStatus(t, a, "alice")
	if !approxCost(st.Spent, Cost{Epsilon: 7}) || !st.Reserved.IsZero() || !approxCost(st.Remaining, Cost{3, 1e-5}) {
		t.Fatalf("after Commit: %+v", st)
	}
	r3 := mustReserve(t, a, "alice", Cost{Epsilon: 3})
	r3.Release()
	if store.count() != 1 {
		t.Fatalf("store has %d charges, want 1", store.count())
	}
	if r3.Analyst() != "alice" || r3.Cost() != (Cost{Epsilon: 3}) {
		t.Fatalf("reservation accessors: %q %v", r3.Analyst(), r3.Cost())
	}
}

func TestCommitIdempotenceAndMisuse(t *testing.T) {
	store := newMemStore()
	a := newTestAccountant(t, store, map[string]Cost{"alice": {Epsilon: 10}})

	r := mustReserve(t, a, "alice", Cost{Epsilon: 1})
	ch1, err := r.Commit(ctx, "q1")
	if err != nil {
		t.Fatal(err)
	}
	ch2, err := r.Commit(ctx, "q1")
	if err != nil || !reflect.DeepEqual(ch2, ch1) {
		t.Fatalf("second Commit: %+v, %v; want %+v, nil", ch2, err, ch1)
	}
	if _, err := r.Commit(ctx, "another query"); !errors.Is(err, ErrAlreadyCommitted) {
		t.Fatalf("Commit with another query: got %v, want ErrAlreadyCommitted", err)
	}
	r.Release() // no-op after Commit
	st := mustStatus(t, a, "alice")
	if !approx(st.Spent.Epsilon, 1) || !st.Reserved.IsZero() || store.count() != 1 {
		t.Fatalf("after repeated Commit and Release: %+v, %d charges", st, store.count())
	}

	r = mustReserve(t, a, "alice", Cost{Epsilon: 1})
	r.Release()
	if _, err := r.Commit(ctx, "q"); !errors.Is(err, ErrReleased) {
		t.Fatalf("Commit after Release: got %v, want ErrReleased", err)
	}
	if store.count() != 1 {
		t.Fatalf("store has %d charges, want 1", store.count())
	}

	var nilRes *Reservation
	nilRes.Release()
	if _, err := nilRes.Commit(ctx, "q"); !errors.Is(err, ErrNoReservation) {
		t.Fatalf("nil Commit: got %v", err)
	}
	if _, err := (&Reservation{}).Commit(ctx, "q"); !errors.Is(err, ErrNoReservation) {
		t.Fatalf("zero Commit: got %v", err)
	}
}

func TestCommitInProgress(t *testing.T) {
	store := newMemStore()
	store.block = make(chan struct{})
	store.entered = make(chan struct{}, 1)
	a := newTestAccountant(t, store, map[string]Cost{"alice": {Epsilon: 10}})
	r := mustReserve(t, a, "alice", Cost{Epsilon: 4})

	done := make(chan error, 1)
	go func() {
		_, err := r.Commit(ctx, "q")
		done <- err
	}()
	<-store.entered
	if _, err := r.Commit(ctx, "q"); !errors.Is(err, ErrCommitInProgress) {
		t.Fatalf("concurrent Commit: got %v, want ErrCommitInProgress", err)
	}
	r.Release() // must not give back budget while the charge is being written
	if st := mustStatus(t, a, "alice"); !approx(st.Reserved.Epsilon, 4) {
		t.Fatalf("Release during Commit changed reserved: %+v", st)
	}
	close(store.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, a, "alice"); !approx(st.Spent.Epsilon, 4) || !st.Reserved.IsZero() {
		t.Fatalf("after Commit: %+v", st)
	}
}

func TestExhaustedErrorText(t *testing.T) {
	a := newTestAccountant(t, newMemStore(), map[string]Cost{"bob": {Epsilon: 10}})
	for i := 0; i < 99; i++ {
		r := mustReserve(t, a, "bob", Cost{Epsilon: 0.1})
		if _, err := r.Commit(ctx, "q"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := a.Reserve(context.Background(), "bob", Cost{Epsilon: 0.5})
	want := `privacy budget exhausted for analyst "bob": spent ε=9.9 of 10, this query costs ε=0.5`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}

	// With reservations in flight and δ.
	a.SetLimit("dora", Cost{Epsilon: 2, Delta: 1e-5})
	r := mustReserve(t, a, "dora", Cost{Epsilon: 1, Delta: 1e-6})
	defer r.Release()
	_, err = a.Reserve(context.Background(), "dora", Cost{Epsilon: 1.5, Delta: 1e-6})
	var ex *ExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("got %v, want *ExhaustedError", err)
	}
	msg := err.Error()
	for _, s := range []string{`"dora"`, "spent ε=0, δ=0", "of ε=2, δ=1e-05", "ε=1, δ=1e-06 held by queries in progress", "this query costs ε=1.5, δ=1e-06"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not contain %q", msg, s)
		}
	}
	if ex.Analyst != "dora" || ex.Limit != (Cost{2, 1e-5}) || ex.Requested != (Cost{1.5, 1e-6}) || ex.Reserved != (Cost{1, 1e-6}) {
		t.Errorf("ExhaustedError fields = %+v", ex)
	}
}

func TestUnknownAnalystAndInvalidCost(t *testing.T) {
	a := newTestAccountant(t, newMemStore(), map[string]Cost{"alice": {Epsilon: 1}})
	if _, err := a.Reserve(context.Background(), "mallory", Cost{Epsilon: 0.1}); !errors.Is(err, ErrUnknownAnalyst) {
		t.Fatalf("unknown analyst: got %v", err)
	}
	if _, ok := a.Status("mallory"); ok {
		t.Fatal("Status of unknown analyst: ok")
	}
	for _, c := range []Cost{
		{Epsilon: -0.1}, {Epsilon: 0.1, Delta: -1e-9}, {Epsilon: math.NaN()},
		{Epsilon: math.Inf(1)}, {Epsilon: 0.1, Delta: math.NaN()},
	} {
		if _, err := a.Reserve(context.Background(), "alice", c); !errors.Is(err, ErrInvalidCost) {
			t.Errorf("Reserve(%v): got %v, want ErrInvalidCost", c, err)
		}
	}
	if _, err := NewAccountant(ctx, newMemStore(), map[string]Cost{"x": {Epsilon: -1}}); !errors.Is(err, ErrInvalidCost) {
		t.Errorf("NewAccountant with negative limit: got %v", err)
	}
	if _, err := NewAccountant(ctx, nil, nil); err == nil {
		t.Error("NewAccountant(nil store): no error")
	}
	// An invalid limit set at runtime means nothing can be spent.
	a.SetLimit("alice", Cost{Epsilon: math.NaN()})
	var ex *ExhaustedError
	if _, err := a.Reserve(context.Background(), "alice", Cost{Epsilon: 0.1}); !errors.As(err, &ex) {
		t.Errorf("Reserve after NaN limit: got %v, want *ExhaustedError", err)
	}
}

func TestLimitsChangeAndLoadedSpending(t *testing.T) {
	store := newMemStore()
	for _, c := range []Charge{
		{Analyst: "alice", Cost: Cost{Epsilon: 2}},
		{Analyst: "alice", Cost: Cost{Epsilon: 1, Delta: 1e-6}},
		{Analyst: "eve", Cost: Cost{Epsilon: 5}}, // not in the policy at startup
	} {
		if _, err := store.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	a := newTestAccountant(t, store, map[string]Cost{"alice": {Epsilon: 4, Delta: 1e-5}})
	st := mustStatus(t, a, "alice")
	if !approxCost(st.Spent, Cost{3, 1e-6}) || !approxCost(st.Remaining, Cost{1, 9e-6}) {
		t.Fatalf("loaded status: %+v", st)
	}
	if _, err := a.Reserve(context.Background(), "eve", Cost{Epsilon: 1}); !errors.Is(err, ErrUnknownAnalyst) {
		t.Fatalf("eve before SetLimit: %v", err)
	}
	a.SetLimit("eve", Cost{Epsilon: 5.5})
	var ex *ExhaustedError
	if _, err := a.Reserve(context.Background(), "eve", Cost{Epsilon: 1}); !errors.As(err, &ex) || !approx(ex.Spent.Epsilon, 5) {
		t.Fatalf("eve after SetLimit: %v (earlier spending must be kept)", err)
	}
	r := mustReserve(t, a, "eve", Cost{Epsilon: 0.5})

	// Lowering a limit below spending: nothing more fits, remaining is 0.
	a.SetLimit("alice", Cost{Epsilon: 2})
	if st := mustStatus(t, a, "alice"); st.Remaining.Epsilon != 0 {
		t.Fatalf("lowered limit: %+v", st)
	}
	if _, err := a.Reserve(context.Background(), "alice", Cost{Epsilon: 0.1}); !errors.As(err, &ex) {
		t.Fatalf("Reserve over lowered limit: %v", err)
	}

	// SetLimits replaces the whole set; eve's outstanding reservation can
	// still commit.
	if err := a.SetLimits(map[string]Cost{"alice": {Epsilon: 10}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reserve(context.Background(), "eve", Cost{}); !errors.Is(err, ErrUnknownAnalyst) {
		t.Fatalf("eve after removal: %v", err)
	}
	if _, err := r.Commit(ctx, "q"); err != nil {
		t.Fatalf("commit of removed analyst's reservation: %v", err)
	}
	if err := a.SetLimits(map[string]Cost{"alice": {Epsilon: math.Inf(1)}}); !errors.Is(err, ErrInvalidCost) {
		t.Fatalf("SetLimits with invalid limit: %v", err)
	}
	if st := mustStatus(t, a, "alice"); st.Limit.Epsilon != 10 {
		t.Fatalf("failed SetLimits changed limits: %+v", st)
	}
	cs, err := a.Charges(ctx, "alice", 0)
	if err != nil || len(cs) != 2 || cs[0].ID < cs[1].ID {
		t.Fatalf("Charges: %+v, %v", cs, err)
	}
}

func TestStoreFailureKeepsBudgetReserved(t *testing.T) {
	store := newMemStore()
	a := newTestAccountant(t, store, map[string]Cost{"alice": {Epsilon: 1}})
	store.setFail(errInjected)

	r := mustReserve(t, a, "alice", Cost{Epsilon: 0.6})
	_, err := r.Commit(ctx, "q")
	if !errors.Is(err, errInjected) {
		t.Fatalf("Commit with failing store: got %v, want wrapped errInjected", err)
	}
	r.Release() // fail closed: must not give the budget back
	st := mustStatus(t, a, "alice")
	if !approx(st.Reserved.Epsilon, 0.6) || !st.Spent.IsZero() || !approx(st.Remaining.Epsilon, 0.4) {
		t.Fatalf("after failed Commit + Release: %+v", st)
	}
	var ex *ExhaustedError
	if _, err := a.Reserve(context.Background(), "alice", Cost{Epsilon: 0.5}); !errors.As(err, &ex) {
		t.Fatalf("budget held by a failed commit was spendable: %v", err)
	}

	// A retry after the store recovers records the charge once.
	store.setFail(nil)
	ch, err := r.Commit(ctx, "q")
	if err != nil || ch.ID == 0 {
		t.Fatalf("retried Commit: %+v, %v", ch, err)
	}
	st = mustStatus(t, a, "alice")
	if !approx(st.Spent.Epsilon, 0.6) || !st.Reserved.IsZero() || store.count() != 1 {
		t.Fatalf("after retried Commit: %+v, %d charges", st, store.count())
	}
}

func TestCommitContextCanceledKeepsBudgetReserved(t *testing.T) {
	store := newMemStore()
	store.block = make(chan struct{}) // never unblocks
	a := newTestAccountant(t, store, map[string]Cost{"alice": {Epsilon: 1}})
	r := mustReserve(t, a, "alice", Cost{Epsilon: 1})
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := r.Commit(cctx, "q"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Commit: got %v, want DeadlineExceeded", err)
	}
	r.Release()
	if st := mustStatus(t, a, "alice"); !approx(st.Reserved.Epsilon, 1) {
		t.Fatalf("after canceled Commit: %+v", st)
	}
}
