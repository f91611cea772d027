package rewrite

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Randomized-response releases (Warner 1965; k-ary RR): record-level
// output of a protected table's columns whose domain is public, each
// value kept with probability e^ε/(e^ε + k − 1) and otherwise replaced by
// one of the k − 1 others, uniformly.
//
//	SELECT dpproxy.rr(diagnosis), dpproxy.rr(sex) FROM visits
//	SELECT dpproxy.rr(age, 10) FROM patients   -- bins of 10 within age's bounds
//
// Each person gives at most max_rows_per_unit records (1 when auto),
// chosen at random by the backend. The records alone would tell how many
// there are — an exact statistic — so the release adds dummy records,
// each column uniform over its domain, in a number drawn from a shifted
// two-sided geometric distribution, and shuffles them with the real ones.
// A person's presence then moves the number of dummies by at most L
// (ε_count = ε/10), and each of their L records against a dummy by at
// most e^{ε_record} (the column shares add up), so the release is
// (ε_count + L·ε_record, δ)-DP under add/remove neighbours, δ the chance
// that the shift does not cover the noise; under replace neighbours (a
// removal and an addition) every share is halved.

// RRRelease is a randomized-response release's parameters.
type RRRelease struct {
	// Columns are the released columns, in output order.
	Columns []RRColumn
	// RowsPerUnit (L) is the most records one person gives.
	RowsPerUnit int
	// ColumnEpsilon is each column's ε per record; CountEpsilon the ε of
	// the number of dummy records, whose sensitivity is CountSensitivity
	// (L).
	ColumnEpsilon    float64
	CountEpsilon     float64
	CountSensitivity int
	// CountDelta is the chance the dummies' shift fails on each side.
	CountDelta float64
}

// RRColumn is one released column: its public domain (the policy's
// keys, or false/true, or the bins of Width that cover a numeric
// column's bounds) and the column's type.
type RRColumn struct {
	Column *config.Column
	Domain []string
	// Width, when not 0, bins the column: a value is clamped to the
	// column's bounds and reported as the start of its bin,
	// floor(x/Width)·Width; Domain lists the bins' starts.
	Width float64
}

// Limits of a randomized-response release: the bins of a column, the
// dummy records (their shift grows as 1/ε; found in review: a tiny ε
// would exhaust memory), and a column's ε (see analyzeRR).
const (
	maxRRBins          = 1000
	maxRRDummies       = 1_000_000
	maxRRColumnEpsilon = 30
)

// Shift is the dummies' shift T and the geometric's λ: the number of
// dummies is max(0, T + Z), Z two-sided geometric at λ = ε_count/L, and
// T − L + 1 ≥ ln(1/δ)/λ makes P(T + Z < L) ≤ δ — the chance that a
// person's L records are not covered by dummies they could have been.
func (rr *RRRelease) Shift() (shift int64, lambda float64) {
	lambda = rr.CountEpsilon / float64(rr.CountSensitivity)
	return int64(rr.CountSensitivity) - 1 + int64(math.Ceil(math.Log(1/rr.CountDelta)/lambda)), lambda
}

// isRR reports whether a select list is made of dpproxy.rr calls (any
// one makes it an RR release; analyzeRR refuses a mix).
func isRR(sel *ast.SelectStmt) bool {
	if sel.Fields == nil {
		return false
	}
	for _, f := range sel.Fields.Fields {
		if call, ok := f.Expr.(*ast.FuncCallExpr); ok && call.Schema.L == "dpproxy" && call.FnName.L == "rr" {
			return true
		}
	}
	return false
}

func rrError(format string, args ...any) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, format, args...).
		WithHint("a randomized-response release is SELECT dpproxy.rr(col), ... FROM one protected table, each col with a public domain (a key list, or boolean)")
}

// analyzeRR plans a randomized-response release.
func analyzeRR(sel *ast.SelectStmt, pol *config.Policy, opts Options) (*Query, error) {
	if sel.Where != nil || sel.GroupBy != nil || sel.Having != nil || sel.OrderBy != nil || sel.Limit != nil || sel.Distinct || sel.WindowSpecs != nil || sel.With != nil {
		return nil, rrError("a randomized-response release reads whole records: WHERE, GROUP BY, HAVING, ORDER BY, LIMIT and DISTINCT are not supported (filter and count the released rows in your client)")
	}
	tables := collectTables(sel)
	if len(tables) != 1 || sel.From == nil {
		return nil, rrError("a randomized-response release reads one table")
	}
	if _, isJoin := sel.From.TableRefs.Left.(*ast.Join); isJoin || sel.From.TableRefs.Right != nil {
		return nil, rrError("a randomized-response release reads one table, without joins")
	}
	t, pub := pol.LookupTable(tables[0].Schema.O, tables[0].Name.O)
	switch {
	case pub != nil:
		return nil, rrError("%s is public: read it in full, without dpproxy.rr", tables[0].Name.O)
	case t == nil:
		return nil, unknownTable(tables[0], pol)
	}
	// The column holding the person's id in t: the unit, or the key of
	// the person's row in the table the unit path references.
	unit := t.PrivacyUnit
	if ref := t.UnitPath; ref != nil {
		if other, _ := pol.LookupTable(ref.Schema, ref.Table); other == nil || !strings.EqualFold(other.PrivacyUnit, ref.Column) {
			return nil, rrError("the records of %s reach a person through another table's key: not supported (only through its privacy unit)", t.Name)
		}
	}
	p := &Plan{Table: t, Epsilon: opts.Epsilon, Delta: pol.Defaults.Delta, Neighbouring: pol.Defaults.Neighbouring, Limit: -1,
		UnitsColumn: -1, GroupCountColumn: -1}
	// One record per person: each row is one (privacy_unit: row), or the
	// unit is the table's primary key (UnitIsKey).
	oneRow := unit == config.RowPrivacyUnit || t.UnitIsKey
	rr := &RRRelease{RowsPerUnit: t.MaxRowsPerUnit}
	if t.AutoRows() || oneRow {
		rr.RowsPerUnit = 1
	}
	var cols []string
	for _, f := range sel.Fields.Fields {
		call, ok := f.Expr.(*ast.FuncCallExpr)
		if f.WildCard != nil || !ok || call.Schema.L != "dpproxy" || call.FnName.L != "rr" {
			return nil, rrError("every column of a randomized-response release is dpproxy.rr(column)")
		}
		if len(call.Args) != 1 && len(call.Args) != 2 {
			return nil, rrError("dpproxy.rr takes one column, and for a numeric column with bounds a bin width: dpproxy.rr(age, 10)")
		}
		ref, ok := call.Args[0].(*ast.ColumnNameExpr)
		if !ok {
			return nil, rrError("dpproxy.rr takes a column, not an expression")
		}
		c, ok := t.Column(ref.Name.Name.O)
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist in protected table %q (or the policy does not expose it)", ref.Name.Name.O, t.Name)
		}
		if strings.EqualFold(c.Name, unit) {
			return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "%s is the privacy unit of %s: it is never released, not even randomized", c.Name, t.Name)
		}
		domain := c.Keys
		if c.Type == config.TypeBool {
			domain = []string{"false", "true"}
		}
		width := 0.0
		if len(call.Args) == 2 {
			var err error
			if width, domain, err = rrBins(t, c, call.Args[1]); err != nil {
				return nil, err
			}
		}
		if len(domain) < 2 {
			return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "%s.%s has no public domain: randomized response releases only columns whose values the policy lists (keys or keys_from), booleans, and bins of a numeric column's bounds (dpproxy.rr(col, width))", t.Name, c.Name).
				WithHint("declare the column's keys in the policy, or give a bin width")
		}
		for _, prev := range rr.Columns {
			if prev.Column == c {
				return nil, rrError("%s is released twice: each column once", c.Name)
			}
		}
		rr.Columns = append(rr.Columns, RRColumn{Column: c, Domain: domain, Width: width})
		name := f.AsName.O
		if name == "" {
			name = c.Name
		}
		typ := c.Type.SQLType()
		if width != 0 && !(c.Type.Integer() && width == math.Trunc(width)) {
			typ = sqltypes.Float8 // a fractional bin start
		}
		p.Output = append(p.Output, OutputColumn{Name: name, Type: typ, Source: OutputSource{Group: -1, Aggregate: -1}})
		cols = append(cols, opts.Dialect.QuoteIdent(c.Name))
	}
	if !(p.Delta > 0) {
		return nil, rrError("a randomized-response release needs δ > 0 (defaults.delta) to hide the number of records")
	}
	// Under replace neighbours a person's change is a removal and an
	// addition: every share is halved.
	f := 1.0
	if p.Neighbouring == config.Replace {
		f = 2
	}
	rr.CountEpsilon = p.Epsilon / 10 / f
	rr.CountSensitivity = rr.RowsPerUnit
	rr.CountDelta = p.Delta / 2 / f
	rr.ColumnEpsilon = (p.Epsilon - p.Epsilon/10) / f / float64(rr.RowsPerUnit) / float64(len(rr.Columns))
	if math.IsNaN(rr.ColumnEpsilon) || rr.ColumnEpsilon <= 0 {
		return nil, rrError("ε %g is too small for %d column(s)", p.Epsilon, len(rr.Columns))
	}
	// Past ε ≈ 36 the keep probability rounds to 1 in floating point (no
	// flip at all): a column's ε is held at maxRRColumnEpsilon, which
	// keeps less than allowed (found in review).
	rr.ColumnEpsilon = math.Min(rr.ColumnEpsilon, maxRRColumnEpsilon)
	if shift, _ := rr.Shift(); shift > maxRRDummies {
		return nil, rrError("ε %g is too small for a randomized-response release: hiding the number of records would take %d dummy records (at most %d); raise dpproxy.epsilon", p.Epsilon, shift, maxRRDummies)
	}
	table := quotedTable(opts.Dialect, t.Schema, t.Name)
	list := strings.Join(cols, ", ")
	if oneRow {
		p.BackendSQL = fmt.Sprintf("SELECT %s FROM %s", list, table)
	} else {
		p.BackendSQL = fmt.Sprintf("SELECT %s FROM (SELECT %s, ROW_NUMBER() OVER (PARTITION BY %s ORDER BY %s) AS dp_rn FROM %s) AS dp_rr WHERE dp_rn <= %d",
			list, list, opts.Dialect.QuoteIdent(unit), opts.Dialect.Random(), table, rr.RowsPerUnit)
	}
	p.RR = rr
	return &Query{Plan: p}, nil
}

// rrBins is the domain of dpproxy.rr(col, width): the starts of the bins
// of a positive width that meet the column's bounds.
func rrBins(t *config.ProtectedTable, c *config.Column, arg ast.ExprNode) (float64, []string, error) {
	v, ok := arg.(ast.ValueExpr)
	width := 0.0
	if ok {
		switch x := v.GetValue().(type) {
		case int64:
			width = float64(x)
		case uint64:
			width = float64(x)
		case float64:
			width = x
		default:
			if f, err := strconv.ParseFloat(fmt.Sprint(x), 64); err == nil {
				width = f
			}
		}
	}
	if !(width > 0) || math.IsInf(width, 0) {
		return 0, nil, rrError("dpproxy.rr(%s, width): the width is a positive number", c.Name)
	}
	if c.Bounds == nil || !c.Type.Numeric() {
		return 0, nil, sqlerr.New(sqlerr.InsufficientPrivilege, "%s.%s has no bounds: bins of a numeric column are public only within the policy's bounds", t.Name, c.Name).
			WithHint("declare the column's bounds in the policy")
	}
	first, last := math.Floor(c.Bounds.Lo/width), math.Floor(c.Bounds.Hi/width)
	if last-first+1 > maxRRBins {
		return 0, nil, rrError("dpproxy.rr(%s, %g) makes %.0f bins of [%g, %g]; at most %d", c.Name, width, last-first+1, c.Bounds.Lo, c.Bounds.Hi, maxRRBins)
	}
	var domain []string
	for k := first; k <= last; k++ {
		domain = append(domain, strconv.FormatFloat(k*width, 'f', -1, 64))
	}
	return width, domain, nil
}

func quotedTable(d Dialect, schema, name string) string {
	if schema != "" {
		return d.QuoteIdent(schema) + "." + d.QuoteIdent(name)
	}
	return d.QuoteIdent(name)
}

// KeepProbability is k-ary RR's chance of keeping the true value at ε:
// e^ε/(e^ε + k − 1); each other value is reported with FlipProbability,
// 1/(e^ε + k − 1).
func KeepProbability(eps float64, k int) float64 {
	return math.Exp(eps) / (math.Exp(eps) + float64(k) - 1)
}

// FlipProbability is k-ary RR's chance of reporting one given other
// value.
func FlipProbability(eps float64, k int) float64 { return 1 / (math.Exp(eps) + float64(k) - 1) }
