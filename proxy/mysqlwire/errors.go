package mysqlwire

import (
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
)

// MySQL error numbers dpproxy sends.
const (
	ErrAccessDenied         = 1045 // ER_ACCESS_DENIED_ERROR, 28000
	ErrUnknownDB            = 1049 // ER_BAD_DB_ERROR, 42000
	ErrUnknownCom           = 1047 // ER_UNKNOWN_COM_ERROR, 08S01
	ErrBadField             = 1054 // ER_BAD_FIELD_ERROR, 42S22
	ErrNonUniq              = 1052 // ER_NON_UNIQ_ERROR, 23000
	ErrParse                = 1064 // ER_PARSE_ERROR, 42000
	ErrEmptyQuery           = 1065 // ER_EMPTY_QUERY, 42000
	ErrUnknown              = 1105 // ER_UNKNOWN_ERROR, HY000
	ErrNoSuchTable          = 1146 // ER_NO_SUCH_TABLE, 42S02
	ErrNetPacketTooLarge    = 1153 // ER_NET_PACKET_TOO_LARGE, 08S01
	ErrNetPacketsOutOfOrder = 1156 // ER_NET_PACKETS_OUT_OF_ORDER, 08S01
	ErrNetReadInterrupted   = 1159 // ER_NET_READ_INTERRUPTED, 08S01
	ErrTableAccessDenied    = 1142 // ER_TABLEACCESS_DENIED_ERROR, 42000
	ErrWrongArguments       = 1210 // ER_WRONG_ARGUMENTS, HY000
	ErrUserLimitReached     = 1226 // ER_USER_LIMIT_REACHED, 42000
	ErrSpecificAccessDenied = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR, 42000
	ErrNotSupported         = 1235 // ER_NOT_SUPPORTED_YET, 42000
	ErrUnknownStmtHandler   = 1243 // ER_UNKNOWN_STMT_HANDLER, HY000
	ErrWrongValue           = 1525 // ER_WRONG_VALUE, HY000
	ErrQueryInterrupted     = 1317 // ER_QUERY_INTERRUPTED, 70100
	ErrQueryTimeout         = 3024 // ER_QUERY_TIMEOUT, HY000
	ErrReadOnlyTransaction  = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION, 25006
	ErrServerShutdown       = 1053 // ER_SERVER_SHUTDOWN, 08S01
	ErrTooManyConnections   = 1040 // ER_CON_COUNT_ERROR, 08004
	ErrSecureTransport      = 3159 // ER_SECURE_TRANSPORT_REQUIRED, HY000
	ErrTooBigSelect         = 1104 // ER_TOO_BIG_SELECT, 42000
	ErrDivisionByZero       = 1365 // ER_DIVISION_BY_ZERO, 22012
	ErrUnknownSystemVar     = 1193 // ER_UNKNOWN_SYSTEM_VARIABLE, HY000
	ErrWrongTypeForVar      = 1232 // ER_WRONG_TYPE_FOR_VAR, 42000
)

// mysqlError is what an ERR packet carries.
type mysqlError struct {
	Code     uint16
	SQLState string
	Message  string
}

// errorMapping maps dpproxy's SQLSTATEs to a MySQL error number and the
// SQLSTATE MySQL sends with it. The table is documented in doc.go.
var errorMapping = map[sqlerr.Code]struct {
	code  uint16
	state string
}{
	sqlerr.SyntaxError:            {ErrParse, "42000"},
	sqlerr.FeatureNotSupported:    {ErrNotSupported, "42000"},
	sqlerr.InsufficientPrivilege:  {ErrTableAccessDenied, "42000"},
	sqlerr.UndefinedTable:         {ErrNoSuchTable, "42S02"},
	sqlerr.UndefinedColumn:        {ErrBadField, "42S22"},
	sqlerr.AmbiguousColumn:        {ErrNonUniq, "23000"},
	sqlerr.UndefinedFunction:      {ErrParse, "42000"},
	sqlerr.UndefinedObject:        {ErrUnknownSystemVar, "HY000"},
	sqlerr.GroupingError:          {1055, "42000"}, // ER_WRONG_FIELD_WITH_GROUP
	sqlerr.DatatypeMismatch:       {ErrWrongArguments, "HY000"},
	sqlerr.InvalidParameterValue:  {ErrWrongArguments, "HY000"},
	sqlerr.ReadOnlyTransaction:    {ErrReadOnlyTransaction, "25006"},
	sqlerr.InvalidPassword:        {ErrAccessDenied, "28000"},
	sqlerr.InvalidAuthorization:   {ErrAccessDenied, "28000"},
	sqlerr.ProtocolViolation:      {ErrWrongArguments, "HY000"},
	sqlerr.ConnectionFailure:      {2013, "HY000"},
	sqlerr.QueryCanceled:          {ErrQueryInterrupted, "70100"},
	sqlerr.AdminShutdown:          {ErrServerShutdown, "08S01"},
	sqlerr.ProgramLimitExceeded:   {ErrTooBigSelect, "42000"},
	sqlerr.InternalError:          {ErrUnknown, "HY000"},
	sqlerr.BudgetExhausted:        {ErrUserLimitReached, "42000"},
	sqlerr.PrivacyParameterError:  {ErrWrongValue, "HY000"},
	sqlerr.UnsafeQuery:            {ErrSpecificAccessDenied, "42000"},
	sqlerr.BackendUnavailable:     {2003, "HY000"}, // CR_CONN_HOST_ERROR
	sqlerr.LedgerUnavailable:      {ErrUnknown, "HY000"},
	sqlerr.InvalidCatalogName:     {ErrUnknownDB, "42000"},
	sqlerr.TooManyConnections:     {ErrTooManyConnections, "08004"},
	sqlerr.InvalidTextRepresent:   {ErrWrongArguments, "HY000"},
	sqlerr.StatementTooComplex:    {1436, "HY000"}, // ER_STACK_OVERRUN_NEED_MORE
	sqlerr.NullValueNotAllowed:    {1048, "23000"}, // ER_BAD_NULL_ERROR
	sqlerr.DivisionByZero:         {ErrDivisionByZero, "22012"},
	sqlerr.InvalidSQLStatement:    {ErrUnknownStmtHandler, "HY000"},
	sqlerr.DuplicatePreparedStmt:  {ErrUnknownStmtHandler, "HY000"},
	sqlerr.InvalidCursorName:      {ErrUnknownStmtHandler, "HY000"},
	sqlerr.ActiveSQLTransaction:   {ErrNotSupported, "25001"},
	sqlerr.InFailedSQLTransaction: {ErrNotSupported, "25P02"},
}

// toMySQLError maps an engine error. Errors that are not *sqlerr.Error
// become 1105 "internal error" with no detail: their text may depend on
// protected data. The hint, when present, follows the message.
func toMySQLError(err error) mysqlError {
	e := sqlerr.As(err)
	if e.Code == sqlerr.InternalError {
		return mysqlError{Code: ErrUnknown, SQLState: "HY000", Message: "internal error"}
	}
	m, ok := errorMapping[e.Code]
	if !ok {
		m.code, m.state = ErrUnknown, "HY000"
		if len(e.Code) == 5 {
			m.state = string(e.Code)
		}
	}
	msg := e.Message
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Hint != "" {
		msg += "; hint: " + e.Hint
	}
	if e.Position > 0 && e.Code == sqlerr.SyntaxError && !strings.Contains(msg, "position") {
		msg += " (at character " + strconv.Itoa(e.Position) + ")"
	}
	return mysqlError{Code: m.code, SQLState: m.state, Message: msg}
}

// appendErr encodes an ERR packet payload (protocol 4.1).
func appendErr(b []byte, e mysqlError) []byte {
	b = append(b, 0xff, byte(e.Code), byte(e.Code>>8), '#')
	state := e.SQLState
	if len(state) != 5 {
		state = "HY000"
	}
	b = append(b, state...)
	return append(b, e.Message...)
}
