package pgwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgproto3/v2"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// maxColumns is the most columns a RowDescription can carry (an int16
// count); PostgreSQL itself stops at 1664.
const maxColumns = math.MaxInt16

// writeResults queues RowDescription, DataRows and CommandComplete for each
// result, flushing along the way for large results, and follows the
// transaction status through the command tags. The results are checked
// first, so that a bad value sends an error instead of half a result.
func (c *conn) writeResults(results []*sqltypes.Result) error {
	if err := validateResults(results); err != nil {
		c.log.Error("pgwire: engine returned an unencodable result", "err", err)
		c.sendError(&sqlerr.Error{Code: sqlerr.InternalError, Message: "internal error"})
		return nil
	}
	for _, r := range results {
		c.sendNotices(r.Notices)
		if len(r.Columns) == 0 {
			c.sendCommandComplete(c.txAfterStatement(commandTag(r)))
			continue
		}
		c.wbuf = appendRowDescription(c.wbuf, r.Columns, nil)
		for _, body := range r.PostgresText {
			c.wbuf = appendWireRow(c.wbuf, body)
			if len(c.wbuf) >= flushThreshold {
				if err := c.flush(); err != nil {
					return err
				}
			}
		}
		for _, row := range r.Rows {
			c.wbuf = appendDataRow(c.wbuf, r.Columns, row)
			if len(c.wbuf) >= flushThreshold {
				if err := c.flush(); err != nil {
					return err
				}
			}
		}
		c.sendCommandComplete(c.txAfterStatement(commandTag(r)))
	}
	return nil
}

// sendNotices queues a NoticeResponse of severity NOTICE per message.
func (c *conn) sendNotices(notices []string) {
	for _, msg := range notices {
		n := pgproto3.NoticeResponse(*errorResponse("NOTICE", &sqlerr.Error{Code: sqlerr.SuccessfulCompletion, Message: msg}))
		c.send(&n)
	}
}

// validateResults checks what appendDataRow relies on: row widths and value
// types. Values themselves are never put into the error (they may be
// protected data).
func validateResults(results []*sqltypes.Result) error {
	for i, r := range results {
		if r == nil {
			return fmt.Errorf("result %d is nil", i)
		}
		if len(r.Columns) > maxColumns {
			return fmt.Errorf("result %d has %d columns", i, len(r.Columns))
		}
		if len(r.Columns) == 0 {
			continue
		}
		if err := checkWireRows(r); err != nil {
			return fmt.Errorf("result %d: %w", i, err)
		}
		for j, row := range r.Rows {
			if len(row) != len(r.Columns) {
				return fmt.Errorf("result %d row %d has %d values for %d columns", i, j, len(row), len(r.Columns))
			}
			for k, v := range row {
				if !supportedValue(v) {
					return fmt.Errorf("result %d row %d column %q: unsupported value type %T", i, j, r.Columns[k].Name, v)
				}
			}
		}
	}
	return nil
}

// commandTag is r.Tag, or "SELECT n" when the engine left it empty.
func commandTag(r *sqltypes.Result) string {
	if r.Tag != "" {
		return noNUL(r.Tag)
	}
	return sqltypes.SelectTag(r.NumRows())
}

// appendRowDescription appends a RowDescription of cols, each column in the
// format formats gives it (text where formats is shorter), written
// straight into the buffer as pgproto3's RowDescription encodes it: a
// result's description costs no allocation.
func appendRowDescription(dst []byte, cols []sqltypes.Column, formats []int16) []byte {
	start := len(dst)
	dst = append(dst, 'T', 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(cols)))
	for i, col := range cols {
		dst = append(dst, noNUL(col.Name)...)
		dst = append(dst, 0)
		dst = binary.BigEndian.AppendUint32(dst, 0) // table OID
		dst = binary.BigEndian.AppendUint16(dst, 0) // column number
		dst = binary.BigEndian.AppendUint32(dst, col.Type.PostgresOID())
		dst = binary.BigEndian.AppendUint16(dst, uint16(col.Type.PostgresTypeSize()))
		dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32) // type modifier -1
		format := int16(pgproto3.TextFormat)
		if i < len(formats) {
			format = formats[i]
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(format))
	}
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
	return dst
}

// appendDataRow appends a DataRow with row's values in text format. The
// row must have passed validateResults.
func appendDataRow(dst []byte, cols []sqltypes.Column, row []any) []byte {
	start := len(dst)
	dst = append(dst, 'D', 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(row)))
	for i, v := range row {
		if v == nil {
			dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32) // -1: NULL
			continue
		}
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst = appendText(dst, cols[i].Type, v)
		binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	}
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
	return dst
}

// errorResponse builds an ErrorResponse with severity "ERROR" or "FATAL".
func errorResponse(severity string, e *sqlerr.Error) *pgproto3.ErrorResponse {
	code := string(e.Code)
	if !validSQLState(code) {
		code = string(sqlerr.InternalError)
	}
	msg := e.Message
	if msg == "" {
		msg = "error " + code
	}
	var pos int32
	if e.Position > 0 && e.Position <= math.MaxInt32 {
		pos = int32(e.Position)
	}
	return &pgproto3.ErrorResponse{
		Severity:            severity,
		SeverityUnlocalized: severity,
		Code:                code,
		Message:             noNUL(msg),
		Detail:              noNUL(e.Detail),
		Hint:                noNUL(e.Hint),
		Position:            pos,
	}
}

func validSQLState(s string) bool {
	if len(s) != 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'A' && s[i] <= 'Z') {
			return false
		}
	}
	return true
}

// noNUL drops NUL bytes, which would cut a NUL-terminated protocol string.
func noNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "")
}
