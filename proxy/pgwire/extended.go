package pgwire

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgproto3/v2"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Per-connection bounds of the extended protocol. PostgreSQL has none, but
// every portal here may hold a materialized result.
const (
	maxPreparedStatements = 10000
	maxPortals            = 256
	// maxParams is the most parameters a Bind message can carry.
	maxParams = math.MaxUint16
)

// preparedStatement is a statement created by Parse.
type preparedStatement struct {
	name string
	prep *sqltypes.Prepared
}

// portal is a statement bound to parameter values by Bind. Its result is
// computed by the first Execute and then paged through by row limits.
type portal struct {
	name    string
	stmt    *preparedStatement
	params  []any
	formats []int16 // one per result column; nil when all are text

	started bool             // the first Execute ran the statement
	result  *sqltypes.Result // nil for an empty query string
	tag     string           // command tag, after transaction-status rewriting
	pos     int              // rows sent so far
	done    bool             // a statement without rows completed
}

// describeName names a statement or portal in messages.
func describeName(kind, name string) string {
	if name == "" {
		return "unnamed " + kind
	}
	return kind + " " + strconv.Quote(name)
}

// failExtended reports an error in extended-query mode: the error is sent
// at once and the messages up to the next Sync are discarded, as
// PostgreSQL does.
func (c *conn) failExtended(err error) error {
	c.sendError(err)
	c.ignoreTillSync = true
	return c.flush()
}

// afterExtended flushes when enough output is queued; otherwise output
// waits for Sync or Flush.
func (c *conn) afterExtended() error {
	if len(c.wbuf) >= flushThreshold {
		return c.flush()
	}
	return nil
}

// handleParse creates a prepared statement. The unnamed statement is
// replaced; a named one must be closed before it is defined again.
func (c *conn) handleParse(m *pgproto3.Parse) error {
	var unnamed *preparedStatement // the unnamed statement this one replaces
	if m.Name == "" {
		unnamed = c.stmts[""]
		delete(c.stmts, "")
	} else if _, exists := c.stmts[m.Name]; exists {
		return c.failExtended(sqlerr.New(sqlerr.DuplicatePreparedStmt, "prepared statement %q already exists", m.Name))
	} else if len(c.stmts) >= maxPreparedStatements {
		return c.failExtended(sqlerr.New(sqlerr.ProgramLimitExceeded, "too many prepared statements (at most %d per connection)", maxPreparedStatements).
			WithHint("Close prepared statements that are no longer needed."))
	}
	if e := c.failedTransactionError(m.Query); e != nil {
		return c.failExtended(e)
	}
	if len(m.ParameterOIDs) > maxParams {
		return c.failExtended(sqlerr.New(sqlerr.ProtocolViolation, "too many parameter types: %d", len(m.ParameterOIDs)))
	}
	paramTypes := make([]sqltypes.Type, len(m.ParameterOIDs))
	for i, oid := range m.ParameterOIDs {
		paramTypes[i] = typeForDeclaredOID(oid)
	}
	// Drivers that Parse before every Execute (pgx's exec mode, pgbench
	// -M extended) mostly find the statement memoized: no statement run
	// to set up for it.
	prep, memoized := c.session.PrepareMemoized(m.Query, paramTypes)
	if !memoized {
		qerr, connErr := c.runSession(func(ctx context.Context) error {
			var err error
			prep, err = c.session.Prepare(ctx, m.Query, paramTypes)
			return err
		})
		if connErr != nil {
			return connErr
		}
		if qerr != nil {
			return c.failExtended(qerr)
		}
	}
	switch {
	case prep == nil:
		return c.failExtended(fmt.Errorf("pgwire: Prepare returned neither a statement nor an error"))
	case len(prep.Columns) > maxColumns:
		return c.failExtended(fmt.Errorf("pgwire: prepared statement has %d result columns", len(prep.Columns)))
	case len(prep.Params) > maxParams:
		return c.failExtended(sqlerr.New(sqlerr.ProgramLimitExceeded, "statement has %d parameters; at most %d are supported", len(prep.Params), maxParams))
	}
	if unnamed != nil && unnamed.prep == prep {
		// A driver that Parses the unnamed statement before each
		// execution mostly gets the one it had: kept, not made again.
		c.stmts[""] = unnamed
	} else {
		c.stmts[m.Name] = &preparedStatement{name: m.Name, prep: prep}
	}
	c.send(&pgproto3.ParseComplete{})
	return c.afterExtended()
}

// typeForDeclaredOID maps a parameter type a client declared in Parse.
// OID 0 and unknown (705) leave the type to the statement.
func typeForDeclaredOID(oid uint32) sqltypes.Type {
	if oid == 0 || oid == sqltypes.Unknown.PostgresOID() {
		return sqltypes.Unknown
	}
	return sqltypes.FromPostgresOID(oid)
}

// paramOID is the OID ParameterDescription reports for a parameter type.
// An Unknown type is reported as 0 (unspecified): pgx then encodes any Go
// value in its natural text form (12, 1.5, true, ...), which Unknown takes
// as a string, whereas for text (25) or unknown (705) it can encode only
// strings. node-postgres and psycopg do not read ParameterDescription.
func paramOID(t sqltypes.Type) uint32 {
	if t == sqltypes.Unknown {
		return 0
	}
	return t.PostgresOID()
}

// handleBind creates a portal from a prepared statement and parameter
// values.
func (c *conn) handleBind(m *pgproto3.Bind) error {
	stmt, ok := c.stmts[m.PreparedStatement]
	if !ok {
		return c.failExtended(sqlerr.New(sqlerr.InvalidSQLStatement, "%s does not exist", describeName("prepared statement", m.PreparedStatement)))
	}
	nformats, nparams, want := len(m.ParameterFormatCodes), len(m.Parameters), len(stmt.prep.Params)
	if nformats > 1 && nformats != nparams {
		return c.failExtended(sqlerr.New(sqlerr.ProtocolViolation, "bind message has %d parameter formats but %d parameters", nformats, nparams))
	}
	if nparams != want {
		return c.failExtended(sqlerr.New(sqlerr.ProtocolViolation, "bind message supplies %d parameters, but %s requires %d",
			nparams, describeName("prepared statement", m.PreparedStatement), want))
	}
	if e := c.failedTransactionError(stmt.prep.SQL); e != nil {
		return c.failExtended(e)
	}
	if m.DestinationPortal == "" {
		delete(c.portals, "")
	} else if _, exists := c.portals[m.DestinationPortal]; exists {
		return c.failExtended(sqlerr.New(codeDuplicateCursor, "cursor %q already exists", m.DestinationPortal))
	}
	if len(c.portals) >= maxPortals {
		return c.failExtended(sqlerr.New(sqlerr.ProgramLimitExceeded, "too many open portals (at most %d per connection)", maxPortals).
			WithHint("Close portals that are no longer needed, or end the transaction."))
	}

	params := make([]any, nparams)
	budget := 4 * c.srv.opts.MaxMessageSize // decoded size; see maxNumericDigits
	for i, raw := range m.Parameters {
		format := formatText
		switch {
		case nformats == 1:
			format = m.ParameterFormatCodes[0]
		case nformats > 1:
			format = m.ParameterFormatCodes[i]
		}
		if format != formatText && format != formatBinary {
			return c.failExtended(sqlerr.New(sqlerr.InvalidParameterValue, "unsupported format code: %d", format))
		}
		v, e := decodeParam(stmt.prep.Params[i], format, raw, i+1)
		if e != nil {
			return c.failExtended(e)
		}
		switch v := v.(type) {
		case string:
			budget -= len(v)
		case sqltypes.Decimal:
			budget -= len(v)
		}
		if budget < 0 {
			return c.failExtended(sqlerr.New(sqlerr.ProgramLimitExceeded, "bind parameters too large"))
		}
		params[i] = v
	}

	formats, e := resultFormats(m.ResultFormatCodes, len(stmt.prep.Columns))
	if e != nil {
		return c.failExtended(e)
	}
	c.portals[m.DestinationPortal] = &portal{name: m.DestinationPortal, stmt: stmt, params: params, formats: formats}
	c.send(&pgproto3.BindComplete{})
	return c.afterExtended()
}

// resultFormats expands Bind's result format codes to one per column: none
// means all text, one applies to all columns. nil means all text.
func resultFormats(codes []int16, ncols int) ([]int16, *sqlerr.Error) {
	for _, f := range codes {
		if f != formatText && f != formatBinary {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unsupported format code: %d", f)
		}
	}
	switch {
	case len(codes) == 0 || ncols == 0:
		if len(codes) > 1 {
			return nil, sqlerr.New(sqlerr.ProtocolViolation, "bind message has %d result formats but query has %d columns", len(codes), ncols)
		}
		return nil, nil
	case len(codes) == 1:
		if codes[0] == formatText {
			return nil, nil
		}
		formats := make([]int16, ncols)
		for i := range formats {
			formats[i] = codes[0]
		}
		return formats, nil
	case len(codes) != ncols:
		return nil, sqlerr.New(sqlerr.ProtocolViolation, "bind message has %d result formats but query has %d columns", len(codes), ncols)
	}
	for _, f := range codes {
		if f != formatText {
			return append([]int16(nil), codes...), nil
		}
	}
	return nil, nil
}

// handleDescribe describes a prepared statement (ParameterDescription,
// then RowDescription in text format or NoData) or a portal
// (RowDescription in the portal's result formats, or NoData). Both come
// from the statement's Prepared.Columns, which Execute's rows follow.
func (c *conn) handleDescribe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		stmt, ok := c.stmts[m.Name]
		if !ok {
			return c.failExtended(sqlerr.New(sqlerr.InvalidSQLStatement, "%s does not exist", describeName("prepared statement", m.Name)))
		}
		if e := c.failedTransactionDescribe(stmt); e != nil {
			return c.failExtended(e)
		}
		oids := make([]uint32, len(stmt.prep.Params))
		for i, t := range stmt.prep.Params {
			oids[i] = paramOID(t)
		}
		c.send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
		c.sendRowDescription(stmt.prep.Columns, nil)
	case 'P':
		p, ok := c.portals[m.Name]
		if !ok {
			return c.failExtended(sqlerr.New(sqlerr.InvalidCursorName, "portal %q does not exist", m.Name))
		}
		if e := c.failedTransactionDescribe(p.stmt); e != nil {
			return c.failExtended(e)
		}
		c.sendRowDescription(p.stmt.prep.Columns, p.formats)
	default:
		return c.failExtended(sqlerr.New(sqlerr.ProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType))
	}
	return c.afterExtended()
}

// failedTransactionDescribe is 25P02 for describing a statement with rows
// in a failed transaction block, which PostgreSQL refuses (it would need
// the catalog).
func (c *conn) failedTransactionDescribe(stmt *preparedStatement) *sqlerr.Error {
	if len(stmt.prep.Columns) == 0 {
		return nil
	}
	return c.failedTransactionError(stmt.prep.SQL)
}

func (c *conn) sendRowDescription(cols []sqltypes.Column, formats []int16) {
	if len(cols) == 0 {
		c.send(&pgproto3.NoData{})
		return
	}
	c.wbuf = appendRowDescription(c.wbuf, cols, formats)
}

// handleExecute runs a portal's statement (on its first Execute) and sends
// up to MaxRows of its rows (0: all). A portal with rows left after a
// limited Execute answers PortalSuspended and continues on the next one.
func (c *conn) handleExecute(m *pgproto3.Execute) error {
	p, ok := c.portals[m.Portal]
	if !ok {
		return c.failExtended(sqlerr.New(sqlerr.InvalidCursorName, "portal %q does not exist", m.Portal))
	}
	if e := c.failedTransactionError(p.stmt.prep.SQL); e != nil {
		return c.failExtended(e)
	}
	if !p.started {
		p.started = true
		if err, connErr := c.runPortal(p); connErr != nil || err != nil {
			if connErr != nil {
				return connErr
			}
			// A portal whose statement failed cannot run again.
			if c.portals[p.name] == p {
				delete(c.portals, p.name)
			}
			return c.failExtended(err)
		}
	}
	if p.result == nil {
		c.send(&pgproto3.EmptyQueryResponse{})
		return c.afterExtended()
	}
	cols := p.stmt.prep.Columns
	if len(cols) == 0 {
		if p.done {
			return c.failExtended(sqlerr.New(codeObjectNotInPrerequisite, "portal %q cannot be run", p.name))
		}
		p.done = true
		c.sendCommandComplete(p.tag)
		return c.afterExtended()
	}
	if p.pos == 0 {
		c.sendNotices(p.result.Notices)
	}
	rows, wire := p.result.Rows, p.result.PostgresText
	if wire != nil {
		wire = wire[p.pos:]
	} else {
		rows = rows[p.pos:]
	}
	// PostgreSQL reads the limit as a signed count; 0 or less means all.
	maxRows := int64(int32(m.MaxRows))
	limited := maxRows > 0 && maxRows <= int64(len(rows)+len(wire))
	if limited && wire != nil {
		wire = wire[:maxRows]
	} else if limited {
		rows = rows[:maxRows]
	}
	for _, body := range wire {
		c.wbuf = appendWireRow(c.wbuf, body)
		if len(c.wbuf) >= flushThreshold {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	for _, row := range rows {
		// Cannot fail: runPortal encoded every row once already.
		buf, err := appendDataRowFormats(c.wbuf, cols, p.formats, row)
		if err != nil {
			return c.failExtended(fmt.Errorf("pgwire: encoding a checked row: %w", err))
		}
		c.wbuf = buf
		if len(c.wbuf) >= flushThreshold {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	p.pos += len(rows) + len(wire)
	if limited {
		// Like PostgreSQL, a portal that returned as many rows as asked
		// for is suspended even when none are left.
		c.send(&pgproto3.PortalSuspended{})
	} else {
		c.sendCommandComplete(rowCountTag(p.tag, len(rows)+len(wire)))
	}
	return c.afterExtended()
}

// runPortal executes a portal's statement and checks its result. err is
// for the client; connErr ends the connection.
func (c *conn) runPortal(p *portal) (err, connErr error) {
	var res *sqltypes.Result
	qerr, connErr := c.runSession(func(ctx context.Context) error {
		var err error
		res, err = c.session.ExecutePrepared(ctx, p.stmt.prep, p.params)
		return err
	})
	if connErr != nil || qerr != nil {
		return qerr, connErr
	}
	p.params = nil // no longer needed
	if res == nil {
		return nil, nil // an empty query string
	}
	if res.PostgresText != nil && anyBinary(p.formats) {
		if res, err = decodeWireRows(res); err != nil {
			c.log.Error("pgwire: undecodable wire rows", "err", err)
			return &sqlerr.Error{Code: sqlerr.InternalError, Message: "internal error"}, nil
		}
	}
	if err := checkPortalResult(p, res); err != nil {
		c.log.Error("pgwire: engine returned a result that does not match its description", "err", err)
		return &sqlerr.Error{Code: sqlerr.InternalError, Message: "internal error"}, nil
	}
	p.result = res
	tag := res.Tag
	if tag == "" {
		tag = sqltypes.SelectTag(res.NumRows())
	}
	p.tag = c.txAfterStatement(noNUL(tag))
	return nil, nil
}

// checkPortalResult checks that a result has the columns the statement
// was described with and that every value encodes in its format: drivers
// decode rows with the description they cached, and a bad value must give
// an error before any row is sent.
func checkPortalResult(p *portal, res *sqltypes.Result) error {
	cols := p.stmt.prep.Columns
	if len(res.Columns) != len(cols) {
		return fmt.Errorf("result has %d columns, the statement was described with %d", len(res.Columns), len(cols))
	}
	for i, col := range res.Columns {
		if col.Type != cols[i].Type {
			return fmt.Errorf("result column %d has type %s, the statement was described with %s", i+1, col.Type, cols[i].Type)
		}
	}
	if err := validateResults([]*sqltypes.Result{res}); err != nil {
		return err
	}
	if len(cols) == 0 && res.NumRows() > 0 {
		return fmt.Errorf("result without columns has %d rows", res.NumRows())
	}
	if p.formats == nil {
		return nil
	}
	var scratch []byte
	for j, row := range res.Rows {
		var err error
		if scratch, err = appendDataRowFormats(scratch[:0], cols, p.formats, row); err != nil {
			return fmt.Errorf("row %d: %w", j, err)
		}
	}
	return nil
}

// rowCountTag gives a "SELECT n" tag the number of rows this Execute
// returned, as PostgreSQL does for portals run in several steps.
func rowCountTag(tag string, n int) string {
	if rest, ok := strings.CutPrefix(tag, "SELECT "); ok {
		if _, err := strconv.Atoi(rest); err == nil {
			return sqltypes.SelectTag(n)
		}
	}
	return tag
}

// handleClose closes a prepared statement or portal; closing one that does
// not exist is not an error. Portals of a closed statement live on.
func (c *conn) handleClose(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		delete(c.stmts, m.Name)
	case 'P':
		delete(c.portals, m.Name)
	default:
		return c.failExtended(sqlerr.New(sqlerr.ProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType))
	}
	c.send(&pgproto3.CloseComplete{})
	return c.afterExtended()
}

// handleSync ends an extended-query batch: skipping after an error stops,
// portals go away unless a transaction block is open (they belong to the
// implicit transaction that Sync commits), and ReadyForQuery is sent.
func (c *conn) handleSync() error {
	c.ignoreTillSync = false
	if c.txStatus == txIdle {
		clear(c.portals)
	}
	c.sendReadyForQuery()
	return c.flush()
}
