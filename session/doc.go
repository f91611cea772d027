// Package session is a connection's conversation with its client: one
// Session per connection, whatever the wire protocol, holds what the
// client set and answers every statement it sends. Queries on protected
// data are analyzed here (package rewrite) and released by the engine's
// budgeted release (engine.Engine.Answer), so an analyst has one budget
// whatever the protocol; everything else a client asks is answered by the
// session itself, or passed through at no cost:
//
//   - settings: SET/RESET/SHOW dpproxy.epsilon, the ε of the session's next
//     queries, recognized before parsing (settings.go), and PostgreSQL's
//     run-time parameters (GUCs), of which each session keeps its own copy
//     (guc.go);
//   - local answers: SELECTs without FROM over version(),
//     current_setting(), session_user, constants and casts, and probes
//     that return no rows whatever the data (local.go);
//   - EXPLAIN DP <query>: how the query would be answered, refused exactly
//     as the query would be (session.go);
//   - the virtual schema dpproxy: the read-only views dpproxy.budget and
//     dpproxy.queries, the analyst's own budget and charges (virtual.go);
//   - the virtual catalog: catalog queries (pg_catalog, information_schema,
//     SHOW) and statements without a table are answered in process from
//     the policy (catalog.go routes them; package catalog answers them);
//     nothing a client writes reaches the backend unless it was analyzed
//     as a DP or public-table query;
//   - cursors: DECLARE/FETCH/MOVE/CLOSE over answered queries (cursor.go);
//   - prepared statements (PostgreSQL Parse/Bind, MySQL COM_STMT_PREPARE):
//     checked and described once without charging, each execution bound
//     into a fresh syntax tree and released like a query written with
//     constants (prepared.go);
//   - transactions: BEGIN, COMMIT and ROLLBACK are accepted and only end
//     cursors declared without HOLD, since every statement is read-only;
//   - MySQL session emulation: session and user variables, USE and SHOW
//     (mysql.go).
//
// A DP query's plan comes from the session's plan memo when its text was
// seen under the same settings (planmemo.go), or from its shape's
// template when only the integers its WHERE compares columns with changed
// (templates.go); otherwise the text is parsed and analyzed.
//
// A Session is used by one goroutine at a time; sessions of one Server
// (server.go) share its engine, with its memos of analyzed public-table
// queries and of each analyst's plan templates, and its catalog.
package session
