package mechanisms

import (
	"math"
	"testing"
)

// discreteMoments returns the variance and fourth moment of a symmetric
// integer distribution given by pmf (summed over |k| ≤ limit).
func discreteMoments(pmf func(int64) float64, limit int64) (m2, m4 float64) {
	total := 0.0
	for k := -limit; k <= limit; k++ {
		p := pmf(k)
		f := float64(k)
		total += p
		m2 += p * f * f
		m4 += p * f * f * f * f
	}
	return m2 / total, m4 / total
}

func TestLaplaceIntMomentsAndChiSquare(t *testing.T) {
	cases := []struct {
		eps, sens float64
		x         int64
	}{
		{0.5, 1, 100}, // b = 2
		{1, 1, -5},    // b = 1
		{0.1, 2, 0},   // b = 20
	}
	for _, c := range cases {
		m, err := NewLaplace(c.eps, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		r := Seeded(11)
		const n = 200000
		samples := make([]int64, n)
		xs := make([]float64, n)
		for i := range samples {
			y, err := m.AddNoiseInt(r, c.x)
			if err != nil {
				t.Fatal(err)
			}
			samples[i] = y - c.x
			xs[i] = float64(y)
		}
		lambda := c.eps / c.sens
		pmf := func(k int64) float64 { return twoSidedGeomPMF(lambda, k) }
		m2, m4 := discreteMoments(pmf, 100000)
		mean, variance := moments(xs)
		checkMean(t, "LaplaceInt", mean, float64(c.x), m2, n)
		checkVariance(t, "LaplaceInt vs exact discrete variance", variance, m2, m4, n)
		// The discrete variance is 1/(2·sinh²(λ/2)) = 2b²·(1 - λ²/12 + …),
		// so against the continuous 2b² allow λ²/12 plus 3%.
		if exact := 1 / (2 * math.Pow(math.Sinh(lambda/2), 2)); math.Abs(exact/m2-1) > 1e-9 {
			t.Errorf("discrete variance formula %v vs summed %v", exact, m2)
		}
		b := m.Scale()
		if math.Abs(variance/(2*b*b)-1) > lambda*lambda/12+0.03 {
			t.Errorf("LaplaceInt variance %v vs 2b² = %v", variance, 2*b*b)
		}
		// χ² goodness of fit against the exact two-sided geometric pmf,
		// bins where the expected count is ≥ 5 (tails merged).
		hi := int64(0)
		for float64(n)*pmf(hi+1) >= 20 {
			hi++
		}
		obs, probs := binIntegers(samples, -hi, hi, pmf, 200000)
		chiSquareTest(t, "LaplaceInt pmf", obs, probs)
	}
}

func TestLaplaceFloatMomentsGridAndFit(t *testing.T) {
	m, err := NewLaplace(1, 3) // b = 3
	if err != nil {
		t.Fatal(err)
	}
	g := m.Granularity()
	if g != math.Ldexp(1, -38) { // 3/2^40 = 2^-38.4 → 2^⌈-38.4⌉
		t.Fatalf("granularity %v, want 2^-38", g)
	}
	r := Seeded(12)
	const n = 200000
	x := 10.3
	xr := math.Round(x/g) * g
	xs := make([]float64, n)
	obs := make([]int64, 20)
	for i := range xs {
		y, err := m.AddNoiseFloat(r, x)
		if err != nil {
			t.Fatal(err)
		}
		if q := y / g; q != math.Trunc(q) {
			t.Fatalf("output %v is not a multiple of g = %v", y, g)
		}
		xs[i] = y
		// Bin (y - xr)/b by the continuous Laplace CDF into 20 equal bins.
		u := (y - xr) / m.Scale()
		var F float64
		if u < 0 {
			F = 0.5 * math.Exp(u)
		} else {
			F = 1 - 0.5*math.Exp(-u)
		}
		bi := int(F * 20)
		if bi > 19 {
			bi = 19
		}
		obs[bi]++
	}
	b := m.Scale()
	mean, variance := moments(xs)
	checkMean(t, "LaplaceFloat", mean, x, 2*b*b, n)
	checkVariance(t, "LaplaceFloat", variance, 2*b*b, 24*b*b*b*b, n)
	probs := make([]float64, 20)
	for i := range probs {
		probs[i] = 0.05
	}
	chiSquareTest(t, "LaplaceFloat vs Laplace CDF", obs, probs)
}

func TestLaplaceFloatOutputsOnGrid(t *testing.T) {
	r := Seeded(13)
	for _, c := range []struct{ eps, sens float64 }{{1, 1}, {0.01, 1000}, {5, 1e-6}, {1e-6, 1e9}, {1000, 0.5}} {
		m, err := NewLaplace(c.eps, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		g := m.Granularity()
		if want := math.Ldexp(1, ceilPow2Exp(m.Scale()/math.Ldexp(1, 40))); g != want {
			t.Fatalf("eps=%v sens=%v: granularity %v, want %v", c.eps, c.sens, g, want)
		}
		for _, x := range []float64{0, 0.123456789, -7.77, 1e6 + 0.3, 1e20, -1e-300, math.Pi * 1e12} {
			for i := 0; i < 50; i++ {
				y, err := m.AddNoiseFloat(r, x)
				if err != nil {
					t.Fatal(err)
				}
				if q := y / g; q != math.Trunc(q) || math.IsInf(q, 0) {
					t.Fatalf("eps=%v sens=%v x=%v: output %v not a multiple of g=%v", c.eps, c.sens, x, y, g)
				}
			}
		}
	}
}

func TestLaplaceAccessors(t *testing.T) {
	m, err := NewLaplace(0.5, 2)
	if err != nil {
		t.Fatal(err)
	}
	if m.Scale() != 4 || m.Epsilon() != 0.5 || m.Sensitivity() != 2 {
		t.Fatalf("accessors: scale %v eps %v sens %v", m.Scale(), m.Epsilon(), m.Sensitivity())
	}
}

func TestLaplaceErrorBound(t *testing.T) {
	for _, c := range []struct{ eps, sens float64 }{{0.5, 1}, {1, 3}, {0.1, 1}} {
		m, err := NewLaplace(c.eps, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		const conf = 0.95
		w := m.ErrorBound(conf)
		// Continuous Laplace: w ≈ b·ln(1/(1-c)) ≈ 3b; discrete adds ≤ 1.
		b := m.Scale()
		if w < b*math.Log(1/(1-conf))*0.999 || w > b*math.Log(1/(1-conf))+1.01 {
			t.Errorf("ErrorBound(%v) = %v, continuous value %v", conf, w, b*math.Log(1/(1-conf)))
		}
		// Exact coverage of the integer noise, and minimality (w is an
		// integer for the integer path when it dominates).
		lambda := c.eps / c.sens
		cover := 0.0
		for k := -int64(w); k <= int64(w); k++ {
			cover += twoSidedGeomPMF(lambda, k)
		}
		if cover < conf {
			t.Errorf("ErrorBound(%v) = %v covers only %v of the integer noise", conf, w, cover)
		}
		// Empirical coverage of both paths.
		r := Seeded(14)
		const n = 50000
		inInt, inFloat := 0, 0
		for i := 0; i < n; i++ {
			y, err := m.AddNoiseInt(r, 0)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(float64(y)) <= w {
				inInt++
			}
			f, err := m.AddNoiseFloat(r, 0.3)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(f-0.3) <= w {
				inFloat++
			}
		}
		for _, k := range []int{inInt, inFloat} {
			if rate := float64(k) / n; rate < conf-zTol*math.Sqrt(conf*(1-conf)/n) {
				t.Errorf("empirical coverage %v < %v", rate, conf)
			}
		}
	}
	m, _ := NewLaplace(1, 1)
	if m.ErrorBound(0) != 0 || !math.IsInf(m.ErrorBound(1), 1) || !math.IsNaN(m.ErrorBound(math.NaN())) {
		t.Error("ErrorBound edge cases")
	}
}

func TestLaplaceIntOverflowIsError(t *testing.T) {
	m, err := NewLaplace(1e-6, 1e3) // b = 1e9
	if err != nil {
		t.Fatal(err)
	}
	r := Seeded(15)
	sawErr := false
	for i := 0; i < 100 && !sawErr; i++ {
		if _, err := m.AddNoiseInt(r, math.MaxInt64-10); err != nil {
			sawErr = true
		}
	}
	if !sawErr {
		t.Error("no overflow error near MaxInt64")
	}
	// A scale beyond 2^48 is rejected for integers but fine for floats.
	m, err = NewLaplace(1e-6, 1e9) // b = 1e15 > 2^48
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddNoiseInt(r, 0); err == nil {
		t.Error("AddNoiseInt accepted scale 1e15")
	}
	if _, err := m.AddNoiseFloat(r, 0); err != nil {
		t.Errorf("AddNoiseFloat with scale 1e15: %v", err)
	}
}

// IntThreshold keeps a count of maxAlone above τ with probability at
// most δ, and is tight: one step lower would exceed δ.
func TestIntThreshold(t *testing.T) {
	for _, c := range []struct {
		eps, sens float64
		alone     int64
		delta     float64
	}{{1, 1, 1, 1e-6}, {0.5, 6, 3, 1e-5}, {2, 2, 2, 1e-3}} {
		lap, err := NewLaplace(c.eps, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		tau, err := lap.IntThreshold(c.alone, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		j := tau - float64(c.alone) + 0.5 // released iff noise ≥ j
		if p := lap.IntTailProbability(j); p > c.delta {
			t.Errorf("%+v: τ = %v releases a lone group with probability %g > δ", c, tau, p)
		}
		if p := lap.IntTailProbability(j - 2); p <= c.delta {
			t.Errorf("%+v: τ = %v is not tight: two steps lower still gives %g ≤ δ", c, tau, p)
		}
		// The sampled noise agrees with the tail probability.
		r := Seeded(uint64(c.alone))
		const n = 200000
		hits := 0
		jj := int64(math.Ceil(j / 4)) // a likelier event to count
		for i := 0; i < n; i++ {
			k, err := lap.AddNoiseInt(r, 0)
			if err != nil {
				t.Fatal(err)
			}
			if k >= jj {
				hits++
			}
		}
		checkProportion(t, "discrete Laplace tail", hits, n, lap.IntTailProbability(float64(jj)))
	}
	if _, err := (&Laplace{intErr: errInvalidForTest}).IntThreshold(1, 0.1); err == nil {
		t.Error("IntThreshold on an unusable integer path succeeded")
	}
}

var errInvalidForTest = invalid("test")
