package pgwire

import (
	"encoding/hex"
	"math"
	"math/big"
	"strconv"
	"strings"
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

// appendFloat formats f like PostgreSQL's float8out (bits 64) or float4out
// (bits 32) with extra_float_digits > 0, the default since PostgreSQL 12:
// the shortest decimal that reads back as the same value, in fixed
// notation for decimal exponents -4 ≤ e < 15 (float4: < 6) and as
// d.ddde±XX otherwise; "NaN", "Infinity", "-Infinity".
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits)
	limit, mantBits := 15, 53
	if bits == 32 {
		limit, mantBits = 6, 24
	}
	if math.Abs(f) >= math.Ldexp(1, mantBits) {
		// Only here can the shortest decimal lie exactly halfway between
		// two floats; see excludeBounds. Such values always print in
		// exponent form.
		return excludeBounds(dst, f, bits, mantBits, sci)
	}
	if exp := sciExponent(sci); exp >= -4 && exp < limit {
		return strconv.AppendFloat(dst, f, 'f', -1, bits)
	}
	// Go, like C's printf and PostgreSQL, writes at least two exponent
	// digits: 1e+20, 1.5e-07.
	return append(dst, sci...)
}

// excludeBounds appends f (|f| ≥ 2^mantBits) in exponent form the way
// PostgreSQL does. PostgreSQL's Ryu (src/common/d2s.c, f2s.c) never accepts
// a decimal that lies exactly on the boundary of the interval that rounds
// to f, where Go's shortest formatting accepts it when f's significand is
// even (round-half-even input would read it back as f). For such values
// PostgreSQL prints more digits: 4.6155032534510003e+17 where Go prints
// 4.615503253451e+17. sci is Go's shortest form of f.
func excludeBounds(dst []byte, f float64, bits, mantBits int, sci []byte) []byte {
	neg := f < 0
	abs := math.Abs(f)
	// |f| = m·2^e with m the integer significand; e ≥ 1 here, so the
	// boundaries (2m±1)·2^(e-1) are integers. Work in quarters so that the
	// closer lower boundary below a power of two, (4m-1)·2^(e-2), is one too.
	fr, exp := math.Frexp(abs)
	m := new(big.Int).SetUint64(uint64(math.Ldexp(fr, mantBits)))
	e := uint(exp - mantBits)
	two := big.NewInt(2)
	hi := new(big.Int).Lsh(new(big.Int).Add(new(big.Int).Mul(m, two), big.NewInt(1)), e+1)
	var lo *big.Int
	if m.Cmp(new(big.Int).Lsh(big.NewInt(1), uint(mantBits-1))) == 0 {
		lo = new(big.Int).Lsh(new(big.Int).Sub(new(big.Int).Lsh(m, 2), big.NewInt(1)), e)
	} else {
		lo = new(big.Int).Lsh(new(big.Int).Sub(new(big.Int).Mul(m, two), big.NewInt(1)), e+1)
	}
	// strictlyInside reports whether digits·10^k lies strictly between the
	// boundaries.
	strictlyInside := func(digits *big.Int, k int) bool {
		v := new(big.Int).Lsh(digits, 2)
		l, h := lo, hi
		if k >= 0 {
			v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))
		} else {
			p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-k)), nil)
			l, h = new(big.Int).Mul(lo, p), new(big.Int).Mul(hi, p)
		}
		return v.Cmp(l) > 0 && v.Cmp(h) < 0
	}

	digits, k := sciDigits(sci)
	if strictlyInside(digits, k) {
		return append(dst, sci...)
	}
	maxDigits := 17
	if bits == 32 {
		maxDigits = 9
	}
	for n := len(digits.String()); n <= maxDigits; n++ {
		var tmp [32]byte
		rounded, k := sciDigits(strconv.AppendFloat(tmp[:0], abs, 'e', n-1, bits))
		for _, d := range []int64{0, -1, 1} {
			c := new(big.Int).Add(rounded, big.NewInt(d))
			if strictlyInside(c, k) {
				if neg {
					dst = append(dst, '-')
				}
				return appendSci(dst, c.String(), k)
			}
		}
	}
	return append(dst, sci...) // not reached: 17 (9) digits always fit
}

// sciDigits splits strconv's 'e' format (no sign) into the integer of its
// digits and the power of ten of the last digit: 4.615e+17 → 4615, 14.
func sciDigits(sci []byte) (*big.Int, int) {
	if len(sci) > 0 && sci[0] == '-' {
		sci = sci[1:]
	}
	var digits []byte
	i := 0
	for ; i < len(sci) && sci[i] != 'e'; i++ {
		if sci[i] != '.' {
			digits = append(digits, sci[i])
		}
	}
	d, _ := new(big.Int).SetString(string(digits), 10)
	return d, sciExponent(sci) - (len(digits) - 1)
}

// appendSci writes digits·10^k as d.ddde±XX without trailing zeros.
func appendSci(dst []byte, digits string, k int) []byte {
	exp := k + len(digits) - 1
	digits = strings.TrimRight(digits, "0")
	if digits == "" {
		digits = "0"
	}
	dst = append(dst, digits[0])
	if len(digits) > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	if exp < 0 {
		dst = append(dst, '-')
		exp = -exp
	} else {
		dst = append(dst, '+')
	}
	return appendPadded(dst, exp, 2)
}

// sciExponent returns the exponent of a number in strconv's 'e' format.
func sciExponent(sci []byte) int {
	i := len(sci) - 1
	for i >= 0 && sci[i] != 'e' {
		i--
	}
	exp := 0
	for _, d := range sci[i+2:] {
		exp = exp*10 + int(d-'0')
	}
	if i+1 < len(sci) && sci[i+1] == '-' {
		return -exp
	}
	return exp
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
