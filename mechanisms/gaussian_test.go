package mechanisms

import (
	"math"
	"testing"
)

func TestGaussianDeltaTestVector(t *testing.T) {
	// Balle & Wang 2018 / reference §3: δ(σ=10, Δ=5, ε=ln 3) ≈ 0.004159742234.
	got := GaussianDelta(10, 5, math.Log(3))
	if math.Abs(got-0.004159742234) > 1e-12 {
		t.Fatalf("GaussianDelta(10, 5, ln 3) = %.15g, want 0.004159742234", got)
	}
	// Inverse direction: the analytic σ for that δ is 10.
	sigma, err := AnalyticGaussianSigma(math.Log(3), 0.004159742234, 5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(sigma/10-1) > 1e-9 {
		t.Fatalf("AnalyticGaussianSigma(ln 3, 0.004159742234, 5) = %.15g, want 10", sigma)
	}
	if d := GaussianDelta(sigma, 5, math.Log(3)); d > 0.004159742234 {
		t.Fatalf("δ(σ) = %v exceeds target", d)
	}
}

func TestGaussianDeltaProperties(t *testing.T) {
	// Decreasing in σ, finite and in [0, 1] even for extreme parameters.
	for _, eps := range []float64{1e-6, 0.01, 1, 10, 1000} {
		prev := 2.0
		for _, s := range []float64{1e-3, 0.1, 0.5, 1, 2, 10, 100, 1e4} {
			d := GaussianDelta(s, 1, eps)
			if math.IsNaN(d) || d < 0 || d > 1 {
				t.Fatalf("GaussianDelta(%v, 1, %v) = %v", s, eps, d)
			}
			if d > prev {
				t.Fatalf("GaussianDelta not decreasing in σ at eps=%v σ=%v", eps, s)
			}
			prev = d
		}
	}
	if !math.IsNaN(GaussianDelta(0, 1, 1)) || !math.IsNaN(GaussianDelta(1, -1, 1)) || !math.IsNaN(GaussianDelta(1, 1, math.NaN())) {
		t.Error("GaussianDelta accepted invalid arguments")
	}
}

func TestAnalyticSigmaVsClassic(t *testing.T) {
	for _, eps := range []float64{1e-3, 0.01, 0.1, 0.5, 0.9, 0.999} {
		for _, delta := range []float64{1e-3, 1e-5, 1e-10, 1e-20} {
			for _, l2 := range []float64{1, 3.5} {
				a, err := AnalyticGaussianSigma(eps, delta, l2)
				if err != nil {
					t.Fatal(err)
				}
				c, err := ClassicGaussianSigma(eps, delta, l2)
				if err != nil {
					t.Fatal(err)
				}
				if a > c {
					t.Errorf("eps=%v delta=%v: analytic σ %v > classic σ %v", eps, delta, a, c)
				}
				// The analytic σ satisfies the exact condition and is tight.
				if d := GaussianDelta(a, l2, eps); d > delta {
					t.Errorf("eps=%v delta=%v: δ(analytic σ) = %v > δ", eps, delta, d)
				}
				if d := GaussianDelta(a*(1-1e-9), l2, eps); d <= delta {
					t.Errorf("eps=%v delta=%v: analytic σ not tight", eps, delta)
				}
			}
		}
	}
	// Valid for ε ≥ 1 too; the classic formula refuses.
	for _, eps := range []float64{1, 2, 10, 1000} {
		a, err := AnalyticGaussianSigma(eps, 1e-6, 1)
		if err != nil || !(a > 0) || GaussianDelta(a, 1, eps) > 1e-6 {
			t.Errorf("AnalyticGaussianSigma(%v) = %v, %v", eps, a, err)
		}
		if _, err := ClassicGaussianSigma(eps, 1e-6, 1); err == nil {
			t.Errorf("ClassicGaussianSigma accepted eps = %v", eps)
		}
	}
	// Classic formula value: Δ·√(2 ln(1.25/δ))/ε = 1·√(2·ln(125000))/0.5.
	c, _ := ClassicGaussianSigma(0.5, 1e-5, 1)
	if want := math.Sqrt(2*math.Log(125000)) / 0.5; math.Abs(c-want) > 1e-12 {
		t.Errorf("ClassicGaussianSigma = %v, want %v", c, want)
	}
}

func TestDiscreteGaussianChiSquare(t *testing.T) {
	r := Seeded(21)
	for _, sigma := range []float64{0.4, 1, 1.5, 3.7, 12} {
		const n = 150000
		v := roundUpSquare(sigma)
		pmf := func(k int64) float64 { return math.Exp(-float64(k*k) / (2 * v)) }
		samples := make([]int64, n)
		for i := range samples {
			k, err := r.DiscreteGaussian(sigma)
			if err != nil {
				t.Fatal(err)
			}
			samples[i] = k
		}
		Z := 0.0
		for k := int64(-1000); k <= 1000; k++ {
			Z += pmf(k)
		}
		hi := int64(0)
		for float64(n)*pmf(hi+1)/Z >= 20 {
			hi++
		}
		if hi == 0 {
			hi = 1
		}
		obs, probs := binIntegers(samples, -hi, hi, pmf, 1000)
		chiSquareTest(t, "discrete Gaussian", obs, probs)
		m2, m4 := discreteMoments(func(k int64) float64 { return pmf(k) / Z }, 1000)
		xs := make([]float64, n)
		for i, s := range samples {
			xs[i] = float64(s)
		}
		mean, variance := moments(xs)
		checkMean(t, "discrete Gaussian", mean, 0, m2, n)
		checkVariance(t, "discrete Gaussian", variance, m2, m4, n)
	}
}

// TestDiscreteGaussianFastPathMatchesBig: the 128-bit and math/big
// computations of the acceptance exponent agree exactly.
func TestDiscreteGaussianFastPathMatchesBig(t *testing.T) {
	for _, sigma := range []float64{0x1p-10, 0.3, 1, 3.7306, 12.5, 1e3, 123456.789, 0x1.7p55, 0x1p56} {
		p, err := newDGaussPlan(sigma)
		if err != nil {
			t.Fatal(err)
		}
		for _, ay := range []uint64{0, 1, 2, 3, 17, 1000, 1 << 20, 1 << 40, 1<<62 - 1} {
			if !(p.fastE && ay < p.yFast) {
				continue
			}
			a, b := p.gamma(ay), p.gammaBig(ay)
			if a.whole != b.whole || a.num != b.num || a.den != b.den {
				t.Fatalf("sigma=%v y=%d: fast %+v, big %+v", sigma, ay, a, b)
			}
			if a.whole == math.MaxUint64 {
				continue // saturated: exp(-γ) < e^-(2^64) either way
			}
			// And γ ≈ (y - λv)²/(2v) in floating point.
			lam := math.Ldexp(1, -p.t)
			want := math.Pow(float64(ay)-lam*p.v, 2) / (2 * p.v)
			got := float64(a.whole) + a.num.float64()/a.den.float64()
			if math.Abs(got-want) > 1e-9*math.Max(1, want) {
				t.Fatalf("sigma=%v y=%d: γ = %v, want %v", sigma, ay, got, want)
			}
		}
	}
	// Forcing the big path gives the same samples from the same stream.
	p, _ := newDGaussPlan(2.5)
	q, _ := newDGaussPlan(2.5)
	q.fastE = false
	ra, rb := Seeded(5), Seeded(5)
	for i := 0; i < 2000; i++ {
		sa, _ := ra.lock()
		x, err1 := sa.discreteGaussian(p)
		ra.unlock()
		sb, _ := rb.lock()
		y, err2 := sb.discreteGaussian(q)
		rb.unlock()
		if err1 != nil || err2 != nil || x != y {
			t.Fatalf("fast/big paths diverge: %d vs %d (%v, %v)", x, y, err1, err2)
		}
	}
}

func TestDiscreteGaussianDeltaMatchesBruteForce(t *testing.T) {
	brute := func(v float64, s int64, eps float64) float64 {
		K := int64(60*math.Sqrt(v)) + s + 10
		Z, d := 0.0, 0.0
		for k := -K; k <= K; k++ {
			Z += math.Exp(-float64(k*k) / (2 * v))
		}
		for k := -K; k <= K; k++ {
			p := math.Exp(-float64(k*k)/(2*v)) / Z
			q := math.Exp(-float64((k-s)*(k-s))/(2*v)) / Z
			if x := p - math.Exp(eps)*q; x > 0 {
				d += x
			}
		}
		return d
	}
	for _, c := range []struct {
		sigma float64
		s     int64
		eps   float64
	}{{3.73, 1, 1}, {1.445, 1, 2}, {8, 1, 0.5}, {11.2, 3, 1}, {30, 1, 0.1}, {0.6, 1, 3}, {5, 2, 0.2}} {
		v := c.sigma * c.sigma
		got, ok := discreteGaussianDelta(v, c.s, c.eps, 1<<30)
		want := brute(v, c.s, c.eps)
		if !ok || math.Abs(got/want-1) > 1e-9 {
			t.Errorf("%+v: discreteGaussianDelta = %v, brute force %v", c, got, want)
		}
		// δ grows with the shift (the calibration relies on this).
		if c.s == 1 {
			d2, _ := discreteGaussianDelta(v, 2, c.eps, 1<<30)
			d3, _ := discreteGaussianDelta(v, 3, c.eps, 1<<30)
			if !(got <= d2 && d2 <= d3) {
				t.Errorf("%+v: δ not increasing in shift: %v %v %v", c, got, d2, d3)
			}
		}
	}
}

func TestGaussianIntCalibration(t *testing.T) {
	for _, c := range []struct{ eps, delta, l2 float64 }{
		{1, 1e-5, 1}, {2, 1e-3, 1}, {1, 1e-5, 3}, {0.1, 1e-8, 1}, {5, 1e-9, 1}, {1e-5, 1e-6, 1}, {0.3, 0.2, 2.5},
	} {
		m, err := NewGaussian(c.eps, c.delta, c.l2)
		if err != nil {
			t.Fatal(err)
		}
		si, err := m.SigmaInt()
		if err != nil {
			t.Fatal(err)
		}
		if si < m.Sigma() || si > m.Sigma()*1.05 {
			t.Errorf("%+v: σ_int %v vs σ %v", c, si, m.Sigma())
		}
		d, ok := discreteGaussianDelta(roundUpSquare(si), int64(math.Floor(c.l2)), c.eps, 1<<24)
		if ok && d > c.delta {
			t.Errorf("%+v: exact discrete δ %v > %v at σ_int %v", c, d, c.delta, si)
		}
		t.Logf("%+v: σ = %v, σ_int = %v (×%.6f), discrete δ/δ = %v", c, m.Sigma(), si, si/m.Sigma(), d/c.delta)
	}
}

func TestGaussianSamples(t *testing.T) {
	m, err := NewGaussian(1, 1e-5, 2)
	if err != nil {
		t.Fatal(err)
	}
	g := m.Granularity()
	if want := math.Ldexp(1, ceilPow2Exp(2*m.sigmaFloat/math.Ldexp(1, 57))); g != want {
		t.Fatalf("granularity %v, want %v", g, want)
	}
	if m.sigmaFloat < m.Sigma() || m.sigmaFloat > m.Sigma()*(1+1e-8) {
		t.Fatalf("σ_f %v vs σ %v", m.sigmaFloat, m.Sigma())
	}
	if rho := m.Rho(); math.Abs(rho-4/(2*m.Sigma()*m.Sigma())) > 1e-15 {
		t.Fatalf("Rho = %v", rho)
	}
	r := Seeded(22)
	const n = 150000
	x := 1234.567
	sigma := m.sigmaFloat
	xs := make([]float64, n)
	obs := make([]int64, 20)
	for i := range xs {
		y, err := m.AddNoiseFloat(r, x)
		if err != nil {
			t.Fatal(err)
		}
		if q := y / g; q != math.Trunc(q) {
			t.Fatalf("output %v not a multiple of g = %v", y, g)
		}
		xs[i] = y
		// Bin by the normal CDF.
		F := 0.5 * math.Erfc(-(y-x)/(sigma*math.Sqrt2))
		bi := int(F * 20)
		if bi > 19 {
			bi = 19
		}
		obs[bi]++
	}
	mean, variance := moments(xs)
	checkMean(t, "GaussianFloat", mean, x, sigma*sigma, n)
	checkVariance(t, "GaussianFloat", variance, sigma*sigma, 3*math.Pow(sigma, 4), n)
	probs := make([]float64, 20)
	for i := range probs {
		probs[i] = 0.05
	}
	chiSquareTest(t, "GaussianFloat vs normal CDF", obs, probs)

	si, err := m.SigmaInt()
	if err != nil {
		t.Fatal(err)
	}
	ints := make([]float64, n)
	for i := range ints {
		y, err := m.AddNoiseInt(r, -40)
		if err != nil {
			t.Fatal(err)
		}
		ints[i] = float64(y)
	}
	mean, variance = moments(ints)
	checkMean(t, "GaussianInt", mean, -40, si*si, n)
	checkVariance(t, "GaussianInt", variance, si*si, 3*math.Pow(si, 4), n)
}

func TestGaussianFloatGridManyScales(t *testing.T) {
	r := Seeded(23)
	for _, c := range []struct{ eps, delta, l2 float64 }{{1, 1e-5, 1}, {0.01, 1e-9, 1e6}, {10, 0.1, 1e-9}, {1e-6, 1e-6, 1}} {
		m, err := NewGaussian(c.eps, c.delta, c.l2)
		if err != nil {
			t.Fatal(err)
		}
		g := m.Granularity()
		for _, x := range []float64{0, 0.1, -3.3e7, 1e25, 7e-200} {
			for i := 0; i < 30; i++ {
				y, err := m.AddNoiseFloat(r, x)
				if err != nil {
					t.Fatal(err)
				}
				if q := y / g; q != math.Trunc(q) || math.IsInf(q, 0) {
					t.Fatalf("%+v x=%v: %v not a multiple of %v", c, x, y, g)
				}
			}
		}
	}
}

func TestGaussianErrorBound(t *testing.T) {
	m, err := NewGaussian(1, 1e-5, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := m.ErrorBound(0.95)
	si, _ := m.SigmaInt()
	if want := 1.959963984540054 * si; w < want || w > want+1 {
		t.Errorf("ErrorBound(0.95) = %v, want ≈ %v", w, want)
	}
	r := Seeded(24)
	const n = 40000
	in := 0
	for i := 0; i < n; i++ {
		y, err := m.AddNoiseFloat(r, 0)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(y) <= w {
			in++
		}
	}
	if rate := float64(in) / n; rate < 0.95-zTol*math.Sqrt(0.95*0.05/n) {
		t.Errorf("coverage %v", rate)
	}
	if m.ErrorBound(0) != 0 || !math.IsInf(m.ErrorBound(1), 1) || !math.IsNaN(m.ErrorBound(math.NaN())) {
		t.Error("ErrorBound edge cases")
	}
}
