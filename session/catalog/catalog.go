package catalog

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
	lru "github.com/hashicorp/golang-lru/v2"
	"modernc.org/sqlite"
)

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// MaxRows bounds a catalog query's result. The whole catalog of a large
// policy is a few thousand rows; more can only come from a query that
// generates rows (a recursive common table expression), which is stopped.
const MaxRows = 100_000

// Catalog answers catalog queries from an in-memory SQLite database built
// from a Schema. It is safe for concurrent use.
type Catalog struct {
	schema Schema
	pg     *flavor
	my     *flavor
	// translations memoizes PostgreSQL translations by text and session
	// constants (those reading run-time parameters are not kept).
	translations *lru.Cache[string, translation]
}

// translationMemoSize bounds the memo of translations.
const translationMemoSize = 1024

// flavor is one front end's catalog database.
type flavor struct {
	// keeper holds the shared in-memory database open (and built it).
	keeper *sql.DB
	// db runs clients' queries, read-only.
	db *sql.DB
	// names resolves the names reg* casts look up (PostgreSQL only).
	names *objectNames
	// columns are each table's columns, by lower-case SQLite name.
	columns map[string][]columnDef
}

// New builds the catalog of schema for both front ends.
func New(ctx context.Context, schema Schema) (*Catalog, error) {
	c := &Catalog{schema: schema}
	var err error
	if c.translations, err = lru.New[string, translation](translationMemoSize); err != nil {
		return nil, err
	}
	if c.pg, err = newFlavor(ctx, false, func(b *builder) error { return buildPostgres(b, schema) }); err != nil {
		return nil, fmt.Errorf("catalog: PostgreSQL: %w", err)
	}
	if c.my, err = newFlavor(ctx, true, func(b *builder) error { return buildMySQL(b, schema) }); err != nil {
		c.pg.close()
		return nil, fmt.Errorf("catalog: MySQL: %w", err)
	}
	return c, nil
}

// Close releases the catalog's databases.
func (c *Catalog) Close() error {
	c.pg.close()
	c.my.close()
	return nil
}

func (f *flavor) close() {
	f.db.Close()
	f.keeper.Close()
}

// connector opens connections of a private SQLite driver, whose functions
// reach only the catalog's own connections.
type connector struct {
	drv *sqlite.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.drv }

func newFlavor(ctx context.Context, caseInsensitiveLike bool, build func(*builder) error) (*flavor, error) {
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	name := "dpproxy-catalog-" + hex.EncodeToString(id[:])
	f := &flavor{names: newObjectNames()}
	drv := &sqlite.Driver{}
	registered, err := registerFunctions(drv, f.names, caseInsensitiveLike)
	if err != nil {
		return nil, err
	}
	registerGuard(drv, registered)
	base := "file:" + name + "?mode=memory&cache=shared"
	f.keeper = sql.OpenDB(connector{drv, base})
	f.keeper.SetMaxOpenConns(1)
	f.keeper.SetConnMaxLifetime(0)
	f.keeper.SetConnMaxIdleTime(0)
	b := &builder{ctx: ctx, db: f.keeper, names: f.names}
	if err := build(b); err != nil {
		b.commit()
		f.keeper.Close()
		return nil, err
	}
	if err := b.commit(); err != nil {
		f.keeper.Close()
		return nil, err
	}
	f.columns = b.columns
	// Clients' queries run on read-only connections of the same
	// database: nothing they send can change it.
	f.db = sql.OpenDB(connector{drv, base + "&_pragma=query_only(1)"})
	f.db.SetMaxOpenConns(8)
	f.db.SetMaxIdleConns(8)
	f.db.SetConnMaxLifetime(0)
	f.db.SetConnMaxIdleTime(0)
	return f, nil
}

// run runs a translated statement and converts its rows. Columns whose
// declared type is known keep it; others take the type of their values.
func (f *flavor) run(ctx context.Context, query string, args []any, types func(decl string) sqltypes.Type) (*sqltypes.Result, error) {
	conn, err := f.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := limitConnection(conn); err != nil {
		return nil, err
	}
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	res := &sqltypes.Result{Columns: make([]sqltypes.Column, len(cts))}
	declared := make([]bool, len(cts))
	arrays := make([]bool, len(cts))
	for i, ct := range cts {
		res.Columns[i].Name = ct.Name()
		if d := strings.ToLower(ct.DatabaseTypeName()); d != "" {
			res.Columns[i].Type = types(d)
			declared[i] = true
			arrays[i] = strings.HasPrefix(d, "_")
		}
	}
	size := 0
	for rows.Next() {
		if len(res.Rows) == MaxRows || size > maxResultBytes {
			return nil, &Error{Msg: fmt.Sprintf("a catalog query returned more than %d rows or %d MiB; the statement was stopped", MaxRows, maxResultBytes>>20)}
		}
		vals := make([]any, len(cts))
		ptrs := make([]any, len(cts))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for _, v := range vals {
			switch x := v.(type) {
			case string:
				size += len(x)
			case []byte:
				size += len(x)
			default:
				size += 8
			}
		}
		res.Rows = append(res.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range res.Columns {
		if !declared[i] {
			res.Columns[i].Type = inferType(res.Rows, i)
		}
		for _, row := range res.Rows {
			row[i] = convertValue(row[i], res.Columns[i].Type)
			if arrays[i] {
				row[i] = postgresArrayText(row[i])
			}
		}
	}
	res.Tag = fmt.Sprintf("SELECT %d", len(res.Rows))
	return res, nil
}

// postgresArrayText writes a JSON array as PostgreSQL's text form of an
// array ({a,b}).
func postgresArrayText(v any) any {
	items, ok := arrayItems(v)
	if !ok {
		return v
	}
	parts := make([]string, len(items))
	for i, it := range items {
		if it == nil {
			parts[i] = "NULL"
			continue
		}
		s := fmt.Sprint(it)
		if s == "" || strings.ContainsAny(s, ",{}\" \\\t\n") || strings.EqualFold(s, "NULL") {
			s = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
		}
		parts[i] = s
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// inferType is the type of an expression column, from its values.
func inferType(rows [][]any, col int) sqltypes.Type {
	t := sqltypes.Unknown
	for _, row := range rows {
		switch row[col].(type) {
		case int64:
			if t == sqltypes.Unknown {
				t = sqltypes.Int8
			}
		case float64:
			if t == sqltypes.Unknown || t == sqltypes.Int8 {
				t = sqltypes.Float8
			}
		case string, []byte:
			return sqltypes.Text
		}
	}
	if t == sqltypes.Unknown {
		return sqltypes.Text
	}
	return t
}

// convertValue makes an SQLite value a value of type t.
func convertValue(v any, t sqltypes.Type) any {
	if b, ok := v.([]byte); ok {
		v = string(b)
	}
	if v == nil {
		return nil
	}
	switch t {
	case sqltypes.Bool:
		switch x := v.(type) {
		case int64:
			return x != 0
		case float64:
			return x != 0
		case string:
			return x == "t" || x == "true" || x == "1" || x == "YES"
		}
	case sqltypes.Int2, sqltypes.Int4, sqltypes.Int8, sqltypes.OID:
		switch x := v.(type) {
		case float64:
			return int64(x)
		case string:
			return x
		}
	case sqltypes.Float4, sqltypes.Float8:
		if x, ok := v.(int64); ok {
			return float64(x)
		}
	case sqltypes.Text, sqltypes.Varchar, sqltypes.Name, sqltypes.Bpchar, sqltypes.Unknown:
		switch x := v.(type) {
		case int64:
			return fmt.Sprint(x)
		case float64:
			return fmt.Sprint(x)
		}
	}
	return v
}

// Error is a catalog query the catalog cannot answer, with the reason.
type Error struct {
	// Unsupported is set when the query uses something the catalog does
	// not implement (SQLSTATE 0A000); otherwise the query is wrong
	// (a name that does not exist, a syntax error).
	Unsupported bool
	// UndefinedSetting is set for current_setting() of an unknown name.
	UndefinedSetting bool
	Msg              string
	Err              error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// classify turns a translation or SQLite error into an *Error.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ns *notSupported
	if errors.As(err, &ns) {
		return &Error{Unsupported: true, Msg: ns.Error(), Err: err}
	}
	var us *unknownSetting
	if errors.As(err, &us) {
		return &Error{UndefinedSetting: true, Msg: us.Error(), Err: err}
	}
	msg := err.Error()
	// modernc errors read "SQL logic error: no such table: x (1)".
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "SQL logic error") {
		msg = msg[i+2:]
	}
	msg = strings.TrimSuffix(msg, " (1)")
	switch {
	case strings.Contains(msg, "is not supported by dpproxy's catalog"):
		// A registered function's own error (regCast, a regexp).
		return &Error{Unsupported: true, Msg: msg, Err: err}
	case strings.HasPrefix(msg, "no such table: "):
		return &Error{Unsupported: true, Msg: "the catalog relation " + strings.TrimPrefix(msg, "no such table: ") + " is not supported by dpproxy's catalog", Err: err}
	case strings.HasPrefix(msg, "no such function: "):
		return &Error{Unsupported: true, Msg: "the function " + strings.ToLower(strings.TrimPrefix(msg, "no such function: ")) + "() is not supported by dpproxy's catalog", Err: err}
	case strings.HasPrefix(msg, "no such column: "):
		return &Error{Msg: "column " + strings.TrimPrefix(msg, "no such column: ") + " does not exist in dpproxy's catalog", Err: err}
	}
	return &Error{Unsupported: true, Msg: "dpproxy's catalog cannot answer this query: " + msg, Err: err}
}
