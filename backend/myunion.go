package backend

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Answering a batch's statements of one shape with one UNION ALL.
//
// A MySQL server costs about as much per statement as it does per row of
// a short lookup: reading the command, parsing, opening the tables,
// writing the result and flushing it to the socket, whichever way the
// statements come (pipelined commands are read in one go but answered
// one flush each). Several combined statements of one shape (the same
// text but for constants outside what they select; rewrite/shape.go)
// are sent as one statement instead:
//
//	SELECT 0 AS dpproxy_branch, dpproxy_b.* FROM (<first>) AS dpproxy_b
//	UNION ALL SELECT 1, dpproxy_b.* FROM (<second>) AS dpproxy_b ...
//
// and each row goes to the statement its branch number names, the bytes
// after the number being the row as the statement alone would send it.
// On the development machine's MariaDB, 8 lookups by key cost the server
// 19 µs each as one UNION ALL against 32 µs as 8 pipelined commands.
//
// Each statement's result must be what it gives alone. The shape sees to
// the types (no constant is selected) and to the order (none is sorted);
// here a statement whose columns share a name (which a derived table
// refuses) is sent on its own, and every column of the union must be an
// integer or a character string (whose text a union or a derived table
// cannot change), named and typed as in the statement's last run alone.
// Anything else, and the statements run again one by one, their shape
// never combined again; after a server error that may be one branch's
// own (a subquery with more than one row for its constant, a statement
// ended on the server) they run again one by one this time only. A
// session with a sql_select_limit of its own sends no union: the limit
// is a whole statement's, all branches together.

// mysqlUnionMax bounds the branches of one UNION ALL.
const mysqlUnionMax = 32

// errUnionFailed tells the caller to run its statement again on its own,
// and not to answer its shape with a UNION ALL again; errUnionRetry only
// to run it again on its own (the union failed with an error that may be
// one branch's alone: a subquery with more rows for its constant, a
// statement ended on the server).
var (
	errUnionFailed = errors.New("mysql: a UNION ALL of the statements did not give each its own result")
	errUnionRetry  = errors.New("mysql: a UNION ALL of the statements failed")
)

// unionStructuralErrors are the server errors that say a shape's UNION
// ALL cannot be made whatever its constants: a name twice in a derived
// table (1060), an option or clause not allowed there (1234, 1221), a
// wrong number of columns (1222), a derived table without its alias
// (1248), a mix of collations (1267, 1270, 1271).
var unionStructuralErrors = map[uint16]bool{1060: true, 1221: true, 1222: true, 1234: true, 1248: true, 1267: true, 1270: true, 1271: true}

// mysqlCommand is one COM_QUERY of a batch: one statement, or several of
// one shape as a UNION ALL, or lookups of one prefix as one statement
// listing their keys (sql set).
type mysqlCommand struct {
	stmts []*combinedStmt
	sql   string
	// keys, for lookups by key answered together, names the statements
	// each key answers (by their index in stmts).
	keys map[string][]int
}

// text is the command's statement.
func (c *mysqlCommand) text() string {
	if c.sql != "" {
		return c.sql
	}
	return c.stmts[0].sql
}

// mysqlCommands turns a batch into its commands: where unions is set,
// the lookups of each prefix (mylookup.go) and the other statements of
// each shape (those with one, up to mysqlUnionMax, and a command of at
// most mysqlCombinedMax bytes) in one command where the first of them
// came; every other statement in one of its own.
func mysqlCommands(batch []*combinedStmt, unions bool) []mysqlCommand {
	// First each statement's command, then the commands' statements, cut
	// from one array.
	of := make([]int, len(batch)) // statement → its command
	sizes := make([]int, 0, len(batch))
	open := map[string]int{} // shape → its command still taking statements
	bytes := map[string]int{}
	for k, s := range batch {
		if !unions || s.shape == "" || s.cols == nil {
			of[k], sizes = len(sizes), append(sizes, 1)
			continue
		}
		// Lookups by key go together by their statement's prefix (its
		// length counted for each: a bound, not the size), other
		// statements by their shape.
		group, grow := s.shape, len(s.sql)+64
		if s.lookup != "" {
			group, grow = "\x00"+s.lookup, len(s.lookup)+len(s.key)+2
		}
		if i, ok := open[group]; ok && sizes[i] < mysqlUnionMax && bytes[group]+grow <= mysqlCombinedMax-5 {
			of[k] = i
			sizes[i]++
			bytes[group] += grow
			continue
		}
		open[group], bytes[group] = len(sizes), grow
		of[k], sizes = len(sizes), append(sizes, 1)
	}
	cmds := make([]mysqlCommand, len(sizes))
	all := make([]*combinedStmt, len(batch))
	for i, n := range sizes {
		cmds[i].stmts, all = all[:0:n], all[n:]
	}
	for k, s := range batch {
		cmds[of[k]].stmts = append(cmds[of[k]].stmts, s)
	}
	for i := range cmds {
		switch c := &cmds[i]; {
		case len(c.stmts) < 2:
		case c.stmts[0].lookup != "":
			c.sql, c.keys = lookupSQL(c.stmts)
		default:
			c.sql = unionSQL(c.stmts)
		}
	}
	return cmds
}

// unionSQL is the UNION ALL answering stmts, branch i the statement
// stmts[i].
func unionSQL(stmts []*combinedStmt) string {
	var b strings.Builder
	n := 0
	for _, s := range stmts {
		n += len(s.sql) + 64
	}
	b.Grow(n)
	for i, s := range stmts {
		if i == 0 {
			b.WriteString("SELECT 0 AS dpproxy_branch, dpproxy_b.* FROM (")
		} else {
			b.WriteString(" UNION ALL SELECT ")
			b.WriteString(strconv.Itoa(i))
			b.WriteString(", dpproxy_b.* FROM (")
		}
		b.WriteString(s.sql)
		b.WriteString(") AS dpproxy_b")
	}
	return b.String()
}

// readMySQLUnionResult reads the result of cmd's UNION ALL, or of its
// lookups' statement (cmd.keys set), from r and sets each statement's
// res, or as every statement's err errUnionFailed when the result cannot
// be split into theirs (see above and mylookup.go) and errUnionRetry when
// the server's error may be one branch's. It reports whether the session
// is as before; an error is the connection's.
func readMySQLUnionResult(r *mysqlPacketReader, cmd *mysqlCommand) (keep bool, err error) {
	stmts := cmd.stmts
	fail := func(err error) {
		for _, s := range stmts {
			s.err = err
		}
	}
	failed := func() { fail(errUnionFailed) }
	serverError := func(p []byte) {
		var me *mysql.MySQLError
		// A lookups' statement has no branch of its own to fail: the
		// server's refusal of its text (1064) is the shape's.
		if errors.As(mysqlErrorPacket(p), &me) && (unionStructuralErrors[me.Number] || cmd.keys != nil && me.Number == 1064) {
			failed()
			return
		}
		fail(errUnionRetry)
	}
	r.start()
	p, err := r.next()
	if err != nil {
		return false, err
	}
	switch p[0] {
	case mysqlOK:
		if okStatus(p)&mysqlMoreResults != 0 {
			return false, errors.New("mysql: more than one result")
		}
		failed()
		return false, nil
	case mysqlERR:
		serverError(p)
		return false, nil
	case mysqlLocalInfile:
		return false, errors.New("mysql: the server asked for a local file")
	}
	cols, p, err := readMySQLColumns(r, p, false)
	if err != nil {
		return false, err
	}
	lookup := cmd.keys != nil
	split := len(cols) > 1 && unionColumnsMatch(cols, stmts, lookup)
	// The branches' results are allocated together and share their row
	// bytes (each row capped at its end): they stay in memory together
	// until the last caller is done with its result, at most
	// mysqlUnionMax results of listen.max_result_bytes each.
	var rows []mysqlResultRows
	var buf []byte
	if split {
		rows = make([]mysqlResultRows, len(stmts))
		layout := newMySQLResultLayout(cols[1:])
		if lookup {
			layout = newMySQLResultLayout(cols[:len(cols)-1])
		}
		for i, s := range stmts {
			rows[i].init(s, layout, &buf)
		}
	}
	for {
		switch {
		case p[0] == mysqlEOF && len(p) < 0xffffff:
			if eofStatus(p)&mysqlMoreResults != 0 {
				return false, errors.New("mysql: more than one result")
			}
			if !split {
				failed()
				return true, nil
			}
			for i, s := range stmts {
				rows[i].finish(s)
			}
			return true, nil
		case p[0] == mysqlERR:
			serverError(p)
			return false, nil
		}
		switch {
		case split && lookup:
			// Every row has a key asked for (IN); one that does not
			// (its text not the key's) leaves the lookups to run alone.
			row, key, ok := lookupRow(p, len(cols))
			to := cmd.keys[key]
			split = ok && len(to) > 0
			for _, i := range to {
				rows[i].add(row)
			}
		case split:
			if branch, rest, ok := unionBranch(p, len(stmts)); ok {
				rows[branch].add(rest)
			} else {
				split = false
			}
		}
		if p, err = r.next(); err != nil {
			return false, err
		}
	}
}

// unionColumnsMatch reports whether a union's columns (its branch number
// first), or a lookups' statement's (its key last), can be split into
// each statement's result: every other column named and typed as when the
// statement last ran alone (s.cols), and in a union an integer or a
// character string, whose text a union or a derived table cannot change
// (a lookups' statement selects the lookup's own columns of its own
// table: their text is what the lookup alone gets).
func unionColumnsMatch(cols []mysqlColumn, stmts []*combinedStmt, lookup bool) bool {
	rest := cols[1:]
	if lookup {
		if rest = cols[:len(cols)-1]; !lookupKeyColumn(cols[len(cols)-1]) {
			return false
		}
	} else if t, _ := mysqlColumnDecoder(cols[0].typeName); !t.Integer() {
		return false
	}
	for _, c := range rest {
		t, safe := mysqlWireType(c.typeName)
		if !lookup && (!safe || c.zerofill || !(t.Integer() || c.typeName == "CHAR" || c.typeName == "VARCHAR" || strings.HasSuffix(c.typeName, "TEXT"))) {
			return false
		}
	}
	for _, s := range stmts {
		if len(s.cols) != len(rest) {
			return false
		}
		for i, c := range rest {
			t, _ := mysqlColumnDecoder(c.typeName)
			if a := s.cols[i]; a.Name != c.name || (a.Type != t && !(a.Type.Integer() && t.Integer())) {
				return false
			}
		}
	}
	return true
}

// unionBranch splits a union's row into its branch number (below n) and
// the rest, the row of that branch's statement.
func unionBranch(p []byte, n int) (branch int, rest []byte, ok bool) {
	size, used, ok := lenEncInt(p)
	if !ok || size == 0 || size > 4 || uint64(len(p)-used) < size {
		return 0, nil, false
	}
	branch, err := strconv.Atoi(string(p[used : used+int(size)]))
	if err != nil || branch < 0 || branch >= n {
		return 0, nil, false
	}
	return branch, p[used+int(size):], true
}

// unionableColumns reports whether a statement whose last run alone gave
// cols may be a branch: a derived table must name its columns apart,
// whatever their case. It runs for every combined statement, so it
// compares the few names pairwise rather than build a set.
func unionableColumns(cols []Column) bool {
	if cols == nil {
		return false
	}
	for i, c := range cols {
		for _, d := range cols[:i] {
			if strings.EqualFold(c.Name, d.Name) {
				return false
			}
		}
	}
	return true
}

// mysqlFullSelectLimit is sql_select_limit's default: no limit.
const mysqlFullSelectLimit = "18446744073709551615"

// unionsAllowed reports whether a connection's session answers a UNION
// ALL's branches as it answers the statements alone: sql_select_limit
// limits the rows of a whole statement, which in a union is every branch
// together, so a session with a limit of its own (set in the DSN or the
// server's configuration) never gets one.
func unionsAllowed(ctx context.Context, conn *sql.Conn) bool {
	var limit string
	if err := conn.QueryRowContext(ctx, "SELECT @@sql_select_limit").Scan(&limit); err != nil {
		return false
	}
	return limit == mysqlFullSelectLimit
}
