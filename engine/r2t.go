package engine

import (
	"context"
	"fmt"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// answerR2T runs a plan answered by R2T (rewrite/r2t.go): the truncated
// sums at every threshold, then mechanisms.R2T at the plan's whole ε. A
// failure wraps errBeforeData when the query did not reach the data.
func answerR2T(ctx context.Context, be backend.Backend, plan *rewrite.Plan, r *mechanisms.Rand) (*sqltypes.Result, error) {
	rel := plan.R2T
	rows, err := be.Query(ctx, rel.SQL)
	if err != nil {
		if beforeData(err) {
			return nil, fmt.Errorf("%w: %w", errBeforeData, backendError(err))
		}
		return nil, backendError(err)
	}
	if len(rows.Values) != 1 || len(rows.Values[0]) != rel.Thresholds {
		return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: "unexpected backend result; no answer was released"}
	}
	sums := make([]float64, rel.Thresholds)
	for j, v := range rows.Values[0] {
		sums[j] = sqltypes.Float(v) // NULL (no rows): 0
	}
	v, err := mechanisms.R2T(r, plan.Epsilon, rel.Beta, rel.Step, sums, rel.Integer)
	if err != nil {
		return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: "noise generation failed; no answer was released", Err: err}
	}
	o := plan.Output[0]
	a := plan.Aggregates[0]
	value := any(int64(v))
	if a.Func == rewrite.Sum {
		value = typedNumber(v, o.Type, rel.Integer)
	}
	res := &sqltypes.Result{
		Columns: []sqltypes.Column{{Name: o.Name, Type: o.Type}},
		Rows:    [][]any{{value, nil}}, // the value, then its (no) interval
		Notices: []string{fmt.Sprintf("dpproxy: answered by R2T (max_rows_per_unit: auto, dpproxy.auto_bound = r2t): the largest of %d noisy sums truncated at %g to %g per person; with probability %g it is at most the truth and at most 4·%d·ln(%d/%g)·τ*/ε below it, τ* the largest contribution of one person",
			rel.Thresholds, rel.Step, mechanisms.R2TThreshold(rel.Step, rel.Thresholds-1), 1-rel.Beta, rel.Thresholds, rel.Thresholds, rel.Beta)},
	}
	// LIMIT and an outer query apply as to any release (found in review).
	finishRows(res, plan)
	res.Tag = fmt.Sprintf("SELECT %d", len(res.Rows))
	return res, nil
}
