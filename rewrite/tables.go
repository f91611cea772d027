package rewrite

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// The tables a statement names: which it reads, whether any is protected,
// and the references the backend should see.

// readsProtected reports whether a statement names a protected table
// anywhere (CTE bodies and subqueries included).
func readsProtected(n ast.Node, pol *config.Policy) bool {
	for _, tn := range collectTables(n) {
		if pt, _ := pol.LookupTable(tn.Schema.O, tn.Name.O); pt != nil {
			return true
		}
	}
	return false
}

// collectTables returns every table named anywhere in the statement,
// subqueries and CTEs included.
func collectTables(n ast.Node) []*ast.TableName {
	c := &tableCollector{}
	n.Accept(c)
	return c.tables
}

// collectFromTables returns the tables the statement reads as rows: those
// of its FROM clauses, derived tables included, but not those of
// subqueries inside expressions (IN (SELECT ...)).
func collectFromTables(n ast.Node) []*ast.TableName {
	c := &tableCollector{skipExpressionSubqueries: true}
	n.Accept(c)
	return c.tables
}

type tableCollector struct {
	tables                   []*ast.TableName
	skipExpressionSubqueries bool
}

func unknownTable(tn *ast.TableName, pol *config.Policy) error {
	name := tn.Name.O
	if tn.Schema.O != "" {
		name = tn.Schema.O + "." + name
	}
	var known []string
	for _, t := range pol.ProtectedTables {
		known = append(known, t.Name+" (protected)")
	}
	for _, t := range pol.PublicTables {
		known = append(known, t.Name+" (public)")
	}
	return sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist or is not in the policy", name).
		WithHint("tables available: %s", strings.Join(known, ", "))
}

// checkTables rejects statements naming unknown tables; with
// allowProtected false, protected tables are rejected too.
func checkTables(n ast.Node, pol *config.Policy, allowProtected bool) error {
	for _, tn := range collectTables(n) {
		pt, pub := pol.LookupTable(tn.Schema.O, tn.Name.O)
		if pt != nil && !allowProtected {
			return sqlerr.New(sqlerr.InsufficientPrivilege, "protected table %q cannot be used in a set operation or subquery", pt.Name).
				WithHint("query a protected table alone with aggregates: %s", supportedAggregates)
		}
		if pt == nil && pub == nil {
			return unknownTable(tn, pol)
		}
	}
	return checkPassthrough(n)
}

// dropDefaultSchema removes the qualifier of references to tables the
// policy declares without a schema ("public.clinics", "main.clinics":
// the schema the catalog shows them in), so that the backend reads them
// in its own default schema, whatever the backend calls it.
func dropDefaultSchema(n ast.Node, pol *config.Policy) {
	for _, tn := range collectTables(n) {
		if tn.Schema.O == "" {
			continue
		}
		if pt, pub := pol.LookupTable(tn.Schema.O, tn.Name.O); (pt != nil && pt.Schema == "") || (pub != nil && pub.Schema == "") {
			tn.Schema = ast.NewCIStr("")
		}
	}
}

func (c *tableCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.TableName:
		c.tables = append(c.tables, x)
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		return n, c.skipExpressionSubqueries
	}
	return n, false
}

func (c *tableCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }
