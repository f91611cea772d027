package mechanisms

import (
	"math"
	"math/bits"
)

// u128 is an unsigned 128-bit integer, used for exact rational arithmetic in
// the samplers (products of a 53-bit mantissa and a 64-bit integer, squares
// of 63-bit integers).
type u128 struct{ hi, lo uint64 }

func u64(x uint64) u128 { return u128{lo: x} }

func mul64(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

// pow2 returns 2^n for n < 128.
func pow2(n uint) u128 {
	if n >= 64 {
		return u128{hi: 1 << (n - 64)}
	}
	return u128{lo: 1 << n}
}

func (a u128) isZero() bool { return a.hi == 0 && a.lo == 0 }

func (a u128) cmp(b u128) int {
	switch {
	case a.hi < b.hi:
		return -1
	case a.hi > b.hi:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	return u128{hi, lo}
}

func (a u128) sub(b u128) u128 {
	lo, c := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, c)
	return u128{hi, lo}
}

// shl shifts left by n < 128 (bits shifted out are lost).
func (a u128) shl(n uint) u128 {
	switch {
	case n == 0:
		return a
	case n >= 64:
		return u128{hi: a.lo << (n - 64)}
	}
	return u128{hi: a.hi<<n | a.lo>>(64-n), lo: a.lo << n}
}

// shr shifts right by n < 128.
func (a u128) shr(n uint) u128 {
	switch {
	case n == 0:
		return a
	case n >= 64:
		return u128{lo: a.hi >> (n - 64)}
	}
	return u128{hi: a.hi >> n, lo: a.lo>>n | a.hi<<(64-n)}
}

// low returns a mod 2^n for n < 128.
func (a u128) low(n uint) u128 {
	if n >= 64 {
		return u128{hi: a.hi & (1<<(n-64) - 1), lo: a.lo}
	}
	return u128{lo: a.lo & (1<<n - 1)}
}

func (a u128) bitLen() int {
	if a.hi != 0 {
		return 64 + bits.Len64(a.hi)
	}
	return bits.Len64(a.lo)
}

// neg returns the two's complement negation (for signed use).
func (a u128) neg() u128 { return u128{}.sub(a) }

// negative reports whether a, read as a two's complement signed value, is < 0.
func (a u128) negative() bool { return a.hi>>63 == 1 }

// float64 returns a rounded to the nearest float64 (ties to even).
func (a u128) float64() float64 {
	if a.hi == 0 {
		return float64(a.lo) // Go converts with round-to-nearest-even
	}
	n := uint(a.bitLen())
	shift := n - 64
	top := a.shr(shift).lo
	// Sticky bit: any 1 among the discarded bits. With 11 guard bits below
	// the 53 kept ones, folding it into bit 0 keeps the rounding correct.
	if !a.low(shift).isZero() {
		top |= 1
	}
	f := float64(top)
	return math.Ldexp(f, int(shift))
}
