package mechanisms

import (
	"math"
	"testing"
)

func TestExponentialFrequencies(t *testing.T) {
	cases := []struct {
		eps, sens float64
		scores    []float64
	}{
		{1, 1, []float64{0, 1, 2, 3, 4}},
		{2, 1.5, []float64{-2.5, 0.1, 0.1, 3.3, -1}},
		{0.5, 10, []float64{100, 90, 95, 120, 110, 80}},
	}
	for ci, c := range cases {
		r := Seeded(uint64(31 + ci))
		const n = 40000
		obs := make([]int64, len(c.scores))
		for i := 0; i < n; i++ {
			j, err := Exponential(r, c.eps, c.sens, c.scores)
			if err != nil {
				t.Fatal(err)
			}
			obs[j]++
		}
		// P(i) ∝ exp(ε·s_i/(2Δu)).
		probs := make([]float64, len(c.scores))
		total := 0.0
		for i, s := range c.scores {
			probs[i] = math.Exp(c.eps * s / (2 * c.sens))
			total += probs[i]
		}
		for i := range probs {
			probs[i] /= total
		}
		chiSquareTest(t, "Exponential", obs, probs)
	}
}

func TestExponentialDominantAndSingle(t *testing.T) {
	r := Seeded(35)
	for i := 0; i < 200; i++ {
		j, err := Exponential(r, 1000, 1, []float64{0, 100, -1e9, 99.5})
		if err != nil {
			t.Fatal(err)
		}
		if j != 1 {
			t.Fatalf("dominant candidate not chosen: %d", j)
		}
	}
	if j, err := Exponential(r, 1, 1, []float64{42}); err != nil || j != 0 {
		t.Fatalf("single candidate: %d, %v", j, err)
	}
	// Equal scores: uniform.
	obs := make([]int64, 4)
	for i := 0; i < 20000; i++ {
		j, err := Exponential(r, 0.7, 2, []float64{5, 5, 5, 5})
		if err != nil {
			t.Fatal(err)
		}
		obs[j]++
	}
	chiSquareTest(t, "Exponential uniform", obs, []float64{0.25, 0.25, 0.25, 0.25})
}

// Beyond the precomputed candidates the exponents are computed on each
// proposal: the same distribution (here with the limit lowered to 2).
func TestExponentialLazyPath(t *testing.T) {
	defer func(n int) { precomputedCandidates = n }(precomputedCandidates)
	precomputedCandidates = 2
	scores := []float64{0, 1, 2, 3, 4}
	r := Seeded(36)
	const n = 30000
	obs := make([]int64, len(scores))
	for i := 0; i < n; i++ {
		j, err := Exponential(r, 1, 1, scores)
		if err != nil {
			t.Fatal(err)
		}
		obs[j]++
	}
	probs := make([]float64, len(scores))
	total := 0.0
	for i, s := range scores {
		probs[i] = math.Exp(s / 2)
		total += probs[i]
	}
	for i := range probs {
		probs[i] /= total
	}
	chiSquareTest(t, "Exponential lazy", obs, probs)
}
