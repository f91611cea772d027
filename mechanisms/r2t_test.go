package mechanisms

import (
	"math"
	"slices"
	"testing"
)

// truncatedSums is Q(τ_j) for people's contributions at thresholds
// step·2^j, j < L.
func truncatedSums(contrib []float64, step float64, L int) []float64 {
	out := make([]float64, L)
	for j := range out {
		tau := R2TThreshold(step, j)
		for _, c := range contrib {
			out[j] += math.Min(c, tau)
		}
	}
	return out
}

// The utility guarantee, statistically: over many releases, the answer
// overshoots the truth in at most about β of them, and stays within the
// error bound 4·L·ln(L/β)·τ*/ε below it in at least 1 − β of them.
func TestR2TUtilityGuarantee(t *testing.T) {
	r := Seeded(7)
	// 200,000 people with 1..5 rows, ten with 300: τ* = 300, and the
	// bound (71,196) well below the truth (600,000 + 3,000), so that
	// both sides of the guarantee can fail.
	var contrib []float64
	for i := 0; i < 200000; i++ {
		contrib = append(contrib, float64(1+i%5))
	}
	for i := 0; i < 10; i++ {
		contrib = append(contrib, 300)
	}
	truth := 0.0
	for _, c := range contrib {
		truth += c
	}
	const eps, beta, L = 1.0, 0.05, 11 // thresholds 1..1024
	sums := truncatedSums(contrib, 1, L)
	bound := R2TErrorBound(eps, beta, L, 300)
	const runs = 4000
	over, far := 0, 0
	var mean float64
	for i := 0; i < runs; i++ {
		got, err := R2T(r, eps, beta, 1, sums, true)
		if err != nil {
			t.Fatal(err)
		}
		if got != math.Floor(got) {
			t.Fatalf("an integer query released %v", got)
		}
		if got > truth {
			over++
		}
		if got < truth-bound {
			far++
		}
		mean += got / runs
	}
	// Binomial(4000, 0.05): mean 200, sd 14; the guarantee is ≤ β each.
	if over > 250 || far > 250 {
		t.Errorf("over the truth %d times, beyond the bound %d times in %d (β = %g)", over, far, runs, beta)
	}
	// Better than the bound in practice: the mean is within a quarter of
	// it, below the truth.
	if mean > truth || truth-mean > bound/4 {
		t.Errorf("mean answer %v, truth %v, bound %v", mean, truth, bound)
	}
	t.Logf("truth %v, mean %.1f (%.2f%% low), bound %.0f, over %d, beyond %d", truth, mean, 100*(truth-mean)/truth, bound, over, far)
}

// Each threshold's noise has scale L·τ_j/ε: the spread of Q̃_j, seen
// through a one-threshold run (L = 1: the answer is max(0, Q + Lap(τ/ε)
// − ln(1/β)·τ/ε)), matches Laplace's variance 2b².
func TestR2TNoiseScale(t *testing.T) {
	r := Seeded(11)
	const eps, beta, tau = 0.5, 0.05, 8.0
	q := 100000.0 // far above 0: the max with 0 never binds
	const runs = 20000
	var sum, sq float64
	for i := 0; i < runs; i++ {
		got, err := R2T(r, eps, beta, tau, []float64{q}, false)
		if err != nil {
			t.Fatal(err)
		}
		d := got - (q - R2TShift(eps, beta, 1, tau))
		sum += d
		sq += d * d
	}
	mean, variance := sum/runs, sq/runs-(sum/runs)*(sum/runs)
	b := tau / eps
	if math.Abs(mean) > 5*math.Sqrt(2)*b/math.Sqrt(runs) || math.Abs(variance/(2*b*b)-1) > 0.06 {
		t.Errorf("noise mean %v, variance %v, want 0 and %v", mean, variance, 2*b*b)
	}
}

func TestR2TRejectsBadArguments(t *testing.T) {
	r := Seeded(1)
	for _, c := range []struct {
		eps, beta, step float64
		sums            []float64
	}{
		{1, 0.05, 1, nil},
		{1, 0, 1, []float64{1}},
		{1, 1, 1, []float64{1}},
		{1, 0.05, 0, []float64{1}},
		{0, 0.05, 1, []float64{1}},
		{1, 0.05, 1, []float64{math.NaN()}},
	} {
		if _, err := R2T(r, c.eps, c.beta, c.step, c.sums, false); err == nil {
			t.Errorf("R2T(%v, %v, %v, %v) accepted", c.eps, c.beta, c.step, c.sums)
		}
	}
}

// Each threshold spends ε/L: where the first threshold's value wins (a
// sum no person's truncation changes), the spread of the answer is that
// of Laplace noise of scale L·τ_0/ε, interquartile range 2·ln 2·L/ε
// (with ε at each threshold, as a bug would spend, it is L times
// narrower).
func TestR2TSplitsEpsilonOverThresholds(t *testing.T) {
	r := Seeded(5)
	const eps, beta, L = 1.0, 0.05, 11
	sums := make([]float64, L)
	for j := range sums {
		sums[j] = 1e6
	}
	const runs = 20000
	d := make([]float64, runs)
	for i := range d {
		got, err := R2T(r, eps, beta, 1, sums, false)
		if err != nil {
			t.Fatal(err)
		}
		d[i] = got - (1e6 - R2TShift(eps, beta, L, 1))
	}
	slices.Sort(d)
	iqr := d[3*runs/4] - d[runs/4]
	if want := 2 * math.Ln2 * L / eps; math.Abs(iqr/want-1) > 0.15 {
		t.Errorf("interquartile range %v, want %v (Laplace of scale L/ε)", iqr, want)
	}
}
