package session

import (
	"context"
	"errors"
	"strings"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Catalog queries — what psql's \d commands, drivers and BI tools ask of
// pg_catalog and information_schema — and statements dpproxy cannot parse
// run, as the client wrote them, on the backend under the catalog role
// (policy backend.catalog_dsn; engine.Engine.CatalogQuery): a role that
// dpproxy verified at start cannot read any protected table. What the
// proxy cannot analyze, the database's own access control guards: the role
// sees public tables, the catalogs, and (through REFERENCES grants) the
// names of the protected columns the policy exposes, never a protected
// row. Such statements run in a read-only transaction and cost no budget;
// since they cannot depend on protected data, the database's errors are
// passed on as they are.

// catalogSchemas are the schemas whose tables are catalogs.
var catalogSchemas = map[string]bool{"pg_catalog": true, "information_schema": true}

// toCatalog reports whether a statement goes to the catalog role: one that
// failed to parse (parseErr), or one that reads a catalog table. MySQL
// clients' catalog questions (SHOW, information_schema) are answered by
// the session from the policy (mysql.go), never by PostgreSQL's catalogs.
func (s *Session) toCatalog(parseErr error, stmt ast.StmtNode) bool {
	if s.frontEnd == rewrite.MySQLFrontEnd || !s.engine.HasCatalog() {
		return false
	}
	if parseErr != nil {
		return !errors.Is(parseErr, errMultipleStatements)
	}
	if _, ok := stmt.(*ast.SelectStmt); !ok {
		if _, ok := stmt.(*ast.SetOprStmt); !ok {
			return false
		}
	}
	c := &tableNames{}
	stmt.Accept(c)
	for _, tn := range c.names {
		schema := strings.ToLower(tn.Schema.O)
		if catalogSchemas[schema] {
			return true
		}
		if schema == "" && strings.HasPrefix(tn.Name.L, "pg_") {
			if pt, pub := s.engine.Policy().LookupTable("", tn.Name.O); pt == nil && pub == nil {
				return true
			}
		}
	}
	return false
}

// noCatalogError explains a catalog query when no catalog role is
// configured; nil when sql does not look like one, and for MySQL clients,
// whose statements keep their own error.
func (s *Session) noCatalogError(sql string) error {
	if s.frontEnd == rewrite.MySQLFrontEnd {
		return nil
	}
	lower := strings.ToLower(sql)
	if s.engine.HasCatalog() || !(strings.Contains(lower, "pg_catalog") || strings.Contains(lower, "information_schema") || strings.Contains(lower, "pg_")) {
		return nil
	}
	return sqlerr.New(sqlerr.FeatureNotSupported, "catalog queries (pg_catalog, information_schema, psql's \\d commands) are not available: this dpproxy has no catalog role").
		WithHint("with a PostgreSQL backend, create the role printed by `dpproxy catalog-role` and set backend.catalog_dsn; the embedded demo has no catalogs")
}

// catalogQuery runs sql as written under the catalog role.
func (s *Session) catalogQuery(ctx context.Context, sql string, args []any) ([]*sqltypes.Result, error) {
	res, err := s.engine.CatalogQuery(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	return []*sqltypes.Result{res}, nil
}
