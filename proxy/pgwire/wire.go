package pgwire

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// Public-table rows may reach the front end already in PostgreSQL's text
// wire form (sqltypes.Result.PostgresText): each a DataRow body from the
// backend, written out as it is. A portal that asks for some column in
// binary gets them decoded first.

// appendWireRow appends a DataRow message whose body is body.
func appendWireRow(dst, body []byte) []byte {
	dst = append(dst, 'D')
	dst = binary.BigEndian.AppendUint32(dst, uint32(4+len(body)))
	return append(dst, body...)
}

// walkWireRow checks that a DataRow body holds columns values and calls
// value (if not nil) with each (nil for NULL).
func walkWireRow(body []byte, columns int, value func(i int, v []byte)) error {
	if len(body) < 2 || int(binary.BigEndian.Uint16(body)) != columns {
		return fmt.Errorf("wire row does not hold %d values", columns)
	}
	rest := body[2:]
	for i := 0; i < columns; i++ {
		if len(rest) < 4 {
			return fmt.Errorf("wire row value %d is cut short", i+1)
		}
		n := int32(binary.BigEndian.Uint32(rest))
		rest = rest[4:]
		var v []byte
		if n >= 0 {
			if int(n) > len(rest) {
				return fmt.Errorf("wire row value %d is cut short", i+1)
			}
			v, rest = rest[:n], rest[n:]
		}
		if value != nil {
			value(i, v)
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("wire row has %d bytes after its values", len(rest))
	}
	return nil
}

// wireValues splits a DataRow body into its values (nil for NULL).
func wireValues(body []byte, columns int) ([][]byte, error) {
	vals := make([][]byte, columns)
	if err := walkWireRow(body, columns, func(i int, v []byte) { vals[i] = v }); err != nil {
		return nil, err
	}
	return vals, nil
}

// checkWireRows checks that every wire row holds one value per column.
func checkWireRows(r *sqltypes.Result) error {
	for j, body := range r.PostgresText {
		if err := walkWireRow(body, len(r.Columns), nil); err != nil {
			return fmt.Errorf("row %d: %w", j, err)
		}
	}
	return nil
}

// decodeWireRows returns r with its wire rows decoded into values, for a
// portal that wants some column in binary.
func decodeWireRows(r *sqltypes.Result) (*sqltypes.Result, error) {
	out := *r
	out.PostgresText = nil
	out.Rows = make([][]any, len(r.PostgresText))
	for j, body := range r.PostgresText {
		vals, err := wireValues(body, len(r.Columns))
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", j, err)
		}
		row := make([]any, len(vals))
		for i, b := range vals {
			if b == nil {
				continue
			}
			v, e := decodeTextValue(r.Columns[i].Type, string(b))
			if e != nil {
				return nil, fmt.Errorf("row %d column %d: %w", j, i+1, e)
			}
			row[i] = v
		}
		out.Rows[j] = row
	}
	return &out, nil
}

// anyBinary reports whether a portal's formats ask for a binary column.
func anyBinary(formats []int16) bool { return slices.Contains(formats, formatBinary) }
