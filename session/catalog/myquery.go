package catalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // ast.NewValueExpr
)

// MySQL clients' catalog queries arrive parsed (the TiDB parser reads
// MySQL); the catalog rewrites the tree — information_schema.X becomes
// the SQLite table "information_schema.X", DATABASE(), USER(), VERSION(),
// CONNECTION_ID() and @@variables become the session's constants — and
// restores it as SQL with double-quoted names, which SQLite reads. The
// functions MySQL has and SQLite lacks are registered on the catalog's
// driver.

// QueryMySQL answers a MySQL catalog query: a SELECT (or UNION) reading
// information_schema or no table at all.
func (c *Catalog) QueryMySQL(ctx context.Context, stmt ast.StmtNode, args []any, sess *Session) (*sqltypes.Result, error) {
	q, err := c.TranslateMySQL(stmt, sess)
	if err != nil {
		return nil, err
	}
	res, err := c.my.run(ctx, q, args, myTypeOfDecl)
	if err != nil {
		return nil, classify(err)
	}
	return res, nil
}

// TranslateMySQL rewrites a parsed MySQL catalog query as SQLite SQL.
func (c *Catalog) TranslateMySQL(stmt ast.StmtNode, sess *Session) (string, error) {
	switch stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
	default:
		return "", classify(&notSupported{fmt.Sprintf("the statement %T", stmt)})
	}
	v := &myRewriter{sess: sess}
	stmt.Accept(v)
	if v.err != nil {
		return "", classify(v.err)
	}
	var b strings.Builder
	rc := format.NewRestoreCtx(format.RestoreStringSingleQuotes|format.RestoreKeyWordUppercase|format.RestoreNameDoubleQuotes|format.RestoreStringWithoutCharset, &b)
	if err := stmt.Restore(rc); err != nil {
		return "", classify(&notSupported{"this statement (" + err.Error() + ")"})
	}
	return b.String(), nil
}

// IsMySQLCatalogTable reports whether a table name read by a MySQL client
// is one of information_schema's.
func IsMySQLCatalogTable(schema string) bool { return strings.EqualFold(schema, "information_schema") }

type myRewriter struct {
	sess *Session
	err  error
}

func (v *myRewriter) Enter(n ast.Node) (ast.Node, bool) { return n, false }

func (v *myRewriter) Leave(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.TableName:
		if x.Schema.O == "" && x.Name.L == "dual" {
			break
		}
		if IsMySQLCatalogTable(x.Schema.O) {
			x.Name.O, x.Name.L = myTable(x.Name.O), strings.ToLower(myTable(x.Name.O))
			x.Schema.O, x.Schema.L = "", ""
		} else if v.err == nil {
			v.err = &notSupported{"reading " + x.Name.O + " in a catalog query"}
		}
	case *ast.ColumnName:
		if IsMySQLCatalogTable(x.Schema.O) {
			x.Table.O = myTable(x.Table.O)
			x.Schema.O, x.Schema.L = "", ""
		}
	case *ast.FuncCallExpr:
		switch x.FnName.L {
		case "database", "schema":
			return ast.NewValueExpr(v.sess.Database, "", ""), true
		case "user", "current_user", "session_user", "system_user":
			return ast.NewValueExpr(v.sess.User+"@%", "", ""), true
		case "version":
			return ast.NewValueExpr(v.sess.ServerVersion, "", ""), true
		case "isnull":
			// ISNULL is an operator to SQLite.
			if len(x.Args) == 1 {
				return &ast.IsNullExpr{Expr: x.Args[0]}, true
			}
		case "connection_id":
			return ast.NewValueExpr(int64(v.sess.BackendPID), "", ""), true
		}
	case *ast.VariableExpr:
		if x.IsSystem {
			val, ok := v.sess.setting(strings.ToLower(x.Name))
			if !ok {
				return ast.NewValueExpr(nil, "", ""), true
			}
			return ast.NewValueExpr(val, "", ""), true
		}
		if v.err == nil {
			v.err = &notSupported{"user variables in a catalog query"}
		}
	}
	return n, true
}
