package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Randomized-response releases (rewrite/rr.go): each record read is
// randomized column by column with k-ary RR, dummy records (each column
// uniform over its domain) are added in a number the record count cannot
// be read from, and the rows are shuffled.

// rrDomain is one column's public domain: its values in output form and
// the index of each value's canonical key.
type rrDomain struct {
	values []any
	index  map[string]int
}

func rrDomains(plan *rewrite.Plan) ([]rrDomain, error) {
	out := make([]rrDomain, len(plan.RR.Columns))
	for i, c := range plan.RR.Columns {
		d := rrDomain{index: map[string]int{}}
		for _, k := range c.Domain {
			v, err := typedKey(k, c.Column.Type)
			if c.Width != 0 {
				v, err = binValue(k, plan.Output[i].Type)
			}
			if err != nil {
				return nil, fmt.Errorf("key %q of %s: %w", k, c.Column.Name, err)
			}
			key := canonicalKey(v, c.Column.Type)
			if c.Width != 0 {
				key = canonicalKey(v, config.TypeFloat)
			}
			if _, dup := d.index[key]; dup {
				continue // one value written two ways ("1", "01"): once
			}
			d.index[key] = len(d.values)
			d.values = append(d.values, v)
		}
		out[i] = d
	}
	return out, nil
}

// binValue is a bin's start in the output type (whole for an integer
// column binned by a whole width).
func binValue(start string, typ sqltypes.Type) (any, error) {
	f, err := strconv.ParseFloat(start, 64)
	if err != nil {
		return nil, err
	}
	if typ.Integer() {
		return int64(f), nil
	}
	return f, nil
}

// rrKey is the canonical key of a value of an RR column: for a binned
// column, the start of the bin of the value clamped to the bounds; ""
// (no value of the domain) for NULL or a value that is not a number.
func rrKey(c rewrite.RRColumn, typ sqltypes.Type, v any) string {
	if c.Width == 0 {
		return canonicalKey(v, c.Column.Type)
	}
	x, ok := sqltypes.Number(v)
	ok = ok && !math.IsNaN(x)
	if !ok {
		return ""
	}
	x = math.Min(c.Column.Bounds.Hi, math.Max(c.Column.Bounds.Lo, x))
	b, err := binValue(strconv.FormatFloat(math.Floor(x/c.Width)*c.Width, 'f', -1, 64), typ)
	if err != nil {
		return ""
	}
	return canonicalKey(b, config.TypeFloat)
}

// answerRR reads the records and releases them randomized.
func answerRR(ctx context.Context, be backend.Backend, plan *rewrite.Plan, r *mechanisms.Rand) (*sqltypes.Result, error) {
	domains, err := rrDomains(plan)
	if err != nil {
		return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: "the policy's keys do not parse; nothing was released", Err: err}
	}
	rows, err := be.Query(ctx, plan.BackendSQL)
	if err != nil {
		if beforeData(err) {
			return nil, fmt.Errorf("%w: %w", errBeforeData, backendError(err))
		}
		return nil, backendError(err)
	}
	return releaseRR(plan, domains, rows.Values, r)
}

// releaseRR randomizes records (each a row of the columns' values), adds
// the dummies and shuffles.
func releaseRR(plan *rewrite.Plan, domains []rrDomain, records [][]any, r *mechanisms.Rand) (*sqltypes.Result, error) {
	rr := plan.RR
	failed := func(err error) error {
		return &sqlerr.Error{Code: sqlerr.InternalError, Message: "noise generation failed; no answer was released", Err: err}
	}
	shift, lambda := rr.Shift()
	z, err := r.TwoSidedGeometric(lambda)
	if err != nil {
		return nil, failed(err)
	}
	dummies := max(0, shift+z)
	out := make([][]any, 0, int64(len(records))+dummies)
	for _, rec := range records {
		row := make([]any, len(domains))
		for j, d := range domains {
			k := len(d.values)
			truth, known := d.index[rrKey(rr.Columns[j], plan.Output[j].Type, rec[j])]
			var idx int
			if !known {
				// NULL or outside the domain: reported as a dummy's value.
				u, err := r.Uint64n(uint64(k))
				if err != nil {
					return nil, failed(err)
				}
				idx = int(u)
			} else if idx, err = randomizedResponse(r, truth, k, rr.ColumnEpsilon); err != nil {
				return nil, failed(err)
			}
			row[j] = d.values[idx]
		}
		out = append(out, row)
	}
	for i := int64(0); i < dummies; i++ {
		row := make([]any, len(domains))
		for j, d := range domains {
			u, err := r.Uint64n(uint64(len(d.values)))
			if err != nil {
				return nil, failed(err)
			}
			row[j] = d.values[u]
		}
		out = append(out, row)
	}
	// Fisher–Yates: neither the backend's order nor the dummies' place
	// tells a record from a dummy.
	for i := len(out) - 1; i > 0; i-- {
		j, err := r.Uint64n(uint64(i + 1))
		if err != nil {
			return nil, failed(err)
		}
		out[i], out[j] = out[j], out[i]
	}
	res := &sqltypes.Result{Rows: out, Tag: fmt.Sprintf("SELECT %d", len(out))}
	for _, o := range plan.Output {
		res.Columns = append(res.Columns, sqltypes.Column{Name: o.Name, Type: o.Type})
	}
	var keeps []string
	for j, d := range domains {
		keeps = append(keeps, fmt.Sprintf("%s %.4g", plan.Output[j].Name, rewrite.KeepProbability(rr.ColumnEpsilon, len(d.values))))
	}
	res.Notices = []string{fmt.Sprintf("randomized response: each value is kept with probability (%s), else replaced by another of its column's values at random; dummy records hide how many there are; SELECT * FROM dpproxy.rr_counts debiases this release's counts", strings.Join(keeps, ", "))}
	return res, nil
}

// explainRR describes an RR release: per column, its domain size, keep
// probability and the estimator; then the dummies.
func explainRR(plan *rewrite.Plan, res *sqltypes.Result) {
	rr := plan.RR
	for _, c := range rr.Columns {
		k := len(c.Domain)
		p, q := rewrite.KeepProbability(rr.ColumnEpsilon, k), rewrite.FlipProbability(rr.ColumnEpsilon, k)
		res.Rows = append(res.Rows, []any{"rr(" + c.Column.Name + ")",
			fmt.Sprintf("%d values; kept with p = %.4g, each other value with q = %.4g; count of v estimated by (c_v − N·q − μ·(1/k − q))/(p − q), N rows released, μ the dummies' mean (dpproxy.rr_counts)", k, p, q),
			"k-ary randomized response", float64(rr.RowsPerUnit), rr.ColumnEpsilon, nil, nil})
	}
	shift, lambda := rr.Shift()
	mean, _ := rrDummyMoments(rr)
	res.Rows = append(res.Rows, []any{"dummy records", fmt.Sprintf("max(0, %d + Z) records, each column uniform over its values; mean %.1f", shift, mean),
		"two-sided geometric", float64(rr.CountSensitivity), rr.CountEpsilon, 1 / lambda, nil})
}

// randomizedResponse is k-ary RR of the value at index truth: kept with
// probability e^ε/(e^ε + k − 1), else one of the k − 1 others uniformly.
func randomizedResponse(r *mechanisms.Rand, truth, k int, eps float64) (int, error) {
	kept, err := r.Bernoulli(rewrite.KeepProbability(eps, k))
	if err != nil || kept {
		return truth, err
	}
	u, err := r.Uint64n(uint64(k - 1))
	if err != nil {
		return 0, err
	}
	if int(u) >= truth {
		u++
	}
	return int(u), nil
}

// RREstimate is the debiased count of one value of one column of an RR
// release, with a 95 % interval (normal approximation).
type RREstimate struct {
	Column   string
	Value    any
	Released int64
	Estimate float64
	Lo, Hi   float64
}

// RREstimates debiases the counts of each column's values in an RR
// release's rows: with N rows released, keep probability p and flip
// probability q (to each other value), and μ the dummies' mean number,
// n̂_v = (c_v − N·q − μ·(1/k − q)) / (p − q), which is unbiased: given D
// dummies, E[c_v] = n_v·(p − q) + N·q + D·(1/k − q). A record whose value
// is NULL or outside the domain is reported as a dummy's is, so it adds
// 1/k to every value's estimate.
func RREstimates(plan *rewrite.Plan, res *sqltypes.Result) ([]RREstimate, error) {
	if plan.RR == nil {
		return nil, fmt.Errorf("engine: not a randomized-response release")
	}
	domains, err := rrDomains(plan)
	if err != nil {
		return nil, err
	}
	rr := plan.RR
	mean, variance := rrDummyMoments(rr)
	n := float64(len(res.Rows))
	var out []RREstimate
	for j, d := range domains {
		k := len(d.values)
		p, q := rewrite.KeepProbability(rr.ColumnEpsilon, k), rewrite.FlipProbability(rr.ColumnEpsilon, k)
		counts := make([]int64, k)
		for _, row := range res.Rows {
			if i, ok := d.index[rrKey(rr.Columns[j], plan.Output[j].Type, row[j])]; ok {
				counts[i]++
			}
		}
		records := math.Max(0, n-mean)
		for i, v := range d.values {
			c := float64(counts[i])
			est := (c - n*q - mean*(1/float64(k)-q)) / (p - q)
			// Var(c_v) for n_v records of v among the others, D dummies;
			// and the dummies' spread through μ.
			nv := math.Min(records, math.Max(0, est))
			vc := nv*p*(1-p) + (records-nv)*q*(1-q) + mean*(1/float64(k))*(1-1/float64(k)) + variance*math.Pow(1/float64(k)-q, 2)
			half := 1.96 * math.Sqrt(vc) / (p - q)
			out = append(out, RREstimate{Column: plan.Output[j].Name, Value: v, Released: counts[i], Estimate: est, Lo: est - half, Hi: est + half})
		}
	}
	return out, nil
}

// rrDummyMoments is the mean and variance of the number of dummies,
// max(0, T + Z): E = T + q^{T+1}/((1+q)(1−q)) exactly (the truncation's
// part), and Z's variance 2q/(1−q)², which the truncation only lowers.
func rrDummyMoments(rr *rewrite.RRRelease) (mean, variance float64) {
	shift, lambda := rr.Shift()
	q := math.Exp(-lambda)
	mean = float64(shift) + math.Pow(q, float64(shift+1))/((1+q)*(1-q))
	return mean, 2 * q / ((1 - q) * (1 - q))
}
