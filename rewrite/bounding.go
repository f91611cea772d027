package rewrite

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// The bounding query: the backend SQL that bounds each unit's
// contribution and aggregates per group (see the package doc), and the
// expressions it and the other queries of a plan share.

// backendSQL writes the three-level bounding query (see the package doc).
func (e *emitter) backendSQL(p *Plan, b *backendColumns, where string) (string, error) {
	q := e.d.QuoteIdent
	t := p.Table
	table := e.fromSQL(t)
	rowPrivacy := p.OneRowPerUnit

	var inner []string
	if !rowPrivacy {
		inner = append(inner, e.a.unitRef()+" AS "+q("dp_u"))
	}
	groupRefs := make([]string, len(p.Groups))
	groupExprs := make([]string, len(p.Groups))
	for i, g := range p.Groups {
		groupRefs[i] = q(columnName("dp_g", i))
		groupExprs[i] = e.groupExpr(g)
		inner = append(inner, groupExprs[i]+" AS "+groupRefs[i])
	}
	rawValues := p.excessRawValues(b)
	// counted[j] is what the middle level counts for value j: the clamped
	// value is NULL exactly when the column is, so a clamped column is
	// counted by its raw value (a database that inlines the inner level
	// then evaluates the clamp once per row, for the sum, not twice), and
	// a column never NULL is counted by its rows.
	counted := make([]string, len(b.values))
	for j, v := range b.values {
		value := e.clamp(v.col)
		counted[j] = q(columnName("dp_v", j))
		if sql, ok := e.a.valueSQL[v.col]; ok {
			value = sql // a conditional aggregate's CASE (conditional.go)
		} else if e.a.neverNull(v.col) && !rowPrivacy {
			counted[j] = "*"
		} else if v.col.Bounds != nil && !rowPrivacy {
			counted[j] = q(columnName("dp_nn", j))
			inner = append(inner, e.a.colRef(v.col)+" AS "+counted[j])
		}
		inner = append(inner, value+" AS "+q(columnName("dp_v", j)))
		if clip, ok := rawValues[j]; ok {
			inner = append(inner, e.rawValue(v, clip)+" AS "+q(columnName("dp_r", j)))
		}
	}
	if len(inner) == 0 {
		inner = append(inner, "1 AS "+q("dp_one"))
	}
	whereClause := ""
	if where != "" {
		whereClause = " WHERE " + where
	}

	// outerCols[i] is the expression of backend column i.
	outerCols := make([]string, b.next)
	copy(outerCols, e.keysOut(p, groupRefs))
	groupBy := ""
	if len(groupRefs) > 0 {
		groupBy = " GROUP BY " + strings.Join(groupRefs, ", ")
	}

	if rowPrivacy {
		// Each row is a unit: one row per unit per group, so L0 = Linf = 1
		// hold by construction and no bounding step is needed.
		if b.assigned {
			outerCols[b.rowCnt] = "COUNT(*)"
		}
		for j, v := range b.values {
			ref := q(columnName("dp_v", j))
			outerCols[v.count] = "COUNT(" + ref + ")"
			outerCols[v.sum] = "SUM(" + ref + ")"
			if !e.summable(v.col) {
				outerCols[v.sum] = "0" // only counted: text, booleans, dates and the unit are not summed
			}
			if v.sq >= 0 {
				outerCols[v.sq] = "SUM(" + square(ref) + ")"
			}
		}
		if p.UnitsColumn >= 0 {
			outerCols[p.UnitsColumn] = "COUNT(*)"
		}
		for _, x := range p.Measurements {
			if x.Kind == MeasureExcess {
				// The row is the unit: its excess is its value's clamping.
				j := valueIndex(b, p.Measurements[x.Of].CountColumn)
				outerCols[x.CountColumn] = "SUM(" + clampedTo(q(columnName("dp_r", j))+" - "+q(columnName("dp_v", j)), x.Clip) + ")"
			}
		}
		var w sqlBuilder
		w.add("SELECT ").list(outerCols).add(" FROM (SELECT ").list(inner).add(" FROM ", table, whereClause, ") AS ", q("dp_rows"), groupBy)
		return w.String(), nil
	}

	// Inner: the unit, the group keys and the clamped values of each row.
	writeInner := func(w *sqlBuilder) *sqlBuilder {
		return w.add("SELECT ").list(inner).add(" FROM ", table, whereClause)
	}

	// Middle: aggregate per (unit, group). With a public key list, count
	// each unit's groups (its contributions are weighted, see
	// Plan.FoldGroups); with partition selection, number them at random.
	weightGroups := p.WeightsGroups()
	totalCapped := p.TotalCapped()
	middle := []string{q("dp_u")}
	middle = append(middle, groupRefs...)
	excess := e.excessColumns(p, b)
	if b.assigned || totalCapped || len(excess) > 0 {
		middle = append(middle, "COUNT(*) AS "+q("dp_n"))
	}
	for j, v := range b.values {
		ref := q(columnName("dp_v", j))
		middle = append(middle, "COUNT("+counted[j]+") AS "+q(columnName("dp_c", j)))
		if e.summable(v.col) {
			middle = append(middle, "SUM("+ref+") AS "+q(columnName("dp_s", j)))
		}
		if _, ok := rawValues[j]; ok {
			middle = append(middle, "SUM("+q(columnName("dp_r", j))+") AS "+q(columnName("dp_rs", j)))
		}
		if v.sq >= 0 {
			middle = append(middle, "SUM("+square(ref)+") AS "+q(columnName("dp_q", j)))
		}
	}
	switch {
	case weightGroups:
		middle = append(middle, "COUNT(*) OVER (PARTITION BY "+q("dp_u")+") AS "+q("dp_k"))
	case p.Selection != nil:
		middle = append(middle, "ROW_NUMBER() OVER (PARTITION BY "+q("dp_u")+" ORDER BY "+e.d.Random()+") AS "+q("dp_gn"))
	}
	linf := p.MaxRowsPerUnit
	// With the total bound and no selection, T (the unit's capped rows
	// over all its groups) is a window over this level's rows (with a
	// selection it is over the groups kept, below).
	totalHere := totalCapped && p.Selection == nil
	// With Linf ≥ C a unit of at most C rows is neither capped nor
	// weighted: the sums over every unit are then the group's sums over
	// its rows (heavy.go's rows form).
	fromRows := totalHere && p.MaxRowsPerUnit >= p.MaxTotalRowsPerUnit && p.UnitsColumn < 0
	// T is computed only for the units that can exceed C (heavy.go), on
	// MySQL always and elsewhere with the rows form and a unit column
	// declared NOT NULL (joined to them with =, which PostgreSQL hashes):
	// for a query of the table alone, where the units are its column's
	// values and every output column below is a sum, and whose WHERE
	// reads nothing but the table (a subquery, read three times, could
	// give its rows differently each time: LIMIT without an order, found
	// in review).
	heavy := totalHere && (e.d.HeavyUnitTotals() || fromRows && e.a.unitNeverNull()) &&
		!e.a.qualified() && !e.a.subquery && !weightGroups && len(excess) == 0
	unitGroup := " GROUP BY " + strings.Join(append([]string{q("dp_u")}, groupRefs...), ", ")
	if totalHere && !heavy {
		middle = append(middle, e.d.SumSmallInts(capped("COUNT(*)", linf), q("dp_u"))+" AS "+q("dp_t"))
	}
	writeMiddle := func(w *sqlBuilder) *sqlBuilder {
		w.add("SELECT ", e.d.UnitGroupHint()).list(middle).add(" FROM (")
		return writeInner(w).add(") AS ", q("dp_rows"), unitGroup)
	}

	// Outer: aggregate per group across units, each unit's counts capped
	// at Linf and its sums scaled to Linf values (see capped and scaled).
	// With a public key list, per group and k (the unit's number of
	// groups): the engine weights each row by min(1, L0/k) (see
	// Plan.FoldGroups). With partition selection, keep at most L0 random
	// groups per unit.
	// With the total bound, each unit's per-group values are weighted by
	// min(1, C/T), T its capped rows over the groups it keeps (see
	// Plan.TotalCapped).
	weigh := func(x string) string { return x }
	if totalCapped {
		weigh = func(x string) string { return scaled(x, q("dp_t"), p.MaxTotalRowsPerUnit) }
	}
	// With partition selection, a unit keeps L0 random groups: the cells
	// beyond are filtered out, or, when excess columns must see what they
	// held, kept with a weight of 0 (gate), and groups with no kept cell
	// dropped (HAVING) so that the same groups reach the selection.
	gate := func(x string) string { return x }
	gated := p.Selection != nil && len(excess) > 0
	if gated {
		gate = func(x string) string {
			return "CASE WHEN " + q("dp_gn") + " <= " + strconv.Itoa(p.MaxGroupsPerUnit) + " THEN " + x + " ELSE 0 END"
		}
	}
	cells := e.cellValues(p, b)
	for col, x := range cells {
		if totalCapped && !gated && b.isCount(col) {
			outerCols[col] = sumSplitByTotal(x, q("dp_t"), p.MaxTotalRowsPerUnit)
		} else {
			outerCols[col] = "SUM(" + gate(weigh(x)) + ")"
		}
	}
	for _, v := range b.values {
		if !e.summable(v.col) {
			outerCols[v.sum] = "0" // only counted: text, booleans, dates and the unit are not summed
		}
	}
	if p.UnitsColumn >= 0 {
		outerCols[p.UnitsColumn] = "COUNT(*)"
		if gated {
			outerCols[p.UnitsColumn] = "SUM(" + gate("1") + ")"
		}
	}
	if heavy {
		perUnit := append(slices.Clone(middle), e.d.SumSmallInts(capped("COUNT(*)", linf), q("dp_u"))+" AS "+q("dp_t"))
		heavyUnits := "SELECT " + strings.Join(perUnit, ", ") + " FROM (SELECT " + strings.Join(inner, ", ") + e.heavyUnitsFrom(p, table, where) + ") AS " + q("dp_rows") + unitGroup
		var rows *rowSums
		if fromRows {
			var inner sqlBuilder
			rows = e.rowSums(b, counted, writeInner(&inner).String())
		}
		var middle sqlBuilder
		return e.heavyUnitsSQL(p, outerCols, cells, groupRefs, writeMiddle(&middle).String(), heavyUnits, rows), nil
	}
	keep, having := "", ""
	switch {
	case weightGroups:
		outerCols[p.GroupCountColumn] = q("dp_k")
		groupBy += ", " + q("dp_k")
	case gated:
		having = " HAVING SUM(" + gate("1") + ") > 0"
	case p.Selection != nil:
		keep = " WHERE " + q("dp_gn") + " <= " + strconv.Itoa(p.MaxGroupsPerUnit)
	}
	// The FROM of the outer level: the middle level, wrapped in the levels
	// below from the inside out, written outermost first.
	alias := q("dp_units")
	// With the total bound and a selection, T is over the groups the
	// unit keeps: a level of its own around the middle one.
	keptLevel := totalCapped && !totalHere
	if keptLevel {
		alias = q("dp_kept")
	}
	var cellCols, totalCols []string
	if len(excess) > 0 {
		// Each cell's excess (raw − kept, with the weights the outer level
		// applies and, over public keys, the engine's min(1, L0/k)), then
		// each unit's total, then the clipped sums (excess.go).
		groupWeight := func(x string) string { return x }
		if weightGroups {
			l0 := strconv.Itoa(p.MaxGroupsPerUnit)
			groupWeight = func(x string) string {
				return "CASE WHEN " + q("dp_k") + " <= " + l0 + " THEN " + x + " ELSE " + x + " * " + l0 + ".000000000 / " + q("dp_k") + " END"
			}
		}
		cellCols, totalCols = []string{alias + ".*"}, []string{q("dp_cells") + ".*"}
		for i, x := range excess {
			xi, ti := q(columnName("dp_x", i)), q(columnName("dp_xt", i))
			kept := gate(weigh(x.kept))
			if x.perUnit {
				kept = gate(x.kept) // units are counted in kept groups, unweighted
			}
			cellCols = append(cellCols, x.raw+" - "+groupWeight(kept)+" AS "+xi)
			totalCols = append(totalCols, "SUM(ABS("+xi+")) OVER (PARTITION BY "+q("dp_u")+") AS "+ti)
			outerCols[x.column] = "SUM(" + clipped(xi, ti, x.clip) + ")"
		}
	}
	var w sqlBuilder
	w.Grow(256 + len(table) + len(where) + listLen(outerCols) + listLen(middle) + listLen(inner) + listLen(cellCols) + listLen(totalCols))
	w.add("SELECT ").list(outerCols).add(" FROM ")
	if len(excess) > 0 {
		w.add("(SELECT ").list(totalCols).add(" FROM (SELECT ").list(cellCols).add(" FROM ")
	}
	if keptLevel {
		keptTotal := e.d.SumSmallInts(gate(capped(q("dp_n"), linf)), q("dp_u"))
		w.add("(SELECT ", q("dp_units"), ".*, ", keptTotal, " AS ", q("dp_t"), " FROM ")
	}
	writeMiddle(w.add("(")).add(") AS ", q("dp_units"), keep)
	if keptLevel {
		w.add(") AS ", q("dp_kept"))
	}
	if len(excess) > 0 {
		w.add(") AS ", q("dp_cells"), ") AS ", q("dp_clip"))
	}
	w.add(groupBy, having)
	return w.String(), nil
}

// sqlBuilder writes a statement's text in one buffer: a nested level is
// written in place, not built apart and copied into the one around it.
type sqlBuilder struct{ strings.Builder }

// add writes parts.
func (w *sqlBuilder) add(parts ...string) *sqlBuilder {
	for _, s := range parts {
		w.WriteString(s)
	}
	return w
}

// listLen is the length of items written by list.
func listLen(items []string) int {
	n := 2 * len(items)
	for _, s := range items {
		n += len(s)
	}
	return n
}

// list writes items separated by commas.
func (w *sqlBuilder) list(items []string) *sqlBuilder {
	for i, s := range items {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString(s)
	}
	return w
}

// cellValues returns, for each backend column the outer level sums over
// the (unit, group) cells, the value of one cell before the weights of
// the outer level (the total bound's, partition selection's gate): the
// unit's count there capped at Linf, or its sum scaled to Linf values.
// Columns summed only when their column is summable are there; the
// caller writes 0 for the others.
func (e *emitter) cellValues(p *Plan, b *backendColumns) map[int]string {
	q := e.d.QuoteIdent
	linf := p.MaxRowsPerUnit
	cells := map[int]string{}
	if b.assigned {
		cells[b.rowCnt] = capped(q("dp_n"), linf)
	}
	for j, v := range b.values {
		c := q(columnName("dp_c", j))
		cells[v.count] = capped(c, linf)
		if e.summable(v.col) {
			cells[v.sum] = scaled(q(columnName("dp_s", j)), c, linf)
		}
		if v.sq >= 0 {
			cells[v.sq] = scaled(q(columnName("dp_q", j)), c, linf)
		}
	}
	return cells
}

// tableRef writes the protected table's name, schema-qualified when the
// policy gives a schema.
func (e *emitter) tableRef(t *config.ProtectedTable) string {
	if t.Schema != "" {
		return e.d.QuoteIdent(t.Schema) + "." + e.d.QuoteIdent(t.Name)
	}
	return e.d.QuoteIdent(t.Name)
}

// groupExpr writes a GROUP BY key's expression over the table's columns.
// On MySQL a text key is grouped by its bytes: the default collations
// ignore case and trailing spaces, and would then label a group with
// whichever spelling the backend met first — a label chosen by the data,
// and possibly a different one in each of a plan's queries (found in
// review).
func (e *emitter) groupExpr(g GroupColumn) string {
	expr := e.a.colRef(g.Column)
	switch {
	case g.SQL != "":
		expr = g.SQL // GROUP BY CASE (casegroup.go), numeric bins
	case g.Bucket != nil:
		expr = e.d.TimeBucket(g.Bucket, expr)
	}
	if _, mysql := e.d.(mysqlDialect); mysql && g.Type == sqltypes.Text {
		expr = "CAST(" + expr + " AS BINARY)"
	}
	return expr
}

// keysOut writes the group keys as a query's final SELECT returns them.
// On MySQL a text key is grouped by its bytes (groupExpr), and read back
// as text, so that the backend returns the key itself rather than a
// binary string (found by the joins' integration test: every text key
// from MariaDB came back hex-encoded and matched no public key).
func (e *emitter) keysOut(p *Plan, refs []string) []string {
	out := make([]string, len(refs))
	for i, g := range p.Groups {
		out[i] = refs[i]
		if _, mysql := e.d.(mysqlDialect); mysql && g.Type == sqltypes.Text {
			out[i] = "CONVERT(" + refs[i] + " USING utf8mb4)"
		}
	}
	return out
}

// summable reports whether a value column's sum is computed: numeric
// columns other than the privacy unit (which is only counted).
func (e *emitter) summable(col *config.Column) bool {
	return col.Type.Numeric() && !e.a.isUnit(col)
}

// capped writes min(n, Linf): one unit's count in one group, capped at Linf.
func capped(n string, linf int) string {
	l := strconv.Itoa(linf)
	return "CASE WHEN " + n + " <= " + l + " THEN " + n + " ELSE " + l + " END"
}

// scaled writes one unit's sum in one group scaled down to Linf values:
// s when the unit has at most Linf values there, else s·Linf/n. That is
// the expected sum of Linf values drawn at random from the unit's n, so it
// carries the same bound as keeping Linf rows (at most Linf·max(|lo|, |hi|)
// from a unit in a group) with less variance, and it keeps the unit's mean
// for AVG. The factor is a decimal with nine places, so that integer sums
// never divide as integers and MySQL's DECIMAL division (which adds only
// div_precision_increment = 4 places to the dividend's scale) keeps at
// least 13. Linf·hi, the largest value, is reached only when every value
// is hi, where the division is exact, and rounding is monotone: the
// result never exceeds the bound.
func scaled(s, n string, linf int) string {
	l := strconv.Itoa(linf)
	return "CASE WHEN " + n + " <= " + l + " THEN " + s + " ELSE " + shrunk(s, n, l) + " END"
}

// shrunk writes s·l/n, scaled's weight beyond l, with the decimal factor
// scaled explains.
func shrunk(s, n, l string) string { return s + " * " + l + ".000000000 / " + n }

// sumSplitByTotal writes SUM(scaled(n, t, c)) for a unit's capped count
// n in a group (an integer), its total t, as two sums: the counts of the
// units within the total bound c, summed as integers, and the weighted
// ones of the units beyond it. In one sum every term is a decimal, since
// one branch is; most units are within c, and integers sum faster
// (PostgreSQL: 2 % of the bounding query on the demo's 2.1 M visits).
// Over no rows both sums are NULL and the total is 0, which the engine
// reads as it reads NULL (Measurement.Value).
func sumSplitByTotal(n, t string, c int) string {
	l := strconv.Itoa(c)
	return "COALESCE(SUM(CASE WHEN " + t + " <= " + l + " THEN " + n + " END), 0) + " +
		"COALESCE(SUM(CASE WHEN " + t + " > " + l + " THEN " + shrunk(n, t, l) + " END), 0)"
}

// square writes x² in exact or floating arithmetic (1.0 * x * x), so that an
// integer column cannot overflow and fail on one person's value.
func square(ref string) string { return "1.0 * " + ref + " * " + ref }

// clamp writes a column clamped to its bounds; NULL stays NULL. Columns
// only counted (no bounds) are passed as they are.
func (e *emitter) clamp(col *config.Column) string {
	ref := e.a.colRef(col)
	if col.Bounds == nil {
		return ref
	}
	return e.d.Clamp(ref, formatNumber(col.Bounds.Lo), formatNumber(col.Bounds.Hi))
}
