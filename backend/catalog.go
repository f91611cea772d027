package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// Description is what PostgreSQL reports about a statement without
// running it: its parameter and result column types.
type Description struct {
	Params  []sqltypes.Type
	Columns []Column
}

// Describe prepares sql on a backend connection (nothing is executed) and
// returns its parameter and result types. It is used for statements
// dpproxy passes to the catalog role as written.
func (p *Postgres) Describe(ctx context.Context, sql string) (*Description, error) {
	pc, err := p.pool.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres %s: %w", ErrUnavailable, p.desc, err)
	}
	defer p.pool.release(pc)
	sd, err := pc.conn.PgConn().Prepare(ctx, "", sql, nil)
	if err != nil {
		cleanupConn(ctx, pc.conn)
		return nil, fmt.Errorf("backend: postgres: describe: %w", err)
	}
	d := &Description{}
	for _, oid := range sd.ParamOIDs {
		d.Params = append(d.Params, sqltypes.FromPostgresOID(oid))
	}
	for _, f := range sd.Fields {
		d.Columns = append(d.Columns, Column{Name: f.Name, Type: sqltypes.FromPostgresOID(f.DataTypeOID)})
	}
	return d, nil
}

// DatabaseError is an error the database itself reported for a statement
// (as opposed to a failure to reach it), with PostgreSQL's fields.
type DatabaseError struct {
	Code     string
	Message  string
	Detail   string
	Hint     string
	Position int
}

// AsDatabaseError extracts the database's own error from err. Only
// statements whose failure cannot depend on protected data (those run
// under the catalog role) may show it to a client.
//
// MySQL errors keep their SQLSTATE; SQLite errors, which have none, get
// the PostgreSQL code of the common cases (unknown column or table,
// syntax error) and 42000 otherwise.
func AsDatabaseError(err error) (*DatabaseError, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return &DatabaseError{Code: pgErr.Code, Message: pgErr.Message, Detail: pgErr.Detail, Hint: pgErr.Hint, Position: int(pgErr.Position)}, true
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		code := string(myErr.SQLState[:])
		if code == "\x00\x00\x00\x00\x00" || code == "HY000" {
			code = "42000"
		}
		return &DatabaseError{Code: code, Message: myErr.Message}, true
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		msg := liteErr.Error()
		code := "42000"
		switch {
		case strings.Contains(msg, "no such column"):
			code = "42703"
		case strings.Contains(msg, "no such table"):
			code = "42P01"
		case strings.Contains(msg, "syntax error"):
			code = "42601"
		case strings.Contains(msg, "interrupted"):
			return nil, false // a cancelled statement: see backendError
		}
		return &DatabaseError{Code: code, Message: msg}, true
	}
	return nil, false
}

// ProtectedTable names a table the catalog role must not be able to read.
type ProtectedTable struct{ Schema, Name string }

// VerifyCatalogRole checks that the role p connects as cannot read any of
// the protected tables (no table or column SELECT privilege, directly or
// through role membership), is not a superuser, and cannot bypass row
// security or read files. dpproxy refuses to start otherwise: queries it
// cannot analyze run under this role, guarded only by these privileges.
func VerifyCatalogRole(ctx context.Context, p *Postgres, tables []ProtectedTable) error {
	rows, err := p.Query(ctx, `SELECT current_user::text, r.rolsuper, r.rolbypassrls,
		pg_has_role(current_user, 'pg_read_all_data', 'MEMBER') OR pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') OR pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER')
		FROM pg_roles r WHERE r.rolname = current_user`)
	if err != nil {
		return fmt.Errorf("checking the catalog role: %w", err)
	}
	if len(rows.Values) != 1 {
		return errors.New("checking the catalog role: role not found in pg_roles")
	}
	r := rows.Values[0]
	role := fmt.Sprint(r[0])
	switch {
	case r[1] == true:
		return fmt.Errorf("catalog role %q is a superuser; it must be a role that cannot read protected tables", role)
	case r[2] == true:
		return fmt.Errorf("catalog role %q has BYPASSRLS; it must be an ordinary role", role)
	case r[3] == true:
		return fmt.Errorf("catalog role %q is a member of pg_read_all_data, pg_read_server_files or pg_execute_server_program; it must not be", role)
	}
	var problems []string
	for _, t := range tables {
		schema := t.Schema
		if schema == "" {
			schema = "public"
		}
		name := quoteIdent(schema) + "." + quoteIdent(t.Name)
		rows, err := p.Query(ctx, `SELECT to_regclass($1) IS NOT NULL AND (has_table_privilege($1, 'SELECT') OR has_any_column_privilege($1, 'SELECT'))`, name)
		if err != nil {
			return fmt.Errorf("checking the catalog role's privileges on %s: %w", name, err)
		}
		if len(rows.Values) == 1 && rows.Values[0][0] == true {
			problems = append(problems, name)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("catalog role %q can read protected table(s) %s; revoke SELECT (keep REFERENCES on the exposed columns: see `dpproxy catalog-role`)", role, strings.Join(problems, ", "))
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
