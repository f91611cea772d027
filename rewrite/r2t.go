package rewrite

import (
	"math"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
)

// R2T for auto bounds (Options.R2T, SET dpproxy.auto_bound = r2t): a
// count or sum of a table whose rows per person the policy leaves to the
// data (max_rows_per_unit: auto), asked without GROUP BY, is answered by
// the race-to-the-top mechanism (mechanisms.R2T, Dong et al., SIGMOD
// 2022) instead of a bound chosen first: one backend query computes the
// sum with each person's contribution truncated at every threshold
// step·2^j, j < R2TThresholds (step = 1 row for counts, hi for sums of
// values clamped to [lo, hi] with lo ≥ 0), and the mechanism releases the
// largest of the noisy, shifted sums. Each threshold spends ε/L; no share
// of ε goes to choosing a bound. Its guarantee: with probability 1 − β the
// answer is at most the truth and at most 4·L·ln(L/β)·τ*/ε below it, τ*
// the largest contribution of one person.
//
// Other shapes (GROUP BY, several aggregates, AVG, quantiles, HAVING,
// expressions) keep the quantile auto bound (autobound.go).

// R2TThresholds is L: thresholds 1, 2, 4, ..., 1024 rows, past
// config.MaxContribution.
var R2TThresholds = int(math.Ceil(math.Log2(config.MaxContribution))) + 1

// R2TBeta is the mechanism's failure probability β.
const R2TBeta = 0.05

// R2TRelease is a plan answered by R2T (see the file comment).
type R2TRelease struct {
	// SQL returns one row: the truncated sum at each threshold.
	SQL string
	// Step is the first threshold, Thresholds their number (L).
	Step       float64
	Thresholds int
	Beta       float64
	// Integer is set for counts: integer noise and answer.
	Integer bool
}

// r2tRelease returns the R2T release of a plan with a pending auto bound,
// or nil when its shape is not one R2T answers.
func (e *emitter) r2tRelease(p *Plan, where string) *R2TRelease {
	if len(p.Groups) > 0 || len(p.Output) != 1 || p.Output[0].Source.Aggregate < 0 || p.Having != nil ||
		len(p.Histograms) > 0 || len(e.a.distinctColumns) > 0 || len(p.Aggregates) != 1 {
		return nil
	}
	q := e.d.QuoteIdent
	a := p.Aggregates[0]
	inner := []string{e.a.unitRef() + " AS " + q("dp_u")}
	rel := &R2TRelease{Step: 1, Thresholds: R2TThresholds, Beta: R2TBeta, Integer: true}
	var contribution string
	switch a.Func {
	case CountStar:
		contribution = "COUNT(*)"
	case CountCol:
		if _, conditional := e.a.valueSQL[a.Column]; conditional {
			return nil
		}
		inner = append(inner, e.a.colRef(a.Column)+" AS "+q("dp_v"))
		contribution = "COUNT(" + q("dp_v") + ")"
	case Sum:
		if _, conditional := e.a.valueSQL[a.Column]; conditional || a.Bounds.Lo < 0 || a.Bounds.Hi <= 0 {
			return nil
		}
		inner = append(inner, e.clamp(a.Column)+" AS "+q("dp_v"))
		contribution = "COALESCE(SUM(" + q("dp_v") + "), 0)"
		rel.Step, rel.Integer = a.Bounds.Hi, a.Column.Type.Integer() && a.Bounds.Hi == math.Trunc(a.Bounds.Hi)
	default:
		return nil
	}
	whereClause := ""
	if where != "" {
		whereClause = " WHERE " + where
	}
	c := q("dp_c")
	sums := make([]string, rel.Thresholds)
	for j := range sums {
		tau := strconv.FormatFloat(rel.Step*math.Ldexp(1, j), 'g', -1, 64)
		sums[j] = "SUM(CASE WHEN " + c + " <= " + tau + " THEN " + c + " ELSE " + tau + " END)"
	}
	rel.SQL = "SELECT " + strings.Join(sums, ", ") + " FROM (SELECT " + q("dp_u") + ", " + contribution + " AS " + c +
		" FROM (SELECT " + strings.Join(inner, ", ") + " FROM " + e.fromSQL(p.Table) + whereClause + ") AS " + q("dp_rows") +
		" GROUP BY " + q("dp_u") + ") AS " + q("dp_units")
	return rel
}
