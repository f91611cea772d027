package rewrite

import (
	"math"
	"sort"

	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// The error of an expression over released aggregates — a ratio
// SUM(cost) / COUNT(*), a share COUNT(*) * 100.0 / 2500, a difference —
// is stated by interval arithmetic: when every aggregate it reads lies in
// its interval, the expression lies in the interval computed here. The
// engine takes each of the m aggregates' intervals at 1 − 5 %/m (a union
// bound), so that the expression's interval is a 95 % one.

// Aggregates lists the aggregates the expression reads (indexes into
// Plan.Aggregates), each once, in increasing order.
func (d *Derived) Aggregates() []int {
	seen := map[int]bool{}
	for _, r := range d.refs {
		if r.group < 0 && r.aggregate >= 0 {
			seen[r.aggregate] = true
		}
	}
	out := make([]int, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Ints(out)
	return out
}

// Interval encloses the expression's value for a row whose group keys
// are keys when aggregate i lies in aggs[i]: constants, numeric keys,
// + − × ÷ DIV, unary minus, parentheses, numeric CAST, ROUND, CEIL,
// FLOOR, ABS, SQRT, LN, EXP, GREATEST and LEAST. It is nil when the
// expression does anything else, reads an aggregate whose interval is
// nil, or divides by an interval that holds 0.
func (d *Derived) Interval(keys []any, aggs []*sqltypes.Interval) *sqltypes.Interval {
	iv, ok := d.interval(d.expr, keys, aggs)
	if !ok || math.IsNaN(iv.Lo) || math.IsNaN(iv.Hi) {
		return nil
	}
	return &iv
}

// HasInterval reports whether the expression's form allows an interval
// (Interval may still be nil for a row, as when a denominator's interval
// holds 0).
func (d *Derived) HasInterval() bool {
	ids := d.Aggregates()
	if len(ids) == 0 {
		return false
	}
	aggs := make([]*sqltypes.Interval, ids[len(ids)-1]+1)
	for _, i := range ids {
		aggs[i] = &sqltypes.Interval{Lo: 1, Hi: 2}
	}
	return d.Interval(nil, aggs) != nil
}

// interval computes the enclosure; keys == nil stands for numeric keys
// (HasInterval's check of the form).
func (d *Derived) interval(expr ast.ExprNode, keys []any, aggs []*sqltypes.Interval) (sqltypes.Interval, bool) {
	iv := func(e ast.ExprNode) (sqltypes.Interval, bool) { return d.interval(e, keys, aggs) }
	for _, u := range d.aliases {
		if u.ref == expr {
			return iv(u.expr)
		}
	}
	if r, ok := d.refs[expr]; ok {
		if r.group >= 0 {
			if keys == nil {
				return sqltypes.Interval{Lo: 1, Hi: 2}, true
			}
			f, isNumber := releasedNumber(keys[r.group])
			return sqltypes.Interval{Lo: f, Hi: f}, isNumber
		}
		if r.aggregate < len(aggs) && aggs[r.aggregate] != nil {
			return *aggs[r.aggregate], true
		}
		return sqltypes.Interval{}, false
	}
	switch x := expr.(type) {
	case *ast.ParenthesesExpr:
		return iv(x.Expr)
	case *test_driver.ValueExpr:
		v, err := d.eval(x, nil, nil)
		f, isNumber := releasedNumber(v)
		return sqltypes.Interval{Lo: f, Hi: f}, err == nil && isNumber
	case *ast.UnaryOperationExpr:
		v, ok := iv(x.V)
		switch {
		case !ok:
			return v, false
		case x.Op == opcode.Minus:
			return sqltypes.Interval{Lo: -v.Hi, Hi: -v.Lo}, true
		case x.Op == opcode.Plus:
			return v, true
		}
	case *ast.BinaryOperationExpr:
		l, lok := iv(x.L)
		r, rok := iv(x.R)
		if !lok || !rok {
			return sqltypes.Interval{}, false
		}
		switch x.Op {
		case opcode.Plus:
			return sqltypes.Interval{Lo: l.Lo + r.Lo, Hi: l.Hi + r.Hi}, true
		case opcode.Minus:
			return sqltypes.Interval{Lo: l.Lo - r.Hi, Hi: l.Hi - r.Lo}, true
		case opcode.Mul:
			return corners(l, r, func(a, b float64) float64 { return a * b }), true
		case opcode.Div, opcode.IntDiv:
			if r.Lo <= 0 && r.Hi >= 0 {
				return sqltypes.Interval{}, false
			}
			q := corners(l, r, func(a, b float64) float64 { return a / b })
			if x.Op == opcode.IntDiv {
				q = sqltypes.Interval{Lo: math.Trunc(q.Lo), Hi: math.Trunc(q.Hi)}
			}
			return q, true
		}
	case *ast.FuncCastExpr:
		v, ok := iv(x.Expr)
		if !ok {
			return v, false
		}
		switch x.Tp.GetType() {
		case mysql.TypeVarchar, mysql.TypeString, mysql.TypeVarString, mysql.TypeBlob:
			return v, false
		case mysql.TypeLonglong, mysql.TypeLong, mysql.TypeShort, mysql.TypeTiny:
			return sqltypes.Interval{Lo: math.Round(v.Lo), Hi: math.Round(v.Hi)}, true
		}
		return v, true
	case *ast.FuncCallExpr:
		return d.callInterval(x, keys, aggs)
	}
	return sqltypes.Interval{}, false
}

// callInterval applies a function to its arguments' intervals: each
// function allowed is monotone in its argument (ABS on either side of 0),
// so the interval's ends map to the result's.
func (d *Derived) callInterval(x *ast.FuncCallExpr, keys []any, aggs []*sqltypes.Interval) (sqltypes.Interval, bool) {
	args := make([]sqltypes.Interval, len(x.Args))
	for i, e := range x.Args {
		var ok bool
		if args[i], ok = d.interval(e, keys, aggs); !ok {
			return sqltypes.Interval{}, false
		}
	}
	monotone := func(f func(float64) float64) (sqltypes.Interval, bool) {
		if len(args) < 1 {
			return sqltypes.Interval{}, false
		}
		return sqltypes.Interval{Lo: f(args[0].Lo), Hi: f(args[0].Hi)}, true
	}
	switch x.FnName.L {
	case "round":
		if len(args) == 2 && args[1].Lo != args[1].Hi {
			return sqltypes.Interval{}, false // the digits are a noisy value
		}
		scale := 1.0
		if len(args) == 2 {
			scale = math.Pow(10, math.Round(args[1].Lo))
		}
		return monotone(func(v float64) float64 { return math.Round(v*scale) / scale })
	case "ceil", "ceiling":
		return monotone(math.Ceil)
	case "floor":
		return monotone(math.Floor)
	case "exp":
		return monotone(math.Exp)
	case "sqrt":
		if len(args) < 1 || args[0].Lo < 0 {
			return sqltypes.Interval{}, false
		}
		return monotone(math.Sqrt)
	case "ln":
		if len(args) < 1 || args[0].Lo <= 0 {
			return sqltypes.Interval{}, false
		}
		return monotone(math.Log)
	case "abs":
		if len(args) < 1 {
			return sqltypes.Interval{}, false
		}
		a := args[0]
		switch {
		case a.Lo >= 0:
			return a, true
		case a.Hi <= 0:
			return sqltypes.Interval{Lo: -a.Hi, Hi: -a.Lo}, true
		}
		return sqltypes.Interval{Lo: 0, Hi: math.Max(-a.Lo, a.Hi)}, true
	case "greatest", "least":
		if len(args) == 0 {
			return sqltypes.Interval{}, false
		}
		pick := math.Max
		if x.FnName.L == "least" {
			pick = math.Min
		}
		out := args[0]
		for _, a := range args[1:] {
			out = sqltypes.Interval{Lo: pick(out.Lo, a.Lo), Hi: pick(out.Hi, a.Hi)}
		}
		return out, true
	}
	return sqltypes.Interval{}, false
}

// corners is the range of op over the corners of a box, which holds its
// range over the whole box for × and for ÷ by an interval without 0.
func corners(l, r sqltypes.Interval, op func(a, b float64) float64) sqltypes.Interval {
	out := sqltypes.Interval{Lo: math.Inf(1), Hi: math.Inf(-1)}
	for _, a := range []float64{l.Lo, l.Hi} {
		for _, b := range []float64{r.Lo, r.Hi} {
			v := op(a, b)
			out.Lo, out.Hi = math.Min(out.Lo, v), math.Max(out.Hi, v)
		}
	}
	return out
}
