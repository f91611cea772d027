package mechanisms

import (
	"math"
)

// laplaceGranularityBits: the float granularity is g = 2^⌈log2(b/2^40)⌉, so
// the noise scale is between 2^39 and 2^40 grid steps.
const laplaceGranularityBits = 40

// maxIntLaplaceScale bounds the scale b for AddNoiseInt so that noise and
// noisy counts stay far inside int64.
const maxIntLaplaceScale = 0x1p48

// Laplace is the Laplace mechanism with secure sampling.
//
// DP guarantee: for a query whose value changes by at most Δ1 (the L1
// sensitivity) between neighbouring databases, releasing AddNoiseInt or
// AddNoiseFloat of it is ε-differentially private (pure DP, δ = 0). This holds
// exactly for the distributions the samplers draw from, not only for an
// idealised continuous Laplace:
//
//   - AddNoiseInt adds discrete Laplace noise: P(k) ∝ e^-λ|k| with
//     λ = ε/Δ1 (rounded down to a float64). Two integer inputs at distance at
//     most Δ1 give output probabilities within a factor e^(λΔ1) ≤ e^ε.
//   - AddNoiseFloat rounds x to the grid g·ℤ (g = 2^⌈log2(b/2^40)⌉) and adds
//     k·g with k discrete Laplace of parameter λ_g = g·ε/(Δ1+g) (rounded
//     down). Grid indices of neighbours differ by at most (Δ1+g)/g, so the
//     privacy loss is at most λ_g·(Δ1+g)/g ≤ ε. The output is a multiple of g.
//
// All randomness comes from the Rand; sampling is exact (no floating-point
// inverse CDF) and its running time hardly depends on the noise drawn.
type Laplace struct {
	epsilon     float64
	sensitivity float64
	scale       float64 // b = Δ1/ε
	intPlan     *geomPlan
	intLambda   float64
	intErr      error
	granExp     int
	gran        float64
	floatLambda float64
	floatPlan   *geomPlan
}

// NewLaplace returns a Laplace mechanism for privacy parameter epsilon and L1
// sensitivity l1Sensitivity. epsilon must be in [MinEpsilon, MaxEpsilon];
// l1Sensitivity must be finite and > 0; the scale b = Δ1/ε must lie in
// [2^-960, 2^860] (outside it the float grid would leave the normal float64
// range).
func NewLaplace(epsilon, l1Sensitivity float64) (*Laplace, error) {
	if err := checkEpsilon("epsilon", epsilon); err != nil {
		return nil, err
	}
	if err := checkPositive("l1Sensitivity", l1Sensitivity); err != nil {
		return nil, err
	}
	b := l1Sensitivity / epsilon
	if !(b >= 0x1p-960 && b <= 0x1p860) {
		return nil, invalid("Laplace scale l1Sensitivity/epsilon = %v is outside the supported range [2^-960, 2^860]", b)
	}
	m := &Laplace{epsilon: epsilon, sensitivity: l1Sensitivity, scale: b}

	// Integer path: λ = ε/Δ1, rounded down (one correctly rounded division).
	lam := nextDown(epsilon/l1Sensitivity, 1)
	m.intLambda = lam
	if b > maxIntLaplaceScale {
		m.intErr = invalid("Laplace scale l1Sensitivity/epsilon = %v is too large for integer noise (max 2^48)", b)
	} else if m.intPlan, m.intErr = newGeomPlan(lam); m.intErr != nil {
		m.intPlan = nil
	}

	// Float path.
	m.granExp = ceilPow2Exp(math.Ldexp(b, -laplaceGranularityBits))
	if m.granExp < minGranExp || m.granExp > maxGranExp {
		return nil, invalid("Laplace scale %v gives an unsupported granularity", b)
	}
	m.gran = math.Ldexp(1, m.granExp)
	// λ_g = g·ε/(Δ1+g): g·ε is exact, the sum and the division each round
	// once; stepping down 3 ulps makes λ_g ≤ the exact value.
	m.floatLambda = nextDown(m.gran*epsilon/(l1Sensitivity+m.gran), 3)
	p, err := newGeomPlan(m.floatLambda)
	if err != nil {
		return nil, invalid("Laplace parameters epsilon=%v, l1Sensitivity=%v unsupported: %v", epsilon, l1Sensitivity, err)
	}
	m.floatPlan = p
	return m, nil
}

// IntThreshold returns τ, a half-integer, such that for every integer x ≤
// maxAlone, x plus AddNoiseInt's noise exceeds τ with probability at most
// delta. Thresholding a noisy count at τ (Korolova et al. 2009; Wilson et
// al. 2020) releases a group that one unit alone could have created (its
// count at most maxAlone) with probability at most delta.
//
// The noise k is discrete Laplace with q = e^-λ: P(k ≥ j) = q^j/(1+q) for
// j ≥ 1. τ = maxAlone + j − ½ for the smallest such j with q^j/(1+q) ≤
// delta, plus one step of safety for rounding in the logarithm.
func (m *Laplace) IntThreshold(maxAlone int64, delta float64) (float64, error) {
	if m.intErr != nil {
		return 0, m.intErr
	}
	if err := checkDelta("delta", delta); err != nil {
		return 0, err
	}
	q := math.Exp(-m.intLambda)
	j := math.Ceil(math.Log(1/(delta*(1+q)))/m.intLambda) + 1
	if j < 1 {
		j = 1
	}
	return float64(maxAlone) + j - 0.5, nil
}

// IntTailProbability returns P(k ≥ j) for AddNoiseInt's noise k and an
// integer j: what IntThreshold bounds, for reports and tests.
func (m *Laplace) IntTailProbability(j float64) float64 {
	q := math.Exp(-m.intLambda)
	if j <= 0 {
		return 1 - math.Pow(q, 1-j)/(1+q)
	}
	return math.Pow(q, j) / (1 + q)
}

// IntegerNoise reports whether AddNoiseInt can add noise at this scale
// (at most 2^48); AddNoiseFloat always can.
func (m *Laplace) IntegerNoise() bool { return m.intErr == nil }

// Epsilon returns ε.
func (m *Laplace) Epsilon() float64 { return m.epsilon }

// Sensitivity returns the L1 sensitivity Δ1.
func (m *Laplace) Sensitivity() float64 { return m.sensitivity }

// Scale returns the Laplace scale b = Δ1/ε (noise variance ≈ 2b²).
func (m *Laplace) Scale() float64 { return m.scale }

// Granularity returns g: every AddNoiseFloat output is an integer multiple
// of g.
func (m *Laplace) Granularity() float64 { return m.gran }

// AddNoiseInt returns x + k, k discrete Laplace with parameter λ = ε/Δ1:
// P(k) = (1-q)/(1+q)·q^|k|, q = e^-λ. ε-DP for integer queries with L1
// sensitivity Δ1. It fails if the scale exceeds 2^48, if the result would
// overflow int64, or if the Rand fails.
func (m *Laplace) AddNoiseInt(r *Rand, x int64) (int64, error) {
	if m.intErr != nil {
		return 0, m.intErr
	}
	s, err := r.lock()
	if err != nil {
		return 0, err
	}
	k, err := s.twoSided(m.intPlan)
	r.unlock()
	if err != nil {
		return 0, err
	}
	if (k > 0 && x > math.MaxInt64-k) || (k < 0 && x < math.MinInt64-k) {
		return 0, samplerErr("noisy integer overflows int64")
	}
	return x + k, nil
}

// AddNoiseFloat returns round(x/g)·g + k·g (one final rounding to float64),
// k discrete Laplace with parameter g·ε/(Δ1+g). ε-DP for real-valued queries
// with L1 sensitivity Δ1. x must be finite. The result is a multiple of
// Granularity().
func (m *Laplace) AddNoiseFloat(r *Rand, x float64) (float64, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, invalid("value x must be finite, got %v", x)
	}
	s, err := r.lock()
	if err != nil {
		return 0, err
	}
	k, err := s.twoSided(m.floatPlan)
	r.unlock()
	if err != nil {
		return 0, err
	}
	return snapAdd(x, m.granExp, k)
}

// ErrorBound returns a half-width w such that the added noise satisfies
// P(|noise| ≤ w) ≥ confidence for both AddNoiseInt and AddNoiseFloat (for the
// float path w includes the g/2 of rounding x to the grid). It is computed
// from the exact discrete distributions: P(|k| > n) = 2q^(n+1)/(1+q).
// confidence ≤ 0 gives 0, confidence ≥ 1 gives +Inf, NaN gives NaN.
func (m *Laplace) ErrorBound(confidence float64) float64 {
	switch {
	case math.IsNaN(confidence):
		return math.NaN()
	case confidence <= 0:
		return 0
	case confidence >= 1:
		return math.Inf(1)
	}
	w := m.gran*geomTailBound(m.floatLambda, confidence) + m.gran/2
	if m.intErr == nil {
		if wi := geomTailBound(m.intPlan.lambda, confidence); wi > w {
			w = wi
		}
	}
	return w
}

// geomTailBound returns the smallest integer n ≥ 0 with
// P(|K| > n) = 2q^(n+1)/(1+q) ≤ 1-c for K discrete Laplace(λ), q = e^-λ.
func geomTailBound(lambda, c float64) float64 {
	// q^(n+1) ≤ (1-c)(1+q)/2  ⇔  n+1 ≥ ln(2/((1-c)(1+q)))/λ
	q := math.Exp(-lambda)
	n := math.Ceil(math.Log(2/((1-c)*(1+q)))/lambda) - 1
	if n < 0 {
		n = 0
	}
	// Guard against rounding in the logarithm: check, step up if needed.
	for i := 0; i < 4 && 2*math.Exp(-lambda*(n+1))/(1+q) > 1-c; i++ {
		n++
	}
	return n
}
