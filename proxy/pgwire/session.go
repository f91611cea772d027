package pgwire

import (
	"context"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Sessions creates per-connection sessions and checks credentials.
// Implementations must be safe for concurrent use: every connection calls
// them from its own goroutine.
type Sessions interface {
	// SCRAMVerifier returns the analyst's verifier; ok=false for unknown users.
	SCRAMVerifier(user string) (auth.SCRAMVerifier, bool)
	// Open starts a session for an authenticated user. params are the
	// startup parameters the client sent (user, database, application_name,
	// client_encoding, GUCs such as DateStyle or TimeZone, ...). An
	// *sqlerr.Error is sent to the client as a FATAL error with its code
	// (e.g. 3D000 for an unknown database); any other error as XX000.
	Open(ctx context.Context, user, database string, params map[string]string) (Session, error)
}

// Session is one client connection's conversation with dpproxy. A Session
// is used by one goroutine at a time: its methods are never called
// concurrently with each other or with Close.
type Session interface {
	// Execute runs one SQL string, which may contain zero statements (e.g.
	// "-- ping" or ";"), and returns one Result per statement; an empty slice
	// is answered with EmptyQueryResponse. Errors that are *sqlerr.Error are
	// sent with their Code/Message/Detail/Hint/Position; other errors as
	// XX000 "internal error" — their text is logged, never sent.
	Execute(ctx context.Context, sql string) ([]*sqltypes.Result, error)
	// Prepare checks and describes one statement for the extended query
	// protocol (Parse), without running it on protected data. paramTypes
	// are the types the client declared, possibly fewer than the
	// statement's parameters; Unknown means undeclared. The Prepared's
	// Params fix how many parameter values Bind must supply and how they
	// are decoded; Unknown params are reported to clients as text and
	// decoded as strings. Columns (nil for statements without rows) are
	// sent as the statement's RowDescription. A string with no statement
	// in it ("", "-- ping") must prepare without error.
	Prepare(ctx context.Context, sql string, paramTypes []sqltypes.Type) (*sqltypes.Prepared, error)
	// PrepareMemoized is Prepare for a statement the session has
	// prepared before and kept: it neither blocks nor fails, so Parse
	// needs no statement run around it. ok false: call Prepare.
	PrepareMemoized(sql string, paramTypes []sqltypes.Type) (p *sqltypes.Prepared, ok bool)
	// ExecutePrepared runs a prepared statement with one value per
	// p.Params entry, of the Go types package sqltypes lists (nil for
	// NULL). The Result's Columns must have p.Columns' number and types:
	// clients decode rows with the description they cached. A nil Result
	// without error means the statement string was empty; the client gets
	// EmptyQueryResponse. Errors are treated as for Execute.
	ExecutePrepared(ctx context.Context, p *sqltypes.Prepared, params []any) (*sqltypes.Result, error)
	// Close releases the session. It is called exactly once, when the
	// connection ends.
	Close()
}
