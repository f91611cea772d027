package rewrite

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// The shape of a public-table query. Dashboards and applications send the
// same lookup with different constants, many clients at once: on a MySQL
// backend several such queries can be answered by one statement, each a
// branch of a UNION ALL tagged with its number (backend/myunion.go),
// which costs the server one statement where it cost one per query. That
// is exact only where each branch's result is what the query gives alone:
//
//   - the branches' columns must have one type, so no constant may be
//     part of what a query selects (1 in one branch and 1.5 in another
//     would make both DECIMAL); constants elsewhere (WHERE, LIMIT) change
//     which rows come back, never their types;
//   - each branch must return its rows in the order it would alone: a
//     query whose order is defined (ORDER BY) or that the server sorts on
//     its own (GROUP BY, DISTINCT) is not combined, since a branch in a
//     derived table may lose it; a plain one has no defined order either
//     way;
//   - the query must be one SELECT over tables, without a WITH clause.
//
// Queries of one shape differ only in those constants: the shape is the
// query's text with each constant replaced (the parser's normalized
// form). The backend checks the columns of what comes back as well, and
// runs a shape's queries one by one from the first time that fails.

// unionShape returns the shape of a public-table query on a MySQL
// backend, or "" when it cannot be answered as a branch of a UNION ALL.
func unionShape(n ast.Node, sql string, d Dialect) string {
	sel, ok := n.(*ast.SelectStmt)
	if !ok || d.Name() != "mysql" || !unionSafe(sel) {
		return ""
	}
	return parser.NormalizeKeepHint(sql)
}

// unionSafe reports whether sel can be a branch of a UNION ALL (above).
func unionSafe(sel *ast.SelectStmt) bool {
	if sel.Kind != ast.SelectStmtKindSelect || sel.From == nil || sel.With != nil ||
		sel.OrderBy != nil || sel.GroupBy != nil || sel.Having != nil || sel.Distinct ||
		len(sel.WindowSpecs) > 0 || sel.LockInfo != nil || sel.SelectIntoOpt != nil || sel.Fields == nil {
		return false
	}
	if o := sel.SelectStmtOpts; o != nil && (o.CalcFoundRows || o.Distinct) {
		return false
	}
	v := &selectedConstants{}
	sel.Accept(v)
	return !v.found
}

// selectedConstants finds a constant, a parameter marker, a cast or a
// window function in what a SELECT (the query's or a subquery's)
// selects.
type selectedConstants struct {
	found    bool
	inFields int // depth inside a SELECT's field list
}

func (v *selectedConstants) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.FieldList:
		v.inFields++
	case *ast.WindowFuncExpr:
		v.found = true
	case *ast.AggregateFuncExpr:
		if strings.EqualFold(x.F, ast.AggFuncCount) {
			// COUNT(*) counts 1s; whatever it counts, a count is a
			// BIGINT.
			return n, true
		}
	case *test_driver.ValueExpr, *test_driver.ParamMarkerExpr, *ast.FuncCastExpr:
		// A cast's length and scale are constants too (CHAR(3),
		// DECIMAL(10, 2)), which the normalized text replaces.
		v.found = v.found || v.inFields > 0
	}
	return n, v.found
}

func (v *selectedConstants) Leave(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(*ast.FieldList); ok {
		v.inFields--
	}
	return n, !v.found
}
