package rewrite

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// Parameters ($1 … $n from PostgreSQL clients, ? from MySQL clients) are
// bound by replacing each parameter marker in a freshly parsed syntax tree
// with a constant of the right type. The statement is then checked and
// emitted exactly like one written with constants: values never reach SQL
// text except through the emitter's quoting, and a value can never change
// the statement's structure.

// ParamMarkers returns the statement's parameter markers in the order they
// appear in the text, and numbers them so (their Order field: the TiDB
// parser leaves it 0).
func ParamMarkers(stmt ast.StmtNode) []*test_driver.ParamMarkerExpr {
	c := &markerCollector{}
	stmt.Accept(c)
	sort.SliceStable(c.markers, func(i, j int) bool { return c.markers[i].Offset < c.markers[j].Offset })
	for i, m := range c.markers {
		m.Order = i
	}
	return c.markers
}

type markerCollector struct {
	markers []*test_driver.ParamMarkerExpr
}

func (c *markerCollector) Enter(n ast.Node) (ast.Node, bool) {
	if m, ok := n.(*test_driver.ParamMarkerExpr); ok {
		c.markers = append(c.markers, m)
	}
	return n, false
}

func (c *markerCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// InferParamTypes gives each parameter number (1-based; markerParams[i] is
// the parameter number of marker i) the type its context implies: the
// column it is compared with in a protected table, bigint in LIMIT.
// Parameters with no such context are Unknown (taken as text).
func InferParamTypes(stmt ast.StmtNode, pol *config.Policy, markerParams []int, count int) []sqltypes.Type {
	types := make([]sqltypes.Type, count)
	markers := ParamMarkers(stmt)
	paramOf := func(m *test_driver.ParamMarkerExpr) int {
		if m.Order < len(markerParams) {
			return markerParams[m.Order]
		}
		return m.Order + 1
	}
	set := func(expr ast.ExprNode, t sqltypes.Type) {
		m, ok := unparen(expr).(*test_driver.ParamMarkerExpr)
		if !ok {
			return
		}
		if n := paramOf(m); n >= 1 && n <= count && types[n-1] == sqltypes.Unknown {
			types[n-1] = t
		}
	}
	if len(markers) == 0 {
		return types
	}
	sel, ok := stmt.(*ast.SelectStmt)
	if !ok {
		return types
	}
	var table *config.ProtectedTable
	for _, tn := range collectTables(sel) {
		if pt, _ := pol.LookupTable(tn.Schema.O, tn.Name.O); pt != nil {
			table = pt
		}
	}
	colType := func(expr ast.ExprNode) (sqltypes.Type, bool) {
		cn, ok := unparen(expr).(*ast.ColumnNameExpr)
		if !ok || table == nil {
			return 0, false
		}
		col, ok := table.Column(cn.Name.Name.O)
		if !ok {
			return 0, false
		}
		return columnType(col.Type), true
	}
	pairs := func(a, b ast.ExprNode) {
		if t, ok := colType(a); ok {
			set(b, t)
		}
		if t, ok := colType(b); ok {
			set(a, t)
		}
	}
	v := &inferVisitor{visit: func(n ast.Node) {
		switch x := n.(type) {
		case *ast.BinaryOperationExpr:
			pairs(x.L, x.R)
		case *ast.PatternInExpr:
			for _, item := range x.List {
				pairs(x.Expr, item)
			}
		case *ast.BetweenExpr:
			pairs(x.Expr, x.Left)
			pairs(x.Expr, x.Right)
		case *ast.PatternLikeOrIlikeExpr:
			set(x.Pattern, sqltypes.Text)
		}
	}}
	sel.Accept(v)
	if sel.Limit != nil {
		set(sel.Limit.Count, sqltypes.Int8)
		if sel.Limit.Offset != nil {
			set(sel.Limit.Offset, sqltypes.Int8)
		}
	}
	return types
}

type inferVisitor struct{ visit func(ast.Node) }

func (v *inferVisitor) Enter(n ast.Node) (ast.Node, bool) { v.visit(n); return n, false }
func (v *inferVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// BindParams replaces every parameter marker of stmt (parsed afresh for
// this execution: the tree is changed in place) with a constant holding
// the value of its parameter. markerParams[i] is the 1-based parameter
// number of marker i (nil: marker i is parameter i+1); values[n-1] and
// types[n-1] are parameter n's value and type. A value that cannot be
// read as its type, or a NaN or infinite number, is an error (22P02 /
// 22023) before anything runs.
func BindParams(stmt ast.StmtNode, markerParams []int, values []any, types []sqltypes.Type) error {
	ParamMarkers(stmt) // number the markers
	b := &binder{markerParams: markerParams, values: values, types: types}
	stmt.Accept(b)
	return b.err
}

type binder struct {
	markerParams []int
	values       []any
	types        []sqltypes.Type
	err          error
}

func (b *binder) Enter(n ast.Node) (ast.Node, bool) { return n, b.err != nil }

func (b *binder) Leave(n ast.Node) (ast.Node, bool) {
	m, ok := n.(*test_driver.ParamMarkerExpr)
	if !ok || b.err != nil {
		return n, b.err == nil
	}
	num := m.Order + 1
	if m.Order < len(b.markerParams) {
		num = b.markerParams[m.Order]
	}
	if num < 1 || num > len(b.values) {
		b.err = sqlerr.New(sqlerr.ProtocolViolation, "statement uses parameter $%d but %d parameter value(s) were supplied", num, len(b.values))
		return n, false
	}
	t := sqltypes.Unknown
	if num <= len(b.types) {
		t = b.types[num-1]
	}
	v, err := constant(b.values[num-1], t, num)
	if err != nil {
		b.err = err
		return n, false
	}
	return v, true
}

// constant makes the syntax-tree constant for one parameter value.
func constant(value any, t sqltypes.Type, num int) (*test_driver.ValueExpr, error) {
	v := &test_driver.ValueExpr{}
	bad := func(format string, args ...any) (*test_driver.ValueExpr, error) {
		return nil, sqlerr.New(sqlerr.InvalidTextRepresent, "parameter $%d: %s", append([]any{num}, fmt.Sprintf(format, args...))...)
	}
	switch x := value.(type) {
	case nil:
		v.SetNull()
		return v, nil
	case string:
		if strings.IndexByte(x, 0) >= 0 {
			return bad("text contains a NUL byte")
		}
		switch t {
		case sqltypes.Int2, sqltypes.Int4, sqltypes.Int8:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return bad("invalid input syntax for type %s: %q", t, x)
			}
			v.SetInt64(n)
			return v, nil
		case sqltypes.Float4, sqltypes.Float8, sqltypes.Numeric:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return bad("invalid input syntax for type %s: %q", t, x)
			}
			return constant(f, t, num)
		case sqltypes.Bool:
			bv, err := strconv.ParseBool(x)
			if err != nil {
				return bad("invalid input syntax for type boolean: %q", x)
			}
			return constant(bv, t, num)
		}
		v.SetString(x)
		return v, nil
	case int64:
		v.SetInt64(x)
		return v, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "parameter $%d: NaN and infinite numbers are not allowed", num)
		}
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 && (t == sqltypes.Int2 || t == sqltypes.Int4 || t == sqltypes.Int8) {
			v.SetInt64(int64(x))
			return v, nil
		}
		v.SetFloat64(x)
		return v, nil
	case sqltypes.Decimal:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return bad("invalid numeric value %q", string(x))
		}
		return constant(f, t, num)
	case bool:
		if x {
			v.SetInt64(1)
		} else {
			v.SetInt64(0)
		}
		return v, nil
	case time.Time:
		if t == sqltypes.Date {
			v.SetString(x.Format("2006-01-02"))
		} else {
			v.SetString(x.Format("2006-01-02 15:04:05.999999"))
		}
		return v, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "parameter $%d: values of Go type %T are not supported", num, value)
}

// PlaceholderValue is a value of type t used to check and describe a
// prepared statement before its real parameters are known.
func PlaceholderValue(t sqltypes.Type) any {
	switch t {
	case sqltypes.Int2, sqltypes.Int4, sqltypes.Int8:
		return int64(1)
	case sqltypes.Float4, sqltypes.Float8, sqltypes.Numeric:
		return float64(1)
	case sqltypes.Date:
		return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	case sqltypes.Timestamp, sqltypes.Timestamptz:
		return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	case sqltypes.Bool:
		return true
	}
	return nil // unknown type: NULL compares with anything and fails on nothing
}
