package rewrite

import (
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
)

// Auto bounds (max_rows_per_unit: auto): the rows one person contributes
// per group, Linf, is chosen when the query runs, from the data, under
// DP. A side query gives, for the rows WHERE keeps, the histogram of each
// person's largest group (rows in it; without GROUP BY, all their rows),
// capped at config.MaxContribution; the exponential mechanism picks its
// AutoLevel quantile (mechanisms.Quantile: each person is one entry, so
// one person moves the histogram by a mass of 1 under both neighbouring
// definitions), at AutoShare of the query's ε, among the candidates of a
// geometric grid (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 19, ...: each about
// 1.25 times the last), so that few candidates cover the whole range and
// the rank error at small ε costs a factor, not hundreds of rows. The query is then planned
// at that Linf (a released value: adaptive composition) with the rest of
// its ε, and the answer says which bound was chosen.
//
// The mechanism weighs each candidate by a data-independent prior that
// falls by AutoPrior per step of the grid (added to the scores as
// (2/ε)·j·ln AutoPrior: the score sensitivity is unchanged, so the choice
// is as private). Without it, at small ε the many empty candidates above
// the data — all tied at the score of the largest rank — outweigh the few
// good ones together and the bound lands far above every person's rows,
// buying noise for nothing (found measuring the accuracy report: 127 %
// error at ε = 0.1). With it a small bound is preferred when the data
// cannot tell, which errs towards bias, and bias is what the intervals'
// excess measurements cover (excess.go).

const (
	// AutoLevel is the quantile of people's largest groups taken as Linf:
	// nineteen people in twenty keep all their rows.
	AutoLevel = 0.95
	// AutoShare is the share of a query's ε spent choosing Linf.
	AutoShare = 0.1
	// AutoPrior is the prior's ratio between neighbouring candidates.
	AutoPrior = 0.7
)

// AutoBound is a plan's pending choice of Linf (see the file comment).
type AutoBound struct {
	// SQL returns (largest group's rows, capped at Max; people) rows.
	SQL string
	Max int
	// Grid are the candidate bounds, increasing, the last Max: bucket j
	// holds the people whose largest group has more rows than Grid[j-1]
	// and at most Grid[j].
	Grid    []int
	Level   float64
	Epsilon float64
	// Rebind plans the query at the chosen Linf with the rest of its ε;
	// the plan it returns costs the same ε in all.
	Rebind func(linf int) (*Plan, error)
}

// autoGrid is the geometric grid of candidate bounds up to max.
func autoGrid(max int) []int {
	grid := []int{1}
	for v := 1.0; grid[len(grid)-1] < max; {
		v *= 1.25
		if next := min(int(v+0.5), max); next > grid[len(grid)-1] {
			grid = append(grid, next)
		}
	}
	return grid
}

// autoRowsSQL writes the histogram query of an auto bound.
func (e *emitter) autoRowsSQL(p *Plan, where string) string {
	q := e.d.QuoteIdent
	t := p.Table
	table := e.fromSQL(t)
	inner := []string{e.a.unitRef() + " AS " + q("dp_u")}
	cellGroup := []string{q("dp_u")}
	for i, g := range p.Groups {
		ref := q(columnName("dp_g", i))
		inner = append(inner, e.groupExpr(g)+" AS "+ref)
		cellGroup = append(cellGroup, ref)
	}
	whereClause := ""
	if where != "" {
		whereClause = " WHERE " + where
	}
	max := strconv.Itoa(config.MaxContribution)
	return "SELECT " + q("dp_b") + ", COUNT(*) FROM (SELECT CASE WHEN MAX(" + q("dp_n") + ") > " + max + " THEN " + max + " ELSE MAX(" + q("dp_n") + ") END AS " + q("dp_b") +
		" FROM (SELECT " + q("dp_u") + ", COUNT(*) AS " + q("dp_n") + " FROM (SELECT " + strings.Join(inner, ", ") + " FROM " + table + whereClause + ") AS " + q("dp_rows") +
		" GROUP BY " + strings.Join(cellGroup, ", ") + ") AS " + q("dp_cells") + " GROUP BY " + q("dp_u") + ") AS " + q("dp_people") + " GROUP BY " + q("dp_b")
}
