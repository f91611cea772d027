package rewrite

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// [NOT] EXISTS over public tables in WHERE:
//
//	SELECT COUNT(*) FROM visits v
//	WHERE EXISTS (SELECT 1 FROM clinics c WHERE c.clinic_id = v.clinic_id AND c.city = 'Midvale')
//
// a condition on each row of the protected table that reads public data
// and that row's columns, so the plan's bounding and sensitivities are
// unchanged. The subquery may read public tables only; a reference to the
// protected table (or a table joined to it) must be qualified with its
// alias and name a column the policy exposes; every other column must
// belong to the subquery's own tables, whose columns dpproxy knows, so
// that no name can bind to a column the policy hides. The protected
// table's columns are then qualified throughout the query.

// hasExists reports whether a condition contains an EXISTS subquery.
func hasExists(e ast.ExprNode) bool { return holds[*ast.ExistsSubqueryExpr](e) }

// hasSubquery reports whether e holds a subquery (EXISTS, IN, ...).
func hasSubquery(e ast.ExprNode) bool { return holds[*ast.SubqueryExpr](e) }

// holds reports whether e holds a node of type T.
func holds[T ast.Node](e ast.ExprNode) bool {
	f := &nodeFinder[T]{}
	e.Accept(f)
	return f.found
}

type nodeFinder[T ast.Node] struct{ found bool }

func (f *nodeFinder[T]) Enter(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(T); ok {
		f.found = true
	}
	return n, f.found
}

func (f *nodeFinder[T]) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// existsPublic writes [NOT] EXISTS (subquery) for a subquery over public
// tables (see the file comment).
func (e *emitter) existsPublic(x *ast.ExistsSubqueryExpr) (string, error) {
	sub, ok := x.Sel.(*ast.SubqueryExpr)
	if !ok {
		return "", whereError("this EXISTS form is not supported")
	}
	sql, err := e.publicSubquery(sub, "the EXISTS subquery", "EXISTS (SELECT ...)", true)
	if err != nil {
		return "", err
	}
	not := ""
	if x.Not {
		not = "NOT "
	}
	return "(" + not + "EXISTS (" + sql + "))", nil
}

// checkSubqueryColumns checks every column reference of a WHERE
// subquery over the public tables (by name; their aliases are added):
// each must be a column of those tables, or, with outer, an exposed
// column of the outer query's tables, qualified.
func (e *emitter) checkSubqueryColumns(sub *ast.SubqueryExpr, tables map[string]*config.PublicTable, outer bool) error {
	sub.Query.Accept(&aliasCollector{tables: tables})
	check := &subqueryColumns{e: e, tables: tables, outer: outer}
	sub.Query.Accept(check)
	return check.err
}

// aliasCollector adds each aliased table source of the subquery to tables
// under its alias.
type aliasCollector struct {
	tables map[string]*config.PublicTable
}

func (c *aliasCollector) Enter(n ast.Node) (ast.Node, bool) {
	if ts, ok := n.(*ast.TableSource); ok && ts.AsName.O != "" {
		if tn, ok := ts.Source.(*ast.TableName); ok {
			if pub := c.tables[strings.ToLower(tn.Name.O)]; pub != nil {
				c.tables[ts.AsName.L] = pub
			}
		}
	}
	return n, false
}

func (c *aliasCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// subqueryColumns checks every column reference of a WHERE subquery and
// qualifies the outer ones for the backend (see the file comment).
type subqueryColumns struct {
	e      *emitter
	tables map[string]*config.PublicTable // by lower-case name or alias
	// outer allows references to the protected query's tables (EXISTS;
	// IN's subquery is uncorrelated).
	outer bool
	err   error
}

func (c *subqueryColumns) Enter(n ast.Node) (ast.Node, bool) {
	if c.err != nil {
		return n, true
	}
	cn, ok := n.(*ast.ColumnNameExpr)
	if !ok {
		return n, false
	}
	name := cn.Name
	if name.Schema.O != "" {
		c.err = sqlerr.New(sqlerr.FeatureNotSupported, "column %s.%s.%s: a subquery's columns are written column or table.column", name.Schema.O, name.Table.O, name.Name.O).
			WithHint("drop the schema: %s.%s", name.Table.O, name.Name.O)
		return n, true
	}
	if name.Table.O != "" {
		if pub := c.tables[name.Table.L]; pub != nil {
			if len(pub.Columns) > 0 {
				if _, ok := pub.Column(name.Name.O); !ok {
					c.err = sqlerr.New(sqlerr.UndefinedColumn, "column %s.%s does not exist", name.Table.O, name.Name.O)
				}
			}
			return n, true
		}
		if !c.outer {
			c.err = sqlerr.New(sqlerr.FeatureNotSupported, "the subquery of IN cannot refer to %s.%s of the outer query", name.Table.O, name.Name.O).
				WithHint("for a condition that depends on the row, write EXISTS (SELECT 1 FROM ... WHERE ... = %s.%s)", name.Table.O, name.Name.O)
			return n, true
		}
		// The protected table or a table joined to it: an exposed column.
		col, err := c.e.a.column(name)
		if err != nil {
			c.err = err
			return n, true
		}
		name.Table = ast.NewCIStr(c.e.a.owner(col))
		return n, true
	}
	// Unqualified: it must be a column of the subquery's own tables.
	for _, pub := range c.tables {
		if _, ok := pub.Column(name.Name.O); ok {
			return n, true
		}
	}
	c.err = sqlerr.New(sqlerr.FeatureNotSupported, "column %q of the subquery is not a column of its tables", name.Name.O).
		WithHint("qualify columns of the outer query with their table: %s.%s", c.e.a.alias, name.Name.O)
	return n, true
}

func (c *subqueryColumns) Leave(n ast.Node) (ast.Node, bool) { return n, true }
