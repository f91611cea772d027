package mechanisms

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	mrand "math/rand/v2"
	"sync"
)

// bufSize is how many random bytes a Rand reads from its source at a time.
// Reading in blocks amortises the cost of the crypto/rand call; it must be a
// multiple of 8.
const bufSize = 4096

// Rand is the source of randomness for every mechanism in this package.
//
// Production code must use Secure, which reads from crypto/rand. Every read
// error is returned to the caller wrapped in ErrRandomness ("fail closed"):
// a Rand never falls back to another source, and a sample that was in
// progress when the read failed is discarded, never released.
//
// A Rand buffers up to 4 KiB of source bytes plus up to 63 unused bits. The
// buffer is private to the Rand and each byte is used once. A Rand is safe
// for concurrent use by multiple goroutines; each mechanism call holds its
// lock for the duration of one sample.
type Rand struct {
	mu  sync.Mutex
	src source
}

// source is the unlocked state. All sampling algorithms are methods on
// *source and are only called with the owning Rand's mutex held.
type source struct {
	r     io.Reader
	buf   [bufSize]byte
	off   int // next unread byte in buf
	end   int // number of valid bytes in buf
	pool  uint64
	npool uint // number of unused random bits in pool (low bits)
}

// Secure returns a Rand that reads from crypto/rand. Each call returns a new,
// independent Rand; one Rand may also be shared by any number of goroutines.
// (Since Go 1.24, crypto/rand aborts the program rather than return an
// error; any error a reader does return still fails the operation.)
func Secure() *Rand { return NewRand(rand.Reader) }

// Seeded returns a DETERMINISTIC Rand (ChaCha8 keyed by seed).
//
// FOR TESTS ONLY. Its output is predictable by anyone who knows or guesses
// the seed, so noise drawn from it provides NO privacy whatsoever. Never use
// it to release data; production code must use Secure.
func Seeded(seed uint64) *Rand {
	var key [32]byte
	// Spread the 64-bit seed over the whole key with splitmix64 so that
	// nearby seeds give unrelated streams.
	x := seed
	for i := 0; i < 4; i++ {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		binary.LittleEndian.PutUint64(key[8*i:], z)
	}
	return NewRand(mrand.NewChaCha8(key))
}

// NewRand returns a Rand reading from r. Short reads are retried; any error
// (including io.EOF) makes the calling operation fail with ErrRandomness.
// r must deliver independent, uniformly distributed bytes; only
// crypto/rand.Reader (see Secure) is appropriate for releasing data.
func NewRand(r io.Reader) *Rand {
	return &Rand{src: source{r: r}}
}

// lock acquires the Rand for one operation; a nil Rand fails closed.
func (r *Rand) lock() (*source, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: nil *Rand", ErrRandomness)
	}
	r.mu.Lock()
	if r.src.r == nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: Rand has no reader (use Secure)", ErrRandomness)
	}
	return &r.src, nil
}

func (r *Rand) unlock() { r.mu.Unlock() }

// fill refills the byte buffer. On error the buffer is left empty.
func (s *source) fill() error {
	s.off, s.end = 0, 0
	if _, err := io.ReadFull(s.r, s.buf[:]); err != nil {
		return fmt.Errorf("%w: %v", ErrRandomness, err)
	}
	s.end = bufSize
	return nil
}

// word returns 64 uniformly random bits.
func (s *source) word() (uint64, error) {
	if s.off >= s.end {
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
	w := binary.LittleEndian.Uint64(s.buf[s.off:])
	s.off += 8
	return w, nil
}

// bit returns one uniformly random bit.
func (s *source) bit() (uint64, error) {
	if s.npool == 0 {
		w, err := s.word()
		if err != nil {
			return 0, err
		}
		s.pool, s.npool = w, 64
	}
	b := s.pool & 1
	s.pool >>= 1
	s.npool--
	return b, nil
}

// bitsN returns n ≤ 64 uniformly random bits as the low bits of a word.
func (s *source) bitsN(n uint) (uint64, error) {
	switch {
	case n == 0:
		return 0, nil
	case n == 64:
		return s.word()
	case n > 64:
		panic("mechanisms: bitsN > 64")
	}
	if s.npool >= n {
		v := s.pool & (1<<n - 1)
		s.pool >>= n
		s.npool -= n
		return v, nil
	}
	w, err := s.word()
	if err != nil {
		return 0, err
	}
	v := w & (1<<n - 1)
	// Keep the unused high bits of the fresh word (they are independent of v).
	s.pool, s.npool = w>>n, 64-n
	return v, nil
}

// maxRejections bounds rejection loops whose per-round rejection probability
// is at most 1/2 (or ~0.6 for a few samplers): 2^-300 chance of reaching it.
const maxRejections = 300

// uint64n returns a uniform integer in [0, n), n > 0 (Lemire's method with
// rejection, so exactly uniform).
func (s *source) uint64n(n uint64) (uint64, error) {
	if n == 0 {
		panic("mechanisms: uint64n(0)")
	}
	if n&(n-1) == 0 {
		return s.bitsN(uint(bits.TrailingZeros64(n)))
	}
	thresh := -n % n // 2^64 mod n
	for i := 0; i < maxRejections; i++ {
		w, err := s.word()
		if err != nil {
			return 0, err
		}
		hi, lo := bits.Mul64(w, n)
		if lo >= thresh {
			return hi, nil
		}
	}
	return 0, samplerErr("uniform integer rejection loop did not terminate")
}

// ---- Exported convenience methods. Each takes the lock for one call. ----

// Uint64 returns 64 uniformly random bits.
func (r *Rand) Uint64() (uint64, error) {
	s, err := r.lock()
	if err != nil {
		return 0, err
	}
	defer r.unlock()
	return s.word()
}

// Uint64n returns a uniformly random integer in [0, n). n must be > 0.
func (r *Rand) Uint64n(n uint64) (uint64, error) {
	if n == 0 {
		return 0, invalid("n must be > 0 for Uint64n")
	}
	s, err := r.lock()
	if err != nil {
		return 0, err
	}
	defer r.unlock()
	return s.uint64n(n)
}

// Bernoulli returns true with probability exactly p (p is read as the exact
// binary fraction it represents). p must be in [0, 1].
func (r *Rand) Bernoulli(p float64) (bool, error) {
	if math.IsNaN(p) || p < 0 || p > 1 {
		return false, invalid("probability p must be in [0, 1], got %v", p)
	}
	s, err := r.lock()
	if err != nil {
		return false, err
	}
	defer r.unlock()
	return s.bernFloat(p)
}

// BernoulliRat returns true with probability exactly num/den
// (0 ≤ num ≤ den, den > 0).
func (r *Rand) BernoulliRat(num, den uint64) (bool, error) {
	if den == 0 || num > den {
		return false, invalid("BernoulliRat needs 0 <= num <= den and den > 0, got %d/%d", num, den)
	}
	s, err := r.lock()
	if err != nil {
		return false, err
	}
	defer r.unlock()
	return s.bernRat(u64(num), u64(den))
}

// BernoulliExp returns true with probability exactly exp(-gamma), gamma ≥ 0
// finite (Canonne–Kamath–Steinke 2020, Algorithm 1, with gamma read as the
// exact binary fraction it represents).
func (r *Rand) BernoulliExp(gamma float64) (bool, error) {
	a, err := expArgFloat(gamma)
	if err != nil {
		return false, err
	}
	s, err := r.lock()
	if err != nil {
		return false, err
	}
	defer r.unlock()
	return s.bernExp(&a)
}

// Geometric returns k ≥ 0 with probability exactly (1-q)·q^k, q = exp(-lambda).
// lambda must be finite and ≥ 2^-56.
func (r *Rand) Geometric(lambda float64) (int64, error) {
	p, err := newGeomPlan(lambda)
	if err != nil {
		return 0, err
	}
	s, err := r.lock()
	if err != nil {
		return 0, err
	}
	defer r.unlock()
	g, err := s.geometric(p)
	return int64(g), err
}

// TwoSidedGeometric returns k ∈ ℤ with probability exactly
// (1-q)/(1+q)·q^|k|, q = exp(-lambda): the discrete Laplace distribution.
// lambda must be finite and ≥ 2^-56.
func (r *Rand) TwoSidedGeometric(lambda float64) (int64, error) {
	p, err := newGeomPlan(lambda)
	if err != nil {
		return 0, err
	}
	s, err := r.lock()
	if err != nil {
		return 0, err
	}
	defer r.unlock()
	return s.twoSided(p)
}

// DiscreteGaussian returns k ∈ ℤ with probability proportional to
// exp(-k²/(2v)), where v is sigma² rounded up to the next float64 (exact
// sampler, Canonne–Kamath–Steinke 2020). sigma must be in [2^-10, 2^56].
func (r *Rand) DiscreteGaussian(sigma float64) (int64, error) {
	p, err := newDGaussPlan(sigma)
	if err != nil {
		return 0, err
	}
	s, err := r.lock()
	if err != nil {
		return 0, err
	}
	defer r.unlock()
	return s.discreteGaussian(p)
}
