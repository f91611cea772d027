package mysqlwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// columnType is how one sqltypes.Type is described to MySQL clients.
type columnType struct {
	typ      byte
	charset  uint16
	length   uint32
	flags    uint16
	decimals byte
}

// columnTypeOf maps a result type to its MySQL column description.
// Numbers, dates and bytes use the binary character set (63); text uses
// utf8mb4. Decimals 31 (0x1f) means "not fixed", as MySQL reports for
// computed floating-point and decimal columns.
func columnTypeOf(t sqltypes.Type) columnType {
	num := flagBinary | flagNum
	switch t {
	case sqltypes.Bool:
		return columnType{typeTiny, charsetBinary, 1, num, 0}
	case sqltypes.Int2:
		return columnType{typeShort, charsetBinary, 6, num, 0}
	case sqltypes.Int4:
		return columnType{typeLong, charsetBinary, 11, num, 0}
	case sqltypes.Int8:
		return columnType{typeLongLong, charsetBinary, 20, num, 0}
	case sqltypes.OID:
		return columnType{typeLong, charsetBinary, 10, num | flagUnsigned, 0}
	case sqltypes.Float4:
		return columnType{typeFloat, charsetBinary, 12, num, 31}
	case sqltypes.Float8:
		return columnType{typeDouble, charsetBinary, 22, num, 31}
	case sqltypes.Numeric:
		return columnType{typeNewDecimal, charsetBinary, 67, num, 31}
	case sqltypes.Date:
		return columnType{typeDate, charsetBinary, 10, flagBinary, 0}
	case sqltypes.Timestamp, sqltypes.Timestamptz:
		return columnType{typeDatetime, charsetBinary, 26, flagBinary, 6}
	case sqltypes.Bytea:
		return columnType{typeBlob, charsetBinary, 65535, flagBlob | flagBinary, 0}
	}
	// Text, Varchar, Bpchar, Name, Unknown: utf8mb4 strings, up to 65535
	// characters of 4 bytes.
	return columnType{typeVarString, charsetUTF8MB4, 262140, 0, 0}
}

// appendColumnDef encodes a Protocol::ColumnDefinition41 payload. schema
// and table may be empty (computed columns). fieldList adds the empty
// default value COM_FIELD_LIST responses carry.
func appendColumnDef(b []byte, schema, table string, c sqltypes.Column, fieldList bool) []byte {
	ct := columnTypeOf(c.Type)
	b = appendLenEncString(b, "def")
	b = appendLenEncString(b, schema)
	b = appendLenEncString(b, table)
	b = appendLenEncString(b, table)
	b = appendLenEncString(b, c.Name)
	b = appendLenEncString(b, c.Name)
	b = append(b, 0x0c)
	b = binary.LittleEndian.AppendUint16(b, ct.charset)
	b = binary.LittleEndian.AppendUint32(b, ct.length)
	b = append(b, ct.typ)
	b = binary.LittleEndian.AppendUint16(b, ct.flags)
	b = append(b, ct.decimals, 0, 0)
	if fieldList {
		b = append(b, 0xfb) // no default value
	}
	return b
}

// appendTextValue encodes one value of a text-protocol row
// (Protocol::ResultsetRow): NULL is 0xfb, anything else a length-encoded
// string in MySQL's text form for the column's type. The text is formatted
// in place after a one-byte length (any value shorter than 251 bytes), and
// moved up only for a longer one.
func appendTextValue(b []byte, v any, t sqltypes.Type) []byte {
	if v == nil {
		return append(b, 0xfb)
	}
	start := len(b)
	b = appendText(append(b, 0), v, t)
	n := len(b) - start - 1
	if n < 251 {
		b[start] = byte(n)
		return b
	}
	var lenBuf [9]byte
	prefix := appendLenEncInt(lenBuf[:0], uint64(n))
	b = append(b, prefix[1:]...) // room for the longer length
	copy(b[start+len(prefix):], b[start+1:start+1+n])
	copy(b[start:], prefix)
	return b
}

// appendText writes v as MySQL prints a value of type t.
func appendText(b []byte, v any, t sqltypes.Type) []byte {
	switch x := v.(type) {
	case int64:
		if t == sqltypes.Bool {
			if x != 0 {
				return append(b, '1')
			}
			return append(b, '0')
		}
		return strconv.AppendInt(b, x, 10)
	case bool:
		if x {
			return append(b, '1')
		}
		return append(b, '0')
	case float64:
		return appendFloat(b, x, t)
	case sqltypes.Decimal:
		return append(b, x...)
	case string:
		return append(b, x...)
	case []byte:
		return append(b, x...)
	case time.Time:
		if t == sqltypes.Date {
			return x.AppendFormat(b, "2006-01-02")
		}
		return x.AppendFormat(b, "2006-01-02 15:04:05.000000")
	}
	return fmt.Appendf(b, "%v", v)
}

// appendFloat prints a float as MySQL does: the shortest form that reads
// back exactly, with an exponent only for very large or small values.
func appendFloat(b []byte, f float64, t sqltypes.Type) []byte {
	bits := 64
	if t == sqltypes.Float4 {
		bits = 32
	}
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-15 || abs >= 1e15) {
		s := strconv.FormatFloat(f, 'e', -1, bits)
		s = strings.Replace(s, "e+", "e", 1)
		return append(b, s...)
	}
	return strconv.AppendFloat(b, f, 'f', -1, bits)
}

// binaryFieldsLen is the size of the binary-protocol row's NULL bitmap
// for n columns (offset 2).
func binaryNullBitmapLen(n int) int { return (n + 7 + 2) / 8 }

// appendBinaryRow encodes a Protocol::BinaryResultsetRow.
func appendBinaryRow(b []byte, row []any, cols []sqltypes.Column) ([]byte, error) {
	b = append(b, 0x00)
	bm := len(b)
	b = append(b, make([]byte, binaryNullBitmapLen(len(cols)))...)
	for i, c := range cols {
		var v any
		if i < len(row) {
			v = row[i]
		}
		if v == nil {
			pos := i + 2
			b[bm+pos/8] |= 1 << (pos % 8)
			continue
		}
		var err error
		if b, err = appendBinaryValue(b, v, c.Type); err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
	}
	return b, nil
}

// appendBinaryValue encodes one non-NULL value in the binary protocol
// format of its column's MySQL type.
func appendBinaryValue(b []byte, v any, t sqltypes.Type) ([]byte, error) {
	ct := columnTypeOf(t)
	switch ct.typ {
	case typeTiny, typeShort, typeLong, typeLongLong:
		n, err := toInt64(v)
		if err != nil {
			return nil, err
		}
		switch ct.typ {
		case typeTiny:
			return append(b, byte(n)), nil
		case typeShort:
			return binary.LittleEndian.AppendUint16(b, uint16(n)), nil
		case typeLong:
			return binary.LittleEndian.AppendUint32(b, uint32(n)), nil
		}
		return binary.LittleEndian.AppendUint64(b, uint64(n)), nil
	case typeFloat, typeDouble:
		f, err := toFloat64(v)
		if err != nil {
			return nil, err
		}
		if ct.typ == typeFloat {
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(f))), nil
		}
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(f)), nil
	case typeDate, typeDatetime:
		tm, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("value of Go type %T in a %s column", v, t)
		}
		return appendBinaryTime(b, tm, ct.typ == typeDate), nil
	}
	return appendLenEncBytes(b, appendText(nil, v, t)), nil
}

// appendBinaryTime encodes a DATE or DATETIME in the binary protocol:
// a length byte (4, 7 or 11) then the fields.
func appendBinaryTime(b []byte, t time.Time, dateOnly bool) []byte {
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		y = 0 // MySQL cannot carry it; clients see a zero date
	}
	hh, mm, ss := t.Clock()
	us := t.Nanosecond() / 1000
	switch {
	case dateOnly || (hh == 0 && mm == 0 && ss == 0 && us == 0):
		b = append(b, 4)
	case us == 0:
		b = append(b, 7)
	default:
		b = append(b, 11)
	}
	n := b[len(b)-1]
	b = binary.LittleEndian.AppendUint16(b, uint16(y))
	b = append(b, byte(mo), byte(d))
	if n >= 7 {
		b = append(b, byte(hh), byte(mm), byte(ss))
	}
	if n == 11 {
		b = binary.LittleEndian.AppendUint32(b, uint32(us))
	}
	return b
}

func toInt64(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case float64:
		if math.IsNaN(x) || x < math.MinInt64 || x >= math.MaxInt64 {
			return 0, fmt.Errorf("%v does not fit an integer column", x)
		}
		return int64(math.Round(x)), nil
	case sqltypes.Decimal:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, fmt.Errorf("decimal %q in an integer column", string(x))
		}
		return toInt64(f)
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("text %q in an integer column", x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("value of Go type %T in an integer column", v)
}

func toFloat64(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int64:
		return float64(x), nil
	case sqltypes.Decimal:
		return strconv.ParseFloat(string(x), 64)
	case string:
		return strconv.ParseFloat(strings.TrimSpace(x), 64)
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("value of Go type %T in a floating-point column", v)
}
