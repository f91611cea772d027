package rewrite

import (
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
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

// conjuncts splits e at its top-level ANDs (through parentheses around
// them); every other conjunct is kept as written, parentheses included,
// so that an AND of them reads as it did (found in review: an OR lost its
// parentheses).
func conjuncts(e ast.ExprNode) []ast.ExprNode {
	inner := e
	for {
		p, isParen := inner.(*ast.ParenthesesExpr)
		if !isParen {
			break
		}
		inner = p.Expr
	}
	if x, isOp := inner.(*ast.BinaryOperationExpr); isOp && x.Op == opcode.LogicAnd {
		return append(conjuncts(x.L), conjuncts(x.R)...)
	}
	return []ast.ExprNode{e}
}

// keyCondition reads `col = literal`, `literal = col` or `col IN
// (literals)`; col is nil for anything else.
func keyCondition(e ast.ExprNode) (*ast.ColumnNameExpr, []any) {
	switch x := e.(type) {
	case *ast.ParenthesesExpr:
		return keyCondition(x.Expr)
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

// A query without GROUP BY whose WHERE picks keys —
//
//	SELECT COUNT(*), SUM(cost) FROM visits WHERE diagnosis IN ('J06', 'A09')
//
// — sums the rows of those keys in the release of the same aggregates
// grouped by the key (the dashboard's bar chart behind its KPI tile):
// KeySumBases lists the statements whose release would answer it.

// KeySumBase is a grouped statement a query without GROUP BY can be
// summed from: Stmt groups by the key columns and selects them, then the
// query's aggregates; Conds index Stmt's output columns; Aggregates is
// the output column of Stmt's first aggregate.
type KeySumBase struct {
	Stmt       *ast.SelectStmt
	Conds      []KeyCondition
	Aggregates int
}

// maxKeySumBases bounds the statements tried for one query (each is
// analyzed when the query is prepared).
const maxKeySumBases = 12

// KeySumBases lists the statements a SELECT without GROUP BY, HAVING,
// ORDER BY, LIMIT or DISTINCT, whose select list only computes
// aggregates, could be summed from: grouped by all its key conditions'
// columns (keys selected first or last, ordered by them or not), or by
// one of them (the others staying in its WHERE; key first), and the
// distinct aggregates of its select list in the order written (two also
// swapped). sel is not changed; the statements share its
// nodes and must only be read.
func KeySumBases(sel *ast.SelectStmt) []KeySumBase {
	if sel == nil || sel.Where == nil || sel.GroupBy != nil || sel.Having != nil || sel.OrderBy != nil || sel.Limit != nil ||
		sel.Distinct || sel.Fields == nil || sel.From == nil || sel.WindowSpecs != nil {
		return nil
	}
	aggs := selectedAggregates(sel.Fields.Fields)
	if len(aggs) == 0 {
		return nil
	}
	// The aggregates as fields: the query's own (with their aliases)
	// when it selects only distinct aggregates, else bare; two are also
	// tried the other way round (a ratio's two sides, released in
	// either order).
	fields := make([]*ast.SelectField, len(aggs))
	plain := len(sel.Fields.Fields) == len(aggs)
	for i, a := range aggs {
		fields[i] = &ast.SelectField{Expr: a}
		if plain {
			if f := sel.Fields.Fields[i]; f.Expr != a {
				plain = false
			}
		}
	}
	if plain {
		fields = sel.Fields.Fields
	}
	orders := [][]*ast.SelectField{fields}
	if len(fields) == 2 {
		orders = append(orders, []*ast.SelectField{fields[1], fields[0]})
	}
	all := conjuncts(sel.Where)
	var keys []keyCond
	seen := map[string]bool{}
	for i, e := range all {
		col, values := keyCondition(e)
		if col == nil || seen[columnKey(col)] {
			continue
		}
		seen[columnKey(col)] = true
		keys = append(keys, keyCond{col, values, i})
	}
	if len(keys) == 0 || len(keys) > 3 {
		return nil
	}
	choices := [][]keyCond{keys}
	if len(keys) > 1 {
		for _, k := range keys {
			choices = append(choices, []keyCond{k})
		}
	}
	var out []KeySumBase
	for ci, chosen := range choices {
		taken := map[int]bool{}
		for _, k := range chosen {
			taken[k.index] = true
		}
		var rest ast.ExprNode
		for i, e := range all {
			if taken[i] {
				continue
			}
			if rest == nil {
				rest = e
			} else {
				rest = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: rest, R: e}
			}
		}
		// Every variant for all the keys; keys first for one of them.
		variants := []struct{ keysFirst, ordered bool }{{true, false}, {true, true}, {false, false}, {false, true}}
		if ci > 0 {
			variants = variants[:2]
		}
		for _, order := range orders {
			for _, v := range variants {
				out = append(out, keySumBase(sel, rest, chosen, order, v.keysFirst, v.ordered))
				if len(out) == maxKeySumBases {
					return out
				}
			}
		}
	}
	return out
}

// keyCond is a key condition of a query without GROUP BY.
type keyCond struct {
	col    *ast.ColumnNameExpr
	values []any
	index  int // among the WHERE's conjuncts
}

// keySumBase builds one grouped statement from sel: rest as its WHERE,
// grouped by the chosen keys, selecting them and the aggregates' fields.
func keySumBase(sel *ast.SelectStmt, rest ast.ExprNode, chosen []keyCond, aggFields []*ast.SelectField, keysFirst, ordered bool) KeySumBase {
	base := *sel
	base.Where = rest
	base.GroupBy = &ast.GroupByClause{}
	var keyFields []*ast.SelectField
	var conds []KeyCondition
	for i, k := range chosen {
		keyFields = append(keyFields, &ast.SelectField{Expr: &ast.ColumnNameExpr{Name: k.col.Name}})
		base.GroupBy.Items = append(base.GroupBy.Items, &ast.ByItem{Expr: &ast.ColumnNameExpr{Name: k.col.Name}, NullOrder: true})
		at := i
		if !keysFirst {
			at = len(aggFields) + i
		}
		conds = append(conds, KeyCondition{Output: at, Values: k.values})
	}
	if ordered {
		base.OrderBy = &ast.OrderByClause{}
		for _, k := range chosen {
			base.OrderBy.Items = append(base.OrderBy.Items, &ast.ByItem{Expr: &ast.ColumnNameExpr{Name: k.col.Name}, NullOrder: true})
		}
	}
	first := 0
	if keysFirst {
		first = len(chosen)
		base.Fields = &ast.FieldList{Fields: append(keyFields, aggFields...)}
	} else {
		base.Fields = &ast.FieldList{Fields: append(slices.Clone(aggFields), keyFields...)}
	}
	return KeySumBase{Stmt: &base, Conds: conds, Aggregates: first}
}

// selectedAggregates lists the distinct aggregate calls of a select list
// (by their text) in the order written; nil when a field is a wildcard,
// or reads a column outside an aggregate (which a query without GROUP BY
// cannot sum).
func selectedAggregates(fields []*ast.SelectField) []*ast.AggregateFuncExpr {
	var out []*ast.AggregateFuncExpr
	seen := map[string]bool{}
	for _, f := range fields {
		if f.WildCard != nil || f.Expr == nil {
			return nil
		}
		c := &aggregateCollector{}
		f.Expr.Accept(c)
		if c.bare {
			return nil
		}
		for _, a := range c.aggs {
			var sb strings.Builder
			if err := a.Restore(format.NewRestoreCtx(canonicalFlags, &sb)); err != nil {
				return nil
			}
			if !seen[sb.String()] {
				seen[sb.String()] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// aggregateCollector gathers the aggregate calls of an expression and
// notes a column read outside one.
type aggregateCollector struct {
	aggs []*ast.AggregateFuncExpr
	bare bool
}

func (c *aggregateCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.AggregateFuncExpr:
		c.aggs = append(c.aggs, x)
		return n, true
	case *ast.ColumnNameExpr, *ast.SubqueryExpr, *ast.WindowFuncExpr:
		c.bare = true
		return n, true
	}
	return n, false
}

func (c *aggregateCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }
