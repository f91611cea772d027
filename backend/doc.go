// Package backend runs dpproxy's rewritten, read-only SQL on the database
// that holds the protected data and returns fully materialized results.
// Every statement dpproxy runs on a database goes through this package:
// the engine's bounded SQL of DP plans and public-table queries, and, once
// at start, the description of the policy's tables (DescribeTable) for
// the virtual catalog. A client's text never reaches a database. The
// package knows nothing above it: of
// dpproxy, only the policy's types (config) and the result types
// (sqltypes).
//
// Three things hold for every implementation:
//
//   - Connections never write. PostgreSQL connections open with
//     default_transaction_read_only = on, so each statement is a read-only
//     transaction of its own. SQLite files are opened with mode=ro and PRAGMA
//     query_only, and an authorizer refuses every action but reading (no
//     ATTACH, no writes, no setting pragmas). MySQL and MariaDB sessions are
//     set to READ ONLY transactions and statements run alone in autocommit
//     mode; a connection on which a statement returned no result set (SET,
//     ...) or failed is discarded. SELECT … INTO OUTFILE is not stopped by
//     that, so dpproxy's MySQL account must not hold the FILE privilege
//     (and dpproxy never emits INTO).
//   - Result values are normalized to the Go types listed in package
//     sqltypes (nil, int64, float64, string, bool, time.Time,
//     sqltypes.Decimal) and every non-nil value in a column has the Go type
//     its column's sqltypes.Type calls for. A column whose values do not fit
//     the reported database type is reported as Text, with every value in
//     text form.
//   - Failures that happen before a statement reached the database (no
//     connection could be had) wrap ErrUnavailable; only those may refund a
//     privacy charge.
//   - A statement whose context ends returns the context's error at once,
//     and is ended on the database (a pipelined batch, combine.go, once
//     every statement in it has been given up). On MySQL and MariaDB the backend closes the
//     connection's socket itself (mysqlcancel.go) rather than hand every
//     statement's context to go-sql-driver's watcher goroutine.
package backend
