package mechanisms

import (
	"math"
	"testing"
)

func TestQuantileScores(t *testing.T) {
	cases := []struct {
		name string
		hist []float64
		q    float64
		want []float64
	}{
		// n = 10, median rank 5 falls in bucket 1 (mass 2..6).
		{"median", []float64{2, 4, 0, 4}, 0.5, []float64{-3, 0, -1, -1}},
		// q = 0: every bucket up to the first with mass scores 0.
		{"minimum", []float64{0, 0, 3, 1}, 0, []float64{0, 0, 0, -3}},
		// q = 1: every bucket from the last with mass on scores 0.
		{"maximum", []float64{1, 3, 0, 0}, 1, []float64{-3, 0, 0, 0}},
		// Fractional masses (units scaled to Linf rows).
		{"weighted", []float64{0.5, 1.5}, 0.5, []float64{-0.5, 0}},
		{"empty", []float64{0, 0, 0}, 0.5, []float64{0, 0, 0}},
	}
	for _, c := range cases {
		total := 0.0
		for _, m := range c.hist {
			total += m
		}
		got := QuantileScores(c.hist, c.q, total)
		for j := range got {
			if math.Abs(got[j]-c.want[j]) > 1e-12 {
				t.Errorf("%s: scores %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

// The sampled buckets follow exp(ε·score/(2Δ)).
func TestQuantileFrequencies(t *testing.T) {
	hist := []float64{3, 1, 0, 2, 6}
	const eps, sens, n = 1.5, 2.0, 30000
	scores := QuantileScores(hist, 0.4, 12)
	probs := make([]float64, len(hist))
	total := 0.0
	for j, s := range scores {
		probs[j] = math.Exp(eps * s / (2 * sens))
		total += probs[j]
	}
	for j := range probs {
		probs[j] /= total
	}
	r := Seeded(61)
	obs := make([]int64, len(hist))
	for i := 0; i < n; i++ {
		j, err := Quantile(r, eps, sens, hist, 0.4)
		if err != nil {
			t.Fatal(err)
		}
		obs[j]++
	}
	chiSquareTest(t, "Quantile", obs, probs)
}

// The stated rank error holds at least 95 % of the time.
func TestQuantileRankErrorCoverage(t *testing.T) {
	// 2,000 values spread over 64 buckets, median rank 1,000.
	hist := make([]float64, 64)
	for j := range hist {
		hist[j] = float64(10 + (j*37)%41)
	}
	total := 0.0
	for _, m := range hist {
		total += m
	}
	const eps, sens, q = 0.5, 3.0, 0.5
	bound := QuantileRankError(eps, sens, len(hist), 0.05)
	scores := QuantileScores(hist, q, total)
	r := Seeded(62)
	const runs = 600
	within := 0
	for i := 0; i < runs; i++ {
		j, err := Quantile(r, eps, sens, hist, q)
		if err != nil {
			t.Fatal(err)
		}
		if -scores[j] <= bound {
			within++
		}
	}
	if float64(within)/runs < 0.93 {
		t.Errorf("rank error within %.1f in %d of %d runs, want ≥ 95 %%", bound, within, runs)
	}
	// The bound is not vacuous: it is a small share of the data.
	if bound > total/4 {
		t.Errorf("rank error bound %.1f is a quarter of the data (%v)", bound, total)
	}
}

func TestQuantileRejects(t *testing.T) {
	r := Seeded(63)
	for _, c := range []struct {
		name string
		hist []float64
		q    float64
	}{
		{"level above 1", []float64{1}, 1.5},
		{"NaN level", []float64{1}, math.NaN()},
		{"no buckets", nil, 0.5},
		{"negative mass", []float64{1, -1}, 0.5},
		{"infinite mass", []float64{math.Inf(1)}, 0.5},
	} {
		if _, err := Quantile(r, 1, 1, c.hist, c.q); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

// Black-box check on neighbouring histograms: one unit adds its whole mass
// (3) at the top of the range. The mechanism must stay within ε, and the
// same audit catches one calibrated for a quarter of the true sensitivity.
func TestAuditQuantile(t *testing.T) {
	const n, eps, mass = 30000, 1.0, 3.0
	x := []float64{5, 0, 0, 0, 0, 0, 0, 0}
	neighbour := append([]float64(nil), x...)
	neighbour[7] += mass
	r := Seeded(64)
	run := func(sens float64) func(bool) (bool, error) {
		return func(nb bool) (bool, error) {
			h := x
			if nb {
				h = neighbour
			}
			j, err := Quantile(r, eps, sens, h, 1)
			return j == 7, err
		}
	}
	if e := auditEpsilonLower(t, "Quantile", n, 0, run(mass)); e > eps {
		t.Errorf("Quantile: ε_lower %v > ε = %v", e, eps)
	}
	if e := auditEpsilonLower(t, "Quantile at a quarter of its sensitivity", n, 0, run(mass/4)); e <= eps {
		t.Errorf("the audit did not catch a mis-calibrated quantile: ε_lower %v ≤ %v", e, eps)
	}
}

func TestQuantilesDepth(t *testing.T) {
	for m, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 7: 3, 8: 4} {
		if got := QuantilesDepth(m); got != want {
			t.Errorf("QuantilesDepth(%d) = %d, want %d", m, got, want)
		}
	}
}

// Several quantiles together come out in order and close to the truth:
// the quartiles of 10,000 values spread over 100 buckets, at an ε that
// leaves each round 1/2.
func TestQuantilesFindTheQuartiles(t *testing.T) {
	hist := make([]float64, 100)
	for i := range hist {
		hist[i] = 100
	}
	r := Seeded(65)
	levels := []float64{0.25, 0.5, 0.75}
	for run := 0; run < 200; run++ {
		got, err := Quantiles(r, 1, 1, hist, levels, false)
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range got {
			want := levels[i] * 100
			// Rank error of one round (ε/2): 2/0.5·ln(100/0.001) ≈ 46
			// values, under half a bucket; the split's halving costs at
			// most one bucket.
			if math.Abs(float64(j)-want) > 2 {
				t.Fatalf("run %d: level %g in bucket %d, want about %g (all: %v)", run, levels[i], j, want, got)
			}
			if i > 0 && j < got[i-1] {
				t.Fatalf("run %d: answers out of order: %v", run, got)
			}
		}
	}
}

func TestQuantilesRejects(t *testing.T) {
	r := Seeded(66)
	for _, c := range []struct {
		name   string
		hist   []float64
		levels []float64
	}{
		{"unsorted levels", []float64{1, 1}, []float64{0.9, 0.1}},
		{"level above 1", []float64{1}, []float64{0.5, 1.5}},
		{"no buckets", nil, []float64{0.5}},
		{"negative mass", []float64{1, -1}, []float64{0.5}},
	} {
		if _, err := Quantiles(r, 1, 1, c.hist, c.levels, false); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

// Black-box check of the recursion on neighbouring histograms: one unit
// adds its whole mass (3) at the top of the range, which both rounds of
// two levels see (the first whole, the second's subproblem half). The
// recursion must stay within ε, and the audit catches it calibrated to a
// quarter of the unit's mass.
func TestAuditQuantiles(t *testing.T) {
	const n, eps, mass = 50000, 1.0, 3.0
	x := []float64{8, 0, 0, 0, 0, 0, 0, 0}
	neighbour := append([]float64(nil), x...)
	neighbour[7] += mass
	levels := []float64{1, 1}
	r := Seeded(67)
	run := func(sens float64) func(bool) (bool, error) {
		return func(nb bool) (bool, error) {
			h := x
			if nb {
				h = neighbour
			}
			got, err := Quantiles(r, eps, sens, h, levels, false)
			return err == nil && got[0] == 7 && got[1] == 7, err
		}
	}
	if e := auditEpsilonLower(t, "Quantiles", n, 0, run(mass)); e > eps {
		t.Errorf("Quantiles: ε_lower %v > ε = %v", e, eps)
	}
	if e := auditEpsilonLower(t, "Quantiles at a quarter of the sensitivity", n, 0, run(mass/4)); e <= eps {
		t.Errorf("the audit did not catch a mis-calibrated recursion: ε_lower %v ≤ %v", e, eps)
	}
}
