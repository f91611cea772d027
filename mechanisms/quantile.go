package mechanisms

import (
	"math"
)

// Quantile returns the index of a bucket holding a DP q-quantile of a
// histogram: the exponential mechanism (McSherry & Talwar 2007; for
// quantiles Smith 2011) over the buckets of a fixed, data-independent grid
// of the value's bounds, with the score
//
//	score(j) = −max(0, below(j) − q·n, q·n − below(j) − mass(j))
//
// where mass(j) is the histogram's mass in bucket j, below(j) the mass of
// the buckets before it and n the total. The score is 0 exactly for the
// buckets that hold the q-quantile (the rank q·n falls inside them) and
// falls by one per unit of mass between a bucket and the quantile's rank.
//
// Sensitivity: a privacy unit whose rows weigh m in total (its values
// capped or scaled so that m ≤ massSensitivity) moves every score by at most
// m, under add/remove and under replace: removing mass b with a of it
// below bucket j and e in it moves below(j) − q·n by −(a − q·b) and
// q·n − below(j) − mass(j) by −(q·b − a − e), each in [−b, b], and adding
// mass moves them the other way; replacing removes one such term and adds
// another, each of the two in [−q·m, (1−q)·m] or its mirror, so the
// change stays within m. A maximum with 0 keeps the bound.
//
// DP guarantee: ε-DP (the exponential mechanism's, see Exponential) for
// histograms that differ by one unit's mass of at most massSensitivity.
// Callers that spread a unit's mass over several histograms (one per
// group) run each at ε divided by the most histograms one unit can change.
//
// Accuracy: with probability at least 1 − β the returned bucket's score is
// at least −(2·massSensitivity/ε)·ln(len(hist)/β), i.e. its rank is within
// that much mass of q·n (QuantileRankError). The value error is that rank
// error read through the data's distribution plus the bucket's width.
func Quantile(r *Rand, epsilon, massSensitivity float64, hist []float64, q float64) (int, error) {
	if !(q >= 0 && q <= 1) {
		return 0, invalid("quantile level must be in [0, 1], got %v", q)
	}
	if len(hist) == 0 {
		return 0, invalid("the histogram must have at least one bucket")
	}
	total := 0.0
	for i, m := range hist {
		if math.IsNaN(m) || math.IsInf(m, 0) || m < 0 {
			return 0, invalid("hist[%d] must be a finite mass ≥ 0, got %v", i, m)
		}
		total += m
	}
	scores := QuantileScores(hist, q, total)
	return Exponential(r, epsilon, massSensitivity, scores)
}

// QuantileScores returns the quantile score of every bucket (see Quantile)
// for a histogram of total mass n.
func QuantileScores(hist []float64, q, n float64) []float64 {
	target := q * n
	scores := make([]float64, len(hist))
	below := 0.0
	for j, m := range hist {
		scores[j] = -math.Max(0, math.Max(below-target, target-below-m))
		below += m
	}
	return scores
}

// QuantileRankError is the rank error bound of Quantile: with probability
// 1 − beta the chosen bucket is within this much mass of the quantile's
// rank q·n.
func QuantileRankError(epsilon, massSensitivity float64, buckets int, beta float64) float64 {
	return 2 * massSensitivity / epsilon * math.Log(float64(buckets)/beta)
}

// QuantilesRounds is what Quantiles divides ε by for m levels: the
// depth, or 2·depth − 1 under replace neighbours (see Quantiles).
func QuantilesRounds(m int, replace bool) int {
	d := QuantilesDepth(m)
	if replace {
		return 2*d - 1
	}
	return d
}

// QuantilesDepth is the number of rounds Quantiles needs for m levels:
// ⌈log2(m + 1)⌉.
func QuantilesDepth(m int) int {
	depth := 0
	for n := m; n > 0; n /= 2 {
		depth++
	}
	return depth
}

// Quantiles returns a bucket index for each of several quantile levels of
// one histogram, together, by the recursive method of Kaplan, Schnapp and
// Stemmer (ICML 2022): release the middle level's quantile, split the
// histogram at its bucket, and recurse on each side with the levels that
// fall there, rescaled to the side's own data. The answers come out in
// the levels' order. levels must be sorted ascending.
//
// Privacy: the sides of a split partition the data — the buckets below
// the chosen one go left, those above go right, and the chosen bucket's
// mass is halved between them, the same way for every unit — so within
// one round of the recursion one unit's mass is spread over the round's
// subproblems, summing to at most its total m ≤ massSensitivity. Each
// subproblem's score moves by at most the unit's mass in it (Quantile),
// and its exponential mechanism is calibrated to massSensitivity at ε_r,
// so the round's losses sum to at most ε_r. The depth is ⌈log2(k+1)⌉ for
// k levels, each round at ε/depth (basic composition over rounds, whose
// subproblems depend on the earlier rounds' answers): ε-DP in all, against
// ε·k for k separate quantiles at ε each.
//
// Under replace neighbours (replace set) a unit's old mass can leave one
// subproblem of a round and its new mass join another, so every round
// after the first can cost twice its ε: the rounds then run at
// ε/(2·depth − 1) (found in review). Callers that already count a
// replacement as two changed histograms (grouped plans, 2·L0) pass false.
// Each subproblem's exponential mechanism also carries its own score
// rounding slack (Exponential: Δu + h with h ≈ Δu·2⁻²⁰), so a round over
// S subproblems costs at most ε_r·(Δu + S·h)/(Δu + h): negligible.
//
// Accuracy: each answer has the rank error of one Quantile at its round's
// ε within its subproblem (QuantileRankError), plus the error of the local
// target rank, which assumes the split fell exactly at its level.
func Quantiles(r *Rand, epsilon, massSensitivity float64, hist []float64, levels []float64, replace bool) ([]int, error) {
	if len(hist) == 0 {
		return nil, invalid("the histogram must have at least one bucket")
	}
	for i, m := range hist {
		if math.IsNaN(m) || math.IsInf(m, 0) || m < 0 {
			return nil, invalid("hist[%d] must be a finite mass ≥ 0, got %v", i, m)
		}
	}
	for i, q := range levels {
		if !(q >= 0 && q <= 1) || i > 0 && q < levels[i-1] {
			return nil, invalid("quantile levels must be sorted and in [0, 1], got %v", levels)
		}
	}
	out := make([]int, len(levels))
	roundEpsilon := epsilon / float64(QuantilesRounds(len(levels), replace))
	// solve answers levels[from:to], which lie in [qlo, qhi], over buckets
	// lo..hi of sub (sub[j-lo] is bucket j's mass in this subproblem).
	var solve func(sub []float64, lo, from, to int, qlo, qhi float64) error
	solve = func(sub []float64, lo, from, to int, qlo, qhi float64) error {
		if from >= to {
			return nil
		}
		mid := (from + to) / 2
		local := 0.5
		if qhi > qlo {
			local = math.Min(1, math.Max(0, (levels[mid]-qlo)/(qhi-qlo)))
		}
		total := 0.0
		for _, m := range sub {
			total += m
		}
		j, err := Exponential(r, roundEpsilon, massSensitivity, QuantileScores(sub, local, total))
		if err != nil {
			return err
		}
		out[mid] = lo + j
		left := append([]float64(nil), sub[:j+1]...)
		left[j] /= 2
		right := append([]float64(nil), sub[j:]...)
		right[0] /= 2
		if err := solve(left, lo, from, mid, qlo, levels[mid]); err != nil {
			return err
		}
		return solve(right, lo+j, mid+1, to, levels[mid], qhi)
	}
	if err := solve(hist, 0, 0, len(levels), 0, 1); err != nil {
		return nil, err
	}
	return out, nil
}
