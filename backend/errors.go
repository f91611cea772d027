package backend

import (
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

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
// statements whose failure cannot depend on protected data (public-table
// queries) may show it to a client.
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

// IsStatementError reports whether err is the database refusing a
// statement while preparing it — a syntax, name, type or permission error
// (SQLSTATE class 42; SQLite's prepare errors) — before reading any row:
// an error that depends on the statement's text, not on the data. Errors
// raised while running (class 22 data exceptions, overflows, division by
// zero, timeouts) are not.
func IsStatementError(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "42")
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return strings.HasPrefix(string(myErr.SQLState[:]), "42")
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		msg := liteErr.Error()
		for _, prepare := range []string{"no such column", "no such table", "no such function", "syntax error", "wrong number of arguments", "ambiguous column name"} {
			if strings.Contains(msg, prepare) {
				return true
			}
		}
	}
	return false
}
