package budget

import (
	"context"
	"errors"
	"math"
	"testing"
)

// Advanced composition with δ′ = 1e-6: charges of ε = 0.05 against a
// budget of (ε = 5, δ = 1e-5) add up to Σ ε(e^ε − 1) + √(2 ln(1/δ′) Σ ε²),
// so 268 of them fit where basic composition allows 100 (the 269th would
// spend 5.0002); the same holds after a restart, from the ledger; without
// room for δ′ in the δ budget only basic composition applies.
func TestAdvancedComposition(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	limits := map[string]Cost{"ana": {Epsilon: 5, Delta: 1e-5}, "bob": {Epsilon: 5}}
	a := newTestAccountant(t, store, limits)
	comp := Composition{DeltaPrime: 1e-6}
	for _, name := range []string{"ana", "bob"} {
		if err := a.SetComposition(name, comp); err != nil {
			t.Fatal(err)
		}
	}
	charge := Cost{Epsilon: 0.05}
	for i := 0; i < 268; i++ {
		if _, err := mustReserve(t, a, "ana", charge).Commit(ctx, "q"); err != nil {
			t.Fatal(err)
		}
	}
	var ex *ExhaustedError
	if _, err := a.Reserve(context.Background(), "ana", charge); !errors.As(err, &ex) {
		t.Fatalf("the 269th charge: %v", err)
	}
	st := mustStatus(t, a, "ana")
	want := 268*0.05*math.Expm1(0.05) + math.Sqrt(2*math.Log(1e6)*268*0.05*0.05)
	if !approx(st.Spent.Epsilon, want) || !approx(st.Spent.Delta, 1e-6) || st.Spent.Epsilon > 5 {
		t.Errorf("spent %v, want ε = %v and δ = δ′", st.Spent, want)
	}
	// A restart: the moments come from the ledger.
	b := newTestAccountant(t, store, limits)
	if err := b.SetComposition("ana", comp); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve(context.Background(), "ana", charge); !errors.As(err, &ex) {
		t.Errorf("after a restart the 269th charge: %v", err)
	}
	if st := mustStatus(t, b, "ana"); !approx(st.Spent.Epsilon, want) {
		t.Errorf("after a restart spent %v", st.Spent)
	}
	// bob has no δ to spend δ′ from: basic composition, 100 charges.
	for i := 0; i < 100; i++ {
		if _, err := mustReserve(t, a, "bob", charge).Commit(ctx, "q"); err != nil {
			t.Fatalf("bob's charge %d: %v", i+1, err)
		}
	}
	if _, err := a.Reserve(context.Background(), "bob", charge); !errors.As(err, &ex) {
		t.Errorf("bob's 101st charge: %v", err)
	}
	if err := a.SetComposition("ana", Composition{DeltaPrime: 1}); err == nil {
		t.Error("δ′ = 1 was accepted")
	}
}

// zCDP: the same charges (ε = 0.05, δ′ = 1e-6, budget ε = 5, δ = 1e-5)
// are each ε²/2-zCDP; ρ = Σ ε²/2 converts to ρ + 2√(ρ ln(1/δ′)), so 308 of
// them fit (the 309th would spend 5.006), more than advanced
// composition's 268.
func TestZCDPComposition(t *testing.T) {
	ctx := context.Background()
	a := newTestAccountant(t, newMemStore(), map[string]Cost{"ana": {Epsilon: 5, Delta: 1e-5}})
	if err := a.SetComposition("ana", Composition{DeltaPrime: 1e-6, ZCDP: true}); err != nil {
		t.Fatal(err)
	}
	charge := Cost{Epsilon: 0.05}
	for i := 0; i < 308; i++ {
		if _, err := mustReserve(t, a, "ana", charge).Commit(ctx, "q"); err != nil {
			t.Fatalf("charge %d: %v", i+1, err)
		}
	}
	var ex *ExhaustedError
	if _, err := a.Reserve(context.Background(), "ana", charge); !errors.As(err, &ex) {
		t.Fatalf("the 309th charge: %v", err)
	}
	rho := 308 * 0.05 * 0.05 / 2
	if st := mustStatus(t, a, "ana"); !approx(st.Spent.Epsilon, rho+2*math.Sqrt(rho*math.Log(1e6))) {
		t.Errorf("spent %v", st.Spent)
	}
}

// The accountants against the published bounds, evaluated by hand for
// 100 charges of ε = 0.1 with δ′ = 1e-5:
//
//   - advanced composition (Dwork and Roth 2014, Theorem 3.20):
//     √(2k ln(1/δ′))·ε + k·ε(e^ε − 1) = 4.79853 + 1.05171 = 5.85024;
//   - zCDP (Bun and Steinke 2016, Propositions 1.4 and 1.3): each charge
//     is ε²/2 = 0.005-zCDP, ρ = 0.5, and ρ + 2√(ρ ln(1/δ′)) = 5.29853;
//
// both far below basic composition's 10, with δ = δ′.
func TestCompositionPublishedBounds(t *testing.T) {
	var used Cost
	var m moments
	for i := 0; i < 100; i++ {
		used = used.Add(Cost{Epsilon: 0.1})
		m = m.add(momentsOf(Cost{Epsilon: 0.1}))
	}
	limit := Cost{Epsilon: 10, Delta: 1e-4}
	for _, tc := range []struct {
		comp Composition
		want float64
	}{
		{Composition{DeltaPrime: 1e-5}, 5.850235},
		{Composition{DeltaPrime: 1e-5, ZCDP: true}, 5.298526},
		{Composition{}, 10},
	} {
		got := tc.comp.effective(used, m, limit)
		if math.Abs(got.Epsilon-tc.want) > 1e-6 || got.Delta != tc.comp.DeltaPrime {
			t.Errorf("%+v: (ε, δ) = %v, want (%v, %v)", tc.comp, got, tc.want, tc.comp.DeltaPrime)
		}
	}
}
