package mechanisms

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestSeededIsDeterministic(t *testing.T) {
	a, b, c := Seeded(7), Seeded(7), Seeded(8)
	same, diff := true, false
	for i := 0; i < 100; i++ {
		x, err1 := a.Uint64()
		y, err2 := b.Uint64()
		z, err3 := c.Uint64()
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatal(err1, err2, err3)
		}
		same = same && x == y
		diff = diff || x != z
	}
	if !same || !diff {
		t.Fatalf("Seeded: same seed same stream = %v, different seeds differ = %v", same, diff)
	}
}

func TestUint64nUniform(t *testing.T) {
	r := Seeded(1)
	for _, n := range []uint64{1, 2, 7, 10, 1 << 20, 3<<61 + 1} {
		const draws = 70000
		bins := uint64(7)
		if n < bins {
			bins = n
		}
		obs := make([]int64, bins)
		for i := 0; i < draws; i++ {
			v, err := r.Uint64n(n)
			if err != nil {
				t.Fatal(err)
			}
			if v >= n {
				t.Fatalf("Uint64n(%d) = %d", n, v)
			}
			// Bin by value range (equal-width bins; n divisible cases exact).
			obs[int(new(big.Int).Div(new(big.Int).Mul(new(big.Int).SetUint64(v), new(big.Int).SetUint64(bins)), new(big.Int).SetUint64(n)).Int64())]++
		}
		if bins < 2 {
			continue
		}
		probs := make([]float64, bins)
		for i := range probs {
			// Number of v in [0,n) with ⌊v·bins/n⌋ = i.
			lo := new(big.Int).Div(new(big.Int).Add(new(big.Int).Mul(big.NewInt(int64(i)), new(big.Int).SetUint64(n)), new(big.Int).SetUint64(bins-1)), new(big.Int).SetUint64(bins))
			hi := new(big.Int).Div(new(big.Int).Add(new(big.Int).Mul(big.NewInt(int64(i+1)), new(big.Int).SetUint64(n)), new(big.Int).SetUint64(bins-1)), new(big.Int).SetUint64(bins))
			cnt, _ := new(big.Float).SetInt(new(big.Int).Sub(hi, lo)).Float64()
			probs[i] = cnt / float64(n)
		}
		chiSquareTest(t, "Uint64n", obs, probs)
	}
}

func TestBernoulliExactRates(t *testing.T) {
	r := Seeded(2)
	const n = 100000
	for _, p := range []float64{0, 1, 0.5, 0.3, 0.999, 1e-3, 0x1p-80} {
		k := 0
		for i := 0; i < n; i++ {
			b, err := r.Bernoulli(p)
			if err != nil {
				t.Fatal(err)
			}
			if b {
				k++
			}
		}
		checkProportion(t, "Bernoulli", k, n, p)
	}
	for _, q := range [][2]uint64{{1, 3}, {2, 7}, {0, 5}, {5, 5}, {1<<62 + 1, 3 << 61}} {
		k := 0
		for i := 0; i < n; i++ {
			b, err := r.BernoulliRat(q[0], q[1])
			if err != nil {
				t.Fatal(err)
			}
			if b {
				k++
			}
		}
		checkProportion(t, "BernoulliRat", k, n, float64(q[0])/float64(q[1]))
	}
	for _, g := range []float64{0, 1e-30, 0.25, 0.5, 1, 1.5, 2.75, 7, 1e6} {
		k := 0
		for i := 0; i < n; i++ {
			b, err := r.BernoulliExp(g)
			if err != nil {
				t.Fatal(err)
			}
			if b {
				k++
			}
		}
		checkProportion(t, "BernoulliExp", k, n, math.Exp(-g))
	}
}

func TestBernoulliRejectsBadProbabilities(t *testing.T) {
	r := Seeded(3)
	for _, p := range []float64{-0.1, 1.1, math.NaN(), math.Inf(1)} {
		if _, err := r.Bernoulli(p); err == nil {
			t.Errorf("Bernoulli(%v) accepted", p)
		}
	}
	if _, err := r.BernoulliRat(3, 2); err == nil {
		t.Error("BernoulliRat(3,2) accepted")
	}
	for _, g := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := r.BernoulliExp(g); err == nil {
			t.Errorf("BernoulliExp(%v) accepted", g)
		}
	}
	if _, err := r.Uint64n(0); err == nil {
		t.Error("Uint64n(0) accepted")
	}
}

func TestGeometricChiSquare(t *testing.T) {
	r := Seeded(4)
	for _, lambda := range []float64{0.05, 0.3, 1, 2.5, 40} {
		const n = 60000
		q := math.Exp(-lambda)
		samples := make([]int64, n)
		for i := range samples {
			g, err := r.Geometric(lambda)
			if err != nil {
				t.Fatal(err)
			}
			if g < 0 {
				t.Fatalf("negative geometric %d", g)
			}
			samples[i] = g
		}
		// Bins up to where the expected count stays ≥ 5.
		hi := int64(0)
		for float64(n)*(1-q)*math.Pow(q, float64(hi+1)) >= 5 && hi < 60 {
			hi++
		}
		if hi == 0 {
			hi = 1
		}
		pmf := func(k int64) float64 {
			if k < 0 {
				return 0
			}
			return (1 - q) * math.Pow(q, float64(k))
		}
		obs, probs := binIntegers(samples, 0, hi, pmf, 100000)
		if hi == 1 { // λ = 40: P(G ≥ 1) = e^-40, all zeros expected
			if obs[1] != 0 {
				t.Errorf("Geometric(%v): %d non-zero samples", lambda, obs[1])
			}
			continue
		}
		chiSquareTest(t, "Geometric", obs, probs)
	}
}

// TestGeometricTinyLambdaMoments checks the regime used by the float
// mechanisms (λ ≈ 2^-40): λ·G is then Exp(1) up to O(λ).
func TestGeometricTinyLambdaMoments(t *testing.T) {
	r := Seeded(5)
	lambda := 0x1.3p-40
	const n = 100000
	xs := make([]float64, n)
	for i := range xs {
		g, err := r.Geometric(lambda)
		if err != nil {
			t.Fatal(err)
		}
		xs[i] = float64(g) * lambda // ≈ Exp(1)
	}
	mean, variance := moments(xs)
	checkMean(t, "geometric·λ", mean, 1, 1, n)
	checkVariance(t, "geometric·λ", variance, 1, 9, n) // Exp(1): m4 = 9
	// Kolmogorov–Smirnov-like check through deciles of Exp(1).
	obs := make([]int64, 10)
	for _, x := range xs {
		d := int(10 * (1 - math.Exp(-x)))
		if d > 9 {
			d = 9
		}
		obs[d]++
	}
	probs := make([]float64, 10)
	for i := range probs {
		probs[i] = 0.1
	}
	chiSquareTest(t, "geometric deciles", obs, probs)
}

func TestGeometricRejectsBadLambda(t *testing.T) {
	r := Seeded(6)
	for _, l := range []float64{0, -1, math.NaN(), math.Inf(1), 0x1p-60} {
		if _, err := r.Geometric(l); err == nil {
			t.Errorf("Geometric(%v) accepted", l)
		}
	}
}

func TestU128Float64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		a := u128{hi: rng.Uint64() >> uint(rng.IntN(64)), lo: rng.Uint64()}
		if i%3 == 0 {
			a.hi = 0
		}
		bi := new(big.Int).Lsh(new(big.Int).SetUint64(a.hi), 64)
		bi.Or(bi, new(big.Int).SetUint64(a.lo))
		want, _ := new(big.Float).SetInt(bi).Float64() // nearest even
		if got := a.float64(); got != want {
			t.Fatalf("u128{%x,%x}.float64() = %v, want %v", a.hi, a.lo, got, want)
		}
	}
	// Ties to even at the 2^64 boundary and beyond.
	for _, a := range []u128{{hi: 1, lo: 1 << 11}, {hi: 1, lo: 3 << 11}, {hi: 1 << 20, lo: 1 << 31}} {
		bi := new(big.Int).Lsh(new(big.Int).SetUint64(a.hi), 64)
		bi.Or(bi, new(big.Int).SetUint64(a.lo))
		want, _ := new(big.Float).SetInt(bi).Float64()
		if got := a.float64(); got != want {
			t.Fatalf("tie u128{%x,%x}.float64() = %v, want %v", a.hi, a.lo, got, want)
		}
	}
}

// TestSnapAddExact compares snapAdd with an exact big.Float computation.
func TestSnapAddExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		gexp := rng.IntN(200) - 100
		x := math.Ldexp(rng.Float64()-0.5, rng.IntN(300)-120)
		if i%10 == 0 {
			x = math.Ldexp(1, gexp+126+rng.IntN(3)) * float64(1-2*rng.IntN(2))
		}
		k := int64(rng.Uint64() >> uint(rng.IntN(64)))
		if rng.IntN(2) == 0 {
			k = -k
		}
		got, err := snapAdd(x, gexp, k)
		if err != nil {
			t.Fatal(err)
		}
		g := new(big.Float).SetMantExp(big.NewFloat(1), gexp)
		xq := math.Round(math.Ldexp(x, -gexp))
		exact := new(big.Float).SetPrec(1000).SetFloat64(xq)
		exact.Add(exact, new(big.Float).SetPrec(1000).SetInt64(k))
		exact.Mul(exact, g)
		want, _ := exact.Float64() // nearest even
		if got != want {
			t.Fatalf("snapAdd(%v, %d, %d) = %v, want %v", x, gexp, k, got, want)
		}
		if math.Mod(got, math.Ldexp(1, gexp)) != 0 {
			t.Fatalf("snapAdd result %v not a multiple of 2^%d", got, gexp)
		}
	}
	// Overflow is an error, never ±Inf. (Unreachable with the granularities
	// the mechanisms use, so force it with g = 2^960.)
	if v, err := snapAdd(math.MaxFloat64, 960, math.MaxInt64); err == nil {
		t.Fatalf("snapAdd overflow returned %v without error", v)
	}
}

func TestRandConcurrentUse(t *testing.T) {
	r := Seeded(9)
	m, err := NewLaplace(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				if _, err := m.AddNoiseFloat(r, 1); err != nil {
					errs <- err
					return
				}
				if _, err := r.Bernoulli(0.5); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
