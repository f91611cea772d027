package backend

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"net"

	"github.com/go-sql-driver/mysql"
	lru "github.com/hashicorp/golang-lru/v2"
)

// A statement with parameters reaches MariaDB through the binary protocol:
// go-sql-driver prepares it, executes it and closes it, three round trips
// and a parse on the server for every execution. Each backend connection
// here keeps the statements it prepared (an LRU of mysqlStmtCacheSize per
// connection) and only executes them again, as pgx does for PostgreSQL.

// mysqlStmtCacheSize bounds the prepared statements one backend
// connection keeps (MariaDB's max_prepared_stmt_count is 16,382 for the
// whole server by default).
const mysqlStmtCacheSize = 64

// mysqlDriverConn is what go-sql-driver's connection implements and
// database/sql uses.
type mysqlDriverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// stmtCachingConn is a driver connection that runs statements with
// parameters as server-side prepared statements it keeps.
type stmtCachingConn struct {
	mysqlDriverConn
	stmts *lru.Cache[string, driver.Stmt]
	// socket is the connection's network connection (nil if the dial did
	// not say): closing it ends a running statement (mysqlcancel.go).
	socket net.Conn
	// pipeReader reads the results of combined batches from socket
	// (mycombine.go), made on first use.
	pipeReader *mysqlPacketReader
}

func newStmtCachingConn(c mysqlDriverConn, socket net.Conn) *stmtCachingConn {
	stmts, _ := lru.NewWithEvict[string, driver.Stmt](mysqlStmtCacheSize, func(_ string, st driver.Stmt) {
		if err := st.Close(); err != nil {
			slog.Debug("backend: mysql: closing an evicted prepared statement", "err", err)
		}
	})
	return &stmtCachingConn{mysqlDriverConn: c, stmts: stmts, socket: socket}
}

// QueryContext runs a statement without parameters as text (COM_QUERY),
// and one with parameters as the connection's prepared statement for its
// text, prepared on first use.
func (c *stmtCachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) == 0 {
		return c.mysqlDriverConn.QueryContext(ctx, query, args)
	}
	rows, err := c.queryPrepared(ctx, query, args)
	if err != nil && needsReprepare(err) {
		// A table changed under the statement (ER_NEED_REPREPARE): it did
		// not run; prepare it again.
		c.stmts.Remove(query)
		rows, err = c.queryPrepared(ctx, query, args)
	}
	return rows, err
}

func (c *stmtCachingConn) queryPrepared(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st, ok := c.stmts.Get(query)
	if !ok {
		var err error
		if st, err = c.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		c.stmts.Add(query, st)
	}
	q, ok := st.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("mysql driver statement cannot run with a context")
	}
	return q.QueryContext(ctx, args)
}

// Close closes the kept statements with the connection (the server frees
// them with the session anyway).
func (c *stmtCachingConn) Close() error {
	c.stmts.Purge()
	return c.mysqlDriverConn.Close()
}

// needsReprepare reports MariaDB's ER_NEED_REPREPARE (1615).
func needsReprepare(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1615
}
