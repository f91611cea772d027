package pgwire

import (
	"strings"

	"github.com/jackc/pgproto3/v2"

	"github.com/dpproxy/dpproxy/sqlerr"
)

// Transaction status in ReadyForQuery.
const (
	txIdle    = 'I' // not in a transaction block
	txInBlock = 'T' // in a transaction block
	txFailed  = 'E' // in a failed transaction block: only ROLLBACK/COMMIT run
)

// txAfterStatement moves the transaction status for a statement that
// completed with tag and returns the tag to send. The engine runs nothing
// in transactions (it is read-only); the status only tells clients what
// PostgreSQL would: BEGIN opens a block, COMMIT and ROLLBACK end it (COMMIT
// of a failed block reports ROLLBACK, which is how pgx and libpq-based
// drivers learn that the commit failed), with PostgreSQL's warnings for
// BEGIN inside a block and COMMIT/ROLLBACK outside one. Ending a block
// closes its portals.
func (c *conn) txAfterStatement(tag string) string {
	switch strings.ToUpper(tag) {
	case "BEGIN", "START TRANSACTION":
		if c.txStatus != txIdle {
			c.sendWarning(sqlerr.ActiveSQLTransaction, "there is already a transaction in progress")
			return tag
		}
		c.txStatus = txInBlock
	case "COMMIT", "ROLLBACK":
		switch c.txStatus {
		case txIdle:
			c.sendWarning(codeNoActiveSQLTransaction, "there is no transaction in progress")
			return tag
		case txFailed:
			tag = "ROLLBACK"
		}
		c.txStatus = txIdle
		clear(c.portals)
	}
	return tag
}

// sendWarning queues a NoticeResponse of severity WARNING.
func (c *conn) sendWarning(code sqlerr.Code, msg string) {
	n := pgproto3.NoticeResponse(*errorResponse("WARNING", &sqlerr.Error{Code: code, Message: msg}))
	c.send(&n)
}

// failedTransactionError is 25P02 when the session is in a failed
// transaction block and sql is neither empty nor a statement that ends
// the block (COMMIT, END, ROLLBACK, ABORT), which PostgreSQL decides from
// the statement's first keyword too.
func (c *conn) failedTransactionError(sql string) *sqlerr.Error {
	if c.txStatus != txFailed {
		return nil
	}
	word, empty := firstKeyword(sql)
	switch {
	case empty, word == "COMMIT", word == "END", word == "ROLLBACK", word == "ABORT":
		return nil
	}
	return sqlerr.New(sqlerr.InFailedSQLTransaction, "current transaction is aborted, commands ignored until end of transaction block")
}

// firstKeyword returns the first word of sql in upper case, skipping white
// space, comments (-- and nested /* */) and semicolons. empty means sql
// holds no statement at all; word is "" when it starts with something
// other than a letter.
func firstKeyword(sql string) (word string, empty bool) {
	i := 0
	for i < len(sql) {
		switch c := sql[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == ';':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				return "", true
			}
			i += end + 1
		case strings.HasPrefix(sql[i:], "/*"):
			depth := 0
			for i < len(sql) {
				if strings.HasPrefix(sql[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(sql[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			if depth > 0 {
				return "", true // an unterminated comment: the engine reports it
			}
		default:
			start := i
			for i < len(sql) && (isLetter(sql[i]) || sql[i] == '_') {
				i++
			}
			return strings.ToUpper(sql[start:i]), false
		}
	}
	return "", true
}
