// Package mysqlwire is dpproxy's MySQL front end: the server side of the
// MySQL client/server protocol, written from scratch, so that the mysql and
// mariadb CLIs, go-sql-driver, Connector/J, mysql2 and the BI tools built
// on them connect to dpproxy as if it were a MySQL 8 server.
//
// # Boundary
//
// The package knows no SQL. It authenticates clients against the
// verifiers [Sessions] hands out, opens one [Session] per connection and
// passes COM_QUERY strings to [Session.Execute], COM_STMT_PREPARE /
// EXECUTE to [Session.Prepare] / [Session.ExecutePrepared], COM_INIT_DB to
// [Session.UseDatabase] and COM_FIELD_LIST to [Session.FieldList]. The
// session answers MySQL's session and catalog statements (SET NAMES,
// @@variables, SHOW ...) itself: see session/mysql.go.
//
// # Protocol coverage
//
//   - Handshake v10 with 20 bytes of auth data (8 + 12 + NUL). Offered
//     capabilities: PROTOCOL_41 (required from the client), SECURE_CONNECTION,
//     PLUGIN_AUTH, PLUGIN_AUTH_LENENC_CLIENT_DATA, CONNECT_WITH_DB,
//     CONNECT_ATTRS (attributes are ignored), DEPRECATE_EOF, TRANSACTIONS,
//     MULTI_RESULTS / PS_MULTI_RESULTS (one result per command is ever
//     sent), and SSL when Options.TLS is set: an SSLRequest upgrades the
//     connection and the handshake response follows over TLS.
//   - Authentication: mysql_native_password and caching_sha2_password,
//     announced per Options.AuthPlugin (default caching_sha2_password).
//     The client's scramble is checked against the analyst's stored
//     verifier (SHA1(SHA1(pw)) or SHA256(SHA256(pw))). caching_sha2's
//     verifier is exactly its fast-path cache, so the fast path always
//     decides (0x01 0x03 fast-auth-success, then OK): full authentication
//     (0x04, cleartext or RSA) is never requested, and no password ever
//     crosses the wire. When the client used a plugin the analyst has no
//     verifier for, an AuthSwitchRequest with a fresh nonce moves it to one
//     the analyst has (caching_sha2 first). A wrong password and an
//     unknown user both get ERR 1045 (28000) "Access denied for user
//     'u'@'host' (using password: YES)"; unknown users are checked against
//     random verifiers of both kinds. Known limit: an analyst with only one
//     MySQL verifier is asked to switch plugins when the client offers the
//     other one, which an unknown user never is (`dpproxy passwd` prints
//     both verifiers, so policies normally have both).
//   - COM_QUERY with text result sets; COM_STMT_PREPARE (PREPARE_OK with
//     the engine's parameter and column counts, then their definitions),
//     COM_STMT_EXECUTE (NULL bitmap, new-params-bound flag, every MySQL
//     parameter type decoded to the Go values package sqltypes lists; types
//     kept for executions that do not rebind; cursor flags ignored: the
//     whole result is sent), binary result rows for every type the engine
//     returns, COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE, COM_STMT_RESET;
//     COM_INIT_DB, COM_PING, COM_QUIT, COM_FIELD_LIST, COM_STATISTICS (the
//     CLI's `status`), COM_SET_OPTION, COM_RESET_CONNECTION. Other commands
//     get ERR 1047. An empty query gets 1065.
//   - CLIENT_DEPRECATE_EOF both ways: with it, no EOF after column
//     definitions and an OK packet with the 0xFE header ends rows; without
//     it (the mariadb CLI), EOF packets.
//   - Column definitions: numbers, dates and bytes in the binary character
//     set (63) with BINARY and NUM flags; text in utf8mb4_general_ci (45).
//     bool → TINY(1), smallint → SHORT, integer → LONG, bigint → LONGLONG,
//     real → FLOAT, double → DOUBLE, numeric → NEWDECIMAL (decimals 31),
//     date → DATE, timestamp → DATETIME(6), bytea → BLOB, text → VAR_STRING.
//   - Status flags: SERVER_STATUS_AUTOCOMMIT from the session's autocommit
//     variable; SERVER_STATUS_IN_TRANS between BEGIN / START TRANSACTION and
//     COMMIT / ROLLBACK (the engine runs nothing in transactions).
//   - COM_INIT_DB and the database in the handshake accept the database
//     dpproxy serves (session.MySQLDatabase: "demo" for the demo) and
//     information_schema; others get 1049 Unknown database.
//
// # Errors
//
// An *sqlerr.Error is sent with its message (and hint) as:
//
//	SQLSTATE                       MySQL error              SQLSTATE sent
//	42601 syntax error             1064 ER_PARSE_ERROR      42000
//	42P01 undefined table          1146 ER_NO_SUCH_TABLE    42S02
//	42703 undefined column         1054 ER_BAD_FIELD_ERROR  42S22
//	42883 undefined function       1064                     42000
//	42704 undefined object         1193 unknown variable    HY000
//	42803 grouping error           1055                     42000
//	42501 insufficient privilege   1142 access denied       42000
//	42DP1 unsafe query (privacy)   1227 access denied       42000
//	0A000 not supported            1235 ER_NOT_SUPPORTED    42000
//	25006 read-only transaction    1792                     25006
//	53DP1 privacy budget exhausted 1226 ER_USER_LIMIT_REACHED 42000
//	22DP1 ε/δ out of range         1525 ER_WRONG_VALUE      HY000
//	22023, 22P02, 42804, 08P01     1210 ER_WRONG_ARGUMENTS  HY000
//	3D000 unknown database         1049 ER_BAD_DB_ERROR     42000
//	28000, 28P01 authentication    1045 access denied       28000
//	57014 canceled                 1317 interrupted         70100
//	57P01 shutdown                 1053                     08S01
//	26000, 42P05, 34000            1243 unknown statement   HY000
//	08001 backend unavailable      2003                     HY000
//	54000 limit exceeded           1104 ER_TOO_BIG_SELECT   42000
//	53300 too many connections     1040 ER_CON_COUNT_ERROR  08004
//	anything else                  1105 ER_UNKNOWN_ERROR    the SQLSTATE
//
// Errors that are not *sqlerr.Error are sent as 1105 "internal error"
// (their text may depend on protected data and is only logged), except a
// statement timeout (3024) and a cancelled context (1317).
//
// # Robustness
//
// Sequence ids are checked (1156 and close on a mismatch). A logical
// packet longer than Options.MaxPacketSize (default 1 MiB; 16 KiB before
// login) is refused from its header (1153 and close); a packet's buffer
// grows with the bytes received, never from the length announced. With
// Options.RequireTLS a client that does not switch to TLS gets 3159; a
// client over Options.Limits gets 1040 in place of the handshake.
// Malformed handshake responses are refused ("Bad handshake"); malformed
// COM_STMT_EXECUTE packets get 1210 and the connection stays usable.
// Every connection runs in its own goroutine with a recover that logs a
// panic and drops only that connection. Authentication must finish within
// Options.AuthTimeout; idle connections are closed after
// Options.IdleTimeout; each command is bounded by Options.StatementTimeout.
// [Server.Shutdown] closes idle connections at once and lets running
// commands deliver their results first.
package mysqlwire
