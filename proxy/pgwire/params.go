package pgwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// SQLSTATEs that package sqlerr does not name, from PostgreSQL's errcodes.
const (
	codeNumericValueOutOfRange   sqlerr.Code = "22003"
	codeInvalidDatetimeFormat    sqlerr.Code = "22007"
	codeDatetimeFieldOverflow    sqlerr.Code = "22008"
	codeCharacterNotInRepertoire sqlerr.Code = "22021"
	codeInvalidBinaryRepresent   sqlerr.Code = "22P03"
	codeNoActiveSQLTransaction   sqlerr.Code = "25P01"
	codeDuplicateCursor          sqlerr.Code = "42P03"
	codeObjectNotInPrerequisite  sqlerr.Code = "55000"
)

// Format codes of Bind and RowDescription.
const (
	formatText   int16 = 0
	formatBinary int16 = 1
)

// decodeParam converts one Bind parameter value (nil for NULL) in the
// given format to the Go value package sqltypes lists for t: int64 for the
// integer types and oid, float64, sqltypes.Decimal, string (text types,
// unknown and bytea), bool, time.Time (UTC) or nil. The error is the
// one the client gets, with the parameter number in its detail.
func decodeParam(t sqltypes.Type, format int16, b []byte, num int) (any, *sqlerr.Error) {
	if b == nil {
		return nil, nil
	}
	var v any
	var e *sqlerr.Error
	if format == formatBinary {
		v, e = decodeBinaryParam(t, b)
	} else {
		v, e = decodeTextValue(t, string(b))
	}
	if e != nil {
		e.Detail = "In bind parameter $" + strconv.Itoa(num) + "."
		return nil, e
	}
	return v, nil
}

// decodeTextValue parses a value in PostgreSQL's text format for type t.
func decodeTextValue(t sqltypes.Type, s string) (any, *sqlerr.Error) {
	switch t {
	case sqltypes.Int2, sqltypes.Int4, sqltypes.Int8:
		n, err := strconv.ParseInt(strings.Trim(s, " \t\n\r\v\f"), 10, intBits(t))
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return nil, sqlerr.New(codeNumericValueOutOfRange, "value %s is out of range for type %s", quoteValue(s), pgTypeName(t))
			}
			return nil, syntaxError(t, s)
		}
		return n, nil
	case sqltypes.OID:
		n, err := strconv.ParseUint(strings.Trim(s, " \t\n\r\v\f"), 10, 32)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return nil, sqlerr.New(codeNumericValueOutOfRange, "value %s is out of range for type oid", quoteValue(s))
			}
			return nil, syntaxError(t, s)
		}
		return int64(n), nil
	case sqltypes.Float4, sqltypes.Float8:
		return parseFloatValue(t, s)
	case sqltypes.Numeric:
		n, err := parseNumericText(s)
		if err != nil {
			if errors.Is(err, errNumericRange) {
				return nil, sqlerr.New(codeNumericValueOutOfRange, "value %s overflows the numeric format (at most %d digits before and after the decimal point)", quoteValue(s), maxNumericDigits)
			}
			return nil, syntaxError(t, s)
		}
		return numericParam(n)
	case sqltypes.Bool:
		if v, ok := parseBool(s); ok {
			return v, nil
		}
		return nil, syntaxError(t, s)
	case sqltypes.Date, sqltypes.Timestamp, sqltypes.Timestamptz:
		dt, err := parseDateTime(s)
		switch {
		case errors.Is(err, errDateTimeUnsupported):
			return nil, sqlerr.New(sqlerr.InvalidTextRepresent, "date/time value %s is not supported for type %s", quoteValue(s), pgTypeName(t)).
				WithHint("Send a literal date or time, such as 2024-03-15 12:30:00+00.")
		case errors.Is(err, errDateTimeRange):
			return nil, sqlerr.New(codeDatetimeFieldOverflow, "date/time field value out of range: %s", quoteValue(s))
		case err != nil:
			return nil, &sqlerr.Error{Code: codeInvalidDatetimeFormat, Message: syntaxError(t, s).Message}
		}
		v := dt.time(t)
		if _, ok := pgMicros(t, v); !ok {
			return nil, sqlerr.New(codeDatetimeFieldOverflow, "date/time field value out of range: %s", quoteValue(s))
		}
		return v, nil
	case sqltypes.Bytea:
		return parseByteaText(s)
	}
	if e := checkText(s); e != nil {
		return nil, e
	}
	return s, nil
}

// decodeBinaryParam reads a value in PostgreSQL's binary format for t.
// Integers and floats are accepted in any of the widths a client may send
// (2, 4 or 8 bytes; 4 or 8 bytes), with a range check against t.
func decodeBinaryParam(t sqltypes.Type, b []byte) (any, *sqlerr.Error) {
	bad := func() (any, *sqlerr.Error) {
		return nil, sqlerr.New(codeInvalidBinaryRepresent, "incorrect binary data format for type %s (%d bytes)", pgTypeName(t), len(b))
	}
	switch t {
	case sqltypes.Int2, sqltypes.Int4, sqltypes.Int8:
		var n int64
		switch len(b) {
		case 2:
			n = int64(int16(binary.BigEndian.Uint16(b)))
		case 4:
			n = int64(int32(binary.BigEndian.Uint32(b)))
		case 8:
			n = int64(binary.BigEndian.Uint64(b))
		default:
			return bad()
		}
		if bits := intBits(t); bits < 64 && (n < -1<<(bits-1) || n >= 1<<(bits-1)) {
			return nil, sqlerr.New(codeNumericValueOutOfRange, "%s out of range", pgTypeName(t))
		}
		return n, nil
	case sqltypes.OID:
		if len(b) != 4 {
			return bad()
		}
		return int64(binary.BigEndian.Uint32(b)), nil
	case sqltypes.Float4, sqltypes.Float8:
		var f float64
		switch len(b) {
		case 4:
			f = float64(math.Float32frombits(binary.BigEndian.Uint32(b)))
		case 8:
			f = math.Float64frombits(binary.BigEndian.Uint64(b))
		default:
			return bad()
		}
		if t == sqltypes.Float4 && !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
			return nil, sqlerr.New(codeNumericValueOutOfRange, "value out of range: overflow")
		}
		return f, nil
	case sqltypes.Numeric:
		n, err := decodeNumericBinary(b)
		if errors.Is(err, errNumericRange) {
			return nil, sqlerr.New(codeNumericValueOutOfRange, "numeric value overflows the numeric format (at most %d digits before and after the decimal point)", maxNumericDigits)
		}
		if err != nil {
			return bad()
		}
		return numericParam(n)
	case sqltypes.Bool:
		if len(b) != 1 {
			return bad()
		}
		return b[0] != 0, nil
	case sqltypes.Date:
		if len(b) != 4 {
			return bad()
		}
		days := int32(binary.BigEndian.Uint32(b))
		if days == math.MinInt32 || days == math.MaxInt32 {
			return nil, infinityError(t)
		}
		return pgEpoch.AddDate(0, 0, int(days)), nil
	case sqltypes.Timestamp, sqltypes.Timestamptz:
		if len(b) != 8 {
			return bad()
		}
		us := int64(binary.BigEndian.Uint64(b))
		if us == math.MinInt64 || us == math.MaxInt64 {
			return nil, infinityError(t)
		}
		return fromPgMicros(us), nil
	case sqltypes.Bytea:
		return string(b), nil
	}
	s := string(b)
	if e := checkText(s); e != nil {
		return nil, e
	}
	return s, nil
}

// numericParam turns a parsed numeric into a parameter value: the engine
// works with exact decimals, which have no NaN or infinity.
func numericParam(n numeric) (any, *sqlerr.Error) {
	if n.kind != numericFinite {
		return nil, sqlerr.New(sqlerr.InvalidTextRepresent, "numeric parameter value %s is not supported: NaN and infinity have no exact decimal value", n.String())
	}
	return sqltypes.Decimal(n.String()), nil
}

// parseFloatValue parses float4/float8 input like float8in: decimal or
// exponent notation, NaN, Infinity and inf in any case, white space around.
func parseFloatValue(t sqltypes.Type, s string) (any, *sqlerr.Error) {
	trimmed := strings.Trim(s, " \t\n\r\v\f")
	bits := 64
	if t == sqltypes.Float4 {
		bits = 32
	}
	if strings.ContainsAny(trimmed, "_xXpP") { // Go syntax PostgreSQL does not accept
		return nil, syntaxError(t, s)
	}
	f, err := strconv.ParseFloat(trimmed, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return nil, sqlerr.New(codeNumericValueOutOfRange, "%s is out of range for type %s", quoteValue(trimmed), pgTypeName(t))
		}
		return nil, syntaxError(t, s)
	}
	return f, nil
}

// parseBool accepts what PostgreSQL's boolin does: unique prefixes of
// true/false/yes/no, on/off, 1/0, in any case, with white space around.
func parseBool(s string) (bool, bool) {
	s = strings.ToLower(strings.Trim(s, " \t\n\r\v\f"))
	if s == "" {
		return false, false
	}
	prefixOf := func(word string, minLen int) bool {
		return len(s) >= minLen && strings.HasPrefix(word, s)
	}
	switch {
	case prefixOf("true", 1), prefixOf("yes", 1), prefixOf("on", 2), s == "1":
		return true, true
	case prefixOf("false", 1), prefixOf("no", 1), prefixOf("off", 2), s == "0":
		return false, true
	}
	return false, false
}

// parseByteaText reads bytea input in the hex format (\x0102...) or the
// escape format (backslash-escaped octal bytes).
func parseByteaText(s string) (any, *sqlerr.Error) {
	if strings.HasPrefix(s, `\x`) {
		out := make([]byte, 0, (len(s)-2)/2)
		for i := 2; i < len(s); {
			c := s[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				i++
				continue
			}
			hi, ok1 := unhex(c)
			if i+1 >= len(s) {
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			lo, ok2 := unhex(s[i+1])
			if !ok1 || !ok2 {
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal digit in bytea value")
			}
			out = append(out, hi<<4|lo)
			i += 2
		}
		return string(out), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]):
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return nil, sqlerr.New(sqlerr.InvalidTextRepresent, "invalid input syntax for type bytea")
		}
	}
	return string(out), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// checkText refuses what a UTF8 database refuses in text: invalid UTF-8
// and NUL bytes.
func checkText(s string) *sqlerr.Error {
	if strings.IndexByte(s, 0) >= 0 {
		return sqlerr.New(codeCharacterNotInRepertoire, `invalid byte sequence for encoding "UTF8": 0x00`)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size > 1 {
			i += size
			continue
		}
		// Name the bytes of the broken character, as PostgreSQL does.
		n := 1
		switch b := s[i]; {
		case b >= 0xF0:
			n = 4
		case b >= 0xE0:
			n = 3
		case b >= 0xC0:
			n = 2
		}
		var hex []string
		for _, b := range []byte(s[i:min(i+n, len(s))]) {
			hex = append(hex, fmt.Sprintf("0x%02x", b))
		}
		return sqlerr.New(codeCharacterNotInRepertoire, `invalid byte sequence for encoding "UTF8": %s`, strings.Join(hex, " "))
	}
	return nil
}

func syntaxError(t sqltypes.Type, s string) *sqlerr.Error {
	return sqlerr.New(sqlerr.InvalidTextRepresent, "invalid input syntax for type %s: %s", pgTypeName(t), quoteValue(s))
}

func infinityError(t sqltypes.Type) *sqlerr.Error {
	return sqlerr.New(sqlerr.InvalidParameterValue, "infinite %s parameter values are not supported", pgTypeName(t))
}

// quoteValue quotes a client's value for an error message, shortened and
// made valid UTF-8.
func quoteValue(s string) string {
	const maxLen = 64
	if len(s) > maxLen {
		cut := maxLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return `"` + strings.ToValidUTF8(s, "\uFFFD") + `"`
}

// intBits is the width of an integer type.
func intBits(t sqltypes.Type) int {
	switch t {
	case sqltypes.Int2:
		return 16
	case sqltypes.Int4:
		return 32
	}
	return 64
}

// pgTypeName is the type's name as PostgreSQL writes it in messages.
func pgTypeName(t sqltypes.Type) string {
	switch t {
	case sqltypes.Timestamptz:
		return "timestamp with time zone"
	case sqltypes.Unknown:
		return "text"
	}
	return t.String()
}
