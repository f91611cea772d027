package pgwire

import (
	"encoding/binary"
	"errors"
	"strings"
)

// maxNumericDigits bounds the digits before and, separately, after the
// decimal point of a numeric parameter. PostgreSQL allows 131072 and 16383,
// but a 10-byte binary numeric (or "1e131071") would then become 131072
// characters of text: the bound keeps decoding proportional to input.
const maxNumericDigits = 1000

// Binary numeric sign words (src/backend/utils/adt/numeric.c).
const (
	numericPos  = 0x0000
	numericNeg  = 0x4000
	numericNaN  = 0xC000
	numericPInf = 0xD000
	numericNInf = 0xF000
)

// numericKind tells finite numbers from PostgreSQL's special values.
type numericKind uint8

const (
	numericFinite numericKind = iota
	numericIsNaN
	numericIsPosInf
	numericIsNegInf
)

// numeric is a decimal number split the way PostgreSQL prints it: the
// integer digits without leading zeros ("" for a zero integer part) and
// the fraction digits, as many as the display scale. Zero is never negative.
type numeric struct {
	kind numericKind
	neg  bool
	intg string
	frac string
}

// Errors of numeric parsing; callers turn them into SQLSTATEs.
var (
	errNumericSyntax = errors.New("invalid numeric syntax")
	errNumericRange  = errors.New("numeric value out of range")
)

// parseNumericText parses numeric input as PostgreSQL's numeric_in does:
// optional white space and sign, digits with an optional decimal point,
// an optional exponent, and "NaN", "Infinity", "inf" in any case. The
// display scale is the number of fraction digits after applying the
// exponent ("1.50" keeps scale 2, "1.5e3" has scale 0).
func parseNumericText(s string) (numeric, error) {
	s = strings.Trim(s, " \t\n\r\v\f")
	switch strings.ToLower(s) {
	case "nan", "+nan", "-nan":
		return numeric{kind: numericIsNaN}, nil
	case "infinity", "+infinity", "inf", "+inf":
		return numeric{kind: numericIsPosInf}, nil
	case "-infinity", "-inf":
		return numeric{kind: numericIsNegInf}, nil
	}
	var n numeric
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		n.neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intDigits := s[start:i]
	var fracDigits string
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		fracDigits = s[start:i]
	}
	if intDigits == "" && fracDigits == "" {
		return numeric{}, errNumericSyntax
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		start = i
		for i < len(s) && isDigit(s[i]) {
			if exp <= maxNumericDigits { // stop growing; the range check follows
				exp = exp*10 + int(s[i]-'0')
			}
			i++
		}
		if i == start {
			return numeric{}, errNumericSyntax
		}
		if exp > maxNumericDigits {
			return numeric{}, errNumericRange
		}
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return numeric{}, errNumericSyntax
	}
	// Move the decimal point by the exponent.
	all := intDigits + fracDigits
	point := len(intDigits) + exp
	switch {
	case point >= len(all):
		n.intg = all + strings.Repeat("0", point-len(all))
	case point <= 0:
		n.frac = strings.Repeat("0", -point) + all
	default:
		n.intg, n.frac = all[:point], all[point:]
	}
	n.intg = strings.TrimLeft(n.intg, "0")
	return n.finish()
}

// finish checks the digit bounds and normalizes the sign of zero.
func (n numeric) finish() (numeric, error) {
	if len(n.intg) > maxNumericDigits || len(n.frac) > maxNumericDigits {
		return numeric{}, errNumericRange
	}
	if n.intg == "" && strings.Trim(n.frac, "0") == "" {
		n.neg = false
	}
	return n, nil
}

// String returns the number as PostgreSQL's numeric_out prints it.
func (n numeric) String() string {
	return string(n.appendText(nil))
}

func (n numeric) appendText(dst []byte) []byte {
	switch n.kind {
	case numericIsNaN:
		return append(dst, "NaN"...)
	case numericIsPosInf:
		return append(dst, "Infinity"...)
	case numericIsNegInf:
		return append(dst, "-Infinity"...)
	}
	if n.neg {
		dst = append(dst, '-')
	}
	if n.intg == "" {
		dst = append(dst, '0')
	} else {
		dst = append(dst, n.intg...)
	}
	if n.frac != "" {
		dst = append(dst, '.')
		dst = append(dst, n.frac...)
	}
	return dst
}

// appendBinary appends numeric_send's representation: ndigits, weight,
// sign and display scale as 16-bit words, then the base-10000 digits, with
// leading and trailing zero digits stripped (zero has no digits).
func (n numeric) appendBinary(dst []byte) []byte {
	var sign uint16
	switch n.kind {
	case numericIsNaN:
		sign = numericNaN
	case numericIsPosInf:
		sign = numericPInf
	case numericIsNegInf:
		sign = numericNInf
	}
	if n.kind != numericFinite {
		dst = append(dst, 0, 0, 0, 0) // no digits, weight 0
		dst = binary.BigEndian.AppendUint16(dst, sign)
		if n.kind == numericIsNaN {
			return append(dst, 0, 0)
		}
		// PostgreSQL 14+ sends infinities with display scale 32.
		return append(dst, 0, 32)
	}
	intPad := (4 - len(n.intg)%4) % 4
	fracPad := (4 - len(n.frac)%4) % 4
	groups := make([]uint16, 0, (intPad+len(n.intg)+len(n.frac)+fracPad)/4)
	digitAt := func(s string, pad, i int, padLeft bool) uint16 {
		if padLeft {
			i -= pad
		}
		if i < 0 || i >= len(s) {
			return 0
		}
		return uint16(s[i] - '0')
	}
	for i := 0; i < intPad+len(n.intg); i += 4 {
		var g uint16
		for j := range 4 {
			g = g*10 + digitAt(n.intg, intPad, i+j, true)
		}
		groups = append(groups, g)
	}
	weight := len(groups) - 1
	for i := 0; i < len(n.frac); i += 4 {
		var g uint16
		for j := range 4 {
			g = g*10 + digitAt(n.frac, fracPad, i+j, false)
		}
		groups = append(groups, g)
	}
	for len(groups) > 0 && groups[0] == 0 {
		groups = groups[1:]
		weight--
	}
	for len(groups) > 0 && groups[len(groups)-1] == 0 {
		groups = groups[:len(groups)-1]
	}
	sign = numericPos
	if len(groups) == 0 {
		weight = 0
	} else if n.neg {
		sign = numericNeg
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(groups)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(weight)))
	dst = binary.BigEndian.AppendUint16(dst, sign)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(n.frac)))
	for _, g := range groups {
		dst = binary.BigEndian.AppendUint16(dst, g)
	}
	return dst
}

// decodeNumericBinary reads numeric_recv's input. Like PostgreSQL it
// truncates digits that the display scale hides. Digit counts beyond
// maxNumericDigits are refused with errNumericRange.
func decodeNumericBinary(b []byte) (numeric, error) {
	if len(b) < 8 {
		return numeric{}, errNumericSyntax
	}
	ndigits := int(int16(binary.BigEndian.Uint16(b)))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	if ndigits < 0 || len(b) != 8+2*ndigits {
		return numeric{}, errNumericSyntax
	}
	switch sign {
	case numericPos, numericNeg:
	case numericNaN:
		return numeric{kind: numericIsNaN}, nil
	case numericPInf:
		return numeric{kind: numericIsPosInf}, nil
	case numericNInf:
		return numeric{kind: numericIsNegInf}, nil
	default:
		return numeric{}, errNumericSyntax
	}
	if dscale > 0x3FFF {
		return numeric{}, errNumericSyntax
	}
	digits := make([]int, ndigits)
	for i := range digits {
		d := int(int16(binary.BigEndian.Uint16(b[8+2*i:])))
		if d < 0 || d >= 10000 {
			return numeric{}, errNumericSyntax
		}
		digits[i] = d
	}
	for len(digits) > 0 && digits[0] == 0 {
		digits = digits[1:]
		weight--
	}
	if dscale > maxNumericDigits || (len(digits) > 0 && weight >= maxNumericDigits/4) {
		return numeric{}, errNumericRange
	}
	digitAt := func(i int) int {
		if i < 0 || i >= len(digits) {
			return 0
		}
		return digits[i]
	}
	n := numeric{neg: sign == numericNeg}
	var sb strings.Builder
	if len(digits) > 0 && weight >= 0 {
		for i := 0; i <= weight; i++ {
			appendDigitGroup(&sb, digitAt(i))
		}
		n.intg = strings.TrimLeft(sb.String(), "0")
	}
	sb.Reset()
	for pos := -1; sb.Len() < dscale; pos-- {
		appendDigitGroup(&sb, digitAt(weight-pos))
	}
	n.frac = sb.String()[:dscale]
	return n.finish()
}

func appendDigitGroup(sb *strings.Builder, d int) {
	sb.WriteByte(byte('0' + d/1000))
	sb.WriteByte(byte('0' + d/100%10))
	sb.WriteByte(byte('0' + d/10%10))
	sb.WriteByte(byte('0' + d%10))
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
