package rewrite

import (
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Quantiles: MEDIAN(x), percentile_cont(q) / percentile_disc(q) WITHIN
// GROUP (ORDER BY x) (rewritten to percentile_cont(x, q) by the
// normalizer), quantile_cont / quantile_disc (DuckDB), and MIN / MAX as
// the policy's min_max_quantiles levels. Each is released per group by
// the exponential mechanism over a fixed grid of the column's bounds
// (mechanisms.Quantile), from a histogram the backend computes after
// contribution bounding:
//
//   - a unit keeps at most L0 groups, chosen at random per query as for
//     partition selection, and its values in a group weigh min(1, Linf/c)
//     each, c its number of values there, so its mass per group is at most
//     Linf (the same scaling as its sums, see scaled);
//   - each group's quantile moves by one unit's mass ≤ Linf in score, and
//     one unit changes at most changedGroups groups (L0, or 2·L0 under
//     replace neighbours; one group without GROUP BY), so each group's
//     mechanism runs at ε_q/changedGroups (package doc, "Quantiles").
//
// Several quantiles of one column share one histogram query and are
// released together by the recursive method (mechanisms.Quantiles): k
// levels take ⌈log2(k+1)⌉ rounds of the exponential mechanism instead of
// k, so each answer gets the column's total share over the rounds rather
// than one k-th of it; they come out in order (a larger level never gets a
// smaller value).

// maxQuantileBuckets is the grid's size: candidates of the exponential
// mechanism. Integer columns whose bounds span at most this many values
// get one bucket per value; other columns this many equal buckets.
const maxQuantileBuckets = 1024

// QuantileGrid is the fixed, data-independent set of values a quantile
// can take: bucket j of [Lo, Hi].
type QuantileGrid struct {
	Lo, Hi  float64
	Buckets int
	// Integer grids have one bucket per whole value Lo, Lo+1, ..., Hi.
	Integer bool
}

// Value is the value released for bucket j: the whole value, or the
// bucket's midpoint.
func (g QuantileGrid) Value(j int) float64 {
	if g.Integer {
		return g.Lo + float64(j)
	}
	return g.Lo + (float64(j)+0.5)*(g.Hi-g.Lo)/float64(g.Buckets)
}

// Width is a bucket's width: the grid's share of a quantile's error.
func (g QuantileGrid) Width() float64 {
	if g.Integer {
		return 0
	}
	return (g.Hi - g.Lo) / float64(g.Buckets)
}

func quantileGrid(col *config.Column) QuantileGrid {
	b := *col.Bounds
	span := b.Hi - b.Lo
	if col.Type.Integer() && isWhole(b.Lo) && isWhole(b.Hi) && span < maxQuantileBuckets {
		return QuantileGrid{Lo: b.Lo, Hi: b.Hi, Buckets: int(span) + 1, Integer: true}
	}
	if span == 0 {
		return QuantileGrid{Lo: b.Lo, Hi: b.Hi, Buckets: 1}
	}
	return QuantileGrid{Lo: b.Lo, Hi: b.Hi, Buckets: maxQuantileBuckets}
}

// Histogram is a per-group histogram of one column over its quantile grid,
// computed by the backend after contribution bounding.
type Histogram struct {
	Column *config.Column
	Grid   QuantileGrid
	// BackendSQL returns a row per (group, bucket) with mass: the group
	// keys in Plan.Groups order, the bucket index, the mass.
	BackendSQL string
}

// BackendQueries lists the SQL a plan runs on the backend: the bounded
// measurements (when it has any) and each quantile histogram.
func (p *Plan) BackendQueries() []string {
	var out []string
	if p.BackendSQL != "" {
		out = append(out, p.BackendSQL)
	}
	for _, h := range p.Histograms {
		out = append(out, h.BackendSQL)
	}
	out = append(out, p.SideQueries...)
	if p.Bias != nil {
		out = append(out, p.Bias.SQL)
	}
	if p.R2T != nil {
		out = append(out, p.R2T.SQL)
	}
	return out
}

// Quantile is one DP quantile released per group.
type Quantile struct {
	Histogram int // index into Plan.Histograms
	Level     float64
	// Epsilon is the quantile's share of the query's ε. The quantiles of
	// one column spend their shares together (mechanisms.Quantiles):
	// MechanismEpsilon is what each exponential mechanism of that
	// recursion runs at, the column's shares over its rounds; each group's
	// runs at MechanismEpsilon/ChangedGroups.
	Epsilon          float64
	MechanismEpsilon float64
	ChangedGroups    int
	// MassSensitivity is one unit's largest mass in one group: Linf.
	MassSensitivity float64
}

// quantileNames maps the spellings of quantile aggregates to whether they
// interpolate (cont) or return a value of the column's type (disc).
var quantileNames = map[string]bool{
	"median": true, "percentile_cont": true, "quantile_cont": true,
	"percentile_disc": false, "quantile_disc": false, "quantile": false,
}

// quantileCall plans MEDIAN(x), percentile_cont(x, q) and the other
// spellings (the normalizer writes WITHIN GROUP (ORDER BY x) as the first
// argument).
func (a *analyzer) quantileCall(x *ast.FuncCallExpr, p *Plan) (Aggregate, sqltypes.Type, error) {
	name := x.FnName.L
	hint := "write MEDIAN(x) or percentile_cont(0.5) WITHIN GROUP (ORDER BY x)"
	level := 0.5
	switch {
	case name == "median" && len(x.Args) == 1:
	case name != "median" && len(x.Args) == 2:
		q, ok := constantLevel(x.Args[1])
		if !ok || !(q >= 0 && q <= 1) {
			return Aggregate{}, 0, sqlerr.New(sqlerr.InvalidParameterValue, "%s needs a constant level from 0 to 1", name).WithHint("%s", hint)
		}
		level = q
	default:
		return Aggregate{}, 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s() takes a column and a constant level", name).WithHint("%s", hint)
	}
	return a.quantile(name, x.Args[0], level, quantileNames[name], p)
}

// minMax plans MIN(x) and MAX(x) as quantiles at the policy's levels.
func (a *analyzer) minMax(x *ast.AggregateFuncExpr, p *Plan) (Aggregate, sqltypes.Type, error) {
	levels := a.pol.Defaults.MinMaxQuantiles
	level := levels.Lo
	if strings.EqualFold(x.F, "max") {
		level = levels.Hi
	}
	if len(x.Args) != 1 {
		return Aggregate{}, 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s takes one argument", strings.ToUpper(x.F))
	}
	return a.quantile(strings.ToLower(x.F), x.Args[0], level, false, p)
}

// quantile plans one quantile of a column at a level.
func (a *analyzer) quantile(name string, arg ast.ExprNode, level float64, cont bool, p *Plan) (Aggregate, sqltypes.Type, error) {
	fn := strings.ToUpper(name)
	cn, ok := unparen(arg).(*ast.ColumnNameExpr)
	if !ok {
		return Aggregate{}, 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s needs a plain column", fn).
			WithHint("write %s(column); a condition goes into WHERE", fn)
	}
	col, err := a.column(cn.Name)
	if err != nil {
		return Aggregate{}, 0, err
	}
	switch {
	case a.isUnit(col):
		return Aggregate{}, 0, sqlerr.New(sqlerr.InsufficientPrivilege, "the privacy unit column %q cannot be aggregated with %s", col.Name, fn).
			WithHint("COUNT(DISTINCT %s) counts people", col.Name)
	case !col.Type.Numeric():
		return Aggregate{}, 0, sqlerr.New(sqlerr.DatatypeMismatch, "%s needs a numeric column; %q is %s", fn, col.Name, col.Type).
			WithHint("DP quantiles are computed over a numeric column's policy bounds")
	case col.Bounds == nil:
		return Aggregate{}, 0, sqlerr.New(sqlerr.InsufficientPrivilege, "%s(%s) needs clamp bounds for %q in the policy", fn, col.Name, col.Name).
			WithHint("declare `bounds: [lo, hi]` for the column under protected_tables/%s/columns: a DP quantile chooses among values in them", a.table.Name)
	}
	hi := -1
	for i, h := range p.Histograms {
		if h.Column == col {
			hi = i
		}
	}
	if hi < 0 {
		p.Histograms = append(p.Histograms, Histogram{Column: col, Grid: quantileGrid(col)})
		hi = len(p.Histograms) - 1
	}
	qi := -1
	for i, q := range p.Quantiles {
		if q.Histogram == hi && q.Level == level {
			qi = i // the same quantile twice is released once
		}
	}
	if qi < 0 {
		p.Quantiles = append(p.Quantiles, Quantile{Histogram: hi, Level: level})
		qi = len(p.Quantiles) - 1
	}
	typ := columnType(col.Type)
	if cont {
		typ = sqltypes.Float8
	}
	return Aggregate{Func: QuantileAgg, Column: col, Bounds: *col.Bounds, Quantile: qi, Type: typ}, typ, nil
}

// constantLevel reads a numeric literal, possibly negated or in
// parentheses.
func constantLevel(expr ast.ExprNode) (float64, bool) {
	expr = unparen(expr)
	if u, ok := expr.(*ast.UnaryOperationExpr); ok && u.Op == opcode.Minus {
		f, ok := constantLevel(u.V)
		return -f, ok
	}
	v, ok := expr.(*test_driver.ValueExpr)
	if !ok {
		return 0, false
	}
	return constantNumber(v)
}

// assignQuantiles gives each quantile its ε share and calibration.
func (p *Plan) assignQuantiles(share float64) {
	changed := 1
	if len(p.Groups) > 0 {
		changed = p.changedGroups()
	}
	perColumn := map[int]int{}
	for _, q := range p.Quantiles {
		perColumn[q.Histogram]++
	}
	for i := range p.Quantiles {
		q := &p.Quantiles[i]
		k := perColumn[q.Histogram]
		q.Epsilon = share
		q.MechanismEpsilon = float64(k) * share / float64(mechanisms.QuantilesRounds(k, p.QuantilesReplace()))
		q.ChangedGroups = changed
		q.MassSensitivity = float64(p.MaxRowsPerUnit)
	}
}

// QuantilesReplace reports whether the recursion must budget a replaced
// unit as two changes per round (mechanisms.Quantiles): under replace
// neighbours without GROUP BY, where one histogram holds the unit's old
// and new values (grouped plans count 2·L0 changed groups already).
func (p *Plan) QuantilesReplace() bool {
	return p.Neighbouring == config.Replace && len(p.Groups) == 0
}

// histogramSQL writes the backend query of a quantile's histogram: per
// group and bucket the mass of the bounded values (see the file comment).
func (e *emitter) histogramSQL(p *Plan, h *Histogram, where string) string {
	q := e.d.QuoteIdent
	value := e.a.colRef(h.Column)
	innerSQL, groupRefs := e.valueRows(p, "", e.bucketSQL(value, h.Grid)+" AS "+q("dp_b"), value, where)
	keys := strings.Join(append(append([]string{}, groupRefs...), q("dp_b")), ", ")
	selected := strings.Join(append(e.keysOut(p, groupRefs), q("dp_b")), ", ")

	if p.OneRowPerUnit {
		// Each row is a unit: L0 = Linf = 1 by construction.
		return "SELECT " + selected + ", COUNT(*) FROM (" + innerSQL + ") AS " + q("dp_rows") + " GROUP BY " + keys
	}
	// cells: one row per (unit, group, bucket) with the unit's count there.
	unitGroup := strings.Join(append([]string{q("dp_u")}, groupRefs...), ", ")
	cells := "SELECT " + unitGroup + ", " + q("dp_b") + ", COUNT(*) AS " + q("dp_n")
	if len(p.Groups) > 0 {
		cells += ", " + e.d.Random() + " AS " + q("dp_x")
	}
	cells += " FROM (" + innerSQL + ") AS " + q("dp_rows") + " GROUP BY " + unitGroup + ", " + q("dp_b")
	// per unit and group: c, its number of values there, and one random
	// draw (the first cell's) that orders the unit's groups.
	perGroup := "SELECT " + unitGroup + ", " + q("dp_b") + ", " + q("dp_n") +
		", SUM(" + q("dp_n") + ") OVER (PARTITION BY " + unitGroup + ") AS " + q("dp_c")
	if len(p.Groups) > 0 {
		perGroup += ", FIRST_VALUE(" + q("dp_x") + ") OVER (PARTITION BY " + unitGroup + " ORDER BY " + q("dp_b") + ") AS " + q("dp_r")
	}
	perGroup += " FROM (" + cells + ") AS " + q("dp_cells")
	mass := "SUM(" + scaled(q("dp_n"), q("dp_c"), p.MaxRowsPerUnit) + ")"
	if len(p.Groups) == 0 {
		return "SELECT " + selected + ", " + mass + " FROM (" + perGroup + ") AS " + q("dp_unit_groups") + " GROUP BY " + keys
	}
	// keep L0 random groups per unit: rank the unit's groups by their draw
	// (the keys break ties, so two groups never share a rank).
	ranked := "SELECT " + strings.Join(groupRefs, ", ") + ", " + q("dp_b") + ", " + q("dp_n") + ", " + q("dp_c") +
		", DENSE_RANK() OVER (PARTITION BY " + q("dp_u") + " ORDER BY " + strings.Join(append([]string{q("dp_r")}, groupRefs...), ", ") + ") AS " + q("dp_gn") +
		" FROM (" + perGroup + ") AS " + q("dp_unit_groups")
	return "SELECT " + selected + ", " + mass + " FROM (" + ranked + ") AS " + q("dp_ranked") +
		" WHERE " + q("dp_gn") + " <= " + strconv.Itoa(p.MaxGroupsPerUnit) + " GROUP BY " + keys
}

// valueRows writes the rows a side query starts from: the unit (unless
// each row is one), the group keys as dp_g0, dp_g1, ..., and one more
// item, for the rows WHERE keeps whose value is not NULL. It returns the
// SELECT and the group keys' references.
func (e *emitter) valueRows(p *Plan, distinct, item, value, where string) (string, []string) {
	q := e.d.QuoteIdent
	t := p.Table
	cond := value + " IS NOT NULL"
	if where != "" {
		cond = "(" + where + ") AND " + cond
	}
	groupRefs := make([]string, len(p.Groups))
	var inner []string
	if !p.OneRowPerUnit {
		inner = append(inner, e.a.unitRef()+" AS "+q("dp_u"))
	}
	for i, g := range p.Groups {
		groupRefs[i] = q(columnName("dp_g", i))
		inner = append(inner, e.groupExpr(g)+" AS "+groupRefs[i])
	}
	inner = append(inner, item)
	return "SELECT " + distinct + strings.Join(inner, ", ") + " FROM " + e.fromSQL(t) + " WHERE " + cond, groupRefs
}

// bucketSQL writes the bucket index of a value on a grid. Values outside
// the bounds fall in the first or last bucket (they are clamped); the
// engine clamps an index a rounding pushed past the ends.
func (e *emitter) bucketSQL(value string, g QuantileGrid) string {
	lo, hi := formatNumber(g.Lo), formatNumber(g.Hi)
	last := strconv.Itoa(g.Buckets - 1)
	if g.Buckets == 1 {
		return "0"
	}
	inside := "FLOOR((" + value + " - " + lo + ") * " + formatNumber(float64(g.Buckets)/(g.Hi-g.Lo)) + ")"
	if g.Integer {
		inside = value + " - " + lo
	}
	return "CASE WHEN " + value + " <= " + lo + " THEN 0 WHEN " + value + " >= " + hi + " THEN " + last + " ELSE " + inside + " END"
}
