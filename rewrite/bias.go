package rewrite

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
)

// The bias report (SET dpproxy.report_bias = on): with the answer, DP
// estimates of what contribution bounding changed — the share of people
// with rows beyond the bounds (more groups than L0, more rows in a group
// than Linf, or more than C in all), whose extra rows are dropped or
// down-weighted, and for each clamped column the share of people with a
// value outside its bounds. A side query counts, over the rows WHERE
// keeps, the people and the people in each case; each count moves by at
// most 1 when one person is added, removed or changed, so the vector of m
// counts has L1 sensitivity m and gets Laplace noise at BiasReport.Epsilon
// (a tenth of the query's ε, taken from its split). The shares are
// post-processing of the noisy counts.

// biasShare is the share of a query's ε the bias report spends.
const biasShare = 0.1

// BiasReport is the plan's bias report (see the file comment).
type BiasReport struct {
	// SQL returns one row: the number of people, then one count per Labels
	// entry.
	SQL string
	// Labels name each count after the first ("rows beyond the bounds",
	// "cost outside [0, 1000]").
	Labels  []string
	Epsilon float64
	// Sensitivity is the L1 sensitivity of the whole vector of counts.
	Sensitivity float64
}

// biasReportSQL writes the side query of the bias report, or nil when
// bounding cannot change anything (row privacy without clamped columns).
func (e *emitter) biasReport(p *Plan, where string) *BiasReport {
	q := e.d.QuoteIdent
	t := p.Table
	table := e.fromSQL(t)
	var clamped []*config.Column
	seen := map[*config.Column]bool{}
	for _, a := range p.Aggregates {
		if c := a.Column; c != nil && c.Bounds != nil && !seen[c] && !e.a.isUnit(c) {
			if _, conditional := e.a.valueSQL[c]; conditional {
				continue // a conditional aggregate's CASE: its own hull
			}
			seen[c] = true
			clamped = append(clamped, c)
		}
	}
	rowPrivacy := p.OneRowPerUnit
	if rowPrivacy && len(clamped) == 0 {
		return nil
	}
	whereClause := ""
	if where != "" {
		whereClause = " WHERE " + where
	}
	outside := func(c *config.Column) string {
		ref := e.a.colRef(c)
		return "CASE WHEN " + ref + " < " + formatNumber(c.Bounds.Lo) + " OR " + ref + " > " + formatNumber(c.Bounds.Hi) + " THEN 1 ELSE 0 END"
	}
	r := &BiasReport{}
	if rowPrivacy {
		// Each row is a person: count the rows and those with a value out.
		cols := []string{"COUNT(*)"}
		for _, c := range clamped {
			cols = append(cols, "SUM("+outside(c)+")")
			r.Labels = append(r.Labels, fmt.Sprintf("%s outside [%g, %g]", c.Name, c.Bounds.Lo, c.Bounds.Hi))
		}
		r.SQL = "SELECT " + strings.Join(cols, ", ") + " FROM " + table + whereClause
		return r
	}
	// Per (person, group): rows and any value out; per person: groups,
	// largest group, capped rows in all; then the counts.
	inner := []string{e.a.unitRef() + " AS " + q("dp_u")}
	var groupRefs []string
	for i, g := range p.Groups {
		ref := q(columnName("dp_g", i))
		groupRefs = append(groupRefs, ref)
		inner = append(inner, e.groupExpr(g)+" AS "+ref)
	}
	cell := []string{q("dp_u"), "COUNT(*) AS " + q("dp_n")}
	person := []string{q("dp_u"), "COUNT(*) AS " + q("dp_k"), "MAX(" + q("dp_n") + ") AS " + q("dp_m"),
		"SUM(" + capped(q("dp_n"), p.MaxRowsPerUnit) + ") AS " + q("dp_t")}
	for i, c := range clamped {
		x := q(columnName("dp_x", i))
		inner = append(inner, outside(c)+" AS "+x)
		cell = append(cell, "MAX("+x+") AS "+x)
		person = append(person, "MAX("+x+") AS "+x)
	}
	beyond := []string{q("dp_m") + " > " + strconv.Itoa(p.MaxRowsPerUnit)}
	if len(p.Groups) > 0 {
		if !p.TotalCapped() || p.Selection != nil {
			// L0 applies (with the total bound, only where keys come from
			// the data: over public keys the total bound replaces it).
			beyond = append(beyond, q("dp_k")+" > "+strconv.Itoa(p.MaxGroupsPerUnit))
		}
		if p.TotalCapped() {
			beyond = append(beyond, q("dp_t")+" > "+strconv.Itoa(p.MaxTotalRowsPerUnit))
		}
	}
	out := []string{"COUNT(*)", "SUM(CASE WHEN " + strings.Join(beyond, " OR ") + " THEN 1 ELSE 0 END)"}
	r.Labels = append(r.Labels, "rows beyond the bounds")
	for i, c := range clamped {
		out = append(out, "SUM("+q(columnName("dp_x", i))+")")
		r.Labels = append(r.Labels, fmt.Sprintf("%s outside [%g, %g]", c.Name, c.Bounds.Lo, c.Bounds.Hi))
	}
	cellGroup := strings.Join(append([]string{q("dp_u")}, groupRefs...), ", ")
	r.SQL = "SELECT " + strings.Join(out, ", ") + " FROM (SELECT " + strings.Join(person, ", ") +
		" FROM (SELECT " + strings.Join(cell, ", ") + " FROM (SELECT " + strings.Join(inner, ", ") + " FROM " + table + whereClause + ") AS " + q("dp_rows") +
		" GROUP BY " + cellGroup + ") AS " + q("dp_cells") + " GROUP BY " + q("dp_u") + ") AS " + q("dp_people")
	return r
}
