package engine

import (
	"math"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Sums over the keys of a release. The rows of a released GROUP BY are
// disjoint groups, so a COUNT or SUM over several of its keys is the sum
// of their released values: post-processing, at no cost. Its error is
// stated from the noise each row carries (sqltypes.Noise): every row's
// value lies within its mechanism's bound at 1 − 5 %/k of the truth, for
// the k rows summed (a union bound), so the sum lies within the sum of
// those bounds with probability at least 95 %.

// columnNoise describes the noise of each output column that a sum over
// keys can use: a COUNT or SUM measured once, with noise (and, when the
// plan measures it, the excess bounding removed). Nil when no column
// qualifies, or when an outer query moves columns.
func columnNoise(plan *rewrite.Plan, mechs []noiser) []*sqltypes.Noise {
	if plan.Outer != nil {
		return nil
	}
	mechanism := func(m rewrite.Measurement) sqltypes.NoiseMechanism {
		return sqltypes.NoiseMechanism{Gaussian: m.Gaussian, Epsilon: m.Epsilon, Delta: m.Delta, Sensitivity: m.Sensitivity, L2: m.L2}
	}
	var out []*sqltypes.Noise
	for i, o := range plan.Output {
		if o.Source.Aggregate < 0 {
			continue
		}
		a := plan.Aggregates[o.Source.Aggregate]
		if a.Func != rewrite.CountStar && a.Func != rewrite.CountCol && a.Func != rewrite.Sum || len(a.Measurements) != 1 {
			continue
		}
		mi := a.Measurements[0]
		m := plan.Measurements[mi]
		if mechs[mi] == nil {
			continue
		}
		n := &sqltypes.Noise{Mechanism: mechanism(m), Count: a.Func != rewrite.Sum}
		if x := m.Excess - 1; x >= 0 {
			if mechs[x] == nil {
				continue
			}
			e := mechanism(plan.Measurements[x])
			n.Excess = &e
		}
		switch {
		case a.Func != rewrite.Sum || a.Bounds.Lo >= 0:
			n.Sign = 1
		case a.Bounds.Hi <= 0:
			n.Sign = -1
		}
		// Released rounded as typedNumber rounds (an integer type, or
		// numeric over an integer column) from a measurement not whole.
		rounded := o.Type.Integer() || o.Type == sqltypes.Numeric && a.Column != nil && a.Column.Type.Integer()
		if rounded && !m.Integer {
			n.Rounding = 0.5
		}
		if out == nil {
			out = make([]*sqltypes.Noise, len(plan.Output))
		}
		out[i] = n
	}
	return out
}

// SumOverRows is the sum of column col of a release over the rows
// listed, and an interval that holds the sum of their true values (before
// bounding, when the column measured its excess) with probability at
// least 1 − miss: every noisy term — each row's value, and its excess —
// within its mechanism's bound at 1 − miss/terms. ok is false when the
// column carries no noise description or a value is not a number.
func SumOverRows(res *sqltypes.Result, rows []int, col int, miss float64) (sum float64, iv sqltypes.Interval, ok bool) {
	if col >= len(res.Noise) || res.Noise[col] == nil || len(rows) == 0 {
		return 0, iv, false
	}
	n := res.Noise[col]
	terms := len(rows)
	if n.Excess != nil {
		terms *= 2
	}
	bound := func(m sqltypes.NoiseMechanism) (float64, bool) {
		mech, err := measurementMechanism(rewrite.Measurement{Gaussian: m.Gaussian, Epsilon: m.Epsilon, Delta: m.Delta, Sensitivity: m.Sensitivity, L2: m.L2})
		if err != nil {
			return 0, false
		}
		return mech.ErrorBound(1 - miss/float64(terms)), true
	}
	b, ok := bound(n.Mechanism)
	if !ok {
		return 0, iv, false
	}
	b += n.Rounding
	be := 0.0
	if n.Excess != nil {
		if be, ok = bound(*n.Excess); !ok {
			return 0, iv, false
		}
	}
	for _, r := range rows {
		v, isNumber := sqltypes.Number(res.Rows[r][col])
		if !isNumber {
			return 0, iv, false
		}
		lo, hi := v-b, v+b
		switch {
		case n.Excess != nil:
			if r >= len(res.Intervals) || col >= len(res.Intervals[r]) || res.Intervals[r][col] == nil {
				return 0, iv, false
			}
			e := res.Intervals[r][col].Excess
			elo, ehi := e-be, e+be
			if n.Count {
				elo, ehi = math.Max(0, elo), math.Max(0, ehi) // bounding only drops rows
			}
			lo, hi = lo+elo, hi+ehi
			if n.Count {
				lo, hi = math.Max(0, math.Floor(lo)), math.Ceil(hi)
			}
		case n.Sign > 0:
			lo = math.Max(0, lo)
		case n.Sign < 0:
			hi = math.Min(0, hi)
		}
		sum, iv.Lo, iv.Hi = sum+v, iv.Lo+lo, iv.Hi+hi
	}
	return sum, iv, true
}

// AnswerSumOverKeys answers plan — a DP query without GROUP BY whose
// aggregates are COUNT and SUM, and expressions of them — from rows of
// an earlier release base: aggregate i is the sum of base column
// columns[i] over the rows. Each output aggregate's interval is a 95 %
// one; an expression's takes its m aggregates' at 1 − 5 %/m. ok is false
// when the plan or base does not allow it.
func AnswerSumOverKeys(plan *rewrite.Plan, base *sqltypes.Result, rows []int, columns []int) (*sqltypes.Result, bool) {
	const miss = 1 - IntervalConfidence
	if len(plan.Groups) > 0 || plan.Having != nil || plan.Outer != nil || plan.Bias != nil || len(columns) != len(plan.Aggregates) {
		return nil, false
	}
	values := make([]any, len(plan.Aggregates))
	for i, a := range plan.Aggregates {
		if columns[i] < 0 {
			return nil, false
		}
		sum, _, ok := SumOverRows(base, rows, columns[i], miss)
		if !ok {
			return nil, false
		}
		switch a.Func {
		case rewrite.CountStar, rewrite.CountCol:
			values[i] = int64(math.Round(sum))
		case rewrite.Sum:
			values[i] = typedDerived(sum, a.Type)
		default:
			return nil, false
		}
	}
	// intervals gives each aggregate's interval at 1 − miss/m.
	intervals := func(ids []int) []*sqltypes.Interval {
		out := make([]*sqltypes.Interval, len(plan.Aggregates))
		for _, i := range ids {
			_, iv, _ := SumOverRows(base, rows, columns[i], miss/float64(len(ids)))
			out[i] = &iv
		}
		return out
	}
	res := &sqltypes.Result{}
	row := make([]any, len(plan.Output))
	ivs := make([]*sqltypes.Interval, len(plan.Output))
	for i, o := range plan.Output {
		res.Columns = append(res.Columns, sqltypes.Column{Name: o.Name, Type: o.Type})
		switch {
		case o.Source.Aggregate >= 0:
			row[i] = typedDerived(values[o.Source.Aggregate], o.Type)
			ivs[i] = intervals([]int{o.Source.Aggregate})[o.Source.Aggregate]
		case o.Source.Derived != nil:
			v, err := o.Source.Derived.Eval([]any{}, values)
			if err != nil {
				v = nil
			}
			row[i] = typedDerived(v, o.Type)
			if ids := o.Source.Derived.Aggregates(); len(ids) > 0 {
				ivs[i] = o.Source.Derived.Interval([]any{}, intervals(ids))
			}
		default:
			return nil, false
		}
	}
	res.Rows = [][]any{row}
	res.Intervals = [][]*sqltypes.Interval{ivs}
	res.Tag = "SELECT 1"
	return res, true
}
