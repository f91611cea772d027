package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// mysqlSQLMode is the sql_mode of every backend session. It is fixed,
// whatever the server's default, because the MySQL dialect relies on it:
// identifiers in backticks and double quotes around strings (no
// ANSI_QUOTES), backslash escapes in string literals (no
// NO_BACKSLASH_ESCAPES), || as OR (no PIPES_AS_CONCAT). The modes listed
// only affect writes, which backend sessions never make; every mode
// named here exists in MySQL 5.7 and later and in MariaDB 10.x.
const mysqlSQLMode = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

// mysqlSessionSetup runs on every new backend connection, in order.
var mysqlSessionSetup = []string{
	// Every transaction, including single statements in autocommit mode,
	// is read-only unless a statement changes it back, which dpproxy
	// never sends. Each statement reads one snapshot, whatever the
	// server's default isolation (READ UNCOMMITTED would let the parts of
	// one bounding query see different rows: rewrite's heavy.go reads a
	// table three times and relies on them agreeing).
	"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY",
	"SET SESSION sql_mode = '" + mysqlSQLMode + "'",
	// TIMESTAMP values are converted to the session time zone; read them
	// in UTC, the location the driver is told to use.
	"SET SESSION time_zone = '+00:00'",
}

// MySQL is a Backend on a MySQL or MariaDB server, reached through
// database/sql and github.com/go-sql-driver/mysql.
//
// Connections are made with dpproxy's own credentials from the DSN. Every
// new connection's session is set to READ ONLY transactions, a fixed
// sql_mode (mysqlSQLMode) and time zone UTC; every statement runs alone in
// autocommit mode, so it is a read-only transaction of its own (dpproxy
// sends only SQL it wrote, never a statement that changes the session's
// transaction characteristics). Session variables are not transactional, so a
// connection on which a statement failed or returned no result set (SET,
// DO, ...) is discarded rather than reused. Writes and DDL fail with MySQL error 1792
// (ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION).
//
// Parameters are bound by the server (interpolateParams is always off:
// argument values never become SQL text), dates are parsed into time.Time
// (parseTime is always on) in UTC, and multi-statement strings and LOAD
// DATA LOCAL are disabled.
type MySQL struct {
	db   *sql.DB
	desc string // net address/database, for logs

	// seen holds the public-table texts run recently (mycombine.go);
	// combiner batches concurrent ones (combine.go), where the
	// connections allow (pipelinable).
	seen     *lru.Cache[string, mysqlSeen]
	combiner *combiner
	// noUnion holds the shapes whose statements are not answered by one
	// UNION ALL (myunion.go), noLookup the lookups' prefixes not answered
	// by one statement listing their keys (mylookup.go): the first try
	// failed.
	noUnion, noLookup *lru.Cache[string, struct{}]
	// unioned counts the statements sent in a UNION ALL, lookups the
	// lookups by key answered by one statement listing their keys.
	unioned, lookups atomic.Int64
	pipelinable      bool
	// lanes keeps the connections of the combiner's idle lanes
	// (mycombine.go); closed is set by Close.
	lanes  chan laneConn
	closed atomic.Bool
}

var _ Backend = (*MySQL)(nil)

// OpenMySQL creates a pool of at most maxConns connections
// (DefaultMaxConns if maxConns <= 0) to the server named by dsn (the
// go-sql-driver form, user:password@tcp(host:port)/database?params), and
// checks that a connection can be made. A failure to connect wraps
// ErrUnavailable.
func OpenMySQL(ctx context.Context, dsn string, maxConns int) (*MySQL, error) {
	m, err := newMySQL(dsn, maxConns)
	if err != nil {
		return nil, err
	}
	if err := m.Ping(ctx); err != nil {
		_ = m.db.Close() // nothing is in use yet
		return nil, err
	}
	slog.InfoContext(ctx, "backend: mysql pool open", "server", m.desc, "max_conns", m.db.Stats().MaxOpenConnections)
	return m, nil
}

// newMySQL builds the pool without connecting.
func newMySQL(dsn string, maxConns int) (*MySQL, error) {
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		return nil, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("backend: mysql dsn: %w", err)
	}
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	db := sql.OpenDB(mysqlSessionConnector{connector, mysqlSessionSetup})
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(pgMaxIdleTime)
	// Below the servers' default wait_timeout (8 hours), so that the pool
	// rarely meets a connection the server has closed.
	db.SetConnMaxLifetime(pgMaxLifetime)
	m := &MySQL{db: db, desc: cfg.Net + "(" + cfg.Addr + ")/" + cfg.DBName, pipelinable: mysqlPipelinable(cfg)}
	m.seen, _ = lru.New[string, mysqlSeen](seenStatements)
	m.noUnion, _ = lru.New[string, struct{}](seenStatements)
	m.noLookup, _ = lru.New[string, struct{}](seenStatements)
	m.setPipelineLanes(defaultPipelineLanes(maxConns))
	return m, nil
}

// mysqlConfig parses dsn and forces the options the backend relies on.
func mysqlConfig(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("backend: parse mysql dsn: %w", err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = false
	cfg.MultiStatements = false
	cfg.AllowAllFiles = false
	cfg.ClientFoundRows = false
	cfg.ColumnsWithAlias = false
	cfg.CheckConnLiveness = true
	cfg.Logger = mysqlLogger{}
	cfg.DialFunc = dialMySQL
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultConnectTimeout
	}
	// Session variables from the DSN are applied before the session setup
	// runs, so they cannot undo it; drop the ones that would be
	// overridden anyway so that the DSN does not mislead.
	for k := range cfg.Params {
		switch strings.ToLower(k) {
		case "sql_mode", "time_zone", "tx_read_only", "transaction_read_only", "tx_isolation", "transaction_isolation", "autocommit":
			delete(cfg.Params, k)
		}
	}
	return cfg, nil
}

// mysqlLogger sends the driver's own messages (such as "closing bad idle
// connection") to slog at debug level instead of the standard logger.
type mysqlLogger struct{}

func (mysqlLogger) Print(v ...any) {
	slog.Debug("backend: mysql driver: " + strings.TrimSuffix(fmt.Sprint(v...), "\n"))
}

// mysqlSessionConnector runs setup (mysqlSessionSetup) on every new
// connection.
type mysqlSessionConnector struct {
	driver.Connector
	setup []string
}

func (c mysqlSessionConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var socket dialedSocket
	conn, err := c.Connector.Connect(context.WithValue(ctx, dialedSocketKey{}, &socket))
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		_ = conn.Close() // unusable without the session setup
		return nil, fmt.Errorf("mysql driver connection %T cannot execute statements", conn)
	}
	for _, stmt := range c.setup {
		if _, err := ex.ExecContext(ctx, stmt, nil); err != nil {
			_ = conn.Close() // unusable without the session setup
			return nil, fmt.Errorf("set up mysql session (%s): %w", stmt, err)
		}
	}
	if dc, ok := conn.(mysqlDriverConn); ok {
		return newStmtCachingConn(dc, socket.conn), nil // mysqlstmt.go
	}
	return conn, nil
}

// Ping checks that a connection to the server can be had and used. Its
// errors wrap ErrUnavailable.
func (m *MySQL) Ping(ctx context.Context) error {
	if err := m.db.PingContext(ctx); err != nil {
		return fmt.Errorf("%w: ping mysql %s: %w", ErrUnavailable, m.desc, err)
	}
	return nil
}

// Close closes the pool's idle connections; connections in use are closed
// as their statements finish. Queries after Close fail with ErrUnavailable.
func (m *MySQL) Close() error {
	m.closed.Store(true)
	m.closeLanes()
	if err := m.db.Close(); err != nil {
		return fmt.Errorf("backend: close mysql %s: %w", m.desc, err)
	}
	return nil
}

// Query runs sql, with args bound to its ? parameters by the server, as a
// read-only transaction of its own and returns the whole result.
//
// Column types come from the result metadata: TINYINT, SMALLINT and YEAR →
// Int2, MEDIUMINT and INT → Int4, BIGINT → Int8 (unsigned types one size
// up; UNSIGNED BIGINT → Numeric), DECIMAL → Numeric, FLOAT → Float4, DOUBLE
// → Float8, CHAR, VARCHAR, TEXT, ENUM, SET and JSON → Text, DATE → Date,
// DATETIME and TIMESTAMP → Timestamp (TIMESTAMP read in UTC). BOOLEAN is
// TINYINT(1) in MySQL and stays an integer. Binary strings are reported as
// Text in PostgreSQL's hex form (\x...), TIME and everything else as Text
// in MySQL's text form. Zero dates ('0000-00-00') have no time.Time: a
// column holding one is reported as Text.
//
// time.Time arguments are bound as DATETIME in UTC; sqltypes.Decimal
// arguments as strings.
func (m *MySQL) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	return m.query(ctx, readMySQLDriverRows, query, args)
}

// query runs one statement on a connection of the pool and reads its
// result with read.
func (m *MySQL) query(ctx context.Context, read mysqlRowsReader, query string, args []any) (*Rows, error) {
	start := time.Now()
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: mysql %s: %w", ErrUnavailable, m.desc, err)
	}
	res, err := runMySQL(ctx, conn, read, query, mysqlArgs(args))
	if err != nil || len(res.Columns) == 0 {
		// Session state is not transactional in MySQL: a statement that
		// returned no result set may have been a SET, and a failed one
		// may have left anything behind. Such a session is not reused.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = conn.Close() // returns the connection to the pool (or drops it)
	if err != nil {
		slog.DebugContext(ctx, "backend: mysql query failed", "err", err, "elapsed", time.Since(start))
		return nil, err
	}
	slog.DebugContext(ctx, "backend: mysql query", "rows", len(res.Values)+len(res.MySQLText), "elapsed", time.Since(start))
	return res, nil
}

// mysqlArgs binds time.Time arguments as DATETIME in UTC (see bindArgs).
func mysqlArgs(args []any) []any {
	return bindArgs(args, func(t time.Time) any { return t.UTC() })
}

// mysqlDecoder turns a value as the driver returns it (nil, int64,
// uint64, float32, float64, []byte, time.Time) into its normalized Go
// value. A value it cannot convert is returned in text form; conform then
// reports the column as Text. A []byte is the driver's buffer, valid
// until its next row: a decoder copies what it keeps.
type mysqlDecoder func(v any) any

// mysqlColumnDecoder returns the column type and decoder for a result
// column with the driver's DatabaseTypeName.
func mysqlColumnDecoder(name string) (sqltypes.Type, mysqlDecoder) {
	switch name {
	case "TINYINT", "SMALLINT", "YEAR", "UNSIGNED TINYINT":
		return sqltypes.Int2, mysqlInt
	case "MEDIUMINT", "INT", "UNSIGNED SMALLINT", "UNSIGNED MEDIUMINT":
		return sqltypes.Int4, mysqlInt
	case "BIGINT", "UNSIGNED INT":
		return sqltypes.Int8, mysqlInt
	case "UNSIGNED BIGINT", "DECIMAL":
		return sqltypes.Numeric, mysqlDecimal
	case "FLOAT":
		return sqltypes.Float4, mysqlFloat
	case "DOUBLE":
		return sqltypes.Float8, mysqlFloat
	case "DATE":
		return sqltypes.Date, mysqlTime(sqltypes.Date)
	case "DATETIME", "TIMESTAMP":
		return sqltypes.Timestamp, mysqlTime(sqltypes.Timestamp)
	case "BINARY", "VARBINARY", "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BIT", "GEOMETRY":
		return sqltypes.Text, mysqlHex
	}
	// CHAR, VARCHAR, the TEXT types, ENUM, SET, JSON, TIME, NULL.
	return sqltypes.Text, mysqlText
}

func mysqlInt(v any) any {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
	case []byte:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n
		}
	}
	return mysqlText(v)
}

func mysqlDecimal(v any) any {
	switch x := v.(type) {
	case int64:
		return sqltypes.Decimal(strconv.FormatInt(x, 10))
	case uint64:
		return sqltypes.Decimal(strconv.FormatUint(x, 10))
	case []byte:
		if d, ok := canonicalDecimal(string(x)); ok {
			return d
		}
	}
	return mysqlText(v)
}

func mysqlFloat(v any) any {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		// Through float32's shortest text form, so that a FLOAT 0.1
		// becomes 0.1, not float64(float32(0.1)), as in text results.
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
		return f
	case int64:
		return float64(x)
	case []byte:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return f
		}
	}
	return mysqlText(v)
}

func mysqlTime(t sqltypes.Type) mysqlDecoder {
	return func(v any) any {
		switch x := v.(type) {
		case time.Time:
			if x.IsZero() {
				// The driver's reading of MySQL's zero date.
				if t == sqltypes.Date {
					return "0000-00-00"
				}
				return "0000-00-00 00:00:00"
			}
			return x.UTC()
		case []byte:
			layout := "2006-01-02 15:04:05.999999999"
			if t == sqltypes.Date {
				layout = time.DateOnly
			}
			if tm, err := time.ParseInLocation(layout, string(x), time.UTC); err == nil {
				return tm
			}
		}
		return mysqlText(v)
	}
}

func mysqlHex(v any) any {
	if b, ok := v.([]byte); ok {
		return `\x` + hex.EncodeToString(b)
	}
	return mysqlText(v)
}

func mysqlText(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case time.Time:
		return textForm(sqltypes.Timestamp, x.UTC())
	}
	return textForm(sqltypes.Text, v)
}

// Stats implements Backend.
func (m *MySQL) Stats() PoolStats {
	s := sqlPoolStats(m.db.Stats())
	s.Pipelined, s.Batches = m.combiner.stats()
	s.Unioned, s.Lookups = m.unioned.Load(), m.lookups.Load()
	return s
}
