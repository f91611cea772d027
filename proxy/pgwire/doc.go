// Package pgwire is dpproxy's PostgreSQL front end: it speaks the server
// side of the PostgreSQL frontend/backend protocol (version 3.0) so that
// psql, libpq, pgx, pgjdbc and the BI tools built on them can connect to
// dpproxy as if it were a PostgreSQL server.
//
// # Boundary
//
// The package knows nothing about SQL. It authenticates clients against the
// SCRAM-SHA-256 verifiers that [Sessions] hands out, opens one [Session] per
// connection and passes every query string to [Session.Execute]. Results come
// back as fully materialized [engine.Result] values and are sent in text
// format; errors that are *sqlerr.Error are sent with their SQLSTATE, message,
// detail, hint and position, any other error as XX000 "internal error" (its
// text may depend on protected data and is only logged).
//
// # Protocol coverage
//
//   - Startup: SSLRequest and GSSENCRequest are answered 'N' (no TLS yet);
//     CancelRequest closes the connection (query cancellation comes later,
//     but BackendKeyData is sent because libpq expects it); protocol 3.0 is
//     accepted, newer 3.x minor versions and "_pq_." options are answered
//     with NegotiateProtocolVersion, anything else is refused.
//   - Authentication: SCRAM-SHA-256 only, without channel binding. Unknown
//     users go through the same exchange against a mock verifier and fail
//     at the proof with the same message as a wrong password.
//   - Queries: the simple query protocol. The extended protocol (Parse,
//     Bind, ...) is answered with 0A000 and the messages up to the next Sync
//     are skipped, the way PostgreSQL recovers from errors in extended mode.
//     Its handlers are meant to slot into the per-message switch of the
//     connection (conn.handleMessage), next to the ignore-till-Sync state.
//   - Cancellation: a CancelRequest carrying a live connection's process ID
//     and secret cancels the context of that connection's running query;
//     the client gets 57014 unless the engine returns its own *sqlerr.Error.
//   - Results are sent in text format, formatted as PostgreSQL 15 prints
//     them with the reported settings (DateStyle ISO, TimeZone UTC,
//     extra_float_digits 1): see appendText and appendFloat.
//
// # Robustness
//
// Every connection runs in its own goroutine with a recover that logs the
// panic and drops only that connection. Message bodies larger than
// Options.MaxMessageSize are refused before any buffer for them is
// allocated. Startup and authentication must finish within
// Options.AuthTimeout; idle sessions are closed after Options.IdleTimeout.
// [Server.Shutdown] closes idle sessions at once and lets running queries
// finish and deliver their results before closing their connections.
package pgwire
