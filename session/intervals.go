package session

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Intervals on request (SET dpproxy.intervals): the engine attaches to
// every DP answer the 95 % confidence interval of each aggregate column,
// computed from the released values and the noise's calibration alone.
// While the setting is on, the session's plans also measure what
// contribution bounding removed, with a tenth of each query's ε
// (rewrite.Options.BiasBounds), so that the intervals cover the bias as
// well as the noise; the query's ε is unchanged. The session shows them
// as a notice — a PostgreSQL NOTICE, or a MySQL warning — or as two more
// columns after each aggregate.

// intervalColumns lists, for a plan's columns, whether each gets interval
// columns: aggregates do, and arithmetic over them (ratios, shares,
// differences); keys, quantiles and other expressions do not.
func intervalColumns(plan *rewrite.Plan) []bool {
	cols := plan.Columns()
	out := make([]bool, len(cols))
	for i, c := range cols {
		switch {
		case c.Source.Aggregate >= 0:
			out[i] = plan.Aggregates[c.Source.Aggregate].Func != rewrite.QuantileAgg
		case c.Source.Derived != nil:
			out[i] = c.Type != sqltypes.Text && c.Source.Derived.HasInterval()
		}
	}
	return out
}

// describeWithIntervals is the column list of a plan's answer in
// "columns" mode: each aggregate followed by <name>_lo95 and <name>_hi95.
func describeWithIntervals(plan *rewrite.Plan) []sqltypes.Column {
	var out []sqltypes.Column
	with := intervalColumns(plan)
	for i, c := range plan.Columns() {
		out = append(out, sqltypes.Column{Name: c.Name, Type: c.Type})
		if with[i] {
			out = append(out, sqltypes.Column{Name: c.Name + "_lo95", Type: sqltypes.Float8}, sqltypes.Column{Name: c.Name + "_hi95", Type: sqltypes.Float8})
		}
	}
	return out
}

// withIntervals returns res as the session's dpproxy.intervals asks: a
// copy with interval columns, or with a notice; res itself (which the
// engine may have cached) is not changed.
func withIntervals(res *sqltypes.Result, plan *rewrite.Plan, mode string) *sqltypes.Result {
	if mode == intervalsOff || res == nil {
		return res
	}
	out := *res
	with := intervalColumns(plan)
	interval := func(r, c int) *sqltypes.Interval {
		if r < len(res.Intervals) && c < len(res.Intervals[r]) {
			return res.Intervals[r][c]
		}
		return nil
	}
	if mode == intervalsColumns {
		out.Columns = describeWithIntervals(plan)
		out.Rows = make([][]any, len(res.Rows))
		for r, row := range res.Rows {
			for c, v := range row {
				out.Rows[r] = append(out.Rows[r], v)
				if c < len(with) && with[c] {
					if iv := interval(r, c); iv != nil {
						out.Rows[r] = append(out.Rows[r], iv.Lo, iv.Hi)
					} else {
						out.Rows[r] = append(out.Rows[r], nil, nil)
					}
				}
			}
		}
		return &out
	}
	out.Notices = append(append([]string(nil), res.Notices...), intervalNotice(res, plan, with, interval))
	return &out
}

// intervalNotice summarizes the intervals: each value's interval for one
// row, the range of half-widths for several.
func intervalNotice(res *sqltypes.Result, plan *rewrite.Plan, with []bool, interval func(r, c int) *sqltypes.Interval) string {
	var parts []string
	for c, col := range res.Columns {
		if c >= len(with) || !with[c] {
			continue
		}
		if len(res.Rows) == 1 {
			if iv := interval(0, c); iv != nil {
				parts = append(parts, fmt.Sprintf("%s in [%s, %s]", col.Name, num(iv.Lo), num(iv.Hi)))
			}
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for r := range res.Rows {
			if iv := interval(r, c); iv != nil {
				w := (iv.Hi - iv.Lo) / 2
				lo, hi = math.Min(lo, w), math.Max(hi, w)
			}
		}
		if lo <= hi {
			if num(lo) == num(hi) {
				parts = append(parts, fmt.Sprintf("%s ±%s", col.Name, num(hi)))
			} else {
				parts = append(parts, fmt.Sprintf("%s ±%s to ±%s", col.Name, num(lo), num(hi)))
			}
		}
	}
	msg := "dpproxy: 95 % confidence intervals (noise): " + strings.Join(parts, "; ")
	if plan.HasExcess() {
		msg = "dpproxy: 95 % confidence intervals (noise, and the bias of contribution bounding measured with a tenth of ε): " + strings.Join(parts, "; ")
	}
	if len(parts) == 0 {
		msg = "dpproxy: no column of this answer has an interval (quantiles state their rank error in EXPLAIN DP; a mean of too few values has no bound before clamping)"
	}
	switch {
	case plan.HasExcess():
		msg += "; they assume bounding removed no more from any one person than its bounds again (EXPLAIN DP)"
	case !plan.OneRowPerUnit:
		msg += "; bounding keeps at most " + strconv.Itoa(plan.MaxRowsPerUnit) + " row(s) per person per group"
		if plan.TotalCapped() {
			msg += " and " + strconv.Itoa(plan.MaxTotalRowsPerUnit) + " in all"
		}
		msg += ", and values are clamped to the policy's bounds: what it drops is not in the intervals (EXPLAIN DP)"
	case len(engine.ClampedColumns(plan)) > 0:
		msg += "; values are clamped to the policy's bounds: what clamping changes is not in the intervals (EXPLAIN DP)"
	}
	return msg
}

// num writes a number for a notice: integers as integers, others with
// four significant digits.
func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}
