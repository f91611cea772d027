package engine

import (
	"math"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// IntervalConfidence is the confidence of released intervals.
const IntervalConfidence = 0.95

// columnInterval is the 95 % confidence interval of an output column for
// one group: an aggregate's own, or an expression's (rewrite.Derived.
// Interval) from its m aggregates' intervals, each at 1 − 5 %/m. Keys
// and quantiles have none (nil).
func columnInterval(plan *rewrite.Plan, o rewrite.OutputColumn, keys []any, noisy []float64, mechs []noiser) *sqltypes.Interval {
	const miss = 1 - IntervalConfidence
	switch {
	case o.Source.Aggregate >= 0:
		return aggregateInterval(plan.Measurements, plan.Aggregates[o.Source.Aggregate], noisy, mechs, miss)
	case o.Source.Derived != nil:
		ids := o.Source.Derived.Aggregates()
		if len(ids) == 0 {
			return nil
		}
		aggs := make([]*sqltypes.Interval, len(plan.Aggregates))
		for _, i := range ids {
			aggs[i] = aggregateInterval(plan.Measurements, plan.Aggregates[i], noisy, mechs, miss/float64(len(ids)))
		}
		return o.Source.Derived.Interval(keys, aggs)
	}
	return nil
}

// aggregateInterval is a confidence interval for an aggregate's
// value, computed from its released noisy measurements and their
// mechanisms alone (post-processing). Each measurement's value lies
// within its noise's error bound of the noisy value; when the plan
// measured what bounding removed (rewrite excess measurements), the
// noisy excess, within its own bound, is added, so that the interval is
// for the value before bounding — bias included. Every noisy term is
// taken at 1 − 5 %/k (a union bound over the aggregate's k terms). A
// count or sum spans those ranges; AVG and the variance family take the
// extreme values of the formula over the box of their measurements'
// ranges. A value whose measurements carry no noise has the point
// interval. Quantiles and expressions have none (nil): a quantile's error
// is a rank, which explain states.
func aggregateInterval(ms []rewrite.Measurement, a rewrite.Aggregate, noisy []float64, mechs []noiser, miss float64) *sqltypes.Interval {
	terms, excess := 0, false
	for _, mi := range a.Measurements {
		terms++
		if ms[mi].Excess > 0 {
			terms++
			excess = true
		}
	}
	bound := func(mi int) float64 {
		if mechs[mi] == nil {
			return 0
		}
		return mechs[mi].ErrorBound(1 - miss/float64(terms))
	}
	// span is the range of measurement mi's value around v, its released
	// value: the noise's bound, widened by the excess.
	span := func(mi int, v float64) (lo, hi float64) {
		b := bound(mi)
		lo, hi = v-b, v+b
		if x := ms[mi].Excess - 1; x >= 0 {
			e, be := noisy[x], bound(x)
			elo, ehi := e-be, e+be
			if k := ms[mi].Kind; k == rewrite.MeasureCount || k == rewrite.MeasureUnits {
				elo, ehi = math.Max(0, elo), math.Max(0, ehi) // bounding only drops rows
			}
			lo, hi = lo+elo, hi+ehi
		}
		return lo, hi
	}
	// A count's or sum's interval carries its noisy excess, for sums of
	// rows (SumOverRows).
	excessOf := func(mi int) float64 {
		if x := ms[mi].Excess - 1; x >= 0 {
			return noisy[x]
		}
		return 0
	}
	switch a.Func {
	case rewrite.CountStar, rewrite.CountCol, rewrite.CountDistinctUnit, rewrite.CountDistinctValues:
		lo, hi := span(a.Measurements[0], math.Max(0, math.Round(noisy[a.Measurements[0]])))
		if excess {
			lo, hi = math.Floor(lo), math.Ceil(hi) // a count's interval, widened to whole numbers
		}
		return &sqltypes.Interval{Lo: math.Max(0, lo), Hi: hi, Excess: excessOf(a.Measurements[0])}
	case rewrite.Sum:
		lo, hi := span(a.Measurements[0], noisy[a.Measurements[0]])
		if !excess {
			// The bounded sum has the sign of the bounds (the values
			// before clamping need not).
			if a.Bounds.Lo >= 0 {
				lo = math.Max(0, lo)
			}
			if a.Bounds.Hi <= 0 {
				hi = math.Min(0, hi)
			}
		}
		return &sqltypes.Interval{Lo: lo, Hi: hi, Excess: excessOf(a.Measurements[0])}
	case rewrite.Avg:
		nlo, nhi := span(a.Measurements[0], noisy[a.Measurements[0]])
		slo, shi := span(a.Measurements[1], noisy[a.Measurements[1]])
		mid := (a.Bounds.Lo + a.Bounds.Hi) / 2
		if nlo < 1 {
			if excess {
				return nil // too few values to bound a mean of unclamped values
			}
			return &sqltypes.Interval{Lo: a.Bounds.Lo, Hi: a.Bounds.Hi}
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, nn := range []float64{nlo, nhi} {
			for _, ss := range []float64{slo, shi} {
				v := ss/nn + mid
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if excess {
			return &sqltypes.Interval{Lo: lo, Hi: hi}
		}
		return &sqltypes.Interval{Lo: math.Max(a.Bounds.Lo, lo), Hi: math.Min(a.Bounds.Hi, hi)}
	case rewrite.VarPop, rewrite.VarSamp, rewrite.StddevPop, rewrite.StddevSamp:
		return varianceInterval(a, noisy, []float64{bound(a.Measurements[0]), bound(a.Measurements[1]), bound(a.Measurements[2])})
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
