package session

import (
	"math"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// A SELECT without FROM made of constants and session functions — what
// drivers and BI tools send to learn about the server (`SELECT version()`,
// `select current_schema()`, `SELECT current_setting('server_version_num')::int/100`,
// `SELECT 1`) — is answered by dpproxy itself: it reads no data, costs
// nothing, and works the same whatever the backend.

// localValue is a value computed locally, with its SQL type.
type localValue struct {
	v any
	t sqltypes.Type
}

// evalLocal answers sel when it is such a query; ok is false otherwise
// (the statement then takes the normal path).
func (s *Session) evalLocal(sel *ast.SelectStmt) (res *sqltypes.Result, ok bool) {
	if sel.From != nil || sel.Where != nil || sel.GroupBy != nil || sel.Having != nil || sel.With != nil ||
		sel.OrderBy != nil || sel.Fields == nil || sel.Kind != ast.SelectStmtKindSelect {
		return nil, false
	}
	res = &sqltypes.Result{}
	row := make([]any, 0, len(sel.Fields.Fields))
	for _, f := range sel.Fields.Fields {
		if f.Expr == nil {
			return nil, false
		}
		lv, ok := s.eval(f.Expr)
		if !ok {
			return nil, false
		}
		res.Columns = append(res.Columns, sqltypes.Column{Name: localName(f), Type: lv.t})
		row = append(row, lv.v)
	}
	return oneRowResult(res, row, sel.Limit)
}

// oneRowResult finishes a locally computed one-row answer: LIMIT 0 (the
// only LIMIT such a query can meaningfully carry) drops the row; any other
// LIMIT or an OFFSET sends the query down the normal path (ok false).
func oneRowResult(res *sqltypes.Result, row []any, limit *ast.Limit) (*sqltypes.Result, bool) {
	res.Rows = [][]any{row}
	if limit != nil {
		if limit.Offset != nil {
			return nil, false
		}
		n, ok := limit.Count.(*test_driver.ValueExpr)
		if !ok {
			return nil, false
		}
		switch n.Kind() {
		case test_driver.KindInt64, test_driver.KindUint64:
			if n.GetValue() == int64(0) || n.GetValue() == uint64(0) {
				res.Rows = nil
			}
		default:
			return nil, false
		}
	}
	res.Tag = sqltypes.SelectTag(len(res.Rows))
	return res, true
}

// localName names a column as PostgreSQL does: the alias, the function
// name, or ?column?.
func localName(f *ast.SelectField) string {
	if f.AsName.O != "" {
		return f.AsName.O
	}
	switch x := f.Expr.(type) {
	case *ast.FuncCallExpr:
		return x.FnName.L
	case *ast.ColumnNameExpr:
		return x.Name.Name.L
	case *ast.FuncCastExpr:
		if inner, ok := x.Expr.(*ast.FuncCallExpr); ok {
			return inner.FnName.L
		}
	case *test_driver.ValueExpr:
		if x.Type.GetFlag()&mysql.IsBooleanFlag != 0 {
			return "bool"
		}
	}
	return "?column?"
}

func (s *Session) eval(expr ast.ExprNode) (localValue, bool) {
	switch x := expr.(type) {
	case *ast.ParenthesesExpr:
		return s.eval(x.Expr)
	case *test_driver.ValueExpr:
		switch x.Kind() {
		case test_driver.KindNull:
			return localValue{nil, sqltypes.Text}, true
		case test_driver.KindInt64:
			if x.Type.GetFlag()&mysql.IsBooleanFlag != 0 {
				return localValue{x.GetInt64() != 0, sqltypes.Bool}, true
			}
			n := x.GetInt64()
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return localValue{n, sqltypes.Int4}, true
			}
			return localValue{n, sqltypes.Int8}, true
		case test_driver.KindUint64:
			return localValue{sqltypes.Decimal(strconv.FormatUint(x.GetUint64(), 10)), sqltypes.Numeric}, true
		case test_driver.KindFloat64:
			return localValue{sqltypes.Decimal(strconv.FormatFloat(x.GetFloat64(), 'f', -1, 64)), sqltypes.Numeric}, true
		case test_driver.KindMysqlDecimal:
			return localValue{sqltypes.Decimal(x.GetMysqlDecimal().String()), sqltypes.Numeric}, true
		case test_driver.KindString:
			return localValue{x.GetString(), sqltypes.Text}, true
		}
	case *ast.ColumnNameExpr:
		if x.Name.Table.O == "" {
			switch x.Name.Name.L {
			case "session_user", "current_user", "user", "current_role":
				return localValue{s.analyst, sqltypes.Name}, true
			case "current_catalog":
				return localValue{s.database, sqltypes.Name}, true
			case "current_schema":
				return localValue{"public", sqltypes.Name}, true
			}
		}
	case *ast.FuncCallExpr:
		return s.evalFunc(x)
	case *ast.FuncCastExpr:
		inner, ok := s.eval(x.Expr)
		if !ok {
			return localValue{}, false
		}
		return castLocal(inner, x.Tp.GetType())
	case *ast.UnaryOperationExpr:
		if x.Op == opcode.Minus {
			if v, ok := s.eval(x.V); ok {
				if n, isInt := v.v.(int64); isInt {
					return localValue{-n, v.t}, true
				}
			}
		}
	case *ast.BinaryOperationExpr:
		l, ok1 := s.eval(x.L)
		r, ok2 := s.eval(x.R)
		a, aok := l.v.(int64)
		b, bok := r.v.(int64)
		if !ok1 || !ok2 || !aok || !bok {
			return localValue{}, false
		}
		t := sqltypes.Int4
		if l.t == sqltypes.Int8 || r.t == sqltypes.Int8 {
			t = sqltypes.Int8
		}
		switch x.Op {
		case opcode.Plus:
			return localValue{a + b, t}, true
		case opcode.Minus:
			return localValue{a - b, t}, true
		case opcode.Mul:
			return localValue{a * b, t}, true
		case opcode.Div, opcode.IntDiv:
			if b == 0 {
				return localValue{}, false
			}
			return localValue{a / b, t}, true
		case opcode.EQ:
			return localValue{a == b, sqltypes.Bool}, true
		case opcode.NE:
			return localValue{a != b, sqltypes.Bool}, true
		}
	}
	return localValue{}, false
}

func (s *Session) evalFunc(x *ast.FuncCallExpr) (localValue, bool) {
	if x.Schema.L != "" && x.Schema.L != "pg_catalog" {
		return localValue{}, false
	}
	switch x.FnName.L {
	case "version":
		if len(x.Args) == 0 {
			return localValue{"PostgreSQL " + ServerVersion + ", a differential-privacy proxy", sqltypes.Text}, true
		}
	case "current_schema":
		if len(x.Args) == 0 {
			return localValue{"public", sqltypes.Name}, true
		}
	case "current_database", "current_catalog":
		if len(x.Args) == 0 {
			return localValue{s.database, sqltypes.Name}, true
		}
	case "current_user", "session_user", "user":
		if len(x.Args) == 0 {
			return localValue{s.analyst, sqltypes.Name}, true
		}
	case "pg_backend_pid":
		if len(x.Args) == 0 {
			return localValue{int64(0), sqltypes.Int4}, true
		}
	case "current_setting":
		if len(x.Args) == 1 || len(x.Args) == 2 {
			name, ok := s.eval(x.Args[0])
			str, isStr := name.v.(string)
			if !ok || !isStr {
				return localValue{}, false
			}
			if name, err := checkSettingName(str); err == nil && strings.HasPrefix(strings.ToLower(str), settingPrefix) {
				return localValue{s.showSetting(name).Rows[0][0], sqltypes.Text}, true
			}
			if v, ok := s.setting(str); ok {
				return localValue{v, sqltypes.Text}, true
			}
			if len(x.Args) == 2 { // missing_ok
				return localValue{nil, sqltypes.Text}, true
			}
		}
	}
	return localValue{}, false
}

// castLocal applies CAST(v AS t) for the casts clients send about the
// server (a version number to an integer, a value to text).
func castLocal(v localValue, tp byte) (localValue, bool) {
	switch tp {
	case mysql.TypeLonglong, mysql.TypeLong:
		switch x := v.v.(type) {
		case int64:
			return localValue{x, sqltypes.Int4}, true
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return localValue{}, false
			}
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return localValue{n, sqltypes.Int4}, true
			}
			return localValue{n, sqltypes.Int8}, true
		}
	case mysql.TypeVarString, mysql.TypeString, mysql.TypeVarchar:
		switch x := v.v.(type) {
		case string:
			return localValue{x, sqltypes.Text}, true
		case int64:
			return localValue{strconv.FormatInt(x, 10), sqltypes.Text}, true
		}
	}
	return localValue{}, false
}
