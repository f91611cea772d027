package mechanisms

import (
	"math"
	"sync"
)

// ---- Calibration -------------------------------------------------------

// logPhi returns ln Φ(x) for the standard normal CDF Φ, accurate in both
// tails (no underflow for very negative x).
func logPhi(x float64) float64 {
	if x > 0 {
		return math.Log1p(-0.5 * math.Erfc(x/math.Sqrt2))
	}
	z := -x / math.Sqrt2 // Φ(x) = erfc(z)/2
	if z < 26 {
		return math.Log(0.5 * math.Erfc(z))
	}
	// Asymptotic expansion of erfc for large z (terms up to z^-10 are below
	// 2^-60 relative at z ≥ 26).
	z2 := z * z
	inv := 1 / (2 * z2)
	series := 1 + inv*(-1+inv*(3+inv*(-15+inv*(105+inv*(-945)))))
	return math.Log(0.5) - z2 - math.Log(z*math.Sqrt(math.Pi)) + math.Log(series)
}

// GaussianDelta returns the exact δ(ε) of the Gaussian mechanism with noise
// N(0, σ²) and L2 sensitivity Δ (Balle & Wang 2018, Theorem 8):
//
//	δ = Φ(Δ/(2σ) - εσ/Δ) - e^ε·Φ(-Δ/(2σ) - εσ/Δ).
//
// The mechanism is (ε, δ')-DP exactly when δ' ≥ GaussianDelta(σ, Δ, ε). It is
// evaluated in log space so that large ε and far tails neither overflow nor
// underflow. Invalid arguments (σ ≤ 0, Δ ≤ 0, ε < 0, non-finite) give NaN.
func GaussianDelta(sigma, l2, epsilon float64) float64 {
	if !(sigma > 0) || !(l2 > 0) || !(epsilon >= 0) || math.IsInf(sigma, 0) || math.IsInf(l2, 0) || math.IsInf(epsilon, 0) {
		return math.NaN()
	}
	a := l2 / (2 * sigma)
	b := epsilon * sigma / l2
	l1 := logPhi(a - b)
	lt := epsilon + logPhi(-a-b)
	if !(lt < l1) {
		return 0
	}
	return math.Exp(l1) * -math.Expm1(lt-l1)
}

// ClassicGaussianSigma returns Δ2·√(2·ln(1.25/δ))/ε, the classical Gaussian
// mechanism calibration (Dwork & Roth 2014, Theorem A.1). It is only valid
// for ε < 1; ε ≥ 1 is an error. Prefer AnalyticGaussianSigma, which is never
// larger and valid for every ε.
func ClassicGaussianSigma(epsilon, delta, l2 float64) (float64, error) {
	if err := checkEpsilon("epsilon", epsilon); err != nil {
		return 0, err
	}
	if epsilon >= 1 {
		return 0, invalid("epsilon = %v: the classic Gaussian calibration is only valid for epsilon < 1 (use AnalyticGaussianSigma)", epsilon)
	}
	if err := checkDelta("delta", delta); err != nil {
		return 0, err
	}
	if err := checkPositive("l2Sensitivity", l2); err != nil {
		return 0, err
	}
	return l2 * math.Sqrt(2*math.Log(1.25/delta)) / epsilon, nil
}

// AnalyticGaussianSigma returns the smallest σ (to ~1e-11 relative, rounded
// up) with GaussianDelta(σ, Δ2, ε) ≤ δ: the analytic Gaussian mechanism of
// Balle & Wang 2018, found by bisection on the exact condition. Valid for
// every ε. Since δ(σ) depends only on σ/Δ2, the search runs for Δ2 = 1 and
// scales the result.
func AnalyticGaussianSigma(epsilon, delta, l2 float64) (float64, error) {
	if err := checkEpsilon("epsilon", epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta("delta", delta); err != nil {
		return 0, err
	}
	if err := checkPositive("l2Sensitivity", l2); err != nil {
		return 0, err
	}
	// Search against a target lowered by 1e-11 relative, which absorbs the
	// floating-point error of GaussianDelta (~1e-13 relative); the result is
	// then re-verified with the actual Δ2.
	target := delta * (1 - 1e-11)
	f := func(s float64) float64 { return GaussianDelta(s, 1, epsilon) }
	lo, hi := 1.0, 1.0
	if f(hi) > target {
		for i := 0; f(hi) > target; i++ {
			if i > 200 {
				return 0, invalid("no Gaussian sigma satisfies epsilon=%v, delta=%v", epsilon, delta)
			}
			lo = hi
			hi *= 2
		}
	} else {
		for i := 0; f(lo) <= target; i++ {
			if i > 1000 {
				return 0, invalid("Gaussian sigma for epsilon=%v, delta=%v is below the supported range", epsilon, delta)
			}
			hi = lo
			lo /= 2
		}
	}
	// Invariant: f(lo) > target ≥ f(hi).
	for i := 0; i < 200 && hi-lo > hi*1e-15; i++ {
		mid := lo + (hi-lo)/2
		if f(mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	sigma := math.Nextafter(hi*l2, math.Inf(1))
	for i := 0; GaussianDelta(sigma, l2, epsilon) > delta; i++ {
		if i >= 100 {
			return 0, invalid("Gaussian sigma calibration failed for epsilon=%v, delta=%v, l2Sensitivity=%v", epsilon, delta, l2)
		}
		sigma *= 1 + 1e-14
	}
	if math.IsInf(sigma, 0) {
		return 0, invalid("Gaussian sigma overflows for l2Sensitivity=%v", l2)
	}
	return sigma, nil
}

// discreteGaussianDelta returns the exact δ(ε) (hockey-stick divergence) of
// the discrete Gaussian N_ℤ(0, v) against its shift by the integer s ≥ 1,
// Σ_k max(0, p(k) - e^ε·p(k-s)), or ok = false if that would need more than
// maxTerms terms. The privacy loss ln p(k)/p(k-s) = (s² - 2ks)/(2v) exceeds
// ε exactly for k < k0 = s/2 - vε/s; the terms decay by a factor ≈ e^-(ε/s)
// per step beyond k0, so about 41·s/ε terms (plus s/2 if k0 > 0) are needed.
// The truncated tail is bounded by a geometric series and added, so the
// result is never an under-estimate (up to float rounding, ~1e-13 relative).
func discreteGaussianDelta(v float64, s int64, eps float64, maxTerms int64) (delta float64, ok bool) {
	sigma := math.Sqrt(v)
	// Normaliser Z = Σ_k exp(-k²/(2v)). For σ ≥ 1 use the Poisson summation
	// formula Z = σ√(2π)·(1 + 2Σ_{n≥1} exp(-2π²σ²n²)) (rapidly convergent).
	var Z float64
	if sigma >= 1 {
		th := 1.0
		for n := 1.0; n < 10; n++ {
			t := math.Exp(-2 * math.Pi * math.Pi * v * n * n)
			if t < 1e-20 {
				break
			}
			th += 2 * t
		}
		Z = sigma * math.Sqrt(2*math.Pi) * th
	} else {
		Z = 1
		for k := 1.0; k < 100; k++ {
			Z += 2 * math.Exp(-k*k/(2*v))
		}
	}
	fs := float64(s)
	k0 := fs/2 - v*eps/fs
	start := math.Ceil(k0) - 1 // largest integer < k0 (for integer k0 too)
	sum := 0.0
	var n int64
	for k := start; ; k-- {
		if n++; n > maxTerms {
			return 0, false
		}
		p := math.Exp(-k * k / (2 * v))
		if loss := (fs*fs - 2*k*fs) / (2 * v); loss > eps {
			sum += p * -math.Expm1(eps-loss)
		}
		if k < 0 {
			// Remaining terms j < k are below p·r^(k-j), r = exp(-|k|/v).
			r := math.Exp(k / v)
			tail := p * r / (1 - r)
			if p == 0 || tail <= 1e-18*sum {
				sum += tail
				break
			}
		}
	}
	return sum / Z, true
}

// ---- Mechanism ---------------------------------------------------------

const (
	// gaussianGranularityBits: the float granularity is
	// g = 2^⌈log2(2σ/2^57)⌉, so σ is between 2^55 and 2^56 grid steps.
	gaussianGranularityBits = 57
	// sigmaMargin is the relative enlargement of σ on the float path. It
	// covers floating-point error in the calibration and the difference
	// between the discrete Gaussian on a grid of ≥ 2^55 steps per σ and the
	// continuous one (relative effect O(2^-110)).
	sigmaMargin = 1e-9
	// largeSigmaMargin: relative enlargement of σ on the integer path when
	// the exact discrete check is too expensive (ε/⌊Δ2⌋ below ~1e-4).
	largeSigmaMargin = 1e-6
)

// Gaussian is the Gaussian mechanism with secure (exact discrete Gaussian)
// sampling.
//
// DP guarantee: for a scalar query with L2 sensitivity Δ2, AddNoiseInt and
// AddNoiseFloat are (ε, δ)-differentially private, and ρ-zCDP with
// ρ = Rho() = Δ2²/(2σ²) (Bun & Steinke 2016; Canonne–Kamath–Steinke 2020
// show the discrete Gaussian has the same zCDP bound for integer shifts).
// σ = Sigma() is the analytic Gaussian calibration (Balle & Wang 2018), valid
// for every ε. The samplers use σ's at least as large:
//
//   - AddNoiseInt adds exact discrete Gaussian noise N_ℤ(0, σ_int²). σ_int
//     is the smallest σ' ≥ σ whose exact discrete δ(ε) for the integer shift
//     ⌊Δ2⌋ is ≤ δ (computed numerically on first use, typically well under
//     50 ms; when ε/⌊Δ2⌋ < ~1e-4 makes that too costly, σ_int =
//     σ·(1+1e-6), which suffices there). This guarantees
//     (ε, δ) for the discrete distribution itself: at small σ its δ can be
//     noticeably larger than the continuous Gaussian's (e.g. +22% at ε = 2,
//     δ = 1e-3, Δ2 = 1), so σ_int may exceed σ by up to a few percent. The
//     check uses the largest shift ⌊Δ2⌋; δ grows with the shift for this
//     log-concave family.
//   - AddNoiseFloat rounds x to the grid g·ℤ, g = 2^⌈log2(2σ_f/2^57)⌉, and
//     adds k·g with k ~ N_ℤ(0, (σ_f/g)²), where σ_f is the analytic σ for
//     sensitivity Δ2 + g (covering the rounding) times (1 + 1e-9). Outputs
//     are multiples of Granularity().
//
// The discrete Gaussian is sampled exactly (Canonne–Kamath–Steinke 2020,
// Algorithm 3) with integer arithmetic; no floating-point Gaussian (e.g.
// Box–Muller) is ever used.
type Gaussian struct {
	epsilon, delta, l2 float64
	sigma              float64

	granExp    int
	gran       float64
	sigmaFloat float64
	floatPlan  *dgaussPlan

	intOnce  sync.Once
	sigmaInt float64
	intPlan  *dgaussPlan
	intErr   error
}

// NewGaussian returns a Gaussian mechanism for (epsilon, delta) and L2
// sensitivity l2, with σ = AnalyticGaussianSigma(epsilon, delta, l2).
// epsilon must be in [MinEpsilon, MaxEpsilon], delta in (0, 1), l2 finite > 0.
func NewGaussian(epsilon, delta, l2 float64) (*Gaussian, error) {
	sigma, err := AnalyticGaussianSigma(epsilon, delta, l2)
	if err != nil {
		return nil, err
	}
	if !(sigma >= 0x1p-900 && sigma <= 0x1p900) {
		return nil, invalid("Gaussian sigma %v (from epsilon=%v, delta=%v, l2Sensitivity=%v) is outside the supported range", sigma, epsilon, delta, l2)
	}
	m := &Gaussian{epsilon: epsilon, delta: delta, l2: l2, sigma: sigma}

	gexp := ceilPow2Exp(math.Ldexp(sigma, 1-gaussianGranularityBits))
	var sf float64
	for i := 0; ; i++ {
		g := math.Ldexp(1, gexp)
		// σ is proportional to the sensitivity, so the σ for Δ2+g is
		// σ·(Δ2+g)/Δ2.
		sf = sigma * ((l2 + g) / l2) * (1 + sigmaMargin)
		ne := ceilPow2Exp(math.Ldexp(sf, 1-gaussianGranularityBits))
		if ne == gexp {
			break
		}
		if i > 8 {
			return nil, invalid("Gaussian granularity does not converge for l2Sensitivity=%v", l2)
		}
		gexp = ne
	}
	if gexp < minGranExp || gexp > maxGranExp {
		return nil, invalid("Gaussian sigma %v gives an unsupported granularity", sigma)
	}
	m.granExp, m.gran, m.sigmaFloat = gexp, math.Ldexp(1, gexp), sf
	p, err := newDGaussPlan(math.Ldexp(sf, -gexp)) // in (2^55, 2^56]
	if err != nil {
		return nil, err
	}
	m.floatPlan = p
	return m, nil
}

// Epsilon returns ε.
func (m *Gaussian) Epsilon() float64 { return m.epsilon }

// Delta returns δ.
func (m *Gaussian) Delta() float64 { return m.delta }

// Sensitivity returns the L2 sensitivity Δ2.
func (m *Gaussian) Sensitivity() float64 { return m.l2 }

// Sigma returns the analytic Gaussian σ for (ε, δ, Δ2). The samplers use a
// σ at least this large (see the type documentation).
func (m *Gaussian) Sigma() float64 { return m.sigma }

// Granularity returns g: every AddNoiseFloat output is a multiple of g.
func (m *Gaussian) Granularity() float64 { return m.gran }

// Rho returns ρ = Δ2²/(2σ²): the mechanism is ρ-zCDP.
func (m *Gaussian) Rho() float64 { return m.l2 * m.l2 / (2 * m.sigma * m.sigma) }

// calibrateInt computes σ_int (once): the smallest σ ≥ Sigma() (to ~1e-6
// relative) whose discrete Gaussian has exact δ(ε) ≤ δ for the integer shift
// ⌊Δ2⌋. The discrete δ can exceed the continuous one noticeably (22% at
// ε = 2, δ = 1e-3, Δ2 = 1), so this check matters for small σ and large ε/Δ2.
func (m *Gaussian) calibrateInt() {
	m.intOnce.Do(func() {
		m.sigmaInt, m.intErr = calibrateDiscreteSigma(m.sigma, math.Floor(m.l2), m.epsilon, m.delta)
		if m.intErr != nil {
			return
		}
		m.intPlan, m.intErr = newDGaussPlan(m.sigmaInt)
	})
}

// maxDeltaTerms bounds the work of one discreteGaussianDelta evaluation.
const maxDeltaTerms = 1 << 19

func calibrateDiscreteSigma(sigma, shift, eps, delta float64) (float64, error) {
	if shift < 1 {
		// Integer inputs at distance ≤ Δ2 < 1 are equal: any noise is
		// private. Keep σ.
		return math.Max(sigma, minDGaussSigma), nil
	}
	if sigma > maxDGaussSigma/64 {
		return 0, invalid("Gaussian sigma %v is too large for integer noise (max 2^50)", sigma)
	}
	target := delta * (1 - 1e-9) // absorbs float error in the δ computation
	s := int64(shift)
	check := func(sg float64) (bool, bool) {
		d, ok := discreteGaussianDelta(roundUpSquare(math.Max(sg, minDGaussSigma)), s, eps, maxDeltaTerms)
		return d <= target, ok
	}
	pass, ok := check(sigma)
	if !ok {
		// ε/⌊Δ2⌋ < ~1e-4: the discrete δ is a Riemann sum whose per-step
		// log-variation is ε/⌊Δ2⌋, so it differs from the continuous δ by a
		// relative O((ε/⌊Δ2⌋)²) ≈ 1e-9; raising σ by 1e-6 relative lowers δ
		// by at least ~1e-6 relative (|d ln δ/d ln σ| ≳ 1), far more.
		return sigma * (1 + largeSigmaMargin), nil
	}
	if pass {
		return math.Max(sigma, minDGaussSigma), nil
	}
	lo, hi := sigma, sigma
	for i := 0; ; i++ {
		if i >= 64 {
			return 0, invalid("cannot calibrate the discrete Gaussian for epsilon=%v, delta=%v, l2Sensitivity=%v", eps, delta, shift)
		}
		lo = hi
		hi = sigma * (1 + math.Ldexp(1, i-14))
		if p, _ := check(hi); p {
			break
		}
	}
	for i := 0; i < 40 && hi-lo > hi*1e-6; i++ {
		mid := lo + (hi-lo)/2
		if p, _ := check(mid); p {
			hi = mid
		} else {
			lo = mid
		}
	}
	if hi > maxDGaussSigma/64 {
		return 0, invalid("Gaussian sigma %v is too large for integer noise (max 2^50)", hi)
	}
	return hi, nil
}

// SigmaInt returns σ_int, the standard-deviation parameter of the discrete
// Gaussian used by AddNoiseInt (≥ Sigma()), or an error if integer noise is
// unsupported for these parameters.
func (m *Gaussian) SigmaInt() (float64, error) {
	m.calibrateInt()
	return m.sigmaInt, m.intErr
}

// AddNoiseInt returns x + k, k ~ N_ℤ(0, σ_int²) (exact discrete Gaussian).
// (ε, δ)-DP for integer queries with L2 sensitivity Δ2.
func (m *Gaussian) AddNoiseInt(r *Rand, x int64) (int64, error) {
	m.calibrateInt()
	if m.intErr != nil {
		return 0, m.intErr
	}
	s, err := r.lock()
	if err != nil {
		return 0, err
	}
	k, err := s.discreteGaussian(m.intPlan)
	r.unlock()
	if err != nil {
		return 0, err
	}
	if (k > 0 && x > math.MaxInt64-k) || (k < 0 && x < math.MinInt64-k) {
		return 0, samplerErr("noisy integer overflows int64")
	}
	return x + k, nil
}

// AddNoiseFloat returns round(x/g)·g + k·g (one final rounding), k discrete
// Gaussian with standard deviation σ_f/g. (ε, δ)-DP for real-valued queries
// with L2 sensitivity Δ2. x must be finite; outputs are multiples of g.
func (m *Gaussian) AddNoiseFloat(r *Rand, x float64) (float64, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, invalid("value x must be finite, got %v", x)
	}
	s, err := r.lock()
	if err != nil {
		return 0, err
	}
	k, err := s.discreteGaussian(m.floatPlan)
	r.unlock()
	if err != nil {
		return 0, err
	}
	return snapAdd(x, m.granExp, k)
}

// ErrorBound returns w with P(|noise| ≤ w) ≈ confidence (normal quantile
// σ·√2·erfinv(confidence) with the larger of the two samplers' σ, plus the
// g/2 grid rounding; integer noise is rounded up to an integer). For
// "explain" output. confidence ≤ 0 gives 0, ≥ 1 gives +Inf, NaN gives NaN.
func (m *Gaussian) ErrorBound(confidence float64) float64 {
	switch {
	case math.IsNaN(confidence):
		return math.NaN()
	case confidence <= 0:
		return 0
	case confidence >= 1:
		return math.Inf(1)
	}
	z := math.Sqrt2 * math.Erfinv(confidence)
	w := z*m.sigmaFloat + m.gran/2
	m.calibrateInt()
	if m.intErr == nil {
		if wi := math.Ceil(z * m.sigmaInt); wi > w {
			w = wi
		}
	}
	return w
}
