package engine

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// bounded is what the backend returns for a plan: the bounded
// measurements (a row per group, or none when the plan has only
// quantiles) and one histogram per quantile column.
type bounded struct {
	rows       *backend.Rows
	histograms []*backend.Rows
	// side holds the rows of Plan.SideQueries.
	side []*backend.Rows
	// bias holds the row of Plan.Bias's query.
	bias *backend.Rows
}

// readBounded runs a plan's backend queries.
func readBounded(ctx context.Context, be backend.Backend, plan *rewrite.Plan) (bounded, error) {
	data := bounded{rows: &backend.Rows{}}
	ran := 0
	query := func(sql string, args ...any) (*backend.Rows, error) {
		rows, err := be.Query(ctx, sql, args...)
		if err != nil && ran == 0 && beforeData(err) {
			// Only a failure of the first query is one that no query
			// reached the data before (found in review: a later one's
			// refund would make repeated partial runs free, and their
			// running time depends on the data).
			err = fmt.Errorf("%w: %w", errBeforeData, err)
		}
		ran++
		return rows, err
	}
	if plan.BackendSQL != "" {
		sql, args := plan.BackendSQL, []any(nil)
		if b := plan.Bound; b != nil {
			// Its constants as parameters: one statement, prepared once
			// per backend connection, for every query of this form.
			sql, args = b.SQL, b.Args
		}
		rows, err := query(sql, args...)
		if err != nil {
			return bounded{}, err
		}
		data.rows = rows
	}
	for _, h := range plan.Histograms {
		rows, err := query(h.BackendSQL)
		if err != nil {
			return bounded{}, err
		}
		data.histograms = append(data.histograms, rows)
	}
	for _, sql := range plan.SideQueries {
		rows, err := query(sql)
		if err != nil {
			return bounded{}, err
		}
		data.side = append(data.side, rows)
	}
	if plan.Bias != nil {
		rows, err := query(plan.Bias.SQL)
		if err != nil {
			return bounded{}, err
		}
		data.bias = rows
	}
	return data, nil
}

// groupHistograms indexes each histogram query's rows by group: the
// canonical group key (as groupResult.canon) to the mass per bucket.
func groupHistograms(plan *rewrite.Plan, data bounded) []map[string][]float64 {
	out := make([]map[string][]float64, len(plan.Histograms))
	for hi, h := range plan.Histograms {
		byGroup := map[string][]float64{}
		if hi < len(data.histograms) {
			for _, row := range data.histograms[hi].Values {
				key := rowGroupKey(plan, row)
				hist := byGroup[key]
				if hist == nil {
					hist = make([]float64, h.Grid.Buckets)
					byGroup[key] = hist
				}
				// A bucket index rounding pushed past an end is clamped.
				b := int(math.Max(0, math.Min(float64(h.Grid.Buckets-1), math.Floor(sqltypes.Float(row[len(plan.Groups)])))))
				if mass := sqltypes.Float(row[len(plan.Groups)+1]); mass > 0 && !math.IsInf(mass, 0) {
					hist[b] += mass
				}
			}
		}
		out[hi] = byGroup
	}
	return out
}

// sideValues indexes each side query's value by group.
func sideValues(plan *rewrite.Plan, data bounded) []map[string]float64 {
	out := make([]map[string]float64, len(plan.SideQueries))
	for i := range plan.SideQueries {
		out[i] = map[string]float64{}
		if i < len(data.side) {
			for _, row := range data.side[i].Values {
				out[i][rowGroupKey(plan, row)] = sqltypes.Float(row[len(plan.Groups)])
			}
		}
	}
	return out
}

// rowGroupKey is the canonical key of a backend row whose first columns
// are the group keys in plan order.
func rowGroupKey(plan *rewrite.Plan, row []any) string {
	parts := make([]string, len(plan.Groups))
	for i, g := range plan.Groups {
		parts[i] = canonicalKey(row[i], g.Column.Type)
	}
	return joinKeys(parts)
}

// groupQuantiles releases every quantile of one group: per column, the
// recursive exponential mechanism over the group's histogram (empty when
// the group has no values) for all the column's levels together, at their
// shares of ε over the groups one unit can change. Quantiles of one column
// come out in order of their levels.
func groupQuantiles(plan *rewrite.Plan, hists []map[string][]float64, canon string, r *mechanisms.Rand) ([]float64, error) {
	values := make([]float64, len(plan.Quantiles))
	for hi, h := range plan.Histograms {
		hist := hists[hi][canon]
		if hist == nil {
			hist = make([]float64, h.Grid.Buckets)
		}
		var idx []int
		epsilon := 0.0
		for qi, q := range plan.Quantiles {
			if q.Histogram == hi {
				idx = append(idx, qi)
				epsilon += q.Epsilon / float64(q.ChangedGroups)
			}
		}
		if len(idx) == 0 {
			continue
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(plan.Quantiles[a].Level, plan.Quantiles[b].Level) })
		levels := make([]float64, len(idx))
		for i, qi := range idx {
			levels[i] = plan.Quantiles[qi].Level
		}
		js, err := mechanisms.Quantiles(r, epsilon, plan.Quantiles[idx[0]].MassSensitivity, hist, levels, plan.QuantilesReplace())
		if err != nil {
			return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: "quantile selection failed; no answer was released", Err: err}
		}
		for i, qi := range idx {
			values[qi] = h.Grid.Value(js[i])
		}
	}
	return values, nil
}
