package rewrite

import (
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// COUNT(DISTINCT column) for a column other than the privacy unit counts
// the column's distinct values per group. Bounding: each unit keeps at
// most Linf of its distinct values per group, chosen at random, in at most
// L0 groups, chosen at random (the same scheme as partition selection's
// groups). A value counts once however many units hold it, so adding or
// removing a unit moves a group's count by at most Linf (the values only
// it holds) and replacing it by at most Linf either way: magnitude and
// width Linf, over the changedGroups groups a change touches (package
// doc, steps 2–4). The count is computed by a side query, because
// distinct values across units cannot be summed from per-unit rows.

// countDistinctValues plans COUNT(DISTINCT column).
func (a *analyzer) countDistinctValues(col *config.Column, p *Plan) (Aggregate, string, sqltypes.Type, error) {
	if len(a.distinctColumns) >= maxSideQueries {
		return Aggregate{}, "", 0, sqlerr.New(sqlerr.StatementTooComplex, "more than %d COUNT(DISTINCT ...) columns in one query", maxSideQueries).
			WithHint("ask for fewer distinct counts at once")
	}
	side := -1
	for i, c := range a.distinctColumns {
		if c == col {
			side = i
		}
	}
	if side < 0 {
		a.distinctColumns = append(a.distinctColumns, col)
		side = len(a.distinctColumns) - 1
	}
	mi := p.addMeasurement(Measurement{Kind: MeasureDistinctValues, CountColumn: -1, SumColumn: -1, SquaresColumn: -1, SideQuery: side + 1})
	return Aggregate{Func: CountDistinctValues, Column: col, Measurements: []int{mi}}, "count", sqltypes.Int8, nil
}

// maxSideQueries bounds the distinct counts of one query.
const maxSideQueries = 8

// distinctValuesSQL writes the side query of COUNT(DISTINCT column): one
// row per group with the group keys and the number of distinct values
// left after bounding.
func (e *emitter) distinctValuesSQL(p *Plan, col *config.Column, where string) string {
	q := e.d.QuoteIdent
	value := e.a.colRef(col)
	innerSQL, groupRefs := e.valueRows(p, "DISTINCT ", value+" AS "+q("dp_v"), value, where)
	groupBy, keys := "", ""
	if len(groupRefs) > 0 {
		groupBy = " GROUP BY " + strings.Join(groupRefs, ", ")
		keys = strings.Join(e.keysOut(p, groupRefs), ", ") + ", "
	}
	count := "COUNT(DISTINCT " + q("dp_v") + ")"
	if p.OneRowPerUnit {
		// Each row is a unit: one value per unit per group by construction.
		return "SELECT " + keys + count + " FROM (" + innerSQL + ") AS " + q("dp_rows") + groupBy
	}
	unitGroup := strings.Join(append([]string{q("dp_u")}, groupRefs...), ", ")
	// A random draw per (unit, group, value) picks the Linf values kept;
	// the first value's draw orders the unit's groups, of which L0 are
	// kept (the keys break ties).
	drawn := "SELECT " + unitGroup + ", " + q("dp_v") + ", " + e.d.Random() + " AS " + q("dp_x") +
		" FROM (" + innerSQL + ") AS " + q("dp_rows")
	numbered := "SELECT " + unitGroup + ", " + q("dp_v") +
		", ROW_NUMBER() OVER (PARTITION BY " + unitGroup + " ORDER BY " + q("dp_x") + ", " + q("dp_v") + ") AS " + q("dp_vn")
	if len(groupRefs) > 0 {
		numbered += ", FIRST_VALUE(" + q("dp_x") + ") OVER (PARTITION BY " + unitGroup + " ORDER BY " + q("dp_v") + ") AS " + q("dp_r")
	}
	numbered += " FROM (" + drawn + ") AS " + q("dp_drawn")
	keep := q("dp_vn") + " <= " + strconv.Itoa(p.MaxRowsPerUnit)
	if len(groupRefs) == 0 {
		return "SELECT " + count + " FROM (" + numbered + ") AS " + q("dp_numbered") + " WHERE " + keep
	}
	ranked := "SELECT " + strings.Join(groupRefs, ", ") + ", " + q("dp_v") + ", " + q("dp_vn") +
		", DENSE_RANK() OVER (PARTITION BY " + q("dp_u") + " ORDER BY " + strings.Join(append([]string{q("dp_r")}, groupRefs...), ", ") + ") AS " + q("dp_gn") +
		" FROM (" + numbered + ") AS " + q("dp_numbered")
	return "SELECT " + keys + count + " FROM (" + ranked + ") AS " + q("dp_ranked") +
		" WHERE " + keep + " AND " + q("dp_gn") + " <= " + strconv.Itoa(p.MaxGroupsPerUnit) + groupBy
}
