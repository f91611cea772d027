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
	res, err := c.my.run(ctx, c.withMySQLViews(q, sess), args, myTypeOfDecl)
	if err != nil {
		return nil, classify(err)
	}
	return res, nil
}

// withMySQLViews prefixes a MySQL catalog query with the session views it
// reads (mySessionViews), as common table expressions that put the
// session's database in place of sessionDatabase.
func (c *Catalog) withMySQLViews(query string, sess *Session) string {
	var ctes []string
	for _, name := range sortedKeys(keysOf(mySessionViews)) {
		if !strings.Contains(query, sqliteIdent(myTable(name))) {
			continue
		}
		subst := map[string]bool{}
		for _, col := range mySessionViews[name] {
			subst[col] = true
		}
		var cols []string
		for _, col := range c.my.columns[strings.ToLower(myStored(name))] {
			q := sqliteIdent(col.name)
			if subst[col.name] {
				cols = append(cols, "(CASE WHEN "+q+" = "+sqliteString(sessionDatabase)+" THEN "+sqliteString(sess.Database)+" ELSE "+q+" END) COLLATE NOCASE AS "+q)
			} else {
				cols = append(cols, q)
			}
		}
		ctes = append(ctes, sqliteIdent(myTable(name))+" AS (SELECT "+strings.Join(cols, ", ")+" FROM "+sqliteIdent(myStored(name))+")")
	}
	if len(ctes) == 0 {
		return query
	}
	return prependCTEs(query, strings.Join(ctes, ", "))
}

func keysOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
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
	rc := format.NewRestoreCtx(format.RestoreStringSingleQuotes|format.RestoreKeyWordUppercase|format.RestoreNameBackQuotes|format.RestoreStringWithoutCharset, &b)
	if err := stmt.Restore(rc); err != nil {
		return "", classify(&notSupported{"this statement (" + err.Error() + ")"})
	}
	return b.String(), nil
}

// IsMySQLCatalogTable reports whether a table name read by a MySQL client
// is one of information_schema's.
func IsMySQLCatalogTable(schema string) bool { return strings.EqualFold(schema, "information_schema") }

// myRenamed are MySQL functions SQLite has under another name.
var myRenamed = map[string]string{"greatest": "max", "least": "min", "char_length": "length", "character_length": "length", "mid": "substr"}

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
		if IsMySQLCatalogTable(x.Schema.O) || x.Schema.O == "" && IsMySQLCatalogTable(v.sess.Database) {
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
		// The name is written into the SQL as it is: only a plain
		// identifier may be one.
		if x.Schema.L != "" || !plainName(x.FnName.L) {
			if v.err == nil {
				v.err = &notSupported{"the function " + x.FnName.O}
			}
			return n, true
		}
		if to, ok := myRenamed[x.FnName.L]; ok {
			x.FnName = ast.NewCIStr(to)
		}
		switch x.FnName.L {
		case "database", "schema":
			return ast.NewValueExpr(v.sess.Database, "", ""), true
		case "user", "current_user", "session_user", "system_user":
			return ast.NewValueExpr(v.sess.User+"@%", "", ""), true
		case "version":
			return ast.NewValueExpr(v.sess.ServerVersion, "", ""), true
		case "convert":
			// CONVERT(x USING charset): the catalog's strings are UTF-8.
			if len(x.Args) >= 1 {
				return x.Args[0], true
			}
		case "isnull":
			// ISNULL is an operator to SQLite.
			if len(x.Args) == 1 {
				return &ast.IsNullExpr{Expr: x.Args[0]}, true
			}
		case "connection_id":
			return ast.NewValueExpr(int64(v.sess.BackendPID), "", ""), true
		}
	case *ast.FuncCastExpr:
		// CONVERT(x, type) is CAST(x AS type) to SQLite.
		x.FunctionType = ast.CastFunction
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
