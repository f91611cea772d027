package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
)

// A statement runs on the driver's connection itself (sql.Conn.Raw), not
// through database/sql's Rows: those start a goroutine per query to watch
// the context and copy every value into a fresh one before the decoders
// copy it again. Here the driver's values are decoded in place (the
// decoders copy what they keep: the driver reuses its buffer row after
// row). The pool, its limits and its bad-connection handling stay
// database/sql's.

// runMySQL runs one statement on conn, in autocommit mode: the session's
// READ ONLY characteristic makes it a read-only transaction of its own.
func runMySQL(ctx context.Context, conn *sql.Conn, read mysqlRowsReader, query string, args []any) (*Rows, error) {
	var res *Rows
	err := conn.Raw(func(dc any) error {
		var err error
		res, err = queryMySQLDriver(ctx, dc, read, query, args)
		return err
	})
	if err != nil {
		if errors.Is(err, driver.ErrBadConn) {
			// The driver's contract: ErrBadConn means the statement was
			// not sent. Raw has already dropped the connection.
			return nil, fmt.Errorf("%w: mysql: %w", ErrUnavailable, err)
		}
		return nil, fmt.Errorf("backend: mysql: %w", err)
	}
	return res, nil
}

// mysqlRowsReader reads the whole result of a statement from the driver:
// readMySQLDriverRows decodes each value, readMySQLTextRows keeps the rows
// in a MySQL client's wire form where it can.
type mysqlRowsReader func(ctx context.Context, rows driver.Rows) (*Rows, error)

// queryMySQLDriver runs query on the driver connection dc and reads the
// whole result with read.
func queryMySQLDriver(ctx context.Context, dc any, read mysqlRowsReader, query string, args []any) (*Rows, error) {
	q, ok := dc.(driver.QueryerContext)
	if !ok {
		return nil, fmt.Errorf("mysql driver connection %T cannot run queries", dc)
	}
	named, err := mysqlNamedArgs(dc, args)
	if err != nil {
		return nil, err
	}
	var socket net.Conn
	if sc, ok := dc.(*stmtCachingConn); ok {
		socket = sc.socket
	}
	return cancelByClosing(ctx, socket, func(ctx context.Context) (*Rows, error) {
		rows, err := q.QueryContext(ctx, query, named)
		if err != nil {
			return nil, err
		}
		res, err := read(ctx, rows)
		if cerr := rows.Close(); err == nil && cerr != nil {
			err = cerr
		}
		return res, err
	})
}

// mysqlNamedArgs converts args to driver values the way database/sql
// would, with the driver's own value checker.
func mysqlNamedArgs(dc any, args []any) ([]driver.NamedValue, error) {
	if len(args) == 0 {
		return nil, nil
	}
	checker, _ := dc.(driver.NamedValueChecker)
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		if checker != nil {
			if err := checker.CheckNamedValue(&named[i]); err == nil {
				continue
			} else if !errors.Is(err, driver.ErrSkip) {
				return nil, fmt.Errorf("argument $%d: %w", i+1, err)
			}
		}
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument $%d: %w", i+1, err)
		}
		named[i].Value = v
	}
	return named, nil
}

// readMySQLDriverRows reads the remaining rows of rows, each value through
// its column's decoder, up to ctx's ResultLimit.
func readMySQLDriverRows(ctx context.Context, rows driver.Rows) (*Rows, error) {
	names := rows.Columns()
	typed, _ := rows.(driver.RowsColumnTypeDatabaseTypeName)
	res := &Rows{Columns: make([]Column, len(names)), Values: [][]any{}}
	decoders := make([]mysqlDecoder, len(names))
	for i, name := range names {
		dbType := ""
		if typed != nil {
			dbType = typed.ColumnTypeDatabaseTypeName(i)
		}
		t, dec := mysqlColumnDecoder(dbType)
		res.Columns[i] = Column{Name: name, Type: t}
		decoders[i] = dec
	}
	meter := resultMeter{limit: resultLimitFrom(ctx)}
	dest := make([]driver.Value, len(names))
	for {
		if err := rows.Next(dest); err != nil {
			if err == io.EOF {
				break
			}
			return nil, err
		}
		row := make([]any, len(dest))
		for j, v := range dest {
			if v != nil {
				row[j] = decoders[j](v)
			}
		}
		if err := meter.add(row); err != nil {
			return nil, err
		}
		res.Values = append(res.Values, row)
	}
	conform(res.Columns, res.Values)
	return res, nil
}
