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
// With Linf ≥ C (the rows form) a unit of at most C rows has at most C,
// so at most Linf, in any group: none of its cells is capped either, and
// the unweighted sums over every unit are the group's plain sums over its
// rows. dp_main is then the query's GROUP BY over the rows, without the
// per-(unit, group) level, and dp_fix takes each heavy cell's capped and
// weighted value minus its raw one: on 2.1 M visits where no patient has
// more than C = 40, PostgreSQL runs it at 0.68× the per-(unit, group)
// GROUP BY alone (the bounding's floor when every unit is bounded), where
// the window form runs at 1.17×. PostgreSQL joins the heavy units with =
// (which it hashes), so the form is used there when the database declares
// the unit column NOT NULL (config.ProtectedTable.UnitNotNull).
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
	on := e.d.NullSafeEqual(unit, q("dp_heavy")+"."+q("dp_hu"))
	if e.a.unitNeverNull() {
		on = unit + " = " + q("dp_heavy") + "." + q("dp_hu")
	}
	return " FROM (" + finder + ") AS " + q("dp_heavy") + " " + e.d.OrderedJoin() + " " + table +
		" ON " + on + whereClause
}

// rowSums is the rows form's dp_main (see above): for each weighted cell
// of cellValues, its raw value (cell: the per-(unit, group) level's
// column, before the cap) and that value summed over every unit of a
// group (sum: the same aggregate over the group's rows), and the rows
// (inner: the bounding query's inner level).
type rowSums struct {
	cell, sum map[int]string
	inner     string
}

// rowSums writes the rows form's sums; counted is what the per-(unit,
// group) level counts for each value (backendSQL).
func (e *emitter) rowSums(b *backendColumns, counted []string, inner string) *rowSums {
	q := e.d.QuoteIdent
	r := &rowSums{cell: map[int]string{}, sum: map[int]string{}, inner: inner}
	if b.assigned {
		r.cell[b.rowCnt], r.sum[b.rowCnt] = q("dp_n"), "COUNT(*)"
	}
	for j, v := range b.values {
		ref := q(columnName("dp_v", j))
		r.cell[v.count], r.sum[v.count] = q(columnName("dp_c", j)), "COUNT("+counted[j]+")"
		if e.summable(v.col) {
			r.cell[v.sum], r.sum[v.sum] = q(columnName("dp_s", j)), "SUM("+ref+")"
		}
		if v.sq >= 0 {
			r.cell[v.sq], r.sum[v.sq] = q(columnName("dp_q", j)), "SUM("+square(ref)+")"
		}
	}
	return r
}

// heavyUnitsSQL writes the bounding query's outer level as the sum of
// every cell unweighted (units, the per-(unit, group) level) plus the
// correction over heavy units' cells (heavyUnits, the same level over
// their rows, with T). outerCols are the outer level's columns as the
// window form writes them; cells the per-cell values of those that are
// weighted sums (bounding.go's cellValues). With rows (the rows form),
// dp_main sums the rows instead of the units' cells.
func (e *emitter) heavyUnitsSQL(p *Plan, outerCols []string, cells map[int]string, groupRefs []string, units, heavyUnits string, rows *rowSums) string {
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
		if rows != nil {
			mainCols = append(mainCols, rows.sum[col]+" AS "+ref)
			fixCols = append(fixCols, "SUM("+weigh(x)+" - "+rows.cell[col]+") AS "+ref)
		} else {
			mainCols = append(mainCols, "SUM("+x+") AS "+ref)
			fixCols = append(fixCols, "SUM("+weigh(x)+" - ("+x+")) AS "+ref)
		}
		out[col] = main + "." + ref + " + COALESCE(" + fix + "." + ref + ", 0)"
	}
	groupBy := " GROUP BY " + strings.Join(groupRefs, ", ")
	mainFrom := "(" + units + ") AS " + q("dp_units")
	if rows != nil {
		mainFrom = "(" + rows.inner + ") AS " + q("dp_rows")
	}
	return "SELECT " + strings.Join(out, ", ") +
		" FROM (SELECT " + strings.Join(mainCols, ", ") + " FROM " + mainFrom + groupBy + ") AS " + main +
		" LEFT JOIN (SELECT " + strings.Join(fixCols, ", ") + " FROM (" + heavyUnits + ") AS " + q("dp_units") + groupBy + ") AS " + fix +
		" ON " + strings.Join(on, " AND ")
}
