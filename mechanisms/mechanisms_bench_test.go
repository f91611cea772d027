package mechanisms

import (
	"testing"
)

// Benchmarks use Secure() (crypto/rand), as production does.

func BenchmarkLaplaceInt(b *testing.B) {
	m, err := NewLaplace(1, 1)
	if err != nil {
		b.Fatal(err)
	}
	r := Secure()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.AddNoiseInt(r, 1000); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLaplaceFloat(b *testing.B) {
	m, err := NewLaplace(1, 1)
	if err != nil {
		b.Fatal(err)
	}
	r := Secure()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.AddNoiseFloat(r, 1234.5); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGaussianFloat(b *testing.B) {
	m, err := NewGaussian(1, 1e-5, 1)
	if err != nil {
		b.Fatal(err)
	}
	r := Secure()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.AddNoiseFloat(r, 1234.5); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGaussianInt(b *testing.B) {
	m, err := NewGaussian(1, 1e-5, 1)
	if err != nil {
		b.Fatal(err)
	}
	r := Secure()
	if _, err := m.AddNoiseInt(r, 0); err != nil { // calibrate outside the timer
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.AddNoiseInt(r, 1000); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExponential10(b *testing.B) {
	scores := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	r := Secure()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Exponential(r, 1, 1, scores); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLaplaceFloatParallel(b *testing.B) {
	m, err := NewLaplace(1, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		r := Secure()
		for pb.Next() {
			if _, err := m.AddNoiseFloat(r, 1234.5); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
