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
// statement while preparing it — a syntax, name, type or permission error —
// before reading any row: an error that depends on the statement's text,
// not on the data. Only errors the databases raise while parsing and
// resolving names count (statementCodes, statementErrnos, SQLite's prepare
// messages): not a whole SQLSTATE class, since PostgreSQL raises some
// class 42 errors while running (42P22, an indeterminate collation, when
// a row reaches the comparison: found in review). Errors raised while
// running (data exceptions, overflows, timeouts) are not.
func IsStatementError(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return statementCodes[pgErr.Code]
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return statementErrnos[myErr.Number]
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

// statementCodes are PostgreSQL's errors of parse analysis: syntax,
// undefined or ambiguous names, wrong arguments, and permissions (checked
// before the executor reads a row).
var statementCodes = map[string]bool{
	"42601": true, // syntax_error
	"42703": true, // undefined_column
	"42P01": true, // undefined_table
	"42883": true, // undefined_function
	"42702": true, // ambiguous_column
	"42725": true, // ambiguous_function
	"42803": true, // grouping_error
	"42501": true, // insufficient_privilege
}

// statementErrnos are MySQL's and MariaDB's errors of parsing and name
// resolution.
var statementErrnos = map[uint16]bool{
	1064: true, // ER_PARSE_ERROR
	1054: true, // ER_BAD_FIELD_ERROR
	1146: true, // ER_NO_SUCH_TABLE
	1049: true, // ER_BAD_DB_ERROR
	1052: true, // ER_NON_UNIQ_ERROR
	1305: true, // ER_SP_DOES_NOT_EXIST (no such function)
	1582: true, // ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT
	1583: true, // ER_WRONG_PARAMETERS_TO_NATIVE_FCT
	1142: true, // ER_TABLEACCESS_DENIED_ERROR
	1143: true, // ER_COLUMNACCESS_DENIED_ERROR
}
