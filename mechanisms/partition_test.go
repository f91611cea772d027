package mechanisms

import (
	"math"
	"testing"
)

func TestLaplaceThresholdValue(t *testing.T) {
	cases := []struct {
		eps, delta float64
		l0         int
		want       float64
	}{
		// L0 = 1: δ' = 1e-5, τ = 1 + (1/1)·ln(1/(2·1e-5)) = 1 + ln(50000)
		//   = 1 + 10.819778284410283 = 11.819778284410283.
		{1, 1e-5, 1, 11.819778284410283},
		// L0 = 2: δ' = 5e-6, τ = 1 + (2/1)·ln(1/(1e-5)) = 1 + 2·11.512925464970229
		//   = 24.025850929940458.
		{1, 1e-5, 2, 24.025850929940458},
		// ε = 0.5, δ = 0.1, L0 = 1: τ = 1 + 2·ln(5) = 1 + 2·1.6094379124341003
		//   = 4.218875824868201.
		{0.5, 0.1, 1, 4.218875824868201},
	}
	for _, c := range cases {
		s, err := newLaplaceThreshold(c.eps, c.delta, c.l0)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(s.FormulaThreshold()-c.want) > 1e-12 {
			t.Errorf("%+v: formula τ = %.15g, want %.15g", c, s.FormulaThreshold(), c.want)
		}
		// The threshold actually used is calibrated on the noise grid: never
		// below the formula and within 1e-9 relative of it.
		tau := s.Threshold()
		if tau < c.want || tau > c.want*(1+1e-9) {
			t.Errorf("%+v: Threshold() = %.15g, want %.15g (+1e-9 rel)", c, tau, c.want)
		}
		// Exact release probability for n = 1 is ≤ δ' = δ/L0.
		g := s.lap.Granularity()
		q := math.Exp(-s.lap.floatLambda)
		j := math.Floor((tau-1)/g) + 1
		if p := math.Exp(-s.lap.floatLambda*j) / (1 + q); p > c.delta/float64(c.l0) {
			t.Errorf("%+v: P(release | n=1) = %v > δ' = %v", c, p, c.delta/float64(c.l0))
		}
	}
}

func TestOptimalSelectionValues(t *testing.T) {
	// ε = ln 2, δ = 0.1, L0 = 1 (so e^ε' = 2, e^-ε' = 1/2, δ' = 0.1):
	//   π(1) = min(2·0 + 0.1,   1 - (1 - 0 - 0.1)/2   = 0.55, 1) = 0.1
	//   π(2) = min(2·0.1 + 0.1, 1 - (1 - 0.1 - 0.1)/2 = 0.6 , 1) = 0.3
	//   π(3) = min(2·0.3 + 0.1, 1 - (1 - 0.3 - 0.1)/2 = 0.7 , 1) = 0.7
	//   π(4) = min(2·0.7 + 0.1, 1 - (1 - 0.7 - 0.1)/2 = 0.9 , 1) = 0.9
	//   π(5) = min(1.9,         1 - (1 - 0.9 - 0.1)/2 = 1   , 1) = 1
	s, err := newOptimalSelection(math.Ln2, 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 0.1, 0.3, 0.7, 0.9, 1, 1, 1}
	for n, w := range want {
		got := s.Probability(int64(n))
		if got > w || got < w-1e-12 {
			t.Errorf("π(%d) = %.17g, want %v (from below, within 1e-12)", n, got, w)
		}
	}
	if s.Threshold() != 3 {
		t.Errorf("Threshold() = %v, want 3 (π(3) = 0.7 is the first ≥ 1/2)", s.Threshold())
	}
	if s.AlwaysKeepThreshold() > 6 {
		t.Errorf("AlwaysKeepThreshold() = %d", s.AlwaysKeepThreshold())
	}
	// L0 = 2 halves ε and δ: ε' = ln2/2, δ' = 0.05: π(1) = 0.05,
	// π(2) = √2·0.05 + 0.05 = 0.12071067811865475.
	s2, err := newOptimalSelection(math.Ln2, 0.1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p := s2.Probability(1); p > 0.05 || p < 0.05-1e-15 {
		t.Errorf("L0=2: π(1) = %v", p)
	}
	if p := s2.Probability(2); p > 0.12071067811865475 || p < 0.12071067811865475-1e-15 {
		t.Errorf("L0=2: π(2) = %v", p)
	}
}

// TestOptimalSelectionConstraints checks the (ε', δ') constraints for the
// whole stored table, for a range of parameters including tiny δ'.
func TestOptimalSelectionConstraints(t *testing.T) {
	for _, c := range []struct {
		eps, delta float64
		l0         int
	}{{1, 1e-5, 1}, {0.1, 1e-10, 3}, {5, 1e-12, 10}, {1e-3, 1e-6, 1}, {20, 1e-300, 1}, {700, 0.5, 1}, {1000, 1e-9, 1}} {
		s, err := newOptimalSelection(c.eps, c.delta, c.l0)
		if err != nil {
			t.Fatal(err)
		}
		ep, dp := c.eps/float64(c.l0), c.delta/float64(c.l0)
		// piAndComp returns π(n) and 1-π(n), one of them exactly as stored
		// and the other to within 2^-53 relative (both are then ≥ 1/2).
		piAndComp := func(n int64) (float64, float64) {
			if n <= 0 {
				return 0, 1
			}
			if n >= int64(len(s.tab)) {
				return 1, 0
			}
			if e := s.tab[n]; e < 0 {
				return 1 + e, -e
			} else {
				return e, 1 - e
			}
		}
		for n := int64(1); n <= s.AlwaysKeepThreshold()+1; n++ {
			p0, c0 := piAndComp(n - 1)
			p1, c1 := piAndComp(n)
			// (A) keeping: π(n) ≤ e^ε'·π(n-1) + δ'.
			// (B) dropping: 1-π(n-1) ≤ e^ε'·(1-π(n)) + δ'.
			// Relative slack 1e-12 for the float evaluation of the check.
			if p1 > (math.Exp(ep)*p0+dp)*(1+1e-12) || c0 > (math.Exp(ep)*c1+dp)*(1+1e-12) {
				t.Fatalf("%+v: constraints violated at n=%d: π(n-1)=%v π(n)=%v", c, n, p0, p1)
			}
			if p1 < p0 {
				t.Fatalf("%+v: π decreasing at n=%d", c, n)
			}
		}
		if p, _ := piAndComp(s.AlwaysKeepThreshold()); p != 1 {
			t.Fatalf("%+v: π does not reach 1", c)
		}
		t.Logf("%+v: threshold %v, always kept from %d units", c, s.Threshold(), s.AlwaysKeepThreshold())
	}
}

// TestPartitionReleaseRates plants a single unit's group (n = 1) with a
// large test δ: the release rate must not exceed δ' = δ/L0 (beyond sampling
// error), and large groups are kept.
func TestPartitionReleaseRates(t *testing.T) {
	const runs = 40000
	for _, c := range []struct {
		eps, delta float64
		l0         int
	}{{1, 0.1, 1}, {0.5, 0.2, 2}, {2, 0.05, 1}} {
		lt, err := NewLaplaceThreshold(c.eps, c.delta, c.l0)
		if err != nil {
			t.Fatal(err)
		}
		opt, err := NewOptimalSelection(c.eps, c.delta, c.l0)
		if err != nil {
			t.Fatal(err)
		}
		dp := c.delta / float64(c.l0)
		for name, sel := range map[string]PartitionSelector{"laplace": lt, "optimal": opt} {
			r := Seeded(41)
			kept1, keptBig := 0, 0
			big := int64(math.Ceil(sel.Threshold()*3 + 40/c.eps*float64(c.l0)))
			for i := 0; i < runs; i++ {
				k, err := sel.Keep(r, 1)
				if err != nil {
					t.Fatal(err)
				}
				if k {
					kept1++
				}
				k, err = sel.Keep(r, big)
				if err != nil {
					t.Fatal(err)
				}
				if k {
					keptBig++
				}
			}
			rate := float64(kept1) / runs
			// One-sided upper bound: rate ≤ δ' + 4.4 standard errors.
			if ub := dp + zTol*math.Sqrt(dp*(1-dp)/runs); rate > ub {
				t.Errorf("%s %+v: release rate for n=1 is %v > %v (δ' = %v)", name, c, rate, ub, dp)
			}
			// Both rules spend (nearly) all of δ' at n = 1.
			if rate < dp-zTol*math.Sqrt(dp*(1-dp)/runs) {
				t.Errorf("%s %+v: release rate for n=1 is %v, expected ≈ δ' = %v", name, c, rate, dp)
			}
			if float64(keptBig)/runs < 0.999 {
				t.Errorf("%s %+v: release rate for n=%d is %v", name, c, big, float64(keptBig)/runs)
			}
			t.Logf("%s %+v: rate(n=1) = %.4f (δ' = %v), rate(n=%d) = %.4f", name, c, rate, dp, big, float64(keptBig)/runs)
		}
	}
}

func TestPartitionKeepEdgeCases(t *testing.T) {
	r := Seeded(42)
	for _, mk := range []func() (PartitionSelector, error){
		func() (PartitionSelector, error) { return NewLaplaceThreshold(1, 1e-5, 1) },
		func() (PartitionSelector, error) { return NewOptimalSelection(1, 1e-5, 1) },
	} {
		s, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			if k, err := s.Keep(r, 0); err != nil || k {
				t.Fatalf("Keep(0) = %v, %v", k, err)
			}
		}
		if _, err := s.Keep(r, -1); err == nil {
			t.Fatal("Keep(-1) accepted")
		}
	}
	if _, err := NewOptimalSelection(1e-6, 1e-10, 1000); err == nil {
		t.Error("NewOptimalSelection accepted a table of billions of entries")
	}
}
