package rewrite

import (
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/dpproxy/dpproxy/sqlerr"
)

// planOuter plans a DP query wrapped by an outer SELECT (a CTE or derived
// table that is a DP aggregate, read by the outer query):
//
//	WITH per_city AS (SELECT city, COUNT(*) AS n, SUM(cost) AS total FROM ... GROUP BY city)
//	SELECT city, total / n AS mean FROM per_city WHERE n > 100 ORDER BY mean DESC LIMIT 5
//
// The outer query reads released rows only, so all it does is
// post-processing, which costs nothing more. It is merged into the inner
// query: each outer select-list expression, with the inner column names
// it uses replaced by the inner expressions they name, becomes one more
// select-list item of the inner query (post.go computes it on the
// released row), the outer WHERE becomes an inner HAVING, and the outer
// columns, ORDER BY and LIMIT pick, order and cut the released rows
// (OuterQuery). GROUP BY and DISTINCT over released rows are refused for
// now.
func (a *analyzer) planOuter(sel, inner *ast.SelectStmt) (*Query, error) {
	unsupported := func(what string) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "%s over a derived table on protected data is not supported", what).
			WithHint("the outer query may select, compute on, filter, order and limit the inner query's columns")
	}
	switch {
	case sel.GroupBy != nil || sel.Having != nil:
		return nil, unsupported("GROUP BY")
	case sel.Distinct:
		return nil, unsupported("DISTINCT")
	case sel.With != nil || len(sel.WindowSpecs) > 0 || sel.SelectIntoOpt != nil:
		return nil, unsupported("this clause")
	}
	if derivedTable(inner) != nil {
		return nil, unsupported("a derived table")
	}
	if sel.Where != nil && inner.Limit != nil {
		// The outer WHERE becomes a HAVING, which runs before the inner
		// LIMIT; SQL filters after it (found in review).
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "WHERE over a derived table that has a LIMIT is not supported on protected data").
			WithHint("filter inside the derived table with HAVING, or drop its LIMIT")
	}
	if hasAggregate(sel.Fields) || sel.Where != nil && hasAggregate(sel.Where) {
		// Re-aggregating released rows: the inner query's own refusal,
		// if it has one, says more.
		if _, err := a.plan(inner); err != nil {
			return nil, err
		}
		return nil, unsupported("an aggregate")
	}
	alias := sel.From.TableRefs.Left.(*ast.TableSource).AsName.O
	merged, extra, err := mergeOuter(sel, inner, alias)
	if err != nil {
		return nil, err
	}
	plan, err := a.plan(merged)
	if err != nil {
		return nil, err
	}
	outer := &OuterQuery{Limit: -1}
	find := func(cn *ast.ColumnName) (int, error) {
		if cn.Table.O != "" && !strings.EqualFold(cn.Table.O, alias) {
			return 0, sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", cn.Table.O)
		}
		for i, o := range plan.Output {
			if strings.EqualFold(o.Name, cn.Name.O) {
				return i, nil
			}
		}
		return 0, sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist in the derived table", cn.Name.O)
	}
	for k, f := range sel.Fields.Fields {
		if f.WildCard != nil {
			for i, o := range plan.Output[:len(inner.Fields.Fields)] {
				outer.Columns = append(outer.Columns, OuterColumn{Inner: i, Name: o.Name})
			}
			continue
		}
		if i, ok := extra[k]; ok {
			outer.Columns = append(outer.Columns, OuterColumn{Inner: i, Name: fieldName(f, "?column?")})
			continue
		}
		cn := unparen(f.Expr).(*ast.ColumnNameExpr)
		i, err := find(cn.Name)
		if err != nil {
			return nil, err
		}
		outer.Columns = append(outer.Columns, OuterColumn{Inner: i, Name: fieldName(f, plan.Output[i].Name)})
	}
	if sel.OrderBy != nil {
		for _, item := range sel.OrderBy.Items {
			idx := -1
			switch x := unparen(item.Expr).(type) {
			case *ast.PositionExpr:
				if x.P == nil && x.N >= 1 && x.N <= len(outer.Columns) {
					idx = x.N - 1
				}
			case *ast.ColumnNameExpr:
				for i, c := range outer.Columns {
					if strings.EqualFold(c.Name, x.Name.Name.O) && (x.Name.Table.O == "" || strings.EqualFold(x.Name.Table.O, alias)) {
						idx = i
						break
					}
				}
				if idx < 0 {
					if inner, err := find(x.Name); err == nil {
						for i, c := range outer.Columns {
							if c.Inner == inner {
								idx = i
								break
							}
						}
					}
				}
			}
			if idx < 0 {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ORDER BY must name a column of the outer select list")
			}
			outer.OrderBy = append(outer.OrderBy, OrderKey{Output: idx, Desc: item.Desc})
		}
	}
	if sel.Limit != nil {
		n, err := constantInt(sel.Limit.Count, "LIMIT")
		if err != nil {
			return nil, err
		}
		outer.Limit = n
		if sel.Limit.Offset != nil {
			if outer.Offset, err = constantInt(sel.Limit.Offset, "OFFSET"); err != nil {
				return nil, err
			}
		}
	}
	plan.Outer = outer
	return &Query{Plan: plan}, nil
}

// mergeOuter writes the inner query with the outer one's expressions
// appended to its select list and the outer WHERE added to its HAVING
// (see planOuter). extra maps the outer select-list positions that are
// expressions to their position in the merged select list.
func mergeOuter(sel, inner *ast.SelectStmt, alias string) (*ast.SelectStmt, map[int]int, error) {
	fields := inner.Fields.Fields
	// named finds the inner column an outer name refers to: by alias, or
	// the name PostgreSQL gives an unaliased column or aggregate
	// (count(*) is "count"); ambiguous when several have it.
	named := func(name string) (ast.ExprNode, error) {
		var found ast.ExprNode
		n := 0
		for _, f := range fields {
			match := strings.EqualFold(f.AsName.O, name)
			switch x := unparen(f.Expr).(type) {
			case *ast.ColumnNameExpr:
				match = match || f.AsName.O == "" && strings.EqualFold(x.Name.Name.O, name)
			case *ast.AggregateFuncExpr:
				match = match || f.AsName.O == "" && strings.EqualFold(x.F, name)
			}
			if match {
				found = f.Expr
				n++
			}
		}
		if n > 1 {
			return nil, sqlerr.New(sqlerr.AmbiguousColumn, "column reference %q is ambiguous", name).
				WithHint("give the derived table's columns distinct names with AS")
		}
		return found, nil
	}
	substitute := func(expr ast.ExprNode) (ast.ExprNode, error) {
		r := &outerRefs{alias: alias, named: named}
		out, _ := expr.Accept(r)
		if r.err != nil {
			return nil, r.err
		}
		return out.(ast.ExprNode), nil
	}
	merged := *inner
	merged.Fields = &ast.FieldList{Fields: append([]*ast.SelectField(nil), fields...)}
	extra := map[int]int{}
	for k, f := range sel.Fields.Fields {
		if f.WildCard != nil {
			continue
		}
		if _, plain := unparen(f.Expr).(*ast.ColumnNameExpr); plain {
			continue
		}
		expr, err := substitute(f.Expr)
		if err != nil {
			return nil, nil, err
		}
		extra[k] = len(merged.Fields.Fields)
		merged.Fields.Fields = append(merged.Fields.Fields, &ast.SelectField{Expr: expr, AsName: ast.NewCIStr("dp_outer" + strconv.Itoa(k))})
	}
	if sel.Where != nil {
		cond, err := substitute(sel.Where)
		if err != nil {
			return nil, nil, err
		}
		if merged.Having != nil {
			cond = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: merged.Having.Expr, R: cond}
		}
		merged.Having = &ast.HavingClause{Expr: cond}
	}
	return &merged, extra, nil
}

// outerRefs replaces the outer query's references to the inner query's
// columns by the inner expressions they name.
type outerRefs struct {
	alias string
	named func(string) (ast.ExprNode, error)
	err   error
}

func (r *outerRefs) Enter(n ast.Node) (ast.Node, bool) {
	_, isSub := n.(*ast.SubqueryExpr)
	return n, isSub // a subquery is left for the analyzer to refuse
}

func (r *outerRefs) Leave(n ast.Node) (ast.Node, bool) {
	cn, ok := n.(*ast.ColumnNameExpr)
	if !ok {
		return n, true
	}
	if cn.Name.Table.O != "" && !strings.EqualFold(cn.Name.Table.O, r.alias) {
		if r.err == nil {
			r.err = sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", cn.Name.Table.O)
		}
		return n, true
	}
	expr, err := r.named(cn.Name.Name.O)
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		return n, true
	}
	if expr == nil {
		if r.err == nil {
			r.err = sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist in the derived table", cn.Name.Name.O)
		}
		return n, true
	}
	return expr, true
}
