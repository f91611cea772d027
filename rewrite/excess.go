package rewrite

import (
	"math"
	"strconv"

	"github.com/dpproxy/dpproxy/config"
)

// Excess measurements: what contribution bounding removed, measured under
// DP so that an answer's interval can cover its bias as well as its noise
// (Options.BiasBounds, asked for by SET dpproxy.intervals).
//
// Bounding changes a measurement's value: a unit's rows beyond Linf in a
// group, its groups beyond L0 (or rows beyond C in all) are dropped or
// down-weighted, and its values are clamped to the column's bounds. For a
// measurement m (a count, a count of units, a sum or a centred sum), the
// unit u's excess in cell (u, g) is
//
//	x(u, g) = raw(u, g) − kept(u, g)
//
// raw the value over all the unit's rows of the group, unclamped, kept what
// the bounding query counts for it (0 for a group it drops). The true,
// unbounded value of m in group g is bounded(g) + Σ_u x(u, g). A unit's
// total excess X(u) = Σ_g |x(u, g)| is unbounded, so each unit's excesses
// are scaled by min(1, M/X(u)): the clipped excess of a group,
//
//	E(g) = Σ_u x(u, g) · min(1, M/X(u)),
//
// moves by at most M summed over the groups when one unit is added or
// removed (its own scaled excesses, of total magnitude ≤ M), and by 2M
// when it is replaced. The clip M is the measurement's own per-unit bound,
// so the companion's L1 sensitivity is the measurement's: M = Sensitivity
// under add/remove and Sensitivity/2 under replace. Each companion gets
// Laplace noise at its share of excessShare of the query's ε (basic
// composition with the rest of the plan).
//
// The interval of the answer then adds the noisy excess, within its own
// error bound, to the bounded value's noise interval (engine/intervals.go).
// It covers the truth whenever no unit's excess exceeds M, i.e. whenever a
// second helping of the bounds would have kept everything; beyond that the
// remaining bias is not estimated (said in the explain output). The answer
// itself stays the bounded estimate: with much removed it can lie outside
// its own interval, which is then the honest statement of where the truth
// is.

// excessShare is the share of a query's ε its excess measurements spend.
const excessShare = 0.1

// HasExcess reports whether the plan has excess measurements.
func (p *Plan) HasExcess() bool {
	for _, m := range p.Measurements {
		if m.Kind == MeasureExcess {
			return true
		}
	}
	return false
}

// excessCandidates lists the measurements whose value bounding can change
// and that get an excess companion: counts, unit counts (with GROUP BY,
// where L0 applies), sums and centred sums from the bounding query. Under
// row privacy only clamping changes anything: sums of bounded columns.
// Variances and distinct-value counts are not covered.
func (p *Plan) excessCandidates() []int {
	var out []int
	seen := map[int]bool{}
	for _, a := range p.Aggregates {
		if a.Func.IsVariance() {
			continue // their intervals are the noise's (engine/intervals.go)
		}
		for _, mi := range a.Measurements {
			m := p.Measurements[mi]
			if seen[mi] || m.SideQuery != 0 {
				continue
			}
			seen[mi] = true
			switch m.Kind {
			case MeasureSum, MeasureCenteredSum:
				if a.Column != nil && a.Column.Type.Numeric() {
					out = append(out, mi)
				}
			case MeasureCount:
				if !p.OneRowPerUnit {
					out = append(out, mi)
				}
			case MeasureUnits:
				if !p.OneRowPerUnit && len(p.Groups) > 0 {
					out = append(out, mi)
				}
			}
		}
	}
	return out
}

// addExcess appends the companions of the candidate measurements, which
// must have their sensitivities, at epsilon in total, each reading a new
// backend column.
func (p *Plan) addExcess(candidates []int, epsilon float64, b *backendColumns) {
	for _, mi := range candidates {
		m := &p.Measurements[mi]
		if m.Sensitivity == 0 {
			continue // degenerate bounds: nothing to clip against
		}
		clip := m.Sensitivity
		if p.Neighbouring == config.Replace {
			clip /= 2
		}
		p.Measurements = append(p.Measurements, Measurement{
			Kind:          MeasureExcess,
			Sensitivity:   m.Sensitivity,
			Epsilon:       epsilon / float64(len(candidates)),
			CountColumn:   b.alloc(),
			SumColumn:     -1,
			SquaresColumn: -1,
			Of:            mi,
			Clip:          clip,
		})
		p.Measurements[mi].Excess = len(p.Measurements) // 1 + its index
	}
}

// excessColumn is one excess companion's emission: its backend column and
// the SQL of the cell's raw value and kept value (before the group and
// total weights), over the middle level's columns.
type excessColumn struct {
	column    int
	clip      float64
	raw, kept string
	// perUnit is set for a count of units, which the total bound's
	// weights C/T do not apply to (they weigh rows).
	perUnit bool
}

// excessColumns writes each companion's raw and kept cell values.
func (e *emitter) excessColumns(p *Plan, b *backendColumns) []excessColumn {
	q := e.d.QuoteIdent
	linf := p.MaxRowsPerUnit
	var out []excessColumn
	for _, x := range p.Measurements {
		if x.Kind != MeasureExcess {
			continue
		}
		m := p.Measurements[x.Of]
		c := excessColumn{column: x.CountColumn, clip: x.Clip}
		j := valueIndex(b, m.CountColumn)
		switch {
		case m.Kind == MeasureUnits:
			c.raw, c.kept, c.perUnit = "1", "1", true
		case m.Kind == MeasureCount && j < 0:
			c.raw, c.kept = q("dp_n"), capped(q("dp_n"), linf)
		case m.Kind == MeasureCount:
			n := q(columnName("dp_c", j))
			c.raw, c.kept = n, capped(n, linf)
		case m.Kind == MeasureSum, m.Kind == MeasureCenteredSum:
			n, s, r := q(columnName("dp_c", j)), q(columnName("dp_s", j)), q(columnName("dp_rs", j))
			c.raw, c.kept = r, scaled(s, n, linf)
			if m.Kind == MeasureCenteredSum && m.Mid != 0 {
				mid := formatNumber(m.Mid)
				c.raw = "(" + r + " - " + mid + " * " + n + ")"
				c.kept = "(" + scaled(s, n, linf) + " - " + mid + " * " + capped(n, linf) + ")"
			}
		}
		out = append(out, c)
	}
	return out
}

// excessRawValues gives, for each value column whose raw sums the excess
// companions of sums read, the largest of their clips (see rawValue).
func (p *Plan) excessRawValues(b *backendColumns) map[int]float64 {
	raw := map[int]float64{}
	for _, x := range p.Measurements {
		if x.Kind == MeasureExcess {
			if m := p.Measurements[x.Of]; m.Kind == MeasureSum || m.Kind == MeasureCenteredSum {
				j := valueIndex(b, m.CountColumn)
				raw[j] = math.Max(raw[j], x.Clip)
			}
		}
	}
	return raw
}

// valueIndex is the index of the value column whose count is backend
// column count, or -1 (the row count).
func valueIndex(b *backendColumns, count int) int {
	for j, v := range b.values {
		if v.count == count {
			return j
		}
	}
	return -1
}

// rawValue writes a value column as it is — the column, or a conditional
// aggregate's CASE without clamping — limited to [lo − M, hi + M], M the
// clip. The limit changes no excess the clip lets through (a row beyond
// it has more than M removed on its own), and keeps the raw sums finite:
// without it one person's huge values could overflow the backend's sum,
// or a stored NaN or infinity poison it, and make the query fail only when
// they are present (found in review).
func (e *emitter) rawValue(v *valueColumn, clip float64) string {
	raw := e.a.colRef(v.col)
	if sql, ok := e.a.rawValueSQL[v.col]; ok {
		raw = sql
	}
	lo, hi := formatNumber(v.col.Bounds.Lo-clip), formatNumber(v.col.Bounds.Hi+clip)
	return "CASE WHEN " + raw + " < " + lo + " THEN " + lo + " WHEN " + raw + " > " + hi + " THEN " + hi + " ELSE " + raw + " END"
}

// clipText writes a clip rounded down to nine decimal places, so that the
// SQL never clips above the sensitivity the noise is calibrated to (found
// in review: rounding to nearest could double a clip below 1e-9).
func clipText(clip float64) string {
	return strconv.FormatFloat(math.Floor(clip*1e9)/1e9, 'f', 9, 64)
}

// clipped writes x scaled by min(1, M/total): one unit's excess in a
// cell, clipped with its total excess.
func clipped(x, total string, clip float64) string {
	m := clipText(clip)
	return "CASE WHEN " + total + " <= " + m + " THEN " + x + " ELSE " + x + " * " + m + " / " + total + " END"
}

// clampedTo writes x limited to [−M, M] (a row's excess under row privacy,
// where the row is the unit).
func clampedTo(x string, clip float64) string {
	m := clipText(clip)
	return "CASE WHEN " + x + " > " + m + " THEN " + m + " WHEN " + x + " < -" + m + " THEN -" + m + " ELSE " + x + " END"
}
