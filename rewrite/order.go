package rewrite

import (
	"math"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// ORDER BY and LIMIT on released rows, and small helpers for names and
// types of output columns.

// orderAndLimit plans ORDER BY over output columns and LIMIT/OFFSET. Both
// run after noise, on the released rows: post-processing costs nothing.
func (a *analyzer) orderAndLimit(p *Plan, sel *ast.SelectStmt) error {
	if sel.OrderBy != nil {
		for _, item := range sel.OrderBy.Items {
			idx, err := a.orderTarget(p, sel, item.Expr)
			if err != nil {
				return err
			}
			p.OrderBy = append(p.OrderBy, OrderKey{Output: idx, Desc: item.Desc})
		}
	}
	if sel.Limit != nil {
		count, err := constantInt(sel.Limit.Count, "LIMIT")
		if err != nil {
			return err
		}
		p.Limit = count
		if sel.Limit.Offset != nil {
			return sqlerr.New(sqlerr.FeatureNotSupported, "OFFSET is not supported directly on protected tables").
				WithHint("page over the released rows with an outer query: SELECT * FROM (SELECT ... ORDER BY ... LIMIT n) AS t OFFSET m")
		}
	}
	return nil
}

func (a *analyzer) orderTarget(p *Plan, sel *ast.SelectStmt, expr ast.ExprNode) (int, error) {
	expr = unparen(expr)
	if pos, ok := expr.(*ast.PositionExpr); ok {
		if pos.P == nil && pos.N >= 1 && pos.N <= len(p.Output) {
			return pos.N - 1, nil
		}
		return 0, sqlerr.New(sqlerr.InvalidParameterValue, "ORDER BY position %d is not in select list", pos.N)
	}
	if cn, ok := expr.(*ast.ColumnNameExpr); ok {
		if cn.Name.Table.O == "" {
			for i, out := range p.Output {
				if strings.EqualFold(out.Name, cn.Name.Name.O) {
					return i, nil
				}
			}
		}
		// A (qualified) group column: the output showing it.
		if col, err := a.column(cn.Name); err == nil {
			for i, out := range p.Output {
				if g := out.Source.Group; g >= 0 && p.Groups[g].Column == col && p.Groups[g].Bucket == nil {
					return i, nil
				}
			}
		}
	}
	want, err := restore(expr, Postgres)
	if err == nil {
		for i, f := range sel.Fields.Fields {
			if f.Expr == nil {
				continue
			}
			if got, err := restore(f.Expr, Postgres); err == nil && got == want {
				return i, nil
			}
		}
	}
	return 0, sqlerr.New(sqlerr.FeatureNotSupported, "ORDER BY must name a column of the select list").
		WithHint("order by an output column name, alias or position")
}

func constantInt(expr ast.ExprNode, clause string) (int64, error) {
	if n, ok := NonNegativeInt(expr); ok {
		return n, nil
	}
	return 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s must be a non-negative integer constant", clause)
}

// NonNegativeInt returns the value of an integer constant ≥ 0 (LIMIT,
// OFFSET).
func NonNegativeInt(expr ast.ExprNode) (int64, bool) {
	v, ok := expr.(*test_driver.ValueExpr)
	if !ok {
		return 0, false
	}
	switch v.Kind() {
	case test_driver.KindInt64:
		if n := v.GetInt64(); n >= 0 {
			return n, true
		}
	case test_driver.KindUint64:
		if n := v.GetUint64(); n <= math.MaxInt64 {
			return int64(n), true
		}
	}
	return 0, false
}

func isNonNullConstant(expr ast.ExprNode) bool {
	v, ok := expr.(*test_driver.ValueExpr)
	return ok && v.Kind() != test_driver.KindNull
}

func unparen(expr ast.ExprNode) ast.ExprNode {
	for {
		p, ok := expr.(*ast.ParenthesesExpr)
		if !ok {
			return expr
		}
		expr = p.Expr
	}
}

// exprName names an expression's output column the way the client's
// database would: PostgreSQL by the function name ("count"), MySQL by the
// expression as written ("COUNT(*)"); an alias always wins.
func (a *analyzer) exprName(f *ast.SelectField, pgName string) string {
	if f.AsName.O == "" && a.opts.FrontEnd == MySQLFrontEnd {
		if text := strings.TrimSpace(f.Text()); text != "" {
			return text
		}
	}
	return fieldName(f, pgName)
}

func fieldName(f *ast.SelectField, def string) string {
	if f.AsName.O != "" {
		return f.AsName.O
	}
	return strings.ToLower(def)
}

// columnType is the result type of a column as the policy declares it.
func columnType(t config.ColumnType) sqltypes.Type { return t.SQLType() }

// sumType and avgType follow PostgreSQL: sum(integer) is bigint,
// sum(bigint) and sum(numeric) are numeric, sum(float8) is float8; avg of
// any exact type is numeric.
func sumType(t config.ColumnType) sqltypes.Type {
	switch t {
	case config.TypeInt:
		return sqltypes.Int8
	case config.TypeFloat:
		return sqltypes.Float8
	}
	return sqltypes.Numeric
}

func avgType(t config.ColumnType) sqltypes.Type {
	if t == config.TypeFloat {
		return sqltypes.Float8
	}
	return sqltypes.Numeric
}
