// Package pgwire is dpproxy's PostgreSQL front end: it speaks the server
// side of the PostgreSQL frontend/backend protocol (version 3.0) so that
// psql, libpq, pgx, pgjdbc and the BI tools built on them can connect to
// dpproxy as if it were a PostgreSQL server.
//
// # Boundary
//
// The package knows nothing about SQL beyond the first keyword of a
// statement in a failed transaction block (see below). It authenticates
// clients against the SCRAM-SHA-256 verifiers that [Sessions] hands out,
// opens one [Session] per connection and passes every simple query string
// to [Session.Execute], and every extended-protocol statement to
// [Session.Prepare] and [Session.ExecutePrepared]. Results come back as
// fully materialized [sqltypes.Result] values; errors that are
// *sqlerr.Error are sent with their SQLSTATE, message, detail, hint and
// position, any other error as XX000 "internal error" (its text may depend
// on protected data and is only logged).
//
// # Protocol coverage
//
//   - Startup: an SSLRequest is answered 'S' and the connection upgraded
//     to TLS when Options.TLS is set (see [LoadTLS]); bytes that arrived
//     after the SSLRequest before the handshake are refused with FATAL
//     08P01 (CVE-2021-23214). Without Options.TLS, and for every
//     GSSENCRequest, the answer is 'N'. CancelRequest closes the
//     connection after cancelling the named connection's query (see
//     below); BackendKeyData is sent because libpq expects it; protocol
//     3.0 is accepted, newer 3.x minor versions and "_pq_." options are
//     answered with NegotiateProtocolVersion, anything else is refused.
//   - Authentication: SCRAM-SHA-256 only, without channel binding (also
//     over TLS: the proxy terminates TLS itself). Unknown users go through
//     the same exchange against a mock verifier and fail at the proof with
//     the same message as a wrong password.
//   - Simple query protocol: Query, with EmptyQueryResponse for strings
//     without statements.
//   - Extended query protocol: Parse, Bind, Describe (statement and
//     portal), Execute (with row limits: PortalSuspended, resumed by the
//     next Execute), Close, Sync and Flush, with named and unnamed
//     statements and portals as in PostgreSQL (the unnamed ones are
//     replaced; named ones must be closed before they are redefined,
//     42P05/42P03; unknown ones give 26000/34000). Parameters are decoded
//     from text or binary per parameter type into the Go values package
//     sqltypes lists; results are sent in the text or binary format Bind
//     asks for, per column. Describe answers from [sqltypes.Prepared]'s
//     Columns, which Execute's rows must follow. Output waits for Sync or
//     Flush (or 32 KiB); after an error, messages are discarded until
//     Sync, which then gets the one ReadyForQuery. Portals hold their
//     statement's whole result and page through it; like PostgreSQL's,
//     they end with their transaction (at Sync outside a transaction
//     block), while prepared statements last until closed.
//   - Transaction status: the engine runs nothing in transactions, but
//     ReadyForQuery reports what PostgreSQL would, from the command tags:
//     BEGIN moves to 'T', COMMIT/ROLLBACK back to 'I', an error inside a
//     block to 'E', where every statement but COMMIT, END, ROLLBACK and
//     ABORT (recognized by their first keyword) gets 25P02 until the
//     block ends; COMMIT of a failed block reports ROLLBACK.
//   - Cancellation and timeouts: a CancelRequest carrying a live
//     connection's process ID and secret cancels the context of that
//     connection's running statement; Options.StatementTimeout ends it
//     after a while. The client gets 57014 unless the engine returns its
//     own *sqlerr.Error, and the connection stays usable.
//   - Text results are formatted as PostgreSQL 15 prints them with the
//     reported settings (DateStyle ISO, TimeZone UTC, extra_float_digits
//     1): see appendText and appendFloat. Binary results and parameters
//     use PostgreSQL's send/recv formats (binary.go, numeric.go).
//
// # Robustness
//
// Every connection runs in its own goroutine with a recover that logs the
// panic and drops only that connection. Message bodies larger than
// Options.MaxMessageSize are refused before any buffer for them is
// allocated, for extended-protocol messages as for the others; decoded
// parameters are bounded too (numerics to 1000 digits on each side of the
// point, a Bind's decoded values to 4 × MaxMessageSize), as are the
// prepared statements and portals per connection. Startup and
// authentication must finish within Options.AuthTimeout; idle sessions
// are closed after Options.IdleTimeout.
// [Server.Shutdown] closes idle sessions at once and lets running queries
// finish and deliver their results before closing their connections.
package pgwire
