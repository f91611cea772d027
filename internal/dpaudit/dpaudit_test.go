package dpaudit

import (
	"math"
	"math/rand/v2"
	"testing"
)

// With no successes (or only successes) the Clopper–Pearson bounds have a
// closed form: 1 − α^(1/n) and α^(1/n).
func TestClopperPearsonClosedForms(t *testing.T) {
	for _, n := range []int{1, 10, 1000} {
		for _, alpha := range []float64{0.05, 1e-4} {
			want := math.Pow(alpha, 1/float64(n))
			if got := UpperConfidence(0, n, alpha); math.Abs(got-(1-want)) > 1e-9 {
				t.Errorf("UCB(0/%d, α=%g) = %v, want %v", n, alpha, got, 1-want)
			}
			if got := LowerConfidence(n, n, alpha); math.Abs(got-want) > 1e-9 {
				t.Errorf("LCB(%d/%d, α=%g) = %v, want %v", n, n, alpha, got, want)
			}
		}
	}
	if LowerConfidence(0, 5, 0.05) != 0 || UpperConfidence(5, 5, 0.05) != 1 {
		t.Error("bounds at the ends of [0, 1]")
	}
}

// The one-sided bounds cover the true proportion at least 1 − α of the time.
func TestClopperPearsonCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const p, n, trials, alpha = 0.3, 200, 4000, 0.05
	lowMisses, highMisses := 0, 0
	for i := 0; i < trials; i++ {
		k := 0
		for j := 0; j < n; j++ {
			if r.Float64() < p {
				k++
			}
		}
		if LowerConfidence(k, n, alpha) > p {
			lowMisses++
		}
		if UpperConfidence(k, n, alpha) < p {
			highMisses++
		}
	}
	// Clopper–Pearson is conservative: misses ≤ α·trials = 200, up to
	// binomial noise (+3σ ≈ 41).
	for _, m := range []int{lowMisses, highMisses} {
		if m > 241 {
			t.Errorf("bounds missed p in %d/%d trials, want ≤ %d", m, trials, int(alpha*trials))
		}
	}
}

// Binary randomized response with parameter ε answers truthfully with
// probability e^ε/(1+e^ε): exactly ε-DP. The audit's bound stays below ε
// yet close to it, and a response that spends 1.5·ε is caught.
func TestEpsilonLowerBoundOnRandomizedResponse(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	respond := func(bit bool, eps float64) bool {
		if r.Float64() < math.Exp(eps)/(1+math.Exp(eps)) {
			return bit
		}
		return !bit
	}
	audit := func(spent float64) Bound {
		tally := NewTally("answer is 1", "answer is 0")
		for i := 0; i < 50000; i++ {
			a := respond(true, spent) // D: the unit's bit is 1
			tally.Add(false, []bool{a, !a})
			b := respond(false, spent) // D′: it is 0
			tally.Add(true, []bool{b, !b})
		}
		return tally.EpsilonLowerBound(0, 1e-3)
	}
	const eps = 1.0
	if b := audit(eps); b.Epsilon > eps || b.Epsilon < eps-0.1 {
		t.Errorf("ε-DP randomized response: %v; want within [%v, %v]", b, eps-0.1, eps)
	}
	if b := audit(1.5 * eps); b.Epsilon <= eps {
		t.Errorf("randomized response spending 1.5ε: %v; want above ε = %v", b, eps)
	}
}

// δ is subtracted before the ratio: an event that only D can produce,
// seen about δ of the time, supports no bound.
func TestEpsilonLowerBoundSubtractsDelta(t *testing.T) {
	tally := NewTally("only D")
	for i := 0; i < 100000; i++ {
		tally.Add(false, []bool{i%100 == 0}) // 1 %
		tally.Add(true, []bool{false})
	}
	if b := tally.EpsilonLowerBound(0.02, 0.05); !math.IsInf(b.Epsilon, -1) {
		t.Errorf("with δ = 0.02 > 1 %%: %v, want no bound", b)
	}
	if b := tally.EpsilonLowerBound(0.005, 0.05); b.Epsilon < 3 {
		t.Errorf("with δ = 0.005 < 1 %%: %v, want a large bound", b)
	}
}
