package backend

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// Backend runs SQL on the database that holds the data, with dpproxy's own
// credentials. Implementations must be safe for concurrent use.
type Backend interface {
	// Query runs one read-only statement and returns its full result. args
	// are bound as parameters ($n for postgres, ? for sqlite and mysql).
	Query(ctx context.Context, sql string, args ...any) (*Rows, error)
	// DescribeTable reads a table's declared columns and primary key
	// (ErrNoSuchTable when there is no such table); schema "" is the
	// connection's default.
	DescribeTable(ctx context.Context, schema, name string) (*TableInfo, error)
	// Stats reports the connection pool's use.
	Stats() PoolStats
	// Close releases the connection pool.
	Close() error
}

// PoolStats is a connection pool's use: at most Max connections, Open of
// them now (InUse running a statement, Idle waiting); Waits statements
// found none free and waited Waited in all.
type PoolStats struct {
	Max, Open, InUse, Idle int
	Waits                  int64
	Waited                 time.Duration
	// Pipelined statements were sent combined in Batches (short
	// statements seen before, combine.go).
	Pipelined, Batches int64
	// Unioned of them (MySQL) were answered together with others of
	// their shape, by one UNION ALL, and Lookups, lookups by key, by one
	// statement listing their keys (myunion.go).
	Unioned, Lookups int64
}

// sqlPoolStats reads a database/sql pool's use.
func sqlPoolStats(s sql.DBStats) PoolStats {
	return PoolStats{Max: s.MaxOpenConnections, Open: s.OpenConnections, InUse: s.InUse, Idle: s.Idle, Waits: s.WaitCount, Waited: s.WaitDuration}
}

// Column is a result column as the backend reports it: the column a
// client is sent, so a result's columns pass on without a copy.
type Column = sqltypes.Column

// Rows is a materialized result. Values are normalized to the Go types
// listed in package sqltypes (nil, int64, float64, string, bool, time.Time,
// sqltypes.Decimal).
type Rows struct {
	Columns []Column
	Values  [][]any
	// PostgresText, set only by WireQuerier, holds the rows as PostgreSQL
	// DataRow bodies instead of Values.
	PostgresText [][]byte
	// MySQLText, set only by MySQLWireQuerier, holds the rows as MySQL
	// text-protocol row payloads instead of Values.
	MySQLText [][]byte
}

// ErrUnavailable wraps errors that happened before a statement reached the
// database (no connection could be had). Only such failures may refund a
// privacy charge: any later failure may depend on the data.
var ErrUnavailable = errors.New("backend unavailable")
