package backend

import (
	"context"
	"database/sql/driver"
	"io"
	"strconv"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// MySQLWireQuerier is a backend that can return a public-table result in
// a MySQL client's text-protocol form, skipping the decoding of each value
// into a Go value and its re-encoding by the front end: the text of a
// string column goes from the driver's buffer into the row as it is.
type MySQLWireQuerier interface {
	// QueryMySQLText runs sql like Query. When every result column has a
	// wire-safe type (see mysqlWireType) the rows come back in
	// Rows.MySQLText and Rows.Values is nil; otherwise they are decoded
	// as Query decodes them.
	QueryMySQLText(ctx context.Context, sql string, args ...any) (*Rows, error)
	// QueryPublic runs sql like Query, its rows decoded. Both run a
	// public-table statement, which may be sent together with other
	// clients' (mycombine.go).
	QueryPublic(ctx context.Context, sql string, args ...any) (*Rows, error)
}

var _ MySQLWireQuerier = (*MySQL)(nil)

// QueryMySQLText runs sql and returns its rows as text-protocol row
// payloads when every column is wire-safe.
func (m *MySQL) QueryMySQLText(ctx context.Context, sql string, args ...any) (*Rows, error) {
	return m.queryPublic(ctx, readMySQLTextRows, sql, args, true)
}

// QueryPublic runs a public-table statement and returns its rows decoded.
func (m *MySQL) QueryPublic(ctx context.Context, sql string, args ...any) (*Rows, error) {
	return m.queryPublic(ctx, readMySQLDriverRows, sql, args, false)
}

// mysqlWireType returns the column type of a result column with the
// driver's DatabaseTypeName, and whether its values are wire-safe: their
// text in a row is what the front end would print for the value decoded
// (mysqlColumnDecoder), whichever protocol the driver read them in.
// Integers up to UNSIGNED INT (the driver gives an int64, printed back in
// decimal) and the character string types (the driver's bytes, the
// connection's utf8mb4 on both sides) are; the rest (decimals, floats,
// dates and times, binary strings in hex, JSON) are decoded as before.
func mysqlWireType(name string) (sqltypes.Type, bool) {
	switch name {
	case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT",
		"UNSIGNED TINYINT", "UNSIGNED SMALLINT", "UNSIGNED MEDIUMINT", "UNSIGNED INT",
		"CHAR", "VARCHAR", "TEXT", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET":
		t, _ := mysqlColumnDecoder(name)
		return t, true
	}
	return 0, false
}

// readMySQLTextRows reads the remaining rows of rows as text-protocol row
// payloads (Protocol::ResultsetRow: each value a length-encoded string,
// 0xfb for NULL) when every column is wire-safe, and decodes them
// (readMySQLDriverRows) otherwise.
func readMySQLTextRows(ctx context.Context, rows driver.Rows) (*Rows, error) {
	names := rows.Columns()
	typed, ok := rows.(driver.RowsColumnTypeDatabaseTypeName)
	if !ok {
		return readMySQLDriverRows(ctx, rows)
	}
	cols := make([]Column, len(names))
	for i, name := range names {
		t, safe := mysqlWireType(typed.ColumnTypeDatabaseTypeName(i))
		if !safe {
			return readMySQLDriverRows(ctx, rows)
		}
		cols[i] = Column{Name: name, Type: t}
	}
	meter := resultMeter{limit: resultLimitFrom(ctx)}
	dest := make([]driver.Value, len(names))
	// asText marks a column one of whose values the driver gave in a form
	// its type cannot hold: it is reported as Text, as conform reports it.
	asText := make([]bool, len(names))
	// Every row's payload goes into one buffer, sliced at the end.
	var buf []byte
	var ends []int
	for {
		if err := rows.Next(dest); err != nil {
			if err == io.EOF {
				break
			}
			return nil, err
		}
		start := len(buf)
		for j, v := range dest {
			buf = appendMySQLTextValue(buf, v, cols[j].Type, &asText[j])
		}
		if err := meter.addEncoded(len(buf) - start); err != nil {
			return nil, err
		}
		ends = append(ends, len(buf))
	}
	for j := range cols {
		if asText[j] {
			cols[j].Type = sqltypes.Text
		}
	}
	return &Rows{Columns: cols, MySQLText: splitRows(buf, ends)}, nil
}

// appendMySQLTextValue appends one value of a wire-safe column of type t
// as the front end prints it: an integer in decimal, a string's bytes.
// A value in another form (none the driver gives for these types) is
// appended in its text form and sets asText.
func appendMySQLTextValue(b []byte, v driver.Value, t sqltypes.Type, asText *bool) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 0xfb)
	case int64:
		if t != sqltypes.Text {
			var digits [20]byte
			return appendLenEncBytes(b, strconv.AppendInt(digits[:0], x, 10))
		}
	case []byte:
		if t == sqltypes.Text {
			return appendLenEncBytes(b, x)
		}
	}
	var d any
	if t == sqltypes.Text {
		d = mysqlText(v)
	} else {
		d = mysqlInt(v)
	}
	if n, ok := d.(int64); ok {
		var digits [20]byte
		return appendLenEncBytes(b, strconv.AppendInt(digits[:0], n, 10))
	}
	*asText = true
	s, _ := d.(string)
	return appendLenEncBytes(b, []byte(s))
}

// appendLenEncBytes appends s as a MySQL length-encoded string.
func appendLenEncBytes(b, s []byte) []byte {
	switch n := uint64(len(s)); {
	case n < 251:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 0xfc, byte(n), byte(n>>8))
	case n < 1<<24:
		b = append(b, 0xfd, byte(n), byte(n>>8), byte(n>>16))
	default:
		b = append(b, 0xfe, byte(n), byte(n>>8), byte(n>>16), byte(n>>24),
			byte(n>>32), byte(n>>40), byte(n>>48), byte(n>>56))
	}
	return append(b, s...)
}
