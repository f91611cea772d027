package rewrite

import (
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/dpproxy/dpproxy/sqlerr"
)

// Common table expressions and derived tables that only filter and
// rename rows of a protected table are folded into the query that reads
// them, before analysis:
//
//	WITH recent AS (SELECT patient_id, cost AS c FROM visits WHERE visit_date >= '2024-01-01')
//	SELECT COUNT(*), AVG(c) FROM recent WHERE c > 10
//
// is analyzed as
//
//	SELECT COUNT(*), AVG(cost) FROM visits WHERE visit_date >= '2024-01-01' AND cost > 10
//
// Each reference to a CTE becomes the derived table it names (inlineCTEs);
// then a derived table whose SELECT reads one table with WHERE, renames and
// expressions but no aggregation, DISTINCT or LIMIT gives the outer query
// its FROM and WHERE, and its select list is substituted for the names the
// outer query uses (flattenDerived). Filtering and renaming rows before the
// aggregate is what the single-table analyzer does anyway, so the plan —
// bounding, sensitivities, ε — is the one of the flattened query. A CTE or
// derived table that is itself a DP aggregate stays a derived table: the
// outer query post-processes its released rows (planOuter). Anything else
// over protected rows (LIMIT, DISTINCT, or a raw projection selected as
// is) is analyzed as a query of its own and refused as raw rows.
//
// Substituted expressions are shared, not copied: the analyzer only reads
// the syntax tree.

// inlineCTEs replaces every reference to one of sel's common table
// expressions by the derived table it names and drops the WITH clause.
// Each CTE sees the ones before it; a recursive WITH is refused.
func inlineCTEs(sel *ast.SelectStmt) error {
	if sel.With == nil || len(sel.With.CTEs) == 0 {
		return nil
	}
	if sel.With.IsRecursive {
		return sqlerr.New(sqlerr.FeatureNotSupported, "WITH RECURSIVE is not supported").
			WithHint("write the common table expressions without RECURSIVE; a recursive query over protected data has no bounded contribution")
	}
	defined := map[string]*ast.SelectStmt{}
	for _, cte := range sel.With.CTEs {
		body, ok := cte.Query.Query.(*ast.SelectStmt)
		if !ok {
			return sqlerr.New(sqlerr.FeatureNotSupported, "the common table expression %s must be one SELECT (set operations are not supported)", cte.Name.O).
				WithHint("write one SELECT in WITH %s AS (...)", cte.Name.O)
		}
		if body.With != nil && len(body.With.CTEs) > 0 {
			return sqlerr.New(sqlerr.FeatureNotSupported, "a WITH clause inside the common table expression %s is not supported", cte.Name.O).
				WithHint("list every common table expression in the statement's one WITH clause")
		}
		if len(cte.ColNameList) > 0 {
			if len(cte.ColNameList) != len(body.Fields.Fields) || hasWildcard(body) {
				return sqlerr.New(sqlerr.SyntaxError, "WITH %s (...) names %d columns, its SELECT has %d", cte.Name.O, len(cte.ColNameList), len(body.Fields.Fields)).
					WithHint("name one column per select-list item, and list the columns instead of *")
			}
			for i, f := range body.Fields.Fields {
				f.AsName = cte.ColNameList[i]
			}
		}
		if err := replaceCTERefs(body, defined); err != nil {
			return err
		}
		defined[cte.Name.L] = body
	}
	sel.With = nil
	return replaceCTERefs(sel, defined)
}

func hasWildcard(sel *ast.SelectStmt) bool {
	for _, f := range sel.Fields.Fields {
		if f.WildCard != nil {
			return true
		}
	}
	return false
}

// replaceCTERefs turns the table references of n that name a CTE into
// derived tables (aliased with the CTE's name unless they have their own).
func replaceCTERefs(n ast.Node, defined map[string]*ast.SelectStmt) error {
	r := &cteReplacer{defined: defined}
	n.Accept(r)
	return r.err
}

type cteReplacer struct {
	defined map[string]*ast.SelectStmt
	err     error
}

func (r *cteReplacer) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SelectStmt:
		if x.With != nil && len(x.With.CTEs) > 0 && r.err == nil {
			r.err = sqlerr.New(sqlerr.FeatureNotSupported, "a WITH clause inside a subquery is not supported").
				WithHint("list every common table expression in the statement's one WITH clause")
		}
	case *ast.TableSource:
		tn, ok := x.Source.(*ast.TableName)
		if !ok || tn.Schema.O != "" {
			break
		}
		if body, ok := r.defined[tn.Name.L]; ok {
			if x.AsName.O == "" {
				x.AsName = tn.Name
			}
			x.Source = body
			return x, true // the body's own references are already resolved
		}
	}
	return n, false
}

func (r *cteReplacer) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// flattenDerived folds a derived table that only filters and renames rows
// of one table into sel (see the file comment), repeatedly, and reports
// whether sel changed. It returns an error for a reference to a column the
// derived table does not have.
func flattenDerived(sel *ast.SelectStmt) (bool, error) {
	changed := false
	for {
		inner := derivedTable(sel)
		if inner == nil {
			return changed, nil
		}
		if !filtersRows(inner) {
			// An aggregate the outer query post-processes: its own FROM
			// may still fold (a CTE over a CTE that joins or filters).
			inChanged, err := flattenDerived(inner)
			return changed || inChanged, err
		}
		if _, err := flattenDerived(inner); err != nil {
			return changed, err
		}
		if derivedTable(inner) != nil {
			return changed, nil // the inner query reads a derived table it cannot fold
		}
		if err := foldInto(sel, inner); err != nil {
			return changed, err
		}
		changed = true
	}
}

// filtersRows reports whether a derived table's SELECT only filters and
// renames the rows of its one FROM item: no aggregate, GROUP BY, HAVING,
// DISTINCT, LIMIT or window.
func filtersRows(sel *ast.SelectStmt) bool {
	if sel.From == nil || sel.From.TableRefs == nil ||
		sel.GroupBy != nil || sel.Having != nil || sel.Distinct || sel.Limit != nil ||
		len(sel.WindowSpecs) > 0 || sel.Kind != ast.SelectStmtKindSelect || sel.SelectIntoOpt != nil ||
		(sel.LockInfo != nil && sel.LockInfo.LockType != ast.SelectLockNone) {
		return false
	}
	if sel.From.TableRefs.Right == nil {
		if _, ok := sel.From.TableRefs.Left.(*ast.TableSource); !ok {
			return false
		}
	} else if !joinOfTables(sel.From.TableRefs) {
		return false
	}
	return !hasAggregate(sel.Fields)
}

// joinOfTables reports whether a join's items are all tables (no derived
// tables): the joins the analyzer reads (join.go).
func joinOfTables(j *ast.Join) bool {
	for _, item := range []ast.ResultSetNode{j.Left, j.Right} {
		switch x := item.(type) {
		case nil:
		case *ast.Join:
			if !joinOfTables(x) {
				return false
			}
		case *ast.TableSource:
			if _, ok := x.Source.(*ast.TableName); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// hasAggregate reports whether n calls an aggregate function.
func hasAggregate(n ast.Node) bool {
	f := &aggregateFinder{}
	n.Accept(f)
	return f.found
}

type aggregateFinder struct{ found bool }

func (f *aggregateFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.AggregateFuncExpr, *ast.WindowFuncExpr:
		f.found = true
	case *ast.SubqueryExpr:
		return n, true
	}
	return n, f.found
}

func (f *aggregateFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// foldInto gives sel the FROM and WHERE of inner, a derived table of sel
// that filters rows, and replaces sel's references to the derived table's
// columns by inner's select-list expressions.
func foldInto(sel, inner *ast.SelectStmt) error {
	outerSource := sel.From.TableRefs.Left.(*ast.TableSource)
	alias := outerSource.AsName.L
	// SELECT * names the inner table's columns; over a join, the columns
	// of any of its tables, left for the analyzer to resolve.
	var innerAlias ast.CIStr
	if innerSource, ok := inner.From.TableRefs.Left.(*ast.TableSource); ok && inner.From.TableRefs.Right == nil {
		innerAlias = innerSource.AsName
		if innerAlias.O == "" {
			if tn, ok := innerSource.Source.(*ast.TableName); ok {
				innerAlias = tn.Name
			}
		}
	}
	columns := map[string]ast.ExprNode{}
	wildcard := false
	for _, f := range inner.Fields.Fields {
		switch {
		case f.WildCard != nil:
			wildcard = true
		case f.AsName.O != "":
			columns[f.AsName.L] = f.Expr
		default:
			if c, ok := unparen(f.Expr).(*ast.ColumnNameExpr); ok {
				columns[c.Name.Name.L] = f.Expr
			}
		}
	}
	outputAliases := map[string]bool{}
	for _, f := range sel.Fields.Fields {
		if f.AsName.O != "" {
			outputAliases[f.AsName.L] = true
		}
	}
	s := &columnSubstituter{alias: alias, columns: columns, wildcard: wildcard, innerAlias: innerAlias, name: outerSource.AsName.O}
	for _, f := range sel.Fields.Fields {
		// A selected column keeps the name the outer query gave it.
		if c, ok := unparen(f.Expr).(*ast.ColumnNameExpr); ok && f.AsName.O == "" {
			f.AsName = c.Name.Name
		}
	}
	s.rewrite(sel.Fields, nil)
	if sel.Where != nil {
		sel.Where = s.expr(sel.Where)
	}
	if sel.GroupBy != nil {
		s.rewrite(sel.GroupBy, outputAliases)
	}
	if sel.Having != nil {
		s.rewrite(sel.Having, outputAliases)
	}
	if sel.OrderBy != nil {
		s.rewrite(sel.OrderBy, outputAliases)
	}
	if s.err != nil {
		return s.err
	}
	sel.From = inner.From
	switch {
	case inner.Where == nil:
	case sel.Where == nil:
		sel.Where = inner.Where
	default:
		sel.Where = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: &ast.ParenthesesExpr{Expr: inner.Where}, R: &ast.ParenthesesExpr{Expr: sel.Where}}
	}
	return nil
}

// columnSubstituter replaces references to a derived table's columns by
// the expressions its SELECT computes them with.
type columnSubstituter struct {
	alias      string // the derived table's alias, lower case
	name       string // as written, for messages
	columns    map[string]ast.ExprNode
	wildcard   bool      // SELECT *: other names are the inner table's columns
	innerAlias ast.CIStr // the inner table's name or alias
	// keep are output aliases of the outer select list, which GROUP BY,
	// HAVING and ORDER BY may name instead of a column.
	keep map[string]bool
	err  error
}

// rewrite substitutes within n, leaving the names in keep.
func (s *columnSubstituter) rewrite(n ast.Node, keep map[string]bool) {
	s.keep = keep
	n.Accept(s)
}

// expr substitutes within e, which may itself be replaced.
func (s *columnSubstituter) expr(e ast.ExprNode) ast.ExprNode {
	s.keep = nil
	out, _ := e.Accept(s)
	return out.(ast.ExprNode)
}

func (s *columnSubstituter) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr:
		return n, true // a subquery's own scope (over public tables)
	}
	return n, false
}

func (s *columnSubstituter) Leave(n ast.Node) (ast.Node, bool) {
	c, ok := n.(*ast.ColumnNameExpr)
	if !ok || c.Name.Schema.O != "" {
		return n, true
	}
	qualifier := c.Name.Table.L
	if qualifier != "" && qualifier != s.alias {
		return n, true // another table: the analyzer says it does not exist
	}
	name := c.Name.Name.L
	if qualifier == "" && s.keep[name] {
		if _, shadowed := s.columns[name]; !shadowed {
			return n, true // an output alias of the outer query
		}
	}
	if e, ok := s.columns[name]; ok {
		return e, true
	}
	if s.wildcard {
		return &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: s.innerAlias, Name: c.Name.Name}}, true
	}
	if s.err == nil {
		table := s.name
		if table == "" {
			table = "the derived table"
		}
		s.err = sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist in %s", c.Name.Name.O, table).
			WithHint("name a column of its select list: %s", strings.Join(sortedKeys(s.columns), ", "))
	}
	return n, true
}

func sortedKeys(m map[string]ast.ExprNode) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
