package sqltypes

// Prepared is a statement a client prepared (PostgreSQL Parse, MySQL
// COM_STMT_PREPARE) as the wire front ends see it: checked and described
// once by a session, then executed with parameter values any number of
// times by handing it back, unchanged, to the session that prepared it.
type Prepared struct {
	// SQL is the statement as the client sent it.
	SQL string
	// Params has one type per parameter ($1..$n, or each ?): the type the
	// statement's context gives it, or the type the client declared.
	// Unknown means the value is taken as text.
	Params []Type
	// Columns describes the rows the statement returns; nil when it
	// returns none (SET, BEGIN, ...). Executing it returns exactly these.
	Columns []Column
	// Tag is the command tag for statements that return no rows.
	Tag string
	// Empty is set for a statement with no SQL in it (only comments or
	// white space): executing it returns a nil Result.
	Empty bool
	// Handle is the preparing session's own record of how to execute the
	// statement; nothing else reads or changes it.
	Handle any
}
