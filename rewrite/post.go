package rewrite

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// Post-processing of released rows: select-list expressions and HAVING
// conditions over aggregates, group keys and constants — COUNT(*) * 5,
// SUM(cost) / COUNT(*), ROUND(AVG(x), 2), CASE WHEN COUNT(*) > 10 THEN ...,
// HAVING COUNT(*) > 100 AND diagnosis <> 'Z00'. They are computed by dpproxy
// on the released (noisy) values, after the noise, so they cost no
// privacy: the aggregates inside are measured like selected ones (an
// aggregate used only inside an expression is measured too and takes its
// share of ε).
//
// Allowed: constants; group keys; aggregates; + - * / % and unary minus;
// comparisons, AND, OR, NOT, IS [NOT] NULL, BETWEEN, IN (constants); CASE;
// CAST to a number or text; ROUND, ABS, CEIL, FLOOR, POWER, SQRT, LN, EXP,
// GREATEST, LEAST, COALESCE, NULLIF. Arithmetic is in float64; division by
// zero gives NULL (the noisy denominator may be zero).

// Derived is an expression computed from a released row.
type Derived struct {
	expr ast.ExprNode
	// refs maps each aggregate call and group-key reference in expr to
	// the value it reads.
	refs map[ast.Node]derivedRef
	// aliases are select-list aliases the expression uses (HAVING n > 10).
	aliases []aliasUse
	// Text is the expression as written, for explain and golden files.
	Text string
}

type derivedRef struct {
	group, aggregate int
}

// Eval computes the expression for a row: keys are the group keys, aggs
// the released value of every aggregate of the plan.
func (d *Derived) Eval(keys, aggs []any) (any, error) {
	return d.eval(d.expr, keys, aggs)
}

// derived checks an expression over the plan's groups and aggregates,
// planning the aggregates it uses, and returns it with its result type.
func (a *analyzer) derived(expr ast.ExprNode, p *Plan, b *backendColumns, fields []*ast.SelectField) (*Derived, sqltypes.Type, error) {
	d := &Derived{expr: expr, refs: map[ast.Node]derivedRef{}}
	var sb strings.Builder
	if err := expr.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags|format.RestoreStringWithoutCharset, &sb)); err == nil {
		d.Text = sb.String()
	}
	typ, err := a.checkDerived(d, expr, p, b, fields)
	if err != nil {
		return nil, 0, err
	}
	return d, typ, nil
}

// aggregateSpellings are other systems' names of supported aggregates.
var aggregateSpellings = map[string]string{
	"var": ast.AggFuncVarSamp, "varp": ast.AggFuncVarPop, "stdev": ast.AggFuncStddevSamp, "stdevp": ast.AggFuncStddevPop,
}

// postFunctions are the functions allowed in post-processing.
var postFunctions = map[string]bool{
	"round": true, "abs": true, "ceil": true, "ceiling": true, "floor": true, "power": true, "pow": true,
	"sqrt": true, "ln": true, "exp": true, "greatest": true, "least": true, "coalesce": true, "nullif": true,
}

// postArity is each function's least and most arguments.
var postArity = map[string][2]int{
	"round": {1, 2}, "abs": {1, 1}, "ceil": {1, 1}, "ceiling": {1, 1}, "floor": {1, 1}, "power": {2, 2}, "pow": {2, 2},
	"sqrt": {1, 1}, "ln": {1, 1}, "exp": {1, 1}, "greatest": {1, 64}, "least": {1, 64}, "coalesce": {1, 64}, "nullif": {2, 2},
}

func postError(format string, args ...any) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, format, args...).
		WithHint("expressions over aggregates, group columns and constants may use arithmetic, comparisons, CASE, CAST, ROUND, ABS, CEIL, FLOOR, POWER, SQRT, LN, EXP, GREATEST, LEAST, COALESCE and NULLIF")
}

func (a *analyzer) checkDerived(d *Derived, expr ast.ExprNode, p *Plan, b *backendColumns, fields []*ast.SelectField) (sqltypes.Type, error) {
	check := func(e ast.ExprNode) (sqltypes.Type, error) { return a.checkDerived(d, e, p, b, fields) }
	switch x := expr.(type) {
	case *ast.ParenthesesExpr:
		return check(x.Expr)
	case *test_driver.ValueExpr:
		switch x.Kind() {
		case test_driver.KindString:
			return sqltypes.Text, nil
		case test_driver.KindNull:
			return sqltypes.Unknown, nil
		case test_driver.KindInt64, test_driver.KindUint64:
			return sqltypes.Int8, nil
		case test_driver.KindFloat64, test_driver.KindMysqlDecimal:
			return sqltypes.Float8, nil
		}
		return 0, postError("this kind of constant is not supported on released values")
	case *ast.AggregateFuncExpr:
		agg, _, typ, err := a.aggregate(x, strings.ToLower(x.F), p, b)
		if err != nil {
			return 0, err
		}
		agg.Type = typ
		p.Aggregates = append(p.Aggregates, agg)
		d.refs[x] = derivedRef{group: -1, aggregate: len(p.Aggregates) - 1}
		return typ, nil
	case *ast.ColumnNameExpr:
		// In HAVING, a select-list alias that is not a column of the
		// table (HAVING n > 10) stands for its expression (checked without
		// aliases, so it cannot refer to itself).
		if _, isColumn := a.table.Column(x.Name.Name.O); x.Name.Table.O == "" && !isColumn {
			for _, f := range fields {
				if f.AsName.O != "" && strings.EqualFold(f.AsName.O, x.Name.Name.O) {
					return a.aliasRef(d, x, f, p, b, fields)
				}
			}
		}
		col, err := a.column(x.Name)
		if err != nil {
			return 0, err
		}
		for gi, g := range p.Groups {
			if g.Column == col && g.Bucket == nil {
				d.refs[x] = derivedRef{group: gi, aggregate: -1}
				return columnType(col.Type), nil
			}
		}
		return 0, sqlerr.New(sqlerr.GroupingError, "column %q must appear in the GROUP BY clause or be used in an aggregate function", col.Name).
			WithHint("a condition on a column's rows goes in WHERE (WHERE %s > ...); HAVING filters groups by their keys and aggregates", col.Name)
	case *ast.UnaryOperationExpr:
		t, err := check(x.V)
		if err != nil {
			return 0, err
		}
		switch x.Op {
		case opcode.Minus, opcode.Plus:
			return t, nil
		case opcode.Not, opcode.Not2:
			return sqltypes.Bool, nil
		}
		return 0, postError("the operator %s is not supported on released values", x.Op)
	case *ast.BinaryOperationExpr:
		lt, err := check(x.L)
		if err != nil {
			return 0, err
		}
		rt, err := check(x.R)
		if err != nil {
			return 0, err
		}
		switch x.Op {
		case opcode.Plus, opcode.Minus, opcode.Mul, opcode.Mod:
			if lt.Integer() && rt.Integer() {
				return sqltypes.Int8, nil // COUNT(*) * 5 stays whole
			}
			return sqltypes.Float8, nil
		case opcode.IntDiv:
			return sqltypes.Int8, nil
		case opcode.Div:
			return sqltypes.Float8, nil
		case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE, opcode.LogicAnd, opcode.LogicOr:
			return sqltypes.Bool, nil
		}
		return 0, postError("the operator %s is not supported on released values", x.Op)
	case *ast.IsNullExpr:
		if _, err := check(x.Expr); err != nil {
			return 0, err
		}
		return sqltypes.Bool, nil
	case *ast.BetweenExpr:
		for _, e := range []ast.ExprNode{x.Expr, x.Left, x.Right} {
			if _, err := check(e); err != nil {
				return 0, err
			}
		}
		return sqltypes.Bool, nil
	case *ast.PatternInExpr:
		if x.Sel != nil {
			return 0, postError("IN (subquery) is not supported on released values")
		}
		if _, err := check(x.Expr); err != nil {
			return 0, err
		}
		for _, e := range x.List {
			if _, err := check(e); err != nil {
				return 0, err
			}
		}
		return sqltypes.Bool, nil
	case *ast.CaseExpr:
		if x.Value != nil {
			if _, err := check(x.Value); err != nil {
				return 0, err
			}
		}
		result := sqltypes.Unknown
		for _, w := range x.WhenClauses {
			if _, err := check(w.Expr); err != nil {
				return 0, err
			}
			t, err := check(w.Result)
			if err != nil {
				return 0, err
			}
			result = mergeType(result, t)
		}
		if x.ElseClause != nil {
			t, err := check(x.ElseClause)
			if err != nil {
				return 0, err
			}
			result = mergeType(result, t)
		}
		return result, nil
	case *ast.FuncCastExpr:
		if _, err := check(x.Expr); err != nil {
			return 0, err
		}
		switch x.Tp.GetType() {
		case mysql.TypeLonglong, mysql.TypeLong, mysql.TypeShort, mysql.TypeTiny:
			return sqltypes.Int8, nil
		case mysql.TypeDouble, mysql.TypeFloat, mysql.TypeNewDecimal:
			return sqltypes.Float8, nil
		case mysql.TypeVarchar, mysql.TypeString, mysql.TypeVarString, mysql.TypeBlob:
			return sqltypes.Text, nil
		}
		return 0, postError("CAST to %s is not supported on released values", x.Tp)
	case *ast.FuncCallExpr:
		name := x.FnName.L
		if to, ok := aggregateSpellings[name]; ok && x.Schema.L == "" {
			// VAR(x), STDEV(x), ...: another spelling of an aggregate.
			agg, _, typ, err := a.aggregate(&ast.AggregateFuncExpr{F: to, Args: x.Args}, to, p, b)
			if err != nil {
				return 0, err
			}
			agg.Type = typ
			p.Aggregates = append(p.Aggregates, agg)
			d.refs[x] = derivedRef{group: -1, aggregate: len(p.Aggregates) - 1}
			return typ, nil
		}
		if _, ok := quantileNames[name]; ok && x.Schema.L == "" {
			agg, typ, err := a.quantileCall(x, p)
			if err != nil {
				return 0, err
			}
			p.Aggregates = append(p.Aggregates, agg)
			d.refs[x] = derivedRef{group: -1, aggregate: len(p.Aggregates) - 1}
			return typ, nil
		}
		if !postFunctions[name] || x.Schema.L != "" {
			return 0, postError("the function %s() is not supported on released values", x.FnName.O)
		}
		if n := len(x.Args); n < postArity[name][0] || n > postArity[name][1] {
			return 0, postError("%s() takes %d to %d arguments, got %d", x.FnName.O, postArity[name][0], postArity[name][1], n)
		}
		result := sqltypes.Unknown
		for _, arg := range x.Args {
			t, err := check(arg)
			if err != nil {
				return 0, err
			}
			result = mergeType(result, t)
		}
		switch name {
		case "coalesce", "nullif", "greatest", "least":
			return result, nil
		case "round":
			if len(x.Args) == 1 {
				return sqltypes.Int8, nil
			}
		case "ceil", "ceiling", "floor":
			return sqltypes.Int8, nil
		}
		return sqltypes.Float8, nil
	}
	return 0, postError("this expression is not supported on released values")
}

// aliasRef resolves a select-list alias inside HAVING or another
// expression to the aliased expression.
func (a *analyzer) aliasRef(d *Derived, ref *ast.ColumnNameExpr, f *ast.SelectField, p *Plan, b *backendColumns, fields []*ast.SelectField) (sqltypes.Type, error) {
	if d.refs == nil {
		d.refs = map[ast.Node]derivedRef{}
	}
	inner := &Derived{expr: f.Expr, refs: d.refs}
	t, err := a.checkDerived(inner, f.Expr, p, b, nil)
	if err != nil {
		return 0, err
	}
	d.aliases = append(d.aliases, aliasUse{ref: ref, expr: f.Expr})
	return t, nil
}

type aliasUse struct {
	ref  *ast.ColumnNameExpr
	expr ast.ExprNode
}

func mergeType(a, b sqltypes.Type) sqltypes.Type {
	switch {
	case a == sqltypes.Unknown:
		return b
	case b == sqltypes.Unknown || a == b:
		return a
	case a == sqltypes.Text || b == sqltypes.Text:
		return sqltypes.Text
	}
	return sqltypes.Float8
}

// number reads a released value as a float; ok is false for NULL and
// non-numbers.
func releasedNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case string:
		return 0, false // text is compared as text, never read as a number
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return sqltypes.Number(v)
}

func truth(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case nil:
		return false, false
	}
	f, ok := releasedNumber(v)
	return f != 0, ok
}

func (d *Derived) eval(expr ast.ExprNode, keys, aggs []any) (any, error) {
	ev := func(e ast.ExprNode) (any, error) { return d.eval(e, keys, aggs) }
	for _, u := range d.aliases {
		if u.ref == expr {
			return ev(u.expr)
		}
	}
	if r, ok := d.refs[expr]; ok {
		if r.group >= 0 {
			return keys[r.group], nil
		}
		return aggs[r.aggregate], nil
	}
	switch x := expr.(type) {
	case *ast.ParenthesesExpr:
		return ev(x.Expr)
	case *test_driver.ValueExpr:
		switch x.Kind() {
		case test_driver.KindNull:
			return nil, nil
		case test_driver.KindString:
			return x.GetString(), nil
		case test_driver.KindInt64:
			return float64(x.GetInt64()), nil
		case test_driver.KindUint64:
			return float64(x.GetUint64()), nil
		case test_driver.KindFloat64:
			return x.GetFloat64(), nil
		case test_driver.KindMysqlDecimal:
			return strconv.ParseFloat(x.GetMysqlDecimal().String(), 64)
		}
		return nil, nil // other constants are refused when the query is checked
	case *ast.UnaryOperationExpr:
		v, err := ev(x.V)
		if err != nil || v == nil {
			return nil, err
		}
		switch x.Op {
		case opcode.Minus:
			f, _ := releasedNumber(v)
			return -f, nil
		case opcode.Plus:
			return v, nil
		default:
			b, _ := truth(v)
			return !b, nil
		}
	case *ast.BinaryOperationExpr:
		l, err := ev(x.L)
		if err != nil {
			return nil, err
		}
		if x.Op == opcode.LogicAnd || x.Op == opcode.LogicOr {
			lb, lok := truth(l)
			if x.Op == opcode.LogicAnd && lok && !lb {
				return false, nil
			}
			if x.Op == opcode.LogicOr && lok && lb {
				return true, nil
			}
			r, err := ev(x.R)
			if err != nil {
				return nil, err
			}
			rb, rok := truth(r)
			if !lok || !rok {
				if x.Op == opcode.LogicAnd && rok && !rb || x.Op == opcode.LogicOr && rok && rb {
					return rb, nil
				}
				return nil, nil
			}
			return rb, nil
		}
		r, err := ev(x.R)
		if err != nil {
			return nil, err
		}
		if l == nil || r == nil {
			return nil, nil
		}
		switch x.Op {
		case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE:
			c := compareAny(l, r)
			return map[opcode.Op]bool{opcode.EQ: c == 0, opcode.NE: c != 0, opcode.LT: c < 0, opcode.LE: c <= 0, opcode.GT: c > 0, opcode.GE: c >= 0}[x.Op], nil
		}
		a, _ := releasedNumber(l)
		b, _ := releasedNumber(r)
		switch x.Op {
		case opcode.Plus:
			return a + b, nil
		case opcode.Minus:
			return a - b, nil
		case opcode.Mul:
			return a * b, nil
		case opcode.Div:
			if b == 0 {
				return nil, nil
			}
			return a / b, nil
		case opcode.IntDiv:
			if b == 0 {
				return nil, nil
			}
			return math.Trunc(a / b), nil
		case opcode.Mod:
			if b == 0 {
				return nil, nil
			}
			return math.Mod(a, b), nil
		}
	case *ast.IsNullExpr:
		v, err := ev(x.Expr)
		if err != nil {
			return nil, err
		}
		return (v == nil) != x.Not, nil
	case *ast.BetweenExpr:
		v, err := ev(x.Expr)
		if err != nil {
			return nil, err
		}
		lo, err := ev(x.Left)
		if err != nil {
			return nil, err
		}
		hi, err := ev(x.Right)
		if err != nil {
			return nil, err
		}
		if v == nil || lo == nil || hi == nil {
			return nil, nil
		}
		in := compareAny(v, lo) >= 0 && compareAny(v, hi) <= 0
		return in != x.Not, nil
	case *ast.PatternInExpr:
		v, err := ev(x.Expr)
		if err != nil || v == nil {
			return nil, err
		}
		for _, e := range x.List {
			c, err := ev(e)
			if err != nil {
				return nil, err
			}
			if c != nil && compareAny(v, c) == 0 {
				return !x.Not, nil
			}
		}
		return x.Not, nil
	case *ast.CaseExpr:
		var value any
		if x.Value != nil {
			var err error
			if value, err = ev(x.Value); err != nil {
				return nil, err
			}
		}
		for _, w := range x.WhenClauses {
			c, err := ev(w.Expr)
			if err != nil {
				return nil, err
			}
			hit := false
			if x.Value != nil {
				hit = value != nil && c != nil && compareAny(value, c) == 0
			} else {
				hit, _ = truth(c)
			}
			if hit {
				return ev(w.Result)
			}
		}
		if x.ElseClause != nil {
			return ev(x.ElseClause)
		}
		return nil, nil
	case *ast.FuncCastExpr:
		v, err := ev(x.Expr)
		if err != nil || v == nil {
			return nil, err
		}
		switch x.Tp.GetType() {
		case mysql.TypeVarchar, mysql.TypeString, mysql.TypeVarString, mysql.TypeBlob:
			return fmt.Sprint(v), nil
		}
		f, ok := releasedNumber(v)
		if !ok {
			// A cast that does not apply gives NULL, never an error: an
			// error here could depend on the noisy values.
			s, isStr := v.(string)
			if !isStr {
				return nil, nil
			}
			var err error
			if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
				return nil, nil
			}
		}
		switch x.Tp.GetType() {
		case mysql.TypeLonglong, mysql.TypeLong, mysql.TypeShort, mysql.TypeTiny:
			return math.Round(f), nil
		}
		return f, nil
	case *ast.FuncCallExpr:
		args := make([]any, len(x.Args))
		for i, e := range x.Args {
			v, err := ev(e)
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
		return postCall(x.FnName.L, args)
	}
	return nil, nil // other expressions are refused when the query is checked
}

func postCall(name string, args []any) (any, error) {
	switch name {
	case "coalesce":
		for _, a := range args {
			if a != nil {
				return a, nil
			}
		}
		return nil, nil
	case "nullif":
		if len(args) == 2 && args[0] != nil && args[1] != nil && compareAny(args[0], args[1]) == 0 {
			return nil, nil
		}
		return args[0], nil
	case "greatest", "least":
		var best any
		for _, a := range args {
			if a == nil {
				continue
			}
			if best == nil || (name == "greatest") == (compareAny(a, best) > 0) && compareAny(a, best) != 0 {
				best = a
			}
		}
		return best, nil
	}
	for _, a := range args {
		if a == nil {
			return nil, nil
		}
	}
	f := make([]float64, len(args))
	for i, a := range args {
		f[i], _ = releasedNumber(a)
	}
	arg := func(i int) float64 {
		if i < len(f) {
			return f[i]
		}
		return 0
	}
	switch name {
	case "round":
		scale := math.Pow(10, math.Round(arg(1)))
		return math.Round(arg(0)*scale) / scale, nil
	case "abs":
		return math.Abs(arg(0)), nil
	case "ceil", "ceiling":
		return math.Ceil(arg(0)), nil
	case "floor":
		return math.Floor(arg(0)), nil
	case "power", "pow":
		return math.Pow(arg(0), arg(1)), nil
	case "sqrt":
		if arg(0) < 0 {
			return nil, nil
		}
		return math.Sqrt(arg(0)), nil
	case "ln":
		if arg(0) <= 0 {
			return nil, nil
		}
		return math.Log(arg(0)), nil
	case "exp":
		return math.Exp(arg(0)), nil
	}
	return nil, nil
}

// compareAny orders two released values: numbers as numbers, anything
// else by its text.
func compareAny(a, b any) int {
	fa, oka := releasedNumber(a)
	fb, okb := releasedNumber(b)
	if oka && okb {
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}
