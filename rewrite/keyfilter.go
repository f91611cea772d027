package rewrite

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// A query that only narrows a GROUP BY to some of its keys —
//
//	SELECT diagnosis, COUNT(*) FROM visits WHERE diagnosis = 'J06' GROUP BY diagnosis
//
// — asks for rows of the release of the same query without those
// conditions. When the analyst has that release already, its rows answer
// the query at no cost (post-processing): a dashboard whose filter widget
// adds such conditions stops draining the budget.

// KeyCondition is a WHERE condition on a group key: the released rows
// whose output column Output holds one of Values.
type KeyCondition struct {
	Output int
	// Values are the literals, int64 or string.
	Values []any
}

// SplitKeyFilter finds, in a SELECT with GROUP BY and no LIMIT, the WHERE
// conjuncts that only pick group keys — `col = literal` or `col IN
// (literals)` on a column grouped by as such and selected as such — and
// returns the WHERE without them (nil when none is left) and the
// conditions; ok is false when there are none. The statement is not
// changed.
func SplitKeyFilter(sel *ast.SelectStmt) (rest ast.ExprNode, conds []KeyCondition, ok bool) {
	if sel == nil || sel.Where == nil || sel.GroupBy == nil || sel.Limit != nil || sel.Fields == nil {
		return nil, nil, false
	}
	// Columns are compared as written (qualifier and name): a column
	// written two ways is not recognized, which only costs the saving.
	grouped := map[string]bool{}
	for _, item := range sel.GroupBy.Items {
		if c, isCol := item.Expr.(*ast.ColumnNameExpr); isCol {
			grouped[columnKey(c)] = true
		}
	}
	output := func(key string) int {
		for i, f := range sel.Fields.Fields {
			if f.WildCard != nil {
				return -1
			}
			if c, isCol := f.Expr.(*ast.ColumnNameExpr); isCol && columnKey(c) == key && (f.AsName.L == "" || f.AsName.L == c.Name.Name.L) {
				return i
			}
		}
		return -1
	}
	var kept []ast.ExprNode
	for _, e := range conjuncts(sel.Where) {
		col, values := keyCondition(e)
		if col == nil || !grouped[columnKey(col)] {
			kept = append(kept, e)
			continue
		}
		i := output(columnKey(col))
		if i < 0 {
			kept = append(kept, e)
			continue
		}
		conds = append(conds, KeyCondition{Output: i, Values: values})
	}
	if len(conds) == 0 {
		return nil, nil, false
	}
	for _, e := range kept {
		if rest == nil {
			rest = e
		} else {
			rest = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: rest, R: e}
		}
	}
	return rest, conds, true
}

// columnKey is a column reference as written, lower-cased.
func columnKey(c *ast.ColumnNameExpr) string {
	return strings.ToLower(c.Name.Schema.O + "." + c.Name.Table.O + "." + c.Name.Name.O)
}

// conjuncts splits e at its top-level ANDs (and parentheses).
func conjuncts(e ast.ExprNode) []ast.ExprNode {
	switch x := e.(type) {
	case *ast.ParenthesesExpr:
		return conjuncts(x.Expr)
	case *ast.BinaryOperationExpr:
		if x.Op == opcode.LogicAnd {
			return append(conjuncts(x.L), conjuncts(x.R)...)
		}
	}
	return []ast.ExprNode{e}
}

// keyCondition reads `col = literal`, `literal = col` or `col IN
// (literals)`; col is nil for anything else.
func keyCondition(e ast.ExprNode) (*ast.ColumnNameExpr, []any) {
	switch x := e.(type) {
	case *ast.BinaryOperationExpr:
		if x.Op != opcode.EQ {
			return nil, nil
		}
		col, lit := x.L, x.R
		if _, isCol := col.(*ast.ColumnNameExpr); !isCol {
			col, lit = lit, col
		}
		c, isCol := col.(*ast.ColumnNameExpr)
		v, isLit := literal(lit)
		if !isCol || !isLit {
			return nil, nil
		}
		return c, []any{v}
	case *ast.PatternInExpr:
		c, isCol := x.Expr.(*ast.ColumnNameExpr)
		if !isCol || x.Not || x.Sel != nil || len(x.List) == 0 {
			return nil, nil
		}
		values := make([]any, 0, len(x.List))
		for _, item := range x.List {
			v, isLit := literal(item)
			if !isLit {
				return nil, nil
			}
			values = append(values, v)
		}
		return c, values
	}
	return nil, nil
}

// literal is a constant's value when it is an integer or a string.
func literal(e ast.ExprNode) (any, bool) {
	v, isValue := e.(ast.ValueExpr)
	if !isValue {
		return nil, false
	}
	switch x := v.GetValue().(type) {
	case int64:
		return x, true
	case uint64:
		if x <= 1<<63-1 {
			return int64(x), true
		}
	case string:
		return x, true
	}
	return nil, false
}
