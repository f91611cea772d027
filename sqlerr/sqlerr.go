package sqlerr

import (
	"errors"
	"fmt"
)

// Code is a five-character SQLSTATE.
type Code string

// Class is the code's first two characters, its SQLSTATE class.
func (c Code) Class() string {
	if len(c) < 2 {
		return string(c)
	}
	return string(c[:2])
}

// The SQLSTATEs dpproxy uses. Values follow PostgreSQL's errcodes table.
const (
	SuccessfulCompletion   Code = "00000"
	SyntaxError            Code = "42601"
	FeatureNotSupported    Code = "0A000"
	InsufficientPrivilege  Code = "42501"
	UndefinedTable         Code = "42P01"
	UndefinedColumn        Code = "42703"
	AmbiguousColumn        Code = "42702"
	UndefinedFunction      Code = "42883"
	UndefinedObject        Code = "42704"
	GroupingError          Code = "42803"
	DatatypeMismatch       Code = "42804"
	InvalidParameterValue  Code = "22023"
	ReadOnlyTransaction    Code = "25006"
	InvalidPassword        Code = "28P01"
	InvalidAuthorization   Code = "28000"
	ProtocolViolation      Code = "08P01"
	ConnectionFailure      Code = "08006"
	QueryCanceled          Code = "57014"
	AdminShutdown          Code = "57P01"
	ProgramLimitExceeded   Code = "54000"
	InternalError          Code = "XX000"
	BudgetExhausted        Code = "53DP1" // class 53 (insufficient resources), dpproxy-specific subclass
	PrivacyParameterError  Code = "22DP1" // class 22 (data exception): ε/δ out of range
	UnsafeQuery            Code = "42DP1" // class 42: construct rejected to protect privacy
	BackendUnavailable     Code = "08001"
	LedgerUnavailable      Code = "58DP1" // class 58 (system error): the budget ledger cannot be reached
	InvalidCatalogName     Code = "3D000"
	TooManyConnections     Code = "53300"
	InvalidTextRepresent   Code = "22P02"
	StatementTooComplex    Code = "54001"
	NullValueNotAllowed    Code = "22004"
	DivisionByZero         Code = "22012"
	InvalidSQLStatement    Code = "26000"
	DuplicatePreparedStmt  Code = "42P05"
	InvalidCursorName      Code = "34000"
	DuplicateCursor        Code = "42P03"
	NoActiveSQLTransaction Code = "25P01"
	ActiveSQLTransaction   Code = "25001"
	InFailedSQLTransaction Code = "25P02"
)

// Error is a client-facing error. Message says what went wrong; Hint says
// what is allowed instead. Position is the 1-based character offset in the
// query text, 0 when unknown.
type Error struct {
	Code     Code
	Message  string
	Detail   string
	Hint     string
	Position int
	// Err is an optional cause, for logs only: it is never sent to clients.
	Err error
}

func (e *Error) Error() string {
	s := e.Message
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithHint returns e with its hint set.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// WithDetail returns e with its detail set.
func (e *Error) WithDetail(format string, args ...any) *Error {
	e.Detail = fmt.Sprintf(format, args...)
	return e
}

// As extracts an *Error from err's chain. Errors that are not *Error become
// an internal error whose message does not reveal the cause: causes may
// depend on protected data (a backend error, say) and must not reach clients.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: InternalError, Message: "internal error", Err: err}
}
