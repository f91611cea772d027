package engine

import (
	"math"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// IntervalConfidence is the confidence of released intervals.
const IntervalConfidence = 0.95

// aggregateInterval is a 95 % confidence interval for an aggregate's
// exact value after bounding, computed from its released noisy
// measurements and their mechanisms alone (post-processing): the noise's
// error bound around a count or sum; for AVG and the variance family, the
// extreme values of the formula over the error boxes of its measurements,
// each at 1 − 5 %/k (a union bound over k measurements). A value whose
// measurements carry no noise has the point interval. Quantiles and
// expressions have none (nil): a quantile's error is a rank, which
// explain states.
func aggregateInterval(a rewrite.Aggregate, noisy []float64, mechs []noiser) *sqltypes.Interval {
	bound := func(mi, k int) float64 {
		if mechs[mi] == nil {
			return 0
		}
		return mechs[mi].ErrorBound(1 - (1-IntervalConfidence)/float64(k))
	}
	switch a.Func {
	case rewrite.CountStar, rewrite.CountCol, rewrite.CountDistinctUnit, rewrite.CountDistinctValues:
		v := math.Max(0, math.Round(noisy[a.Measurements[0]]))
		b := bound(a.Measurements[0], 1)
		return &sqltypes.Interval{Lo: math.Max(0, v-b), Hi: v + b}
	case rewrite.Sum:
		v := noisy[a.Measurements[0]]
		b := bound(a.Measurements[0], 1)
		lo, hi := v-b, v+b
		if a.Bounds.Lo >= 0 {
			lo = math.Max(0, lo)
		}
		if a.Bounds.Hi <= 0 {
			hi = math.Min(0, hi)
		}
		return &sqltypes.Interval{Lo: lo, Hi: hi}
	case rewrite.Avg:
		n, s := noisy[a.Measurements[0]], noisy[a.Measurements[1]]
		bn, bs := bound(a.Measurements[0], 2), bound(a.Measurements[1], 2)
		mid := (a.Bounds.Lo + a.Bounds.Hi) / 2
		if n-bn < 1 {
			return &sqltypes.Interval{Lo: a.Bounds.Lo, Hi: a.Bounds.Hi}
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, nn := range []float64{n - bn, n + bn} {
			for _, ss := range []float64{s - bs, s + bs} {
				v := ss/nn + mid
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		return &sqltypes.Interval{Lo: math.Max(a.Bounds.Lo, lo), Hi: math.Min(a.Bounds.Hi, hi)}
	case rewrite.VarPop, rewrite.VarSamp, rewrite.StddevPop, rewrite.StddevSamp:
		return varianceInterval(a, noisy, []float64{bound(a.Measurements[0], 3), bound(a.Measurements[1], 3), bound(a.Measurements[2], 3)})
	}
	return nil
}

// varianceInterval evaluates the variance over the corners of the
// measurements' error box (and a centred sum of 0 when the box spans it,
// where (s/n)² is least), clamped to what values in the bounds allow.
func varianceInterval(a rewrite.Aggregate, noisy, b []float64) *sqltypes.Interval {
	half := (a.Bounds.Hi - a.Bounds.Lo) / 2
	top := half * half
	n, s, q := noisy[a.Measurements[0]], noisy[a.Measurements[1]], noisy[a.Measurements[2]]
	finish := func(v float64, count float64) float64 {
		v = math.Min(top, math.Max(0, v))
		if (a.Func == rewrite.VarSamp || a.Func == rewrite.StddevSamp) && count > 1 {
			v *= count / (count - 1)
		}
		if a.Func == rewrite.StddevPop || a.Func == rewrite.StddevSamp {
			return math.Sqrt(v)
		}
		return v
	}
	if n-b[0] < 2 {
		return &sqltypes.Interval{Lo: 0, Hi: finish(top, 2)}
	}
	sums := []float64{s - b[1], s + b[1]}
	if s-b[1] < 0 && s+b[1] > 0 {
		sums = append(sums, 0)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, nn := range []float64{n - b[0], n + b[0]} {
		for _, ss := range sums {
			for _, qq := range []float64{q - b[2], q + b[2]} {
				v := finish(qq/nn-(ss/nn)*(ss/nn), nn)
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	return &sqltypes.Interval{Lo: lo, Hi: hi}
}
