package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// sqliteBusyTimeout is how long a statement waits for a lock held by a
// writer of the file (another process) before failing with SQLITE_BUSY.
const sqliteBusyTimeout = 5 * time.Second

// SQLite is a Backend on a SQLite database file, read through
// database/sql and modernc.org/sqlite.
//
// The file is opened read-only (mode=ro), every connection has PRAGMA
// query_only set, and an authorizer on every connection refuses anything
// but reading: writes, DDL, transactions, ATTACH and pragmas other than
// schema introspection are rejected when the statement is compiled.
type SQLite struct {
	db   *sql.DB
	path string
}

var _ Backend = (*SQLite)(nil)

// OpenSQLite opens the database file at path read-only with a pool of at
// most maxConns connections (DefaultMaxConns if maxConns <= 0), and checks
// that it can be read. A failure to open or read the file wraps
// ErrUnavailable.
func OpenSQLite(ctx context.Context, path string, maxConns int) (*SQLite, error) {
	s, err := newSQLite(path, maxConns)
	if err != nil {
		return nil, err
	}
	if err := s.Ping(ctx); err != nil {
		_ = s.db.Close() // nothing is in use yet
		return nil, err
	}
	slog.InfoContext(ctx, "backend: sqlite open", "path", s.path, "max_conns", s.db.Stats().MaxOpenConnections)
	return s, nil
}

func newSQLite(path string, maxConns int) (*SQLite, error) {
	if path == "" {
		return nil, fmt.Errorf("backend: sqlite: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("backend: sqlite: resolve path %q: %w", path, err)
	}
	connector, err := sqlite.NewConnector(sqliteReadOnlyDSN(abs))
	if err != nil {
		return nil, fmt.Errorf("backend: sqlite: %w", err)
	}
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	db := sql.OpenDB(readOnlyConnector{connector})
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(30 * time.Minute)
	return &SQLite{db: db, path: abs}, nil
}

// sqliteReadOnlyDSN is the URI filename that opens path read-only. The
// driver runs the _pragma parameters on every new connection.
func sqliteReadOnlyDSN(abs string) string {
	// In a URI filename '?' and '#' end the path and '%' starts an escape.
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(abs))
	if !strings.HasPrefix(esc, "/") {
		esc = "/" + esc // Windows drive letters: file:/C:/...
	}
	return fmt.Sprintf("file:%s?mode=ro&_pragma=busy_timeout(%d)&_pragma=query_only(1)",
		esc, sqliteBusyTimeout.Milliseconds())
}

// readOnlyConnector installs readOnlyAuthorizer on every new connection.
type readOnlyConnector struct {
	driver.Connector
}

func (c readOnlyConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	reg, ok := conn.(sqlite.AuthorizerRegisterer)
	if !ok {
		_ = conn.Close() // unusable without the authorizer
		return nil, fmt.Errorf("sqlite driver connection %T has no authorizer", conn)
	}
	if err := reg.RegisterAuthorizer(readOnlyAuthorizer); err != nil {
		_ = conn.Close() // unusable without the authorizer
		return nil, fmt.Errorf("install sqlite authorizer: %w", err)
	}
	return conn, nil
}

// introspectionPragmas are the pragmas that only describe the schema; the
// authorizer allows them whatever their argument.
var introspectionPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true,
	"index_list": true, "index_info": true, "index_xinfo": true,
	"foreign_key_list": true, "database_list": true,
	"collation_list": true, "function_list": true, "pragma_list": true,
}

// readOnlyAuthorizer lets statements read and compute, nothing else. It
// fails closed: actions it does not know are denied.
func readOnlyAuthorizer(action sqlite.AuthorizerActionCode, arg1, _, _, _ string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthFunction, sqlite.AuthRecursive:
		return sqlite.AuthorizerOK
	case sqlite.AuthPragma:
		if introspectionPragmas[strings.ToLower(arg1)] {
			return sqlite.AuthorizerOK
		}
	}
	return sqlite.AuthorizerDeny
}

// Ping checks that the file can be opened and read. Its errors wrap
// ErrUnavailable.
func (s *SQLite) Ping(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("%w: sqlite %s: %w", ErrUnavailable, s.path, err)
	}
	defer conn.Close()
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		return fmt.Errorf("%w: read sqlite %s: %w", ErrUnavailable, s.path, err)
	}
	return nil
}

// Close closes the connection pool.
func (s *SQLite) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("backend: close sqlite %s: %w", s.path, err)
	}
	return nil
}

// Query runs sql with args bound to its ? parameters and returns the
// whole result.
//
// Column types come from the declared type of the column when the result
// column is a table column (INTEGER → Int8, REAL → Float8, NUMERIC →
// Numeric, TEXT → Text, DATE → Date, BOOLEAN → Bool, ...); expression
// columns, and columns whose stored values do not fit their declared
// type, are typed from their values: all integers → Int8, integers and
// reals → Float8, anything else → Text. A DATE column holding times of
// day is reported as Timestamp.
//
// time.Time arguments are bound as text in SQLite's date formats
// ('YYYY-MM-DD' at midnight UTC, 'YYYY-MM-DD HH:MM:SS.SSS' otherwise), so
// that they compare with dates stored as text; sqltypes.Decimal arguments
// are bound as text.
func (s *SQLite) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	start := time.Now()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: sqlite %s: %w", ErrUnavailable, s.path, err)
	}
	defer conn.Close()

	rows, err := conn.QueryContext(ctx, query, sqliteArgs(args)...)
	if err != nil {
		return nil, fmt.Errorf("backend: sqlite: %w", err)
	}
	defer rows.Close()
	res, err := readSQLiteRows(ctx, rows)
	if err != nil {
		slog.DebugContext(ctx, "backend: sqlite query failed", "err", err, "elapsed", time.Since(start))
		return nil, fmt.Errorf("backend: sqlite: %w", err)
	}
	slog.DebugContext(ctx, "backend: sqlite query", "rows", len(res.Values), "elapsed", time.Since(start))
	return res, nil
}

// sqliteArgs binds time.Time arguments as text in SQLite's date formats
// (see bindArgs and Query).
func sqliteArgs(args []any) []any {
	return bindArgs(args, func(t time.Time) any {
		u := t.UTC()
		if u.Hour() == 0 && u.Minute() == 0 && u.Second() == 0 && u.Nanosecond() == 0 {
			return u.Format(time.DateOnly)
		}
		return u.Format("2006-01-02 15:04:05.999999999")
	})
}

func readSQLiteRows(ctx context.Context, rows *sql.Rows) (*Rows, error) {
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, fmt.Errorf("column types: %w", err)
	}
	res := &Rows{Columns: make([]Column, len(cts))}
	res.Values, err = scanRows(ctx, rows, len(cts), func(_ int, v any) any {
		if b, ok := v.([]byte); ok {
			return string(b)
		}
		return v
	})
	if err != nil {
		return nil, err
	}
	for j, ct := range cts {
		res.Columns[j] = Column{Name: ct.Name(), Type: sqliteColumn(ct.DatabaseTypeName(), res.Values, j)}
	}
	return res, nil
}

// sqliteColumn settles the type of result column j and converts its values
// to that type's Go values in place.
func sqliteColumn(decl string, values [][]any, j int) sqltypes.Type {
	if t, ok := sqliteDeclType(decl); ok {
		if t == sqltypes.Date && hasTimeOfDay(values, j) {
			t = sqltypes.Timestamp
		}
		if coerceColumn(t, values, j) {
			return t
		}
	}
	t := inferType(values, j)
	if !coerceColumn(t, values, j) {
		// Text accepts every value; unreachable, but be safe.
		t = sqltypes.Text
		for _, row := range values {
			row[j] = textForm(sqltypes.Text, row[j])
		}
	}
	return t
}

// sqliteDeclType maps a declared column type (upper case, as the driver
// reports it) to a Type. Unknown declared types report false.
func sqliteDeclType(decl string) (sqltypes.Type, bool) {
	if i := strings.IndexByte(decl, '('); i >= 0 {
		decl = decl[:i]
	}
	decl = strings.TrimSpace(strings.ToUpper(decl))
	switch decl {
	case "":
		return sqltypes.Unknown, false
	case "DATE":
		return sqltypes.Date, true
	case "DATETIME", "TIMESTAMP":
		return sqltypes.Timestamp, true
	case "BOOLEAN", "BOOL":
		return sqltypes.Bool, true
	case "NUMERIC", "DECIMAL":
		return sqltypes.Numeric, true
	}
	// SQLite's affinity rules (https://sqlite.org/datatype3.html#affname).
	switch {
	case strings.Contains(decl, "INT"):
		return sqltypes.Int8, true
	case strings.Contains(decl, "CHAR"), strings.Contains(decl, "CLOB"), strings.Contains(decl, "TEXT"):
		return sqltypes.Text, true
	case strings.Contains(decl, "REAL"), strings.Contains(decl, "FLOA"), strings.Contains(decl, "DOUB"):
		return sqltypes.Float8, true
	}
	return sqltypes.Unknown, false
}

func hasTimeOfDay(values [][]any, j int) bool {
	for _, row := range values {
		if tm, ok := row[j].(time.Time); ok {
			if tm.Hour() != 0 || tm.Minute() != 0 || tm.Second() != 0 || tm.Nanosecond() != 0 {
				return true
			}
		}
	}
	return false
}

// inferType types a column from its values.
func inferType(values [][]any, j int) sqltypes.Type {
	var ints, floats, others int
	for _, row := range values {
		switch row[j].(type) {
		case nil:
		case int64:
			ints++
		case float64:
			floats++
		default:
			others++
		}
	}
	switch {
	case others > 0 || ints+floats == 0:
		return sqltypes.Text
	case floats > 0:
		return sqltypes.Float8
	default:
		return sqltypes.Int8
	}
}

// coerceColumn converts every value of column j to t's Go type. If one
// does not convert it leaves the column unchanged and returns false.
func coerceColumn(t sqltypes.Type, values [][]any, j int) bool {
	out := make([]any, len(values))
	for i, row := range values {
		v, ok := coerceSQLite(t, row[j])
		if !ok {
			return false
		}
		out[i] = v
	}
	for i, row := range values {
		row[j] = out[i]
	}
	return true
}

// coerceSQLite converts v, as modernc.org/sqlite returns it (nil, int64,
// float64, string, time.Time), to the Go value of type t, without loss.
func coerceSQLite(t sqltypes.Type, v any) (any, bool) {
	if v == nil {
		return nil, true
	}
	switch t {
	case sqltypes.Int8:
		switch x := v.(type) {
		case int64:
			return x, true
		case float64:
			if x == math.Trunc(x) && x >= -(1<<63) && x < 1<<63 {
				return int64(x), true
			}
		}
	case sqltypes.Float8:
		switch x := v.(type) {
		case float64:
			return x, true
		case int64:
			return float64(x), true
		}
	case sqltypes.Numeric:
		switch x := v.(type) {
		case int64:
			return sqltypes.Decimal(strconv.FormatInt(x, 10)), true
		case float64:
			if d, ok := decimalFromFloat(x); ok {
				return d, true
			}
		case string:
			if d, ok := canonicalDecimal(x); ok {
				return d, true
			}
		}
	case sqltypes.Bool:
		switch x := v.(type) {
		case int64:
			if x == 0 || x == 1 {
				return x == 1, true
			}
		case string:
			switch strings.ToLower(x) {
			case "true", "t", "1":
				return true, true
			case "false", "f", "0":
				return false, true
			}
		}
	case sqltypes.Date, sqltypes.Timestamp:
		switch x := v.(type) {
		case time.Time:
			return x, true
		case string:
			if tm, err := time.Parse(time.DateOnly, x); err == nil {
				return tm, true
			}
		}
	case sqltypes.Text:
		if tm, ok := v.(time.Time); ok && !hasTimeOfDay([][]any{{tm}}, 0) {
			return textForm(sqltypes.Date, v), true
		}
		return textForm(sqltypes.Timestamp, v), true
	}
	return nil, false
}

// Stats implements Backend.
func (s *SQLite) Stats() PoolStats { return sqlPoolStats(s.db.Stats()) }
