package rewrite

import (
	"strconv"
	"strings"
)

// The total bound with heavy units only (Dialect.HeavyUnitTotals).
//
// With the total bound C (Plan.TotalCapped), the outer level weighs each
// of a unit's cells by min(1, C/T), T the unit's capped rows over all its
// groups. T is a window over the (unit, group) cells, which MariaDB
// computes by writing every cell to a temporary table and sorting it
// again: 0.75 s of the 2.4 s bounding query on 2.1 M visits (751,722
// cells), more than any other step.
//
// The weight differs from 1 only for a unit with T > C, and T never
// exceeds the unit's rows n: a unit with n ≤ C has weight 1 whatever its
// cells. So the query sums every cell unweighted (dp_main), and adds, per
// group, a correction computed over the units with n > C alone (dp_fix):
// their weighted cells minus the unweighted ones, T a window over their
// cells only. Both sides are the same SUM of the same cell values, split
// in two; the backend's exact (DECIMAL) arithmetic makes the result the
// same to the last digit, and floating arithmetic to its rounding.
//
// The heavy units are found by counting each unit's rows under the
// query's WHERE (an index on the unit column serves it): 0.18–0.30 s on
// MariaDB when none exceeds C. Their rows are then read through the same
// index, joined to them. Rows with a NULL unit are one unit to the
// bounding query (GROUP BY and the window both group NULLs), and to this
// join.
//
// The form pays off when a few units exceed C, as with a C chosen to clip
// few people (which the answers' bias asks for anyway): on 2.1 M visits
// 1.9 s against the window's 2.5 s when none does. When many do, their
// rows are aggregated twice: 4.8 s with 38 % of the units above C, 6.4 s
// with 67 % (reading them by a full scan instead of the index: 3.8 s and
// 4.8 s). dpproxy check reports the share of people above C, and on
// MySQL what it costs.

// heavyUnitsFrom writes the FROM clause (and WHERE) of the rows of the
// units with more than C rows under where (the query's condition, "" for
// none): the table joined to those units, found first. The join compares
// NULL units as equal, as GROUP BY does.
func (e *emitter) heavyUnitsFrom(p *Plan, table, where string) string {
	q := e.d.QuoteIdent
	unit := e.a.unitRef()
	whereClause := ""
	if where != "" {
		whereClause = " WHERE " + where
	}
	finder := "SELECT " + unit + " AS " + q("dp_hu") + " FROM " + table + whereClause +
		" GROUP BY " + unit + " HAVING COUNT(*) > " + strconv.Itoa(p.MaxTotalRowsPerUnit)
	return " FROM (" + finder + ") AS " + q("dp_heavy") + " " + e.d.OrderedJoin() + " " + table +
		" ON " + e.d.NullSafeEqual(unit, q("dp_heavy")+"."+q("dp_hu")) + whereClause
}

// heavyUnitsSQL writes the bounding query's outer level as the sum of
// every cell unweighted (units, the per-(unit, group) level) plus the
// correction over heavy units' cells (heavyUnits, the same level over
// their rows, with T). outerCols are the outer level's columns as the
// window form writes them; cells the per-cell values of those that are
// weighted sums (bounding.go's cellValues).
func (e *emitter) heavyUnitsSQL(p *Plan, outerCols []string, cells map[int]string, groupRefs []string, units, heavyUnits string) string {
	q := e.d.QuoteIdent
	main, fix := q("dp_main"), q("dp_fix")
	weigh := func(x string) string { return scaled(x, q("dp_t"), p.MaxTotalRowsPerUnit) }
	mainCols, fixCols := append([]string(nil), groupRefs...), append([]string(nil), groupRefs...)
	mainRefs, on := make([]string, len(groupRefs)), make([]string, len(groupRefs))
	for i, g := range groupRefs {
		mainRefs[i] = main + "." + g
		on[i] = e.d.NullSafeEqual(fix+"."+g, mainRefs[i])
	}
	out := make([]string, len(outerCols))
	copy(out, e.keysOut(p, mainRefs))
	for col := len(groupRefs); col < len(outerCols); col++ {
		ref := q(columnName("dp_o", col))
		x, weighted := cells[col]
		if !weighted {
			mainCols = append(mainCols, outerCols[col]+" AS "+ref)
			out[col] = main + "." + ref
			continue
		}
		mainCols = append(mainCols, "SUM("+x+") AS "+ref)
		fixCols = append(fixCols, "SUM("+weigh(x)+" - ("+x+")) AS "+ref)
		out[col] = main + "." + ref + " + COALESCE(" + fix + "." + ref + ", 0)"
	}
	groupBy := " GROUP BY " + strings.Join(groupRefs, ", ")
	return "SELECT " + strings.Join(out, ", ") +
		" FROM (SELECT " + strings.Join(mainCols, ", ") + " FROM (" + units + ") AS " + q("dp_units") + groupBy + ") AS " + main +
		" LEFT JOIN (SELECT " + strings.Join(fixCols, ", ") + " FROM (" + heavyUnits + ") AS " + q("dp_units") + groupBy + ") AS " + fix +
		" ON " + strings.Join(on, " AND ")
}
