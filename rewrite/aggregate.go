package rewrite

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// The select list: each item an output column — a group key, an
// aggregate with its measurements, or an expression over them.

// outputColumn plans one select-list item.
func (a *analyzer) outputColumn(p *Plan, b *backendColumns, f *ast.SelectField, index int) (OutputColumn, error) {
	if f.WildCard != nil {
		return OutputColumn{}, a.rawRowsError()
	}
	expr := unparen(f.Expr)
	switch x := expr.(type) {
	case *ast.ColumnNameExpr:
		col, err := a.column(x.Name)
		if err != nil {
			return OutputColumn{}, err
		}
		for gi, g := range p.Groups {
			if g.Column == col && g.Bucket == nil {
				return OutputColumn{Name: fieldName(f, col.Name), Type: columnType(col.Type), Source: OutputSource{Group: gi, Aggregate: -1}}, nil
			}
		}
		if len(p.Groups) == 0 {
			return OutputColumn{}, a.rawRowsError()
		}
		return OutputColumn{}, sqlerr.New(sqlerr.GroupingError, "column %q must appear in the GROUP BY clause or be used in an aggregate function", col.Name).
			WithHint("add %s to GROUP BY, or aggregate it: COUNT(%s), AVG(%s), MEDIAN(%s)", col.Name, col.Name, col.Name, col.Name)
	case *ast.FuncCallExpr:
		if bucketUnits[x.FnName.L] != nil {
			bucket, col, err := a.timeBucket(x)
			if err != nil {
				return OutputColumn{}, err
			}
			want := GroupColumn{Column: col, Bucket: bucket}
			for gi, g := range p.Groups {
				if sameGroup(g, want) {
					return OutputColumn{Name: a.exprName(f, x.FnName.L), Type: g.Type, Source: OutputSource{Group: gi, Aggregate: -1}}, nil
				}
			}
			return OutputColumn{}, sqlerr.New(sqlerr.GroupingError, "%s must appear in the GROUP BY clause", want.Name()).
				WithHint("group by the same expression (GROUP BY %s) or by its position (GROUP BY 1)", want.Name())
		}
	case *ast.CaseExpr:
		// The select list's CASE that a GROUP BY CASE groups by.
		if g, err := a.caseGroup(x); err == nil {
			for gi, have := range p.Groups {
				if sameGroup(have, g) {
					return OutputColumn{Name: a.exprName(f, "case"), Type: have.Type, Source: OutputSource{Group: gi, Aggregate: -1}}, nil
				}
			}
		}
	case *ast.AggregateFuncExpr:
		agg, name, typ, err := a.aggregate(x, writtenName(f), p, b)
		if err != nil {
			return OutputColumn{}, err
		}
		agg.Type = typ
		p.Aggregates = append(p.Aggregates, agg)
		return OutputColumn{Name: a.exprName(f, name), Type: typ, Source: OutputSource{Group: -1, Aggregate: len(p.Aggregates) - 1}}, nil
	case *ast.WindowFuncExpr:
		return OutputColumn{}, sqlerr.New(sqlerr.FeatureNotSupported, "window functions are not allowed on protected table %q", a.table.Name).
			WithHint("use aggregates: %s", supportedAggregates)
	}
	// The select list's bin of a column that GROUP BY bins by.
	if g, ok, err := a.numericBin(expr); ok && err == nil {
		for gi, have := range p.Groups {
			if sameGroup(have, g) {
				name := "?column?"
				if call, isCall := expr.(*ast.FuncCallExpr); isCall {
					name = call.FnName.L
				}
				return OutputColumn{Name: a.exprName(f, name), Type: have.Type, Source: OutputSource{Group: gi, Aggregate: -1}}, nil
			}
		}
	}
	// An expression over aggregates, group columns and constants,
	// computed on the released row (post.go). Aliases are not names here.
	d, typ, err := a.derived(expr, p, b, nil)
	if err != nil {
		return OutputColumn{}, err
	}
	if typ == sqltypes.Unknown {
		typ = sqltypes.Text
	}
	name := "?column?"
	if call, ok := expr.(*ast.FuncCallExpr); ok {
		name = call.FnName.L
	}
	return OutputColumn{Name: a.exprName(f, name), Type: typ, Source: OutputSource{Group: -1, Aggregate: -1, Derived: d}}, nil
}

// writtenName is the function name as the query spells it (the parser
// normalizes synonyms such as VARIANCE to VAR_POP).
func writtenName(f *ast.SelectField) string {
	name, _, _ := strings.Cut(f.Text(), "(")
	return strings.ToLower(strings.TrimSpace(name))
}

// aggregate plans one aggregate function call.
func (a *analyzer) aggregate(x *ast.AggregateFuncExpr, written string, p *Plan, b *backendColumns) (Aggregate, string, sqltypes.Type, error) {
	fn := strings.ToLower(x.F)
	notSupported := func(format string, args ...any) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, format, args...).WithHint("supported aggregates: %s", supportedAggregates)
	}
	if x.Distinct {
		return a.countDistinct(x, p, b)
	}
	if x.Order != nil {
		return Aggregate{}, "", 0, notSupported("ordered aggregates are not supported")
	}
	switch fn {
	case "count":
		if len(x.Args) != 1 {
			return Aggregate{}, "", 0, notSupported("COUNT takes one argument")
		}
		if isNonNullConstant(x.Args[0]) { // COUNT(*) parses as COUNT(1)
			mi := p.addMeasurement(Measurement{Kind: MeasureCount, CountColumn: b.rowCount(), SumColumn: -1, SquaresColumn: -1})
			return Aggregate{Func: CountStar, Measurements: []int{mi}}, "count", sqltypes.Int8, nil
		}
		col, err := a.aggregateColumn(x, false)
		if err != nil {
			return Aggregate{}, "", 0, err
		}
		v := b.value(col)
		mi := p.addMeasurement(Measurement{Kind: MeasureCount, CountColumn: v.count, SumColumn: -1, SquaresColumn: -1})
		return Aggregate{Func: CountCol, Column: col, Measurements: []int{mi}}, "count", sqltypes.Int8, nil
	case "sum", "avg":
		col, err := a.aggregateColumn(x, true)
		if err != nil {
			return Aggregate{}, "", 0, err
		}
		v := b.value(col)
		bounds := *col.Bounds
		if fn == "sum" {
			mi := p.addMeasurement(Measurement{Kind: MeasureSum, CountColumn: v.count, SumColumn: v.sum, SquaresColumn: -1})
			return Aggregate{Func: Sum, Column: col, Bounds: bounds, Measurements: []int{mi}}, "sum", sumType(col.Type), nil
		}
		ci := p.addMeasurement(Measurement{Kind: MeasureCount, CountColumn: v.count, SumColumn: -1, SquaresColumn: -1})
		si := p.addMeasurement(Measurement{Kind: MeasureCenteredSum, CountColumn: v.count, SumColumn: v.sum, SquaresColumn: -1, Mid: (bounds.Lo + bounds.Hi) / 2})
		return Aggregate{Func: Avg, Column: col, Bounds: bounds, Measurements: []int{ci, si}}, "avg", avgType(col.Type), nil
	}
	if f, ok := varianceFuncs[fn]; ok {
		if a.opts.FrontEnd == PostgresFrontEnd {
			switch written {
			case "variance":
				f = VarSamp
			case "stddev":
				f = StddevSamp
			}
		}
		if written != "" && written != fn && varianceFuncs[written] != 0 {
			fn = written // name the column as the query wrote it
		}
		col, err := a.aggregateColumn(x, true)
		if err != nil {
			return Aggregate{}, "", 0, err
		}
		bounds := *col.Bounds
		mid := (bounds.Lo + bounds.Hi) / 2
		if err := checkCentredPrecision(fn, col, bounds); err != nil {
			return Aggregate{}, "", 0, err
		}
		v := b.value(col)
		b.squares(v)
		ci := p.addMeasurement(Measurement{Kind: MeasureCount, CountColumn: v.count, SumColumn: -1, SquaresColumn: -1})
		si := p.addMeasurement(Measurement{Kind: MeasureCenteredSum, CountColumn: v.count, SumColumn: v.sum, SquaresColumn: -1, Mid: mid})
		qi := p.addMeasurement(Measurement{Kind: MeasureCenteredSquares, CountColumn: v.count, SumColumn: v.sum, SquaresColumn: v.sq, Mid: mid})
		return Aggregate{Func: f, Column: col, Bounds: bounds, Measurements: []int{ci, si, qi}}, fn, avgType(col.Type), nil
	}
	if fn == "min" || fn == "max" {
		agg, typ, err := a.minMax(x, p)
		return agg, fn, typ, err
	}
	return Aggregate{}, "", 0, notSupported("aggregate %s is not supported on protected data", strings.ToUpper(fn))
}

// varianceFuncs maps the variance family's names (as PostgreSQL reads
// them: VARIANCE and STDDEV are the sample forms).
var varianceFuncs = map[string]AggFunc{
	"var_pop": VarPop, "var_samp": VarSamp, "variance": VarPop,
	"stddev_pop": StddevPop, "stddev_samp": StddevSamp, "stddev": StddevPop, "std": StddevPop,
}

// countDistinct plans COUNT(DISTINCT privacy_unit): the number of units in
// each group, which changes by at most 1 in each of L0 groups.
func (a *analyzer) countDistinct(x *ast.AggregateFuncExpr, p *Plan, b *backendColumns) (Aggregate, string, sqltypes.Type, error) {
	hint := "COUNT(DISTINCT ...) is supported on the privacy unit column only"
	if strings.ToLower(x.F) != "count" || len(x.Args) != 1 {
		return Aggregate{}, "", 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s(DISTINCT ...) is not supported", strings.ToUpper(x.F)).WithHint("%s", hint)
	}
	cn, ok := unparen(x.Args[0]).(*ast.ColumnNameExpr)
	if !ok {
		return Aggregate{}, "", 0, sqlerr.New(sqlerr.FeatureNotSupported, "COUNT(DISTINCT ...) needs a plain column").WithHint("%s", hint)
	}
	col, err := a.column(cn.Name)
	if err != nil {
		return Aggregate{}, "", 0, err
	}
	if !a.isUnit(col) {
		return a.countDistinctValues(col, p)
	}
	mi := p.addMeasurement(Measurement{Kind: MeasureUnits, CountColumn: b.units(), SumColumn: -1, SquaresColumn: -1})
	return Aggregate{Func: CountDistinctUnit, Column: col, Measurements: []int{mi}}, "count", sqltypes.Int8, nil
}

// aggregateColumn checks an aggregate's argument: a plain, non-unit column;
// numeric with bounds when summed.
func (a *analyzer) aggregateColumn(x *ast.AggregateFuncExpr, summed bool) (*config.Column, error) {
	fn := strings.ToUpper(x.F)
	if len(x.Args) != 1 {
		// VAR() and its kin reach here with no argument (found by
		// FuzzAnalyze).
		return nil, sqlerr.New(sqlerr.SyntaxError, "%s takes one argument, got %d", fn, len(x.Args)).
			WithHint("write %s(column)", fn)
	}
	if c, ok := unparen(x.Args[0]).(*ast.CaseExpr); ok {
		return a.conditionalColumn(c, fn, summed)
	}
	cn, ok := unparen(x.Args[0]).(*ast.ColumnNameExpr)
	if !ok {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s supports a column or a CASE as its argument", fn).
			WithHint("write %s(column) or %s(CASE WHEN condition THEN column END)", fn, fn)
	}
	col, err := a.column(cn.Name)
	if err != nil {
		return nil, err
	}
	if a.isUnit(col) && summed {
		return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "the privacy unit column %q cannot be aggregated with %s", col.Name, fn).
			WithHint("COUNT(%s) counts rows and COUNT(DISTINCT %s) counts people", col.Name, col.Name)
	}
	if summed {
		if !col.Type.Numeric() {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "%s needs a numeric column; %q is %s", fn, col.Name, col.Type).
				WithHint("COUNT(%s) counts its values; %s works on the numeric columns with bounds", col.Name, fn)
		}
		if col.Bounds == nil {
			return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "%s(%s) needs clamp bounds for %q in the policy", fn, col.Name, col.Name).
				WithHint("declare `bounds: [lo, hi]` for the column under protected_tables/%s/columns", a.table.Name)
		}
	}
	return col, nil
}

// addMeasurement adds a measurement, or returns the index of an identical
// one: aggregates that need the same noisy quantity (AVG(x) and COUNT(x),
// VAR_POP(x) and STDDEV(x)) share it, which spends ε once and keeps the
// released values consistent.
func (p *Plan) addMeasurement(m Measurement) int {
	for i, have := range p.Measurements {
		if have == m {
			return i
		}
	}
	p.Measurements = append(p.Measurements, m)
	return len(p.Measurements) - 1
}
