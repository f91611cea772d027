package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// A KPI summed over keys of a released GROUP BY states its error: over
// fresh releases, the interval of the sum of three keys' rows covers the
// true sum at least as often as stated — the unbounded truth when the
// release measured its excess, the bounded one when it did not — and so
// does the interval of a ratio of two such sums. Values are the sums of
// the released rows (post-processing).
func TestSumOverKeysCoversTheTruth(t *testing.T) {
	pol, err := config.Parse([]byte(biasPolicy), "bias.yaml")
	if err != nil {
		t.Fatal(err)
	}
	be := biasedTable(t)
	ctx := context.Background()
	picked := map[string]bool{"k1": true, "k2": true, "k4": true}
	rows, err := be.Query(ctx, "SELECT COUNT(*), SUM(x) FROM t WHERE kg IN ('k1', 'k2', 'k4')")
	if err != nil {
		t.Fatal(err)
	}
	unbounded := []float64{sqltypes.Float(rows.Values[0][0]), sqltypes.Float(rows.Values[0][1])}
	kpi := planWithOptions(t, pol, "SELECT COUNT(*), SUM(x), SUM(x) / COUNT(*) FROM t WHERE kg IN ('k1', 'k2', 'k4')", rewrite.Options{})
	for _, withExcess := range []bool{true, false} {
		t.Run(fmt.Sprintf("excess=%v", withExcess), func(t *testing.T) {
			p := planWithOptions(t, pol, "SELECT kg, COUNT(*), SUM(x) FROM t GROUP BY kg", rewrite.Options{BiasBounds: withExcess})
			// The KPI's aggregates are columns 1 (counts) and 2 (sums).
			columns := make([]int, len(kpi.Aggregates))
			for i, a := range kpi.Aggregates {
				columns[i] = map[rewrite.AggFunc]int{rewrite.CountStar: 1, rewrite.Sum: 2}[a.Func]
			}
			r := mechanisms.Seeded(5)
			const runs = 300
			covered := make([]int, 3)
			// errors and half-widths of the COUNT and SUM, for their spread
			var errs, widths [2][]float64
			var data bounded
			for i := 0; i < runs; i++ {
				if i%20 == 0 {
					if data, err = readBounded(ctx, be, p); err != nil {
						t.Fatal(err)
					}
				}
				truth := unbounded
				if !withExcess { // the bounded truth of this draw of L0 groups
					truth = []float64{0, 0}
					folded, err := p.FoldGroups(data.rows.Values)
					if err != nil {
						t.Fatal(err)
					}
					for _, row := range folded {
						if picked[fmt.Sprint(row[p.Groups[0].BackendColumn])] {
							truth[0] += p.Measurements[p.Aggregates[0].Measurements[0]].Value(row)
							truth[1] += p.Measurements[p.Aggregates[1].Measurements[0]].Value(row)
						}
					}
				}
				res, err := release(p, data, r, measurementMechanism)
				if err != nil {
					t.Fatal(err)
				}
				if n := res.Noise[1]; n == nil || (n.Excess != nil) != withExcess {
					t.Fatalf("count column's noise %+v, excess measured %v", n, withExcess)
				}
				var keys []int
				for ri, row := range res.Rows {
					if picked[fmt.Sprint(row[0])] {
						keys = append(keys, ri)
					}
				}
				out, ok := AnswerSumOverKeys(kpi, res, keys, columns)
				if !ok {
					t.Fatalf("no sum over keys %v of %v", keys, res.Rows)
				}
				wantCount, wantSum := int64(0), 0.0
				for _, ri := range keys {
					wantCount += res.Rows[ri][1].(int64)
					wantSum += sqltypes.Float(res.Rows[ri][2])
				}
				if got := out.Rows[0][0]; got != wantCount || sqltypes.Float(out.Rows[0][1])-wantSum > 1e-6 || wantSum-sqltypes.Float(out.Rows[0][1]) > 1e-6 {
					t.Fatalf("sums %v, want %d and %v", out.Rows[0], wantCount, wantSum)
				}
				for j, want := range []float64{truth[0], truth[1], truth[1] / truth[0]} {
					iv := out.Intervals[0][j]
					if iv == nil {
						t.Fatalf("column %d has no interval", j)
					}
					if j < 2 {
						errs[j] = append(errs[j], sqltypes.Float(out.Rows[0][j])-want)
						widths[j] = append(widths[j], (iv.Hi-iv.Lo)/2)
					}
					if want >= iv.Lo && want <= iv.Hi {
						covered[j]++
					}
				}
			}
			for j, name := range []string{"COUNT", "SUM", "SUM / COUNT"} {
				c := float64(covered[j]) / runs
				if c < 0.93 {
					t.Errorf("%s over three keys: intervals cover the truth in %.3f of answers, want ≥ 0.93", name, c)
				}
				t.Logf("%s over three keys: coverage %.3f", name, c)
			}
			// Not wider than it need be: the union bound costs at most a
			// few times the 95 % spread of the sum's actual error.
			for j, name := range []string{"COUNT", "SUM"} {
				if withExcess {
					break // the excess is a bias, not a spread
				}
				sd, w := spread(errs[j]), mean(widths[j])
				if w > 4*1.96*sd {
					t.Errorf("%s over three keys: half-width %.1f against an error spread of %.1f", name, w, sd)
				}
				t.Logf("%s over three keys: half-width %.1f, 1.96 × the error's sd %.1f", name, w, 1.96*sd)
			}
		})
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func spread(xs []float64) float64 {
	m, s := mean(xs), 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(xs)-1))
}

// Found in review: a SUM over a bigint column is released as a whole
// numeric, rounded from a measurement that is not whole; its noise
// description carries the rounding.
func TestColumnNoiseRounding(t *testing.T) {
	pol, err := config.Parse([]byte(strings.Replace(biasPolicy, "{name: x, type: numeric, bounds: [0, 100]}", "{name: x, type: bigint, bounds: [0, 100]}", 1)), "bigint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := planWithOptions(t, pol, "SELECT kg, COUNT(*), SUM(x) FROM t GROUP BY kg", rewrite.Options{})
	mechs := make([]noiser, len(p.Measurements))
	for i, m := range p.Measurements {
		if mechs[i], err = measurementMechanism(m); err != nil {
			t.Fatal(err)
		}
	}
	noise := columnNoise(p, mechs)
	sum := p.Measurements[p.Aggregates[1].Measurements[0]]
	if v := typedNumber(12.4, p.Output[2].Type, true); v != sqltypes.Decimal("12") || sum.Integer || noise[2].Rounding != 0.5 {
		t.Errorf("SUM(bigint) released as %#v from a measurement whole=%v, rounding %v; want 0.5", v, sum.Integer, noise[2].Rounding)
	}
	count := p.Measurements[p.Aggregates[0].Measurements[0]]
	if (noise[1].Rounding == 0.5) == count.Integer || noise[0] != nil {
		t.Errorf("COUNT rounding %v from a measurement whole=%v, key column %v", noise[1].Rounding, count.Integer, noise[0])
	}
}
