package mechanisms

import (
	"math"
)

// PartitionSelection: deciding which GROUP BY keys to release when there is
// no public list of keys. Releasing a key that only one privacy unit has
// would reveal that unit, so each key is released only if a randomized test
// on n, its number of distinct privacy units, passes.
//
// Both selectors below assume that neighbouring databases differ in the
// unit counts of at most L0 = maxGroupsPerUnit groups, by one each, and
// give (ε, δ)-differential privacy for the set of released keys, over all
// groups together, by running an (ε/L0, δ/L0) test on each group. L0 is
// the number of groups one neighbouring change can touch: the unit's
// groups under add/remove neighbours, twice that under replace neighbours
// (the groups it leaves and those it joins); the rewrite passes it as
// PartitionSelection.ChangedGroups.

// PartitionSelector decides whether to release a group with the given number
// of distinct privacy units.
type PartitionSelector interface {
	// Keep reports whether to release a group with `units` distinct privacy
	// units. units ≤ 0 is never kept (negative is an error).
	Keep(r *Rand, units int64) (bool, error)
	// Threshold is the number of units at which a group is kept with
	// probability 1/2 (Laplace: the noisy-count threshold τ; optimal: the
	// smallest n with π(n) ≥ 1/2). For "explain" output.
	Threshold() float64
}

// MaxGroupsPerUnit bounds maxGroupsPerUnit (L0) for partition selection.
const MaxGroupsPerUnit = 1 << 20

func checkL0(l0 int) error {
	if l0 < 1 || l0 > MaxGroupsPerUnit {
		return invalid("maxGroupsPerUnit must be in [1, %d], got %d", MaxGroupsPerUnit, l0)
	}
	return nil
}

func checkUnits(units int64) error {
	if units < 0 {
		return invalid("units must be >= 0, got %d", units)
	}
	return nil
}

// LaplaceThresholdSelector keeps a group if n + Lap(L0/ε) > τ, with
// τ = 1 + (L0/ε)·ln(1/(2δ')), δ' = δ/L0 (Korolova et al. 2009; Wilson et al.
// 2020 / Google's library).
//
// DP guarantee: (ε, δ)-DP for the set of released keys. The noisy counts of
// all L0 groups a unit touches form an ε-DP Laplace release (L1 sensitivity
// L0), and a group that exists only because of that unit (n = 1) is released
// with probability ≤ δ' each, so ≤ δ in total.
//
// The noise is the secure Laplace mechanism's grid noise (AddNoiseFloat).
// Because that noise is discrete, τ is computed from its exact distribution:
// τ is set (on the grid) so that P(1 + noise > τ) ≤ δ' holds exactly. It
// agrees with the formula above to about 1e-9 relative.
type LaplaceThresholdSelector struct {
	epsilon, delta float64
	l0             int
	lap            *Laplace
	tau            float64 // threshold actually used
	tauFormula     float64
}

// NewLaplaceThreshold returns a LaplaceThresholdSelector (see its
// documentation). epsilon must be in [MinEpsilon, MaxEpsilon], delta in
// (0, 1), maxGroupsPerUnit in [1, MaxGroupsPerUnit].
func NewLaplaceThreshold(epsilon, delta float64, maxGroupsPerUnit int) (PartitionSelector, error) {
	return newLaplaceThreshold(epsilon, delta, maxGroupsPerUnit)
}

func newLaplaceThreshold(epsilon, delta float64, l0 int) (*LaplaceThresholdSelector, error) {
	if err := checkEpsilon("epsilon", epsilon); err != nil {
		return nil, err
	}
	if err := checkDelta("delta", delta); err != nil {
		return nil, err
	}
	if err := checkL0(l0); err != nil {
		return nil, err
	}
	L0 := float64(l0)
	lap, err := NewLaplace(epsilon, L0)
	if err != nil {
		return nil, err
	}
	dp := delta / L0
	s := &LaplaceThresholdSelector{epsilon: epsilon, delta: delta, l0: l0, lap: lap}
	s.tauFormula = 1 + (L0/epsilon)*math.Log(1/(2*dp))

	// The released value is round_g(n) + k·g with k discrete Laplace(λ),
	// q = e^-λ: P(k ≥ j) = q^j/(1+q) for j ≥ 1. For n = 1 (1 is on the grid
	// unless g > 1, in which case it rounds to 0 or g):
	// P(release) = P(k ≥ j*) with j* = ⌊(τ - r1)/g⌋ + 1. Pick the smallest
	// j* ≥ 1 with q^j*/(1+q) ≤ δ' (plus one step of safety for rounding in the
	// logarithm), and put τ in the middle of the grid cell so that it
	// selects exactly j*.
	g := lap.gran
	lam := lap.floatLambda
	q := math.Exp(-lam)
	r1, err := snapAdd(1, lap.granExp, 0)
	if err != nil {
		return nil, err
	}
	j := math.Ceil(math.Log(1/(dp*(1+q)))/lam) + 1
	if j < 1 {
		j = 1
	}
	s.tau = r1 + (j-0.5)*g
	return s, nil
}

// Keep reports whether to release a group with `units` distinct units:
// round_g(units) + noise > τ.
func (s *LaplaceThresholdSelector) Keep(r *Rand, units int64) (bool, error) {
	if err := checkUnits(units); err != nil {
		return false, err
	}
	noisy, err := s.lap.AddNoiseFloat(r, float64(units))
	if err != nil {
		return false, err
	}
	if units == 0 {
		return false, nil
	}
	return noisy > s.tau, nil
}

// Threshold returns τ as used by Keep (≥ the textbook formula, within ~1e-9
// relative).
func (s *LaplaceThresholdSelector) Threshold() float64 { return s.tau }

// FormulaThreshold returns the textbook τ = 1 + (L0/ε)·ln(L0/(2δ)).
func (s *LaplaceThresholdSelector) FormulaThreshold() float64 { return s.tauFormula }

// Scale returns the Laplace scale L0/ε of the noisy count.
func (s *LaplaceThresholdSelector) Scale() float64 { return s.lap.Scale() }

// maxOptimalTable bounds the π table of the optimal selector (32 MiB).
const maxOptimalTable = 1 << 22

// OptimalSelector is the optimal partition selection rule of Desfontaines,
// Voss, Gipson & Mandayam 2022 ("Differentially private partition
// selection"): keep a group with n units with probability π(n), where
// ε' = ε/L0, δ' = δ/L0, π(0) = 0 and
//
//	π(n) = min(e^ε'·π(n-1) + δ', 1 - e^-ε'·(1 - π(n-1) - δ'), 1).
//
// DP guarantee: (ε, δ)-DP for the set of released keys. The two terms of the
// minimum are exactly the (ε', δ') constraints between n-1 and n units (on
// keeping and on dropping), and over the ≤ L0 groups a unit touches they
// compose to (ε, δ). π is the pointwise largest function satisfying them.
//
// The table is computed once, in floating point rounded towards the private
// side (e^ε' rounded down, e^-ε' up, every stored value moved a few ulps
// towards "drop"), so both constraints hold exactly for the stored values.
// Values above 1/2 are stored as the complement 1-π(n), so that tiny δ' (even
// below the float64 spacing near 1) is handled with full relative precision.
// Keep draws an exact Bernoulli; lookup is a table index (no loop whose
// length depends on n).
type OptimalSelector struct {
	epsilon, delta float64
	l0             int
	// For n < len(tab): tab[n] ≥ 0 is π(n); tab[n] < 0 is -(1-π(n)), the
	// complement, used once π(n) > 1/2. π(n) = 1 for n ≥ len(tab).
	tab  []float64
	half int64
}

// NewOptimalSelection returns an OptimalSelector (see its documentation).
// epsilon must be in [MinEpsilon, MaxEpsilon], delta in (0, 1),
// maxGroupsPerUnit in [1, MaxGroupsPerUnit]; the π table (until π reaches 1)
// must have fewer than 2^22 entries (it has about 2·ln(1/δ')/ε' entries).
func NewOptimalSelection(epsilon, delta float64, maxGroupsPerUnit int) (PartitionSelector, error) {
	return newOptimalSelection(epsilon, delta, maxGroupsPerUnit)
}

func newOptimalSelection(epsilon, delta float64, l0 int) (*OptimalSelector, error) {
	if err := checkEpsilon("epsilon", epsilon); err != nil {
		return nil, err
	}
	if err := checkDelta("delta", delta); err != nil {
		return nil, err
	}
	if err := checkL0(l0); err != nil {
		return nil, err
	}
	L0 := float64(l0)
	ep := epsilon / L0
	dp := delta / L0
	eLo := math.Nextafter(math.Exp(ep), 0)               // ≤ e^ε' (may be +Inf→MaxFloat64)
	eInvHi := math.Nextafter(math.Exp(-ep), math.Inf(1)) // ≥ e^-ε'
	tooBig := func() error {
		return invalid("epsilon/maxGroupsPerUnit = %v is too small for optimal partition selection with delta/maxGroupsPerUnit = %v (table would exceed %d entries); use NewLaplaceThreshold", ep, dp, maxOptimalTable)
	}
	// Phase 1 alone takes about ln(1 + (e^ε'-1)/(2δ'))/ε' steps; refuse
	// early rather than building a huge table.
	// (In log space: e^ε' may overflow and δ' may be tiny.)
	lx := math.Log(math.Expm1(math.Min(ep, 700))) + math.Max(0, ep-700) - math.Log(2*dp)
	n1 := lx / ep
	if lx < 30 {
		n1 = math.Log1p(math.Exp(lx)) / ep
	}
	if n1 > maxOptimalTable {
		return nil, tooBig()
	}
	tab := []float64{0}

	// Phase 1: π(n) ≤ 1/2, stored directly.
	prev := 0.0
	for {
		if len(tab) >= maxOptimalTable {
			return nil, tooBig()
		}
		// (A) e^ε'·prev + δ', two roundings: lower by 2^-50 relative.
		a := dp
		if prev > 0 {
			a = eLo*prev + dp
		}
		a *= 1 - 0x1p-50
		// (B) 1 - e^-ε'·(1 - prev - δ'): at most four roundings of values
		// ≤ 1; lower by 2^-49 absolute. (B) is only the smaller term when
		// it is ≥ 1/2, so this margin is negligible.
		b := 1 - eInvHi*((1-prev)-dp) - 0x1p-49
		next := math.Min(a, b)
		if next < prev {
			next = prev // π is non-decreasing; prev satisfies both constraints too
		}
		if next > 0.5 {
			// 1 - next is exact (Sterbenz) and ≥ the exact complement.
			tab = append(tab, -(1 - next))
			break
		}
		tab = append(tab, next)
		prev = next
	}

	// Phase 2: c(n) = 1 - π(n) < 1/2. In terms of c the constraints read
	//   (A) c(n) ≥ 1 - e^ε'·(1 - c(n-1)) - δ'
	//   (B) c(n) ≥ e^-ε'·(c(n-1) - δ')
	// so c(n) is the larger of the two (rounded up), or 0 (π = 1).
	c := -tab[len(tab)-1]
	for {
		if len(tab) >= maxOptimalTable {
			return nil, tooBig()
		}
		ca := 1 - eLo*(1-c) - dp // eLo ≤ e^ε' makes this larger: safe
		if ca > -0x1p-50 {
			ca += 0x1p-50
		}
		cb := 0.0
		if t := c - dp; t > 0 {
			cb = eInvHi * t * (1 + 0x1p-50)
		}
		next := math.Max(ca, cb)
		if next <= 0 {
			break // π(n) = 1 from here on
		}
		if next > c {
			next = c
		}
		tab = append(tab, -next)
		c = next
	}
	s := &OptimalSelector{epsilon: epsilon, delta: delta, l0: l0, tab: tab}
	s.half = int64(len(tab))
	for n, e := range tab {
		if e < 0 {
			s.half = int64(n)
			break
		}
	}
	return s, nil
}

// Probability returns π(units), the probability that Keep releases a group
// with that many units (rounded to float64 for display).
func (s *OptimalSelector) Probability(units int64) float64 {
	if units <= 0 {
		return 0
	}
	if units >= int64(len(s.tab)) {
		return 1
	}
	if e := s.tab[units]; e < 0 {
		return 1 + e
	} else {
		return e
	}
}

// Keep releases a group with probability π(units) (exact Bernoulli).
func (s *OptimalSelector) Keep(r *Rand, units int64) (bool, error) {
	if err := checkUnits(units); err != nil {
		return false, err
	}
	if units == 0 {
		return false, nil
	}
	if units >= int64(len(s.tab)) {
		return true, nil
	}
	e := s.tab[units]
	b, err := r.Bernoulli(math.Abs(e))
	if err != nil {
		return false, err
	}
	if e < 0 {
		return !b, nil // kept with probability 1 - (1-π(n))
	}
	return b, nil
}

// Threshold returns the smallest n with π(n) ≥ 1/2 (more precisely, the
// first n where the table switches to the complement, π(n) > 1/2).
func (s *OptimalSelector) Threshold() float64 { return float64(s.half) }

// AlwaysKeepThreshold returns the smallest n with π(n) = 1.
func (s *OptimalSelector) AlwaysKeepThreshold() int64 { return int64(len(s.tab)) }
