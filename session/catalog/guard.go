package catalog

import (
	"database/sql"
	"fmt"
	"strings"

	"modernc.org/sqlite"
)

// The guard of clients' statements. Translation writes client text into
// catalog SQL only as escaped strings and identifiers, numbers, a fixed set
// of operators and keywords, and plain function names (plainName); the
// SQLite connections that run clients' statements add three more walls:
//
//   - an authorizer that lets a statement do nothing but SELECT, read the
//     main database and call the allowed functions (no ATTACH, PRAGMA,
//     writes, DDL, transactions; no function outside allowedFunctions, so
//     none that builds large values such as zeroblob or printf);
//   - PRAGMA query_only (in the connection string);
//   - limits on each connection: strings and blobs of at most maxLength
//     bytes (a recursive query doubling a string stops there) and no
//     attached database.
//
// Results are held to MaxRows rows and maxResultBytes bytes (run).

// maxLength bounds any string or blob a catalog statement makes.
const maxLength = 1 << 20

// maxResultBytes bounds a catalog result.
const maxResultBytes = 64 << 20

// SQLite's limit categories (sqlite3_limit).
const (
	limitLength   = 0 // SQLITE_LIMIT_LENGTH
	limitAttached = 7 // SQLITE_LIMIT_ATTACHED
)

// sqliteBuiltins are SQLite's own functions catalog queries may call.
var sqliteBuiltins = []string{
	"abs", "avg", "count", "sum", "total", "min", "max", "group_concat", "string_agg", "coalesce", "ifnull",
	"iif", "if", "nullif", "lower", "upper", "length", "octet_length", "substr", "substring", "trim", "ltrim",
	"rtrim", "replace", "instr", "round", "typeof", "cast", "like", "glob", "regexp", "concat", "concat_ws",
	"json", "json_array", "json_object", "json_extract", "json_each", "json_group_array", "json_group_object",
	"json_array_length", "json_type", "json_valid", "json_quote", "row_number", "rank", "dense_rank",
	"percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value", "last_value", "nth_value", "date",
	"time", "datetime", "julianday", "unixepoch", "strftime", "current_date", "current_time",
	"current_timestamp", "sign", "unicode", "quote", "likely", "unlikely", "likelihood",
}

// guardConnection installs the authorizer on a connection that runs
// clients' statements; allowed holds the lower-case function names.
func guardConnection(conn sqlite.ExecQuerierContext, allowed map[string]bool) error {
	reg, ok := conn.(sqlite.AuthorizerRegisterer)
	if !ok {
		return fmt.Errorf("catalog: the SQLite driver has no authorizer")
	}
	return reg.RegisterAuthorizer(func(action sqlite.AuthorizerActionCode, arg1, arg2, database, _ string) sqlite.AuthorizerReturnCode {
		switch action {
		case sqlite.AuthSelect, sqlite.AuthRecursive:
			return sqlite.AuthorizerOK
		case sqlite.AuthRead:
			if database == "main" || database == "" {
				return sqlite.AuthorizerOK
			}
		case sqlite.AuthFunction:
			if allowed[strings.ToLower(arg2)] {
				return sqlite.AuthorizerOK
			}
		}
		return sqlite.AuthorizerDeny
	})
}

// limitConnection sets the per-connection limits before a statement.
func limitConnection(conn *sql.Conn) error {
	if _, err := sqlite.Limit(conn, limitLength, maxLength); err != nil {
		return err
	}
	_, err := sqlite.Limit(conn, limitAttached, 0)
	return err
}

// registerGuard makes every client connection of drv (those opened with
// the query_only pragma) guarded.
func registerGuard(drv *sqlite.Driver, registered []string) {
	allowed := map[string]bool{}
	for _, n := range append(registered, sqliteBuiltins...) {
		allowed[strings.ToLower(n)] = true
	}
	drv.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, dsn string) error {
		if !strings.Contains(dsn, "query_only") {
			return nil // the connection that builds the catalog
		}
		return guardConnection(conn, allowed)
	})
}
