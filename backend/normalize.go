package backend

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// fits reports whether v has the Go type that values of a column of type t
// carry. nil fits every type.
func fits(t sqltypes.Type, v any) bool {
	if v == nil {
		return true
	}
	var ok bool
	switch t {
	case sqltypes.Bool:
		_, ok = v.(bool)
	case sqltypes.Int2, sqltypes.Int4, sqltypes.Int8, sqltypes.OID:
		_, ok = v.(int64)
	case sqltypes.Float4, sqltypes.Float8:
		_, ok = v.(float64)
	case sqltypes.Numeric:
		_, ok = v.(sqltypes.Decimal)
	case sqltypes.Date, sqltypes.Timestamp, sqltypes.Timestamptz:
		_, ok = v.(time.Time)
	default:
		_, ok = v.(string)
	}
	return ok
}

// textForm renders v as text the way a column of type t shows it. It is
// used when a column has to be reported as Text.
func textForm(t sqltypes.Type, v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return x
	case []byte:
		return string(x)
	case sqltypes.Decimal:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatFloat(x)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return formatTime(t, x)
	default:
		return fmt.Sprint(x)
	}
}

// formatFloat renders f in the shortest form that reads back exactly, the
// way PostgreSQL (extra_float_digits >= 1) prints double precision values.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func formatTime(t sqltypes.Type, x time.Time) string {
	switch t {
	case sqltypes.Date:
		return x.Format(time.DateOnly)
	case sqltypes.Timestamptz:
		return x.Format("2006-01-02 15:04:05.999999999Z07:00")
	default:
		return x.Format("2006-01-02 15:04:05.999999999")
	}
}

// conform reports as Text every column that holds a value that does not
// fit the column's type, converting that column's values to text form, so
// that callers can rely on the Go type of every value.
func conform(cols []Column, values [][]any) {
	for j := range cols {
		ok := true
		for _, row := range values {
			if !fits(cols[j].Type, row[j]) {
				ok = false
				break
			}
		}
		if ok {
			continue
		}
		orig := cols[j].Type
		cols[j].Type = sqltypes.Text
		for _, row := range values {
			row[j] = textForm(orig, row[j])
		}
	}
}

// decimalFromFloat renders f as an exact decimal without exponent.
func decimalFromFloat(f float64) (sqltypes.Decimal, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if s == "-0" {
		s = "0"
	}
	return sqltypes.Decimal(s), true
}

// canonicalDecimal checks that s is a plain decimal literal
// ([+-]digits[.digits], no exponent) and returns it in canonical form: no
// '+' sign, no superfluous leading zeros, no sign on zero, at least one
// digit before the point. Trailing fractional zeros are kept: they carry
// the scale.
func canonicalDecimal(s string) (sqltypes.Decimal, bool) {
	neg := false
	switch {
	case len(s) > 0 && s[0] == '-':
		neg = true
		s = s[1:]
	case len(s) > 0 && s[0] == '+':
		s = s[1:]
	}
	intPart, frac := s, ""
	hasPoint := false
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			intPart, frac, hasPoint = s[:i], s[i+1:], true
			break
		}
	}
	if intPart == "" && frac == "" {
		return "", false
	}
	allZero := true
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c < '0' || c > '9' {
				return "", false
			}
			if c != '0' {
				allZero = false
			}
		}
	}
	for len(intPart) > 1 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	if intPart == "" {
		intPart = "0"
	}
	out := intPart
	if hasPoint && frac != "" {
		out += "." + frac
	}
	if neg && !allZero {
		out = "-" + out
	}
	return sqltypes.Decimal(out), true
}
