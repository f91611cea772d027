package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// errBeforeData marks a failure before any query reached the data: the
// backend was unavailable, or refused the statement while preparing it.
// Nothing released or charged depends on it: the query is refunded.
var errBeforeData = errors.New("the query did not reach the data")

// beforeData reports whether a plan's first backend query failed before
// reading any row (beforeData errors of later queries do not count: the
// queries before them ran).
func beforeData(err error) bool {
	return errors.Is(err, backend.ErrUnavailable) || backend.IsStatementError(err)
}

// answerPlan runs a plan on the backend and releases it: the auto bound
// first when the plan has one, then the bounded queries, then the noise.
// A failure wraps errBeforeData when no query reached the data. mech gives
// each measurement's mechanism.
func answerPlan(ctx context.Context, be backend.Backend, plan *rewrite.Plan, r *mechanisms.Rand, mech calibrate) (*sqltypes.Result, error) {
	// No result caps here: the bounded result has a row per group found in
	// the data, before partition selection, so an error at a cap would
	// tell the exact number of groups. Only released rows are capped.
	if plan.R2T != nil {
		return answerR2T(ctx, be, plan, r)
	}
	if plan.RR != nil {
		return answerRR(ctx, be, plan, r)
	}
	var notice string
	if plan.Auto != nil {
		rebound, msg, err := chooseRowBound(ctx, be, plan, r)
		if err != nil {
			return nil, err
		}
		plan, notice = rebound, msg
	}
	data, err := readBounded(ctx, be, plan)
	if err != nil {
		if errors.Is(err, errBeforeData) && notice == "" {
			return nil, fmt.Errorf("%w: %w", errBeforeData, backendError(err))
		}
		return nil, backendError(err)
	}
	res, err := release(plan, data, r, mech)
	if err != nil {
		return nil, err
	}
	if notice != "" {
		res.Notices = append([]string{notice}, res.Notices...)
	}
	return res, nil
}

// chooseRowBound runs a plan's auto bound (rewrite.AutoBound): the
// histogram of people's largest groups, its DP quantile as Linf, and the
// plan rebound at it. It returns the rebound plan and a notice saying
// which bound was chosen.
func chooseRowBound(ctx context.Context, be backend.Backend, plan *rewrite.Plan, r *mechanisms.Rand) (*rewrite.Plan, string, error) {
	a := plan.Auto
	rows, err := be.Query(ctx, a.SQL)
	if err != nil {
		if beforeData(err) {
			return nil, "", fmt.Errorf("%w: %w", errBeforeData, backendError(err))
		}
		return nil, "", backendError(err)
	}
	linf, err := pickRowBound(a, rows.Values, r)
	if err != nil {
		return nil, "", err
	}
	rebound, err := a.Rebind(linf)
	if err != nil {
		return nil, "", err
	}
	what := "each person's largest group"
	if len(plan.Groups) == 0 {
		what = "each person's rows"
	}
	return rebound, fmt.Sprintf("dpproxy: rows per person per group bounded at %d (max_rows_per_unit: auto: the DP %g quantile of %s, at ε = %.3g of the query's)", linf, a.Level, what, a.Epsilon), nil
}

// pickRowBound is the auto bound's exponential mechanism: bucket j of the
// grid holds the people whose largest group has more rows than Grid[j-1]
// and at most Grid[j]; each person weighs 1 (mechanisms.Quantile's score),
// and candidate j's weight is multiplied by the prior AutoPrior^j. The
// bound is the chosen bucket's Grid value.
func pickRowBound(a *rewrite.AutoBound, rows [][]any, r *mechanisms.Rand) (int, error) {
	hist := make([]float64, len(a.Grid))
	for _, row := range rows {
		m := min(max(int(math.Round(sqltypes.Float(row[0]))), 1), a.Max)
		hist[sort.SearchInts(a.Grid, m)] += sqltypes.Float(row[1])
	}
	total := 0.0
	for _, m := range hist {
		total += m
	}
	scores := mechanisms.QuantileScores(hist, a.Level, total)
	for j := range scores {
		scores[j] += 2 / a.Epsilon * float64(j) * math.Log(rewrite.AutoPrior) // the prior (rewrite/autobound.go)
	}
	j, err := mechanisms.Exponential(r, a.Epsilon, 1, scores)
	if err != nil {
		return 0, &sqlerr.Error{Code: sqlerr.InternalError, Message: "choosing the contribution bound failed; no answer was released", Err: err}
	}
	return a.Grid[j], nil
}
