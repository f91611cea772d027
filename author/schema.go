package author

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// listTables names the tables and views of a schema ("" is the
// connection's default), sorted.
func listTables(ctx context.Context, be backend.Backend, kind config.BackendKind, schema string) ([]string, error) {
	var sql string
	var args []any
	switch kind {
	case config.BackendPostgres:
		sql = `SELECT table_name::text FROM information_schema.tables WHERE table_schema = COALESCE(NULLIF($1, ''), current_schema()) AND table_type IN ('BASE TABLE', 'VIEW') ORDER BY 1`
		args = []any{schema}
	case config.BackendMySQL:
		sql = `SELECT CAST(table_name AS CHAR) FROM information_schema.tables WHERE table_schema = COALESCE(NULLIF(?, ''), DATABASE()) ORDER BY 1`
		args = []any{schema}
	case config.BackendSQLite:
		sql = `SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY 1`
	default:
		return nil, fmt.Errorf("author: unknown backend kind %q", kind)
	}
	rows, err := be.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	var out []string
	for _, r := range rows.Values {
		if name, ok := r[0].(string); ok {
			out = append(out, name)
		}
	}
	return out, nil
}

// policyType is the policy's column type for a database type; ok is false
// for a type the policy cannot describe (the column is left out).
func policyType(t sqltypes.Type) (config.ColumnType, bool) {
	switch t {
	case sqltypes.Int2, sqltypes.Int4:
		return config.TypeInt, true
	case sqltypes.Int8:
		return config.TypeBigint, true
	case sqltypes.Float4, sqltypes.Float8:
		return config.TypeFloat, true
	case sqltypes.Numeric:
		return config.TypeNumeric, true
	case sqltypes.Text, sqltypes.Varchar, sqltypes.Bpchar, sqltypes.Name:
		return config.TypeText, true
	case sqltypes.Date:
		return config.TypeDate, true
	case sqltypes.Timestamp, sqltypes.Timestamptz:
		return config.TypeTimestamp, true
	case sqltypes.Bool:
		return config.TypeBool, true
	}
	return "", false
}

// compatible reports whether a column the policy declares as want can
// hold what the database declares as got: the same family (integers, any
// number for float and numeric, text, date, timestamp, boolean).
func compatible(want config.ColumnType, got sqltypes.Type) bool {
	have, ok := policyType(got)
	if !ok {
		return false
	}
	switch want {
	case config.TypeInt, config.TypeBigint:
		return have == config.TypeInt || have == config.TypeBigint
	case config.TypeFloat, config.TypeNumeric:
		return have == config.TypeFloat || have == config.TypeNumeric || have == config.TypeInt || have == config.TypeBigint
	}
	return have == want
}

// quoter quotes identifiers in a backend's dialect.
type quoter func(string) string

func quoterFor(kind config.BackendKind) quoter {
	if kind == config.BackendMySQL {
		return func(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
	}
	return func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
}

// table is a table's name, schema-qualified when it has a schema.
func (q quoter) table(schema, name string) string {
	if schema != "" {
		return q(schema) + "." + q(name)
	}
	return q(name)
}
