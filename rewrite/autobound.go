package rewrite

import (
	"fmt"
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
// definitions), at AutoShare of the query's ε. The query is then planned
// at that Linf (a released value: adaptive composition) with the rest of
// its ε, and the answer says which bound was chosen.

const (
	// AutoLevel is the quantile of people's largest groups taken as Linf:
	// nineteen people in twenty keep all their rows.
	AutoLevel = 0.95
	// AutoShare is the share of a query's ε spent choosing Linf.
	AutoShare = 0.1
)

// AutoBound is a plan's pending choice of Linf (see the file comment).
type AutoBound struct {
	// SQL returns (largest group's rows, capped at Max; people) rows.
	SQL     string
	Max     int
	Level   float64
	Epsilon float64
	// Rebind plans the query at the chosen Linf with the rest of its ε;
	// the plan it returns costs the same ε in all.
	Rebind func(linf int) (*Plan, error)
}

// autoRowsSQL writes the histogram query of an auto bound.
func (e *emitter) autoRowsSQL(p *Plan, where string) string {
	q := e.d.QuoteIdent
	t := p.Table
	table := q(t.Name)
	if t.Schema != "" {
		table = q(t.Schema) + "." + table
	}
	inner := []string{q(t.PrivacyUnit) + " AS " + q("dp_u")}
	cellGroup := []string{q("dp_u")}
	for i, g := range p.Groups {
		ref := q(fmt.Sprintf("dp_g%d", i))
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
