package pgwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// errNotEncodable is a result value that has no binary form in its column's
// type (an int64 too large for int4, text in a date column, ...). Values
// are never put into the error: they may be protected data.
var errNotEncodable = errors.New("value has no binary representation in the column's type")

// appendBinary appends the PostgreSQL binary (typsend) representation of
// v, a non-nil value satisfying supportedValue, for a column of type t.
// Values whose Go type does not match t are converted through their text
// form, so that the binary value always equals the text one.
func appendBinary(dst []byte, t sqltypes.Type, v any) ([]byte, error) {
	switch t {
	case sqltypes.Bool:
		b, ok := v.(bool)
		if !ok {
			if b, ok = parseBool(string(appendText(nil, t, v))); !ok {
				return dst, errNotEncodable
			}
		}
		if b {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case sqltypes.Int2, sqltypes.Int4, sqltypes.Int8, sqltypes.OID:
		n, ok := integerValue(v)
		if !ok {
			return dst, errNotEncodable
		}
		switch t {
		case sqltypes.Int2:
			if n < math.MinInt16 || n > math.MaxInt16 {
				return dst, errNotEncodable
			}
			return binary.BigEndian.AppendUint16(dst, uint16(n)), nil
		case sqltypes.Int4:
			if n < math.MinInt32 || n > math.MaxInt32 {
				return dst, errNotEncodable
			}
			return binary.BigEndian.AppendUint32(dst, uint32(n)), nil
		case sqltypes.OID:
			if n < 0 || n > math.MaxUint32 {
				return dst, errNotEncodable
			}
			return binary.BigEndian.AppendUint32(dst, uint32(n)), nil
		}
		return binary.BigEndian.AppendUint64(dst, uint64(n)), nil
	case sqltypes.Float4, sqltypes.Float8:
		f, ok := floatValue(v)
		if !ok {
			return dst, errNotEncodable
		}
		if t == sqltypes.Float4 {
			return binary.BigEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
		}
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case sqltypes.Numeric:
		n, err := parseNumericText(string(appendText(nil, t, v)))
		if err != nil {
			return dst, errNotEncodable
		}
		return n.appendBinary(dst), nil
	case sqltypes.Date:
		tm, ok := timeValue(t, v)
		if !ok {
			return dst, errNotEncodable
		}
		days, ok := pgDays(tm)
		if !ok {
			return dst, errNotEncodable
		}
		return binary.BigEndian.AppendUint32(dst, uint32(int32(days))), nil
	case sqltypes.Timestamp, sqltypes.Timestamptz:
		tm, ok := timeValue(t, v)
		if !ok {
			return dst, errNotEncodable
		}
		us, ok := pgMicros(t, tm)
		if !ok {
			return dst, errNotEncodable
		}
		return binary.BigEndian.AppendUint64(dst, uint64(us)), nil
	case sqltypes.Bytea:
		switch b := v.(type) {
		case string:
			return append(dst, b...), nil
		case []byte:
			return append(dst, b...), nil
		}
		return appendText(dst, sqltypes.Text, v), nil
	}
	// Text types and unknown: textsend sends the text itself.
	return appendText(dst, t, v), nil
}

// integerValue converts an integer-like value to int64.
func integerValue(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case int16:
		return int64(v), true
	case int8:
		return int64(v), true
	case uint64:
		return int64(v), v <= math.MaxInt64
	case uint:
		return int64(v), uint64(v) <= math.MaxInt64
	case uint32:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint8:
		return int64(v), true
	case float64:
		return int64(v), v == math.Trunc(v) && v >= -(1<<63) && v < 1<<63
	case float32:
		return integerValue(float64(v))
	case bool:
		return 0, false
	}
	n, err := strconv.ParseInt(string(appendText(nil, sqltypes.Text, v)), 10, 64)
	return n, err == nil
}

// floatValue converts a number-like value to float64.
func floatValue(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case bool, time.Time:
		return 0, false
	}
	if n, ok := integerValue(v); ok {
		return float64(n), true
	}
	f, err := strconv.ParseFloat(string(appendText(nil, sqltypes.Text, v)), 64)
	return f, err == nil
}

// timeValue returns v as a time.Time, parsing text values.
func timeValue(t sqltypes.Type, v any) (time.Time, bool) {
	if tm, ok := v.(time.Time); ok {
		return tm, true
	}
	dt, err := parseDateTime(string(appendText(nil, sqltypes.Text, v)))
	if err != nil {
		return time.Time{}, false
	}
	return dt.time(t), true
}

// appendDataRowFormats appends a DataRow with each value in its column's
// format (formats has one code per column; nil means all text). It fails
// only for a binary value appendBinary cannot encode; the caller checks
// whole results with it before sending any of their rows.
func appendDataRowFormats(dst []byte, cols []sqltypes.Column, formats []int16, row []any) ([]byte, error) {
	if formats == nil {
		return appendDataRow(dst, cols, row), nil
	}
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
		if formats[i] == formatBinary {
			var err error
			if dst, err = appendBinary(dst, cols[i].Type, v); err != nil {
				return dst[:start], fmt.Errorf("column %d (%q, %s): %w", i+1, cols[i].Name, cols[i].Type, err)
			}
		} else {
			dst = appendText(dst, cols[i].Type, v)
		}
		binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	}
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
	return dst, nil
}
