package pgwire

import (
	"encoding/hex"
	"math"
	"strconv"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// supportedValue reports whether appendText can encode v. The engine's
// values are those listed in package sqltypes; the other Go integer and
// float kinds are accepted as well.
func supportedValue(v any) bool {
	switch v.(type) {
	case nil, int64, int, int32, int16, int8, uint64, uint, uint32, uint16, uint8,
		float64, float32, string, []byte, bool, sqltypes.Decimal, time.Time:
		return true
	}
	return false
}

// appendText appends the PostgreSQL text representation of v, a non-nil
// value of a column of type t, as PostgreSQL 15 prints it with the
// ParameterStatus values this server reports (DateStyle ISO, TimeZone UTC,
// extra_float_digits > 0). v must satisfy supportedValue.
func appendText(dst []byte, t sqltypes.Type, v any) []byte {
	switch v := v.(type) {
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case int:
		return strconv.AppendInt(dst, int64(v), 10)
	case int32:
		return strconv.AppendInt(dst, int64(v), 10)
	case int16:
		return strconv.AppendInt(dst, int64(v), 10)
	case int8:
		return strconv.AppendInt(dst, int64(v), 10)
	case uint64:
		return strconv.AppendUint(dst, v, 10)
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10)
	case float64:
		switch t {
		case sqltypes.Float4:
			return appendFloat(dst, float64(float32(v)), 32)
		case sqltypes.Numeric:
			return appendNumericFloat(dst, v)
		}
		return appendFloat(dst, v, 64)
	case float32:
		switch t {
		case sqltypes.Float8:
			return appendFloat(dst, float64(v), 64)
		case sqltypes.Numeric:
			return appendNumericFloat(dst, float64(v))
		}
		return appendFloat(dst, float64(v), 32)
	case string:
		if t == sqltypes.Bytea {
			return appendBytea(dst, []byte(v))
		}
		return append(dst, v...)
	case []byte:
		if t == sqltypes.Bytea {
			return appendBytea(dst, v)
		}
		return append(dst, v...)
	case bool:
		if v {
			return append(dst, 't')
		}
		return append(dst, 'f')
	case sqltypes.Decimal:
		return append(dst, v...)
	case time.Time:
		return appendTime(dst, t, v)
	}
	return dst
}

// appendNumericFloat writes a float carried in a numeric column the way
// numeric prints: no exponent.
func appendNumericFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64)
}

// appendBytea writes bytea in the hex format (bytea_output = hex).
func appendBytea(dst, b []byte) []byte {
	dst = append(dst, '\\', 'x')
	return hex.AppendEncode(dst, b)
}

// appendTime writes a date, timestamp or timestamptz in ISO DateStyle:
// "2006-01-02", "2006-01-02 15:04:05.999999" and, converted to UTC (the
// reported TimeZone), "2006-01-02 15:04:05.999999+00". Fractional seconds
// are rounded to microseconds, PostgreSQL's precision, and trailing zeros
// are dropped; years before 1 are written PostgreSQL's way ("0044-03-15 BC").
// A timestamp without time zone is the value's wall clock as it is.
func appendTime(dst []byte, t sqltypes.Type, v time.Time) []byte {
	if t == sqltypes.Timestamptz {
		v = v.UTC()
	}
	if t != sqltypes.Date {
		v = v.Round(time.Microsecond)
	}
	year, month, day := v.Date()
	bc := year <= 0
	if bc {
		year = 1 - year // there is no year 0: 1 BC is year 0 in Go
	}
	dst = appendPadded(dst, year, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int(month), 2)
	dst = append(dst, '-')
	dst = appendPadded(dst, day, 2)
	if t != sqltypes.Date {
		hour, minute, sec := v.Clock()
		dst = append(dst, ' ')
		dst = appendPadded(dst, hour, 2)
		dst = append(dst, ':')
		dst = appendPadded(dst, minute, 2)
		dst = append(dst, ':')
		dst = appendPadded(dst, sec, 2)
		if us := v.Nanosecond() / 1000; us != 0 {
			digits := 6
			for us%10 == 0 {
				us /= 10
				digits--
			}
			dst = append(dst, '.')
			dst = appendPadded(dst, us, digits)
		}
		if t == sqltypes.Timestamptz {
			dst = append(dst, "+00"...)
		}
	}
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// appendPadded writes a non-negative n with at least width digits.
func appendPadded(dst []byte, n, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], int64(n), 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}
