package pgwire

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// appendFloat formats f like PostgreSQL's float8out (bits 64) or float4out
// (bits 32) with extra_float_digits > 0, the default since PostgreSQL 12:
// the shortest decimal that reads back as the same value, in fixed
// notation for decimal exponents -4 ≤ e < 15 (float4: < 6) and as
// d.ddde±XX otherwise; "NaN", "Infinity", "-Infinity".
//
// strconv's shortest formatting agrees with PostgreSQL's Ryu
// (src/common/d2s.c, f2s.c) except in two rare cases, which go through
// pgShortest: PostgreSQL never accepts a decimal lying exactly on the
// boundary of the interval that rounds to f (it prints
// 4.6155032534510003e+17 where strconv prints 4.615503253451e+17), and it
// breaks exact ties between two shortest candidates to even (float4
// 2^-12 prints as 0.00024414062, not 0.00024414063).
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	limit, mantBits := 15, 53
	if bits == 32 {
		limit, mantBits = 6, 24
	}
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits)
	if f != 0 && needsExactPath(f, bits, mantBits, sci) {
		digits, k := pgShortest(math.Abs(f), bits, countDigits(sci))
		if f < 0 {
			dst = append(dst, '-')
		}
		return appendDecimal(dst, digits, k, limit)
	}
	if exp := sciExponent(sci); exp >= -4 && exp < limit {
		return strconv.AppendFloat(dst, f, 'f', -1, bits)
	}
	// strconv, like C's printf and PostgreSQL, writes at least two
	// exponent digits: 1e+20, 1.5e-07.
	return append(dst, sci...)
}

// needsExactPath reports whether strconv's shortest form sci of f may
// differ from PostgreSQL's. Boundaries of the rounding interval are short
// decimals only for |f| ≥ 2^mantBits (below, they have more digits than any
// shortest form); an exact tie needs the exact value of f to have one digit
// more than sci, a 5.
func needsExactPath(f float64, bits, mantBits int, sci []byte) bool {
	if math.Abs(f) >= math.Ldexp(1, mantBits) {
		return true
	}
	var tmp [40]byte
	longer := strconv.AppendFloat(tmp[:0], f, 'e', countDigits(sci), bits)
	return longer[bytes.IndexByte(longer, 'e')-1] == '5'
}

// pgShortest computes what PostgreSQL's Ryu prints for abs > 0: the fewest
// digits (at least from) of a decimal strictly inside the interval that
// rounds to abs, choosing the candidate nearest abs with ties to even. The
// result is digits·10^k.
func pgShortest(abs float64, bits, from int) (string, int) {
	m, e, asym := decompose(abs, bits)
	// The interval's bounds, times 4 so that both are integers times a
	// power of two: hi = (2m+1)·2^(e-1), lo = (2m-1)·2^(e-1), or, just above
	// a power of two where the next float down is closer, (4m-1)·2^(e-2).
	bm := new(big.Int).SetUint64(m)
	hi := new(big.Int).Add(new(big.Int).Lsh(bm, 1), big.NewInt(1))
	hiShift := e + 1
	var lo *big.Int
	loShift := e + 1
	if asym {
		lo = new(big.Int).Sub(new(big.Int).Lsh(bm, 2), big.NewInt(1))
		loShift = e
	} else {
		lo = new(big.Int).Sub(new(big.Int).Lsh(bm, 1), big.NewInt(1))
	}
	inside := func(c *big.Int, k int) bool {
		return cmpScaled(c, k, lo, loShift) > 0 && cmpScaled(c, k, hi, hiShift) < 0
	}
	maxDigits := 17
	if bits == 32 {
		maxDigits = 9
	}
	for n := from; n <= maxDigits; n++ {
		var tmp [40]byte
		// strconv rounds to n digits correctly, exact ties to even.
		rounded, k := sciDigits(strconv.AppendFloat(tmp[:0], abs, 'e', n-1, bits))
		for _, d := range []int64{0, -1, 1} {
			c := new(big.Int).Add(rounded, big.NewInt(d))
			if c.Sign() > 0 && inside(c, k) {
				return c.String(), k
			}
		}
	}
	var tmp [40]byte
	rounded, k := sciDigits(strconv.AppendFloat(tmp[:0], abs, 'e', maxDigits-1, bits))
	return rounded.String(), k
}

// decompose splits a positive finite float into abs = m·2^e with m its
// integer significand. asym is true when the next float down is half as far
// as the next float up (m is a power of two above the smallest normal).
func decompose(abs float64, bits int) (m uint64, e int, asym bool) {
	if bits == 32 {
		b := math.Float32bits(float32(abs))
		exp, frac := int(b>>23&0xff), uint64(b&(1<<23-1))
		if exp == 0 {
			return frac, -149, false
		}
		return frac | 1<<23, exp - 150, frac == 0 && exp > 1
	}
	b := math.Float64bits(abs)
	exp, frac := int(b>>52&0x7ff), b&(1<<52-1)
	if exp == 0 {
		return frac, -1074, false
	}
	return frac | 1<<52, exp - 1075, frac == 0 && exp > 1
}

// cmpScaled compares 4·c·10^k with x·2^s.
func cmpScaled(c *big.Int, k int, x *big.Int, s int) int {
	l := new(big.Int).Lsh(c, 2)
	r := new(big.Int).Set(x)
	if k >= 0 {
		l.Mul(l, pow10(k))
	} else {
		r.Mul(r, pow10(-k))
	}
	if s >= 0 {
		r.Lsh(r, uint(s))
	} else {
		l.Lsh(l, uint(-s))
	}
	return l.Cmp(r)
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// countDigits returns the number of mantissa digits in strconv's 'e' form.
func countDigits(sci []byte) int {
	n := 0
	for _, b := range sci {
		if b == 'e' {
			break
		}
		if b >= '0' && b <= '9' {
			n++
		}
	}
	return n
}

// sciDigits splits strconv's 'e' form into the integer of its mantissa
// digits and the power of ten of the last digit: 4.615e+17 → 4615, 14.
func sciDigits(sci []byte) (*big.Int, int) {
	var digits []byte
	for _, b := range sci {
		if b == 'e' {
			break
		}
		if b >= '0' && b <= '9' {
			digits = append(digits, b)
		}
	}
	d, _ := new(big.Int).SetString(string(digits), 10)
	return d, sciExponent(sci) - (len(digits) - 1)
}

// sciExponent returns the exponent of a number in strconv's 'e' form.
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

// appendDecimal writes digits·10^k (digits without sign, no leading
// zeros) in fixed notation when its decimal exponent is in [-4, limit),
// else as d.ddde±XX, without trailing zeros either way.
func appendDecimal(dst []byte, digits string, k, limit int) []byte {
	trimmed := strings.TrimRight(digits, "0")
	k += len(digits) - len(trimmed)
	digits = trimmed
	if digits == "" {
		return append(dst, '0')
	}
	exp := k + len(digits) - 1
	if exp >= -4 && exp < limit {
		switch point := len(digits) + k; {
		case k >= 0:
			dst = append(dst, digits...)
			for range k {
				dst = append(dst, '0')
			}
		case point > 0:
			dst = append(dst, digits[:point]...)
			dst = append(dst, '.')
			dst = append(dst, digits[point:]...)
		default:
			dst = append(dst, '0', '.')
			for range -point {
				dst = append(dst, '0')
			}
			dst = append(dst, digits...)
		}
		return dst
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
