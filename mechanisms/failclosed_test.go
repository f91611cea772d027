package mechanisms

import (
	"errors"
	"io"
	"testing"
)

// failingReader always fails.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy source unavailable") }

// limitedReader serves n good bytes (from a seeded stream), then fails.
type limitedReader struct {
	src io.Reader
	n   int
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("entropy source exhausted")
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	k, err := l.src.Read(p)
	l.n -= k
	return k, err
}

// seededReader exposes a Seeded stream as an io.Reader for limitedReader.
type seededReader struct{ r *Rand }

func (s seededReader) Read(p []byte) (int, error) {
	for i := range p {
		w, err := s.r.Uint64()
		if err != nil {
			return i, err
		}
		p[i] = byte(w)
	}
	return len(p), nil
}

// operations lists every randomized entry point; each must fail when the
// randomness fails.
func operations(t *testing.T) map[string]func(r *Rand) error {
	t.Helper()
	lap, err := NewLaplace(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	gau, err := NewGaussian(1, 1e-5, 1)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := NewLaplaceThreshold(1, 1e-5, 1)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := NewOptimalSelection(1, 1e-5, 1)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]func(r *Rand) error{
		"Laplace.AddNoiseInt":    func(r *Rand) error { _, err := lap.AddNoiseInt(r, 5); return err },
		"Laplace.AddNoiseFloat":  func(r *Rand) error { _, err := lap.AddNoiseFloat(r, 5); return err },
		"Gaussian.AddNoiseInt":   func(r *Rand) error { _, err := gau.AddNoiseInt(r, 5); return err },
		"Gaussian.AddNoiseFloat": func(r *Rand) error { _, err := gau.AddNoiseFloat(r, 5); return err },
		"Exponential":            func(r *Rand) error { _, err := Exponential(r, 1, 1, []float64{1, 2, 3}); return err },
		"LaplaceThreshold.Keep":  func(r *Rand) error { _, err := lt.Keep(r, 1); return err },
		"OptimalSelection.Keep":  func(r *Rand) error { _, err := opt.Keep(r, 1); return err },
		"Rand.Uint64":            func(r *Rand) error { _, err := r.Uint64(); return err },
		"Rand.Uint64n":           func(r *Rand) error { _, err := r.Uint64n(10); return err },
		"Rand.Bernoulli":         func(r *Rand) error { _, err := r.Bernoulli(0.5); return err },
		"Rand.BernoulliRat":      func(r *Rand) error { _, err := r.BernoulliRat(1, 3); return err },
		"Rand.BernoulliExp":      func(r *Rand) error { _, err := r.BernoulliExp(0.5); return err },
		"Rand.Geometric":         func(r *Rand) error { _, err := r.Geometric(0.1); return err },
		"Rand.TwoSidedGeometric": func(r *Rand) error { _, err := r.TwoSidedGeometric(0.1); return err },
		"Rand.DiscreteGaussian":  func(r *Rand) error { _, err := r.DiscreteGaussian(3); return err },
	}
}

func TestFailClosed(t *testing.T) {
	for name, op := range operations(t) {
		r := NewRand(failingReader{})
		for i := 0; i < 3; i++ { // and it keeps failing
			if err := op(r); !errors.Is(err, ErrRandomness) {
				t.Errorf("%s with a failing reader: err = %v, want ErrRandomness", name, err)
			}
		}
		if err := op(nil); !errors.Is(err, ErrRandomness) {
			t.Errorf("%s with a nil *Rand: err = %v", name, err)
		}
		if err := op(&Rand{}); !errors.Is(err, ErrRandomness) {
			t.Errorf("%s with a zero Rand: err = %v", name, err)
		}
	}
}

// TestFailClosedMidStream: a source that fails after some good bytes makes
// the operation in progress fail (it is never completed with other bytes),
// and the error surfaces within a bounded number of operations.
func TestFailClosedMidStream(t *testing.T) {
	for name, op := range operations(t) {
		r := NewRand(&limitedReader{src: seededReader{Seeded(1)}, n: 3 * bufSize})
		failed := false
		for i := 0; i < 100000 && !failed; i++ {
			if err := op(r); err != nil {
				if !errors.Is(err, ErrRandomness) {
					t.Fatalf("%s: unexpected error %v", name, err)
				}
				failed = true
			}
		}
		if !failed {
			t.Errorf("%s: never failed after the source was exhausted", name)
		}
		// Once the source is dead, every further call fails.
		if err := op(r); err == nil {
			t.Errorf("%s: succeeded after the source failed", name)
		}
	}
}

func TestSecureIsNonDeterministic(t *testing.T) {
	m, err := NewLaplace(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.AddNoiseFloat(Secure(), 100)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.AddNoiseFloat(Secure(), 100)
	if err != nil {
		t.Fatal(err)
	}
	// Equal with probability ~2^-40.
	if a == b {
		t.Fatalf("two Secure() noisy values are equal: %v", a)
	}
	// Integer counts: ten draws from one Secure Rand are not all equal
	// (probability < 0.5^9 for ε = 1).
	r := Secure()
	first, _ := m.AddNoiseInt(r, 100)
	same := true
	for i := 0; i < 10; i++ {
		v, err := m.AddNoiseInt(r, 100)
		if err != nil {
			t.Fatal(err)
		}
		same = same && v == first
	}
	if same {
		t.Fatal("Secure() noisy counts are all equal")
	}
}
