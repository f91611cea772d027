package mysqlwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// dispatch runs one command. quit is true for COM_QUIT; an error ends the
// connection.
func (c *conn) dispatch(pkt []byte) (quit bool, err error) {
	if len(pkt) == 0 {
		c.writeErr(mysqlError{ErrUnknownCom, "08S01", "Unknown command"})
		return false, nil
	}
	body := pkt[1:]
	switch pkt[0] {
	case comQuit:
		return true, nil
	case comPing:
		c.writeOK(0, "")
	case comQuery:
		c.srv.queries.Add(1)
		c.query(string(body))
	case comInitDB:
		if err := c.session.UseDatabase(string(body)); err != nil {
			c.writeErr(c.clientError(err))
		} else {
			c.writeOK(0, "")
		}
	case comFieldList:
		c.fieldList(body)
	case comStatistics:
		c.writePacket([]byte(fmt.Sprintf("Uptime: %d  Threads: %d  Questions: %d  Slow queries: 0  Opens: 0  Open tables: 0  Queries per second avg: 0.000",
			int(time.Since(c.srv.started).Seconds()), c.srv.ns.Len(), c.srv.queries.Load())))
	case comSetOption:
		if len(body) != 2 || binary.LittleEndian.Uint16(body) > 1 {
			c.writeErr(mysqlError{ErrUnknownCom, "08S01", "Unknown command"})
		} else {
			c.writeEOF()
		}
	case comResetConnection:
		c.stmts = make(map[uint32]*statement)
		c.inTx = false
		c.writeOK(0, "")
	case comStmtPrepare:
		c.srv.queries.Add(1)
		c.stmtPrepare(string(body))
	case comStmtExecute:
		c.srv.queries.Add(1)
		return false, c.stmtExecute(body)
	case comStmtSendLongData:
		c.stmtSendLongData(body) // no response
	case comStmtClose:
		if len(body) >= 4 {
			delete(c.stmts, binary.LittleEndian.Uint32(body))
		} // no response
	case comStmtReset:
		st := c.lookupStmt(body, "mysqld_stmt_reset")
		if st != nil {
			st.longData = nil
			c.writeOK(0, "")
		}
	default:
		c.writeErr(mysqlError{ErrUnknownCom, "08S01", "Unknown command"})
	}
	return false, nil
}

// commandContext bounds one command by the statement timeout, sending its
// result included (see conn.sendDeadline). The connection's statement
// timer ends it, with netserver.ErrStatementTimeout as its cause.
// endCommand marks its end, once its result is sent.
func (c *conn) commandContext() context.Context {
	if c.cmdCtx == nil || c.cmdCtx.Err() != nil {
		c.cmdCtx, c.cmdCancel = context.WithCancelCause(c.ctx)
	}
	c.command = c.cmdCtx
	if t := c.srv.opts.StatementTimeout; t > 0 {
		now := time.Now()
		c.sendDeadline = now.Add(t + errorWriteTimeout)
		c.stmtTimer.Start(now.Add(t), c.cmdCancel)
	}
	return c.cmdCtx
}

// endCommand marks the running command's end (commandContext): from then
// on the statement timer no longer reaches its context.
func (c *conn) endCommand() {
	c.stmtTimer.Stop() // without a statement timeout, nothing was started: a no-op
	c.command = nil
}

// query runs COM_QUERY and writes its results as text result sets.
func (c *conn) query(sql string) {
	ctx := c.commandContext()
	defer c.endCommand()
	results, err := c.session.Execute(ctx, sql)
	if err != nil {
		c.writeErr(c.clientError(err))
		return
	}
	if len(results) == 0 {
		c.writeErr(mysqlError{ErrEmptyQuery, "42000", "Query was empty"})
		return
	}
	// The engine refuses several statements in one string, so there is one
	// result; only the first is sent should that change.
	if err := c.writeResult(results[0], nil); err != nil {
		c.writeErr(c.clientError(err))
	}
}

// writeResult writes a result set (text protocol when binCols is nil,
// binary protocol with these columns otherwise), or an OK packet for a
// statement without rows.
func (c *conn) writeResult(res *sqltypes.Result, binCols []sqltypes.Column) error {
	c.warnings = 0
	if res != nil {
		// A DP answer's notices (its intervals, on request) are warnings:
		// the count goes in the final OK or EOF, SHOW WARNINGS lists them.
		c.warnings = uint16(min(len(res.Notices), math.MaxUint16))
	}
	defer func() { c.warnings = 0 }()
	if res == nil || len(res.Columns) == 0 {
		affected := uint64(0)
		if res != nil {
			c.trackTransaction(res.Tag)
		}
		c.writeOK(affected, "")
		return nil
	}
	cols := res.Columns
	if binCols != nil {
		cols = binCols
	}
	if res.MySQLText != nil {
		// Rows already in text-protocol form (a public table's, from the
		// backend): each is a row packet's payload as it is.
		if binCols != nil || res.PostgresText != nil {
			return errors.New("mysqlwire: rows in text form for a binary-protocol result")
		}
		c.writeColumns(cols)
		for _, payload := range res.MySQLText {
			c.writePacket(payload)
			if len(c.wbuf) >= flushThreshold {
				if err := c.flush(); err != nil {
					return err
				}
			}
		}
		c.writeEOF()
		return nil
	}
	if res.PostgresText != nil {
		return errors.New("mysqlwire: rows in PostgreSQL's wire form")
	}
	// Encode every row before writing anything, so that an encoding error
	// can still be sent as an ERR packet.
	start, startSeq := len(c.wbuf), c.seq
	flushed := false // part of the result is on its way: an error follows the rows sent
	c.writeColumns(cols)
	row := c.payload[:0]
	defer func() { c.payload = keepPayload(row) }()
	for _, r := range res.Rows {
		row = row[:0]
		if binCols != nil {
			var err error
			if row, err = appendBinaryRow(row, r, cols); err != nil {
				if !flushed {
					c.wbuf, c.seq = c.wbuf[:start], startSeq
				}
				return fmt.Errorf("mysqlwire: encoding a binary row: %w", err)
			}
		} else {
			for i, col := range cols {
				var v any
				if i < len(r) {
					v = r[i]
				}
				row = appendTextValue(row, v, col.Type)
			}
		}
		c.writePacket(row)
		if len(c.wbuf) >= flushThreshold {
			// Each flush gets its own write_timeout: a client reading a
			// large result steadily is not cut off (the statement's send
			// deadline still bounds the whole).
			if err := c.flush(); err != nil {
				return err
			}
			flushed = true
		}
	}
	c.writeEOF()
	return nil
}

// keepPayload is the payload buffer to keep for the next packets: a large
// row's is let go, as the write buffer is (maxRetainedWriteBuf).
func keepPayload(b []byte) []byte {
	if cap(b) > maxRetainedWriteBuf {
		return nil
	}
	return b[:0]
}

// flushThreshold is how much of a result is buffered before it is written.
const flushThreshold = 32 << 10

// writeColumns writes the column count, the definitions and (without
// CLIENT_DEPRECATE_EOF) the EOF after them.
func (c *conn) writeColumns(cols []sqltypes.Column) {
	c.payload = appendLenEncInt(c.payload[:0], uint64(len(cols)))
	c.writePacket(c.payload)
	c.writeColumnDefs(cols)
}

func (c *conn) writeColumnDefs(cols []sqltypes.Column) {
	for _, col := range cols {
		c.payload = appendColumnDef(c.payload[:0], "", "", col, false)
		c.writePacket(c.payload)
	}
	if c.caps&clientDeprecateEOF == 0 {
		c.writeEOFPacket()
	}
}

// trackTransaction follows BEGIN / COMMIT / ROLLBACK for the in-transaction
// status flag (the engine itself runs nothing in transactions).
func (c *conn) trackTransaction(tag string) {
	switch tag {
	case "BEGIN":
		c.inTx = true
	case "COMMIT", "ROLLBACK":
		c.inTx = false
	}
}

// fieldList answers COM_FIELD_LIST: the table's column definitions then
// an EOF.
func (c *conn) fieldList(body []byte) {
	table, _, _ := strings.Cut(string(body), "\x00")
	ctx := c.commandContext()
	defer c.endCommand()
	cols, err := c.session.FieldList(ctx, table)
	if err != nil {
		c.writeErr(c.clientError(err))
		return
	}
	for _, col := range cols {
		c.writePacket(appendColumnDef(nil, "", table, col, true))
	}
	c.writeEOF()
}

// statement is a prepared statement of the connection.
type statement struct {
	id uint32
	p  *sqltypes.Prepared
	// types are the parameter types (type byte, flags byte) the client
	// last bound; nil before the first execution.
	types []uint16
	// longData holds COM_STMT_SEND_LONG_DATA chunks by parameter.
	longData map[int][]byte
}

func (c *conn) stmtPrepare(sql string) {
	if len(c.stmts) >= c.srv.opts.MaxStatements {
		c.writeErr(mysqlError{1461, "42000", fmt.Sprintf("Can't create more than max_prepared_stmt_count statements (current value: %d)", c.srv.opts.MaxStatements)})
		return
	}
	ctx := c.commandContext()
	defer c.endCommand()
	p, err := c.session.Prepare(ctx, sql, nil)
	if err != nil {
		c.writeErr(c.clientError(err))
		return
	}
	if p.Empty {
		c.writeErr(mysqlError{ErrEmptyQuery, "42000", "Query was empty"})
		return
	}
	if len(p.Params) > math.MaxUint16 || len(p.Columns) > math.MaxUint16 {
		c.writeErr(mysqlError{ErrNotSupported, "42000", "too many parameters or columns"})
		return
	}
	c.nextID++
	st := &statement{id: c.nextID, p: p}
	c.stmts[st.id] = st
	out := []byte{0x00}
	out = binary.LittleEndian.AppendUint32(out, st.id)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(p.Columns)))
	out = binary.LittleEndian.AppendUint16(out, uint16(len(p.Params)))
	out = append(out, 0, 0, 0) // filler, warnings
	c.writePacket(out)
	if len(p.Params) > 0 {
		params := make([]sqltypes.Column, len(p.Params))
		for i, t := range p.Params {
			params[i] = sqltypes.Column{Name: "?", Type: t}
		}
		c.writeColumnDefs(params)
	}
	if len(p.Columns) > 0 {
		c.writeColumnDefs(p.Columns)
	}
}

// lookupStmt finds the statement whose id starts body, or writes ERR 1243.
func (c *conn) lookupStmt(body []byte, command string) *statement {
	if len(body) < 4 {
		c.writeErr(mysqlError{ErrWrongArguments, "HY000", "Incorrect arguments to " + command})
		return nil
	}
	id := binary.LittleEndian.Uint32(body)
	st := c.stmts[id]
	if st == nil {
		c.writeErr(mysqlError{ErrUnknownStmtHandler, "HY000", fmt.Sprintf("Unknown prepared statement handler (%d) given to %s", id, command)})
	}
	return st
}

func (c *conn) stmtSendLongData(body []byte) {
	if len(body) < 6 {
		return
	}
	st := c.stmts[binary.LittleEndian.Uint32(body)]
	param := int(binary.LittleEndian.Uint16(body[4:]))
	if st == nil || param >= len(st.p.Params) {
		return // MySQL reports this at the next execute; dpproxy ignores it
	}
	if st.longData == nil {
		st.longData = map[int][]byte{}
	}
	total := 0
	for _, d := range st.longData {
		total += len(d)
	}
	if total+len(body)-6 > c.srv.opts.MaxPacketSize {
		return
	}
	st.longData[param] = append(st.longData[param], body[6:]...)
}

// stmtExecute runs COM_STMT_EXECUTE and writes a binary result set.
func (c *conn) stmtExecute(body []byte) error {
	st := c.lookupStmt(body, "mysqld_stmt_execute")
	if st == nil {
		return nil
	}
	params, err := c.decodeParams(st, body[4:])
	st.longData = nil
	if err != nil {
		c.writeErr(mysqlError{ErrWrongArguments, "HY000", "Incorrect arguments to mysqld_stmt_execute: " + err.Error()})
		return nil
	}
	ctx := c.commandContext()
	defer c.endCommand()
	res, err := c.session.ExecutePrepared(ctx, st.p, params)
	if err != nil {
		c.writeErr(c.clientError(err))
		return nil
	}
	cols := st.p.Columns
	if res != nil && len(res.Columns) > 0 && len(res.Columns) != len(cols) {
		cols = res.Columns
	}
	if err := c.writeResult(res, cols); err != nil {
		c.writeErr(c.clientError(err))
	}
	return nil
}

// decodeParams reads the parameter part of COM_STMT_EXECUTE (after the
// statement id): flags, iteration count, NULL bitmap, new-params-bound
// flag, types and values.
func (c *conn) decodeParams(st *statement, b []byte) ([]any, error) {
	d := &decoder{b: b}
	d.uint8()  // flags (cursor type): results are always sent at once
	d.uint32() // iteration count, always 1
	n := len(st.p.Params)
	if d.err != nil {
		return nil, errMalformed
	}
	if n == 0 {
		return nil, nil
	}
	nulls := d.bytes((n + 7) / 8)
	bound := d.uint8()
	if d.err != nil {
		return nil, errMalformed
	}
	if bound == 1 {
		types := make([]uint16, n)
		for i := range types {
			types[i] = d.uint16()
		}
		if d.err != nil {
			return nil, errMalformed
		}
		st.types = types
	} else if st.types == nil {
		return nil, fmt.Errorf("no parameter types were bound")
	}
	values := make([]any, n)
	for i := 0; i < n; i++ {
		if nulls[i/8]&(1<<(i%8)) != 0 {
			continue
		}
		if data, ok := st.longData[i]; ok {
			values[i] = string(data)
			continue
		}
		v, err := decodeBinaryParam(d, st.types[i])
		if err != nil {
			return nil, fmt.Errorf("parameter %d: %w", i+1, err)
		}
		values[i] = v
	}
	if d.err != nil {
		return nil, errMalformed
	}
	return values, nil
}

// decodeBinaryParam reads one parameter value in the binary protocol.
// typ is the type byte with the unsigned flag (0x80) in the high byte.
func decodeBinaryParam(d *decoder, typ uint16) (any, error) {
	unsigned := typ&0x8000 != 0
	switch byte(typ) {
	case typeNull:
		return nil, nil
	case typeTiny:
		v := d.uint8()
		if unsigned {
			return int64(v), d.err
		}
		return int64(int8(v)), d.err
	case typeShort, typeYear:
		v := d.uint16()
		if unsigned {
			return int64(v), d.err
		}
		return int64(int16(v)), d.err
	case typeLong, typeInt24:
		v := d.uint32()
		if unsigned {
			return int64(v), d.err
		}
		return int64(int32(v)), d.err
	case typeLongLong:
		v := d.uint64()
		if unsigned && v > math.MaxInt64 {
			return sqltypes.Decimal(strconv.FormatUint(v, 10)), d.err
		}
		return int64(v), d.err
	case typeFloat:
		return float64(math.Float32frombits(d.uint32())), d.err
	case typeDouble:
		return math.Float64frombits(d.uint64()), d.err
	case typeDecimal, typeNewDecimal:
		s := string(d.lenEncBytes())
		if _, err := strconv.ParseFloat(s, 64); d.err == nil && err != nil {
			return nil, fmt.Errorf("invalid decimal %q", s)
		}
		return sqltypes.Decimal(s), d.err
	case typeDate, typeDatetime, typeTimestamp, typeNewDate:
		return decodeBinaryTime(d)
	case typeTime:
		return decodeBinaryDuration(d)
	case typeVarchar, typeVarString, typeString, typeTinyBlob, typeMediumBlob, typeLongBlob, typeBlob,
		typeEnum, typeSet, typeJSON, typeBit, typeGeometry:
		return string(d.lenEncBytes()), d.err
	}
	return nil, fmt.Errorf("unsupported parameter type 0x%02x", byte(typ))
}

func decodeBinaryTime(d *decoder) (any, error) {
	n := d.uint8()
	var y, mo, day, h, mi, s, us int
	switch n {
	case 0:
	case 4, 7, 11:
		y, mo, day = int(d.uint16()), int(d.uint8()), int(d.uint8())
		if n >= 7 {
			h, mi, s = int(d.uint8()), int(d.uint8()), int(d.uint8())
		}
		if n == 11 {
			us = int(d.uint32())
		}
	default:
		return nil, fmt.Errorf("invalid date length %d", n)
	}
	if d.err != nil {
		return nil, d.err
	}
	if y == 0 && mo == 0 && day == 0 {
		return nil, fmt.Errorf("zero dates are not supported")
	}
	if mo < 1 || mo > 12 || day < 1 || day > 31 || h > 23 || mi > 59 || s > 59 || us > 999999 {
		return nil, fmt.Errorf("invalid date or time")
	}
	return time.Date(y, time.Month(mo), day, h, mi, s, us*1000, time.UTC), nil
}

func decodeBinaryDuration(d *decoder) (any, error) {
	n := d.uint8()
	if n == 0 {
		return "00:00:00", d.err
	}
	if n != 8 && n != 12 {
		d.fail()
		return nil, fmt.Errorf("invalid time length %d", n)
	}
	neg := d.uint8()
	days := d.uint32()
	h, mi, s := d.uint8(), d.uint8(), d.uint8()
	us := uint32(0)
	if n == 12 {
		us = d.uint32()
	}
	if d.err != nil {
		return nil, d.err
	}
	sign := ""
	if neg == 1 {
		sign = "-"
	}
	out := fmt.Sprintf("%s%02d:%02d:%02d", sign, uint64(days)*24+uint64(h), mi, s)
	if us > 0 {
		out += fmt.Sprintf(".%06d", us)
	}
	return out, nil
}
