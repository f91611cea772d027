package session

import (
	"context"
	"errors"
	"strings"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/session/catalog"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Catalog queries — what psql's \d commands, drivers, ORMs and BI tools ask
// of pg_catalog and information_schema — and SELECTs without a table are
// answered by the virtual catalog (package catalog), in process, from the
// policy: the backend is never asked a statement the client wrote about
// its catalogs. A statement goes to the catalog when every relation it
// reads is a catalog relation (or it reads none and the session could not
// answer it itself); a PostgreSQL statement the TiDB parser cannot read
// goes there when it names a catalog relation or function. Anything else
// that cannot be analyzed is refused with the parser's error.

// catalogSchemas are the schemas whose relations are catalogs.
var catalogSchemas = map[string]bool{"pg_catalog": true, "information_schema": true}

// catalogRoute says where a parsed statement goes.
type catalogRoute int

const (
	notCatalog catalogRoute = iota
	toCatalog
	mixedCatalog // catalog relations and tables together: refused
)

// route decides whether a parsed statement is a catalog query (mixed
// with tables: an error). A SELECT without a table that the session
// answers itself (version(), current_user, ...) is not.
func (s *Session) route(stmt ast.StmtNode) (catalogRoute, error) {
	route, table := s.routeParsed(stmt)
	switch route {
	case mixedCatalog:
		return route, mixedCatalogError(table)
	case toCatalog:
		if sel, isSel := stmt.(*ast.SelectStmt); isSel {
			if _, local := s.evalLocal(sel); local {
				return notCatalog, nil
			}
		}
	}
	return route, nil
}

// routeParsed decides whether a parsed statement reads catalogs.
func (s *Session) routeParsed(stmt ast.StmtNode) (catalogRoute, string) {
	switch stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
	default:
		return notCatalog, ""
	}
	c := &tableNames{}
	stmt.Accept(c)
	ctes := map[string]bool{}
	for _, w := range c.withs {
		for _, cte := range w.CTEs {
			ctes[cte.Name.L] = true
		}
	}
	catalogs, others := 0, ""
	for _, tn := range c.names {
		schema := tn.Schema.L
		if schema == "" && s.frontEnd == rewrite.MySQLFrontEnd && strings.EqualFold(s.database, "information_schema") {
			schema = "information_schema"
		}
		switch {
		case catalogSchemas[schema]:
			catalogs++
		case schema == "" && ctes[tn.Name.L]:
		case schema == "" && tn.Name.L == "dual":
		case schema == "" && s.frontEnd == rewrite.PostgresFrontEnd && strings.HasPrefix(tn.Name.L, "pg_") && !s.policyTable(tn):
			catalogs++
		default:
			if others == "" {
				others = tn.Name.O
			}
		}
	}
	switch {
	case catalogs > 0 && others != "":
		return mixedCatalog, others
	case catalogs > 0:
		return toCatalog, ""
	case others == "":
		// No table at all (SELECT 1 WHERE 1=1, FROM DUAL), or only
		// common table expressions over no table.
		return toCatalog, ""
	}
	return notCatalog, ""
}

func (s *Session) policyTable(tn *ast.TableName) bool {
	pt, pub := s.engine.Policy().LookupTable(tn.Schema.O, tn.Name.O)
	return pt != nil || pub != nil
}

// mentionsCatalog reports whether PostgreSQL text the TiDB parser could not
// read names a catalog relation or function, so that the catalog's
// translation is tried.
func mentionsCatalog(sql string) bool {
	lower := strings.ToLower(sql)
	for _, w := range []string{"pg_", "information_schema", "current_schema", "current_setting", "format_type", "::reg", "has_table_privilege", "array_to_string"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// mixedCatalogError refuses a statement that reads catalogs and tables.
func mixedCatalogError(table string) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "a query cannot read catalog relations (pg_catalog, information_schema) together with the table %s", table).
		WithHint("ask the catalog and the table in separate queries")
}

// queryCatalog answers a catalog query; stmt is its parse (required for
// the MySQL front end, unused for PostgreSQL, whose text is translated).
func (s *Session) queryCatalog(ctx context.Context, sql string, stmt ast.StmtNode, args []any) (*sqltypes.Result, error) {
	s.note.kind = KindCatalog
	var res *sqltypes.Result
	var err error
	if s.frontEnd == rewrite.MySQLFrontEnd {
		res, err = s.server.catalog.Load().QueryMySQL(ctx, stmt, args, s.catalogSession())
	} else {
		res, err = s.server.catalog.Load().QueryPostgres(ctx, sql, args, s.catalogSession())
	}
	if err != nil {
		return nil, catalogError(err)
	}
	return res, nil
}

// catalogError maps the catalog's errors to the client's.
func catalogError(err error) error {
	var ce *catalog.Error
	if errors.As(err, &ce) {
		code := sqlerr.FeatureNotSupported
		switch {
		case ce.UndefinedSetting:
			code = sqlerr.UndefinedObject
		case !ce.Unsupported:
			code = sqlerr.UndefinedColumn
		}
		return &sqlerr.Error{Code: code, Message: ce.Msg, Err: err,
			Hint: "dpproxy answers catalog queries from the policy (its virtual catalog); this part of the catalog is not implemented"}
	}
	var missing *catalog.TableMissingError
	if errors.As(err, &missing) {
		return &sqlerr.Error{Code: sqlerr.UndefinedTable, Message: missing.Error(), Err: err}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &sqlerr.Error{Code: sqlerr.QueryCanceled, Message: "canceling statement", Err: err}
	}
	return &sqlerr.Error{Code: sqlerr.InternalError, Message: "the catalog query failed", Err: err}
}

// describeCatalog reports a PostgreSQL catalog statement's parameters and
// result columns without the client's values: it runs the statement with
// every parameter NULL (the catalog holds no data, so this costs nothing
// and reveals nothing).
func (s *Session) describeCatalog(ctx context.Context, sql string) (params []sqltypes.Type, cols []sqltypes.Column, err error) {
	_, n, err := s.server.catalog.Load().TranslatePostgres(sql, s.catalogSession())
	if err != nil {
		return nil, nil, catalogError(err)
	}
	args := make([]any, n)
	res, err := s.queryCatalog(ctx, sql, nil, args)
	if err != nil {
		return nil, nil, err
	}
	params = make([]sqltypes.Type, n)
	for i := range params {
		params[i] = sqltypes.Text
	}
	return params, res.Columns, nil
}

// catalogStatement answers a parsed statement that is a catalog query;
// ok is false for others. A SELECT without a table that the session can
// answer itself (version(), current_user, ...) is left to it.
func (s *Session) catalogStatement(ctx context.Context, sql string, stmt ast.StmtNode, parsed *rewrite.Parsed) (res *sqltypes.Result, ok bool, err error) {
	if route, err := s.route(stmt); route == notCatalog {
		return nil, false, nil
	} else if err != nil {
		s.note.kind = KindCatalog
		return nil, true, err
	}
	if parsed != nil && len(parsed.Params) > 0 {
		return nil, true, sqlerr.New(sqlerr.ProtocolViolation, "the query has parameters ($n) but no values: send it with the extended query protocol (Parse/Bind)")
	}
	res, err = s.queryCatalog(ctx, sql, stmt, nil)
	return res, true, err
}
