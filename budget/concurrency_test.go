package budget

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentLastBudget races 64 goroutines for a budget that fits
// exactly K queries, through the real SQLite ledger: exactly K must win.
func TestConcurrentLastBudget(t *testing.T) {
	const (
		goroutines = 64
		k          = 10
	)
	store, _ := openTestStore(t)
	cost := Cost{Epsilon: 0.1, Delta: 1e-7}
	limits := map[string]Cost{}
	for round := 0; round < 5; round++ {
		limits[fmt.Sprint("analyst", round)] = Cost{Epsilon: k * 0.1, Delta: k * 1e-7}
	}
	a := newTestAccountant(t, store, limits)

	for round := 0; round < 5; round++ {
		analyst := fmt.Sprint("analyst", round)
		var won, exhausted atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r, err := a.Reserve(context.Background(), analyst, cost)
				var ex *ExhaustedError
				switch {
				case errors.As(err, &ex):
					exhausted.Add(1)
					return
				case err != nil:
					t.Errorf("Reserve: %v", err)
					return
				}
				defer r.Release()
				if _, err := r.Commit(ctx, "SELECT count(*) FROM patients"); err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
				won.Add(1)
			}()
		}
		close(start)
		wg.Wait()
		if won.Load() != k || exhausted.Load() != goroutines-k {
			t.Fatalf("round %d: %d committed, %d exhausted; want %d and %d", round, won.Load(), exhausted.Load(), k, goroutines-k)
		}
		st := mustStatus(t, a, analyst)
		if !fits(st.Spent, st.Limit) || !st.Reserved.IsZero() {
			t.Fatalf("round %d: overspent or leaked reservation: %+v", round, st)
		}
		cs, err := store.Charges(ctx, analyst, 0)
		if err != nil || len(cs) != k {
			t.Fatalf("round %d: ledger has %d charges (%v), want %d", round, len(cs), err, k)
		}
	}
}

// TestConcurrentChurn mixes commits and releases from many goroutines until
// the budget is spent: the number of commits must be exactly what fits, and
// spent + reserved must never exceed the limit at any observed moment.
func TestConcurrentChurn(t *testing.T) {
	const (
		goroutines = 64
		k          = 200
	)
	store := newMemStore()
	limit := Cost{Epsilon: k * 0.05}
	a := newTestAccountant(t, store, map[string]Cost{"alice": limit})
	var commits atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var monitorErr atomic.Value
	go func() { // watches the invariant while the workers run
		for {
			select {
			case <-stop:
				return
			default:
			}
			st := mustStatusNoT(a, "alice")
			if !fits(st.Spent.Add(st.Reserved), st.Limit) {
				monitorErr.Store(fmt.Sprintf("over limit: %+v", st))
			}
			runtime.Gosched()
		}
	}()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for {
				r, err := a.Reserve(context.Background(), "alice", Cost{Epsilon: 0.05})
				var ex *ExhaustedError
				if errors.As(err, &ex) {
					if ex.Reserved.IsZero() {
						return // exhausted by committed spending: final
					}
					runtime.Gosched() // others may still release
					continue
				}
				if err != nil {
					t.Errorf("Reserve: %v", err)
					return
				}
				if rng.IntN(2) == 0 {
					r.Release()
					continue
				}
				if _, err := r.Commit(ctx, "q"); err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
				commits.Add(1)
			}
		}(uint64(g))
	}
	wg.Wait()
	close(stop)
	if v := monitorErr.Load(); v != nil {
		t.Fatal(v)
	}
	if commits.Load() != k || store.count() != k {
		t.Fatalf("%d commits, %d charges; want %d", commits.Load(), store.count(), k)
	}
	st := mustStatusNoT(a, "alice")
	if !fits(st.Spent, limit) || !st.Reserved.IsZero() || st.Remaining.Epsilon != 0 {
		t.Fatalf("final status %+v", st)
	}
}

func mustStatusNoT(a *Accountant, analyst string) Status {
	st, ok := a.Status(analyst)
	if !ok {
		panic("no status for " + analyst)
	}
	return st
}
