package engine

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

const biasPolicy = `
backend: {kind: sqlite, path: unused.db}
defaults: {epsilon: 1, delta: 1e-6, max_groups_per_unit: 2, max_rows_per_unit: 3}
analysts:
  - name: ana
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget: {epsilon: 1000}
protected_tables:
  - name: t
    privacy_unit: uid
    columns:
      - {name: uid, type: int}
      - {name: g, type: text, group_by: true}
      - {name: kg, type: text, group_by: true, keys: [k1, k2, k3, k4]}
      - {name: x, type: numeric, bounds: [0, 100]}
`

// biasedTable writes 3,000 units whose rows bounding cuts: 1–4 rows per
// group (Linf = 3) in 1–3 groups (L0 = 2), values with a heavy tail
// beyond the bounds [0, 100]. No unit has more removed than one more
// helping of the bounds, the clip of the excess measurements
// (rewrite/excess.go): the case their intervals are built to cover.
func biasedTable(t *testing.T) backend.Backend {
	path := filepath.Join(t.TempDir(), "bias.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`CREATE TABLE t (uid INTEGER, g TEXT, kg TEXT, x NUMERIC)`); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for uid := 0; uid < 3000; uid++ {
		groups := 1 + rng.IntN(3)
		for gi := 0; gi < groups; gi++ {
			g := fmt.Sprintf("k%d", 1+(uid+gi)%4)
			for r := 1 + rng.IntN(4); r > 0; r-- {
				x := 50 * rng.ExpFloat64() // mean 50; 13.5 % above 100
				if _, err := tx.Exec(`INSERT INTO t VALUES (?, ?, ?, ?)`, uid, g, g, x); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	be, err := backend.OpenSQLite(context.Background(), path, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// With excess measurements (SET dpproxy.intervals), the released 95 %
// intervals cover the true, unbounded answer — bias included — in at
// least 93 % of fresh runs, for COUNT, SUM and AVG, ungrouped, over public
// keys and with partition selection, where bounding removes 10–35 % of
// the rows and clamps the tail. The same plan without them (noise only)
// almost never covers it: the test tells a bias-blind interval.
func TestIntervalsCoverTheUnboundedTruth(t *testing.T) {
	pol, err := config.Parse([]byte(biasPolicy), "bias.yaml")
	if err != nil {
		t.Fatal(err)
	}
	be := biasedTable(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, query, truth string
	}{
		{"ungrouped", "SELECT COUNT(*), SUM(x), AVG(x) FROM t WHERE g = 'k1'", "SELECT '', COUNT(*), SUM(x), AVG(x) FROM t WHERE g = 'k1'"},
		{"public keys", "SELECT kg, COUNT(*), SUM(x), AVG(x) FROM t GROUP BY kg", "SELECT kg, COUNT(*), SUM(x), AVG(x) FROM t GROUP BY kg"},
		{"partition selection", "SELECT g, COUNT(*), SUM(x), AVG(x) FROM t GROUP BY g", "SELECT g, COUNT(*), SUM(x), AVG(x) FROM t GROUP BY g"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			truth := map[string][]float64{}
			rows, err := be.Query(ctx, tc.truth)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range rows.Values {
				truth[fmt.Sprint(row[0])] = []float64{sqltypes.Float(row[1]), sqltypes.Float(row[2]), sqltypes.Float(row[3])}
			}
			coverage := func(biasBounds bool) []float64 {
				p := planWithOptions(t, pol, tc.query, rewrite.Options{BiasBounds: biasBounds})
				if p.HasExcess() != biasBounds {
					t.Fatalf("excess measurements %v, want %v", p.HasExcess(), biasBounds)
				}
				r := mechanisms.Seeded(7)
				const runs = 200
				covered, total := make([]int, 3), make([]int, 3)
				var data bounded
				for i := 0; i < runs; i++ {
					if i%20 == 0 { // the random choice of L0 groups, now and then
						if data, err = readBounded(ctx, be, p); err != nil {
							t.Fatal(err)
						}
					}
					res, err := release(p, data, r, measurementMechanism)
					if err != nil {
						t.Fatal(err)
					}
					for ri, row := range res.Rows {
						key := ""
						if len(p.Groups) > 0 {
							key = fmt.Sprint(row[0])
						}
						want := truth[key]
						for j := 0; j < 3; j++ {
							c := len(row) - 3 + j
							total[j]++
							if iv := res.Intervals[ri][c]; iv != nil && want[j] >= iv.Lo && want[j] <= iv.Hi {
								covered[j]++
							}
						}
					}
				}
				out := make([]float64, 3)
				for j := range out {
					if total[j] < runs {
						t.Fatalf("aggregate %d answered %d times in %d runs", j, total[j], runs)
					}
					out[j] = float64(covered[j]) / float64(total[j])
				}
				return out
			}
			with, without := coverage(true), coverage(false)
			for j, name := range []string{"COUNT", "SUM", "AVG"} {
				if with[j] < 0.93 {
					t.Errorf("%s: intervals with bias cover the truth in %.3f of answers, want ≥ 0.93", name, with[j])
				}
				if without[j] > 0.5 {
					t.Errorf("%s: noise-only intervals cover the truth in %.3f: the data is not biased enough for the test to tell", name, without[j])
				}
				t.Logf("%s: coverage of the truth %.3f with bias, %.3f noise only", name, with[j], without[j])
			}
		})
	}
}

// An expression over aggregates — a ratio, a scaled difference, a
// rounded quotient — gets the 95 % interval of interval arithmetic over
// its aggregates' intervals, each taken at 1 − 5 %/m: over fresh runs it
// covers the expression of the true, unbounded aggregates at least as
// often as stated, and it is finite (a stated error, not a shrug).
func TestExpressionIntervalsCoverTheTruth(t *testing.T) {
	pol, err := config.Parse([]byte(biasPolicy), "bias.yaml")
	if err != nil {
		t.Fatal(err)
	}
	be := biasedTable(t)
	ctx := context.Background()
	const query = "SELECT kg, SUM(x) / COUNT(*), COUNT(*) * 2 - 10, ROUND(SUM(x) / 1000, 1), COUNT(*), COUNT(*) / 10 FROM t GROUP BY kg"
	rows, err := be.Query(ctx, "SELECT kg, SUM(x) / COUNT(*), COUNT(*) * 2 - 10, ROUND(SUM(x) / 1000, 1), COUNT(*), COUNT(*) / 10.0 FROM t GROUP BY kg")
	if err != nil {
		t.Fatal(err)
	}
	truth := map[string][]float64{}
	for _, row := range rows.Values {
		for _, v := range row[1:] {
			truth[fmt.Sprint(row[0])] = append(truth[fmt.Sprint(row[0])], sqltypes.Float(v))
		}
	}
	p := planWithOptions(t, pol, query, rewrite.Options{BiasBounds: true})
	r := mechanisms.Seeded(11)
	const runs = 200
	covered, total := make([]int, 5), make([]int, 5)
	data, err := readBounded(ctx, be, p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < runs; i++ {
		if i%20 == 0 {
			if data, err = readBounded(ctx, be, p); err != nil {
				t.Fatal(err)
			}
		}
		res, err := release(p, data, r, measurementMechanism)
		if err != nil {
			t.Fatal(err)
		}
		for ri, row := range res.Rows {
			want := truth[fmt.Sprint(row[0])]
			for j := 0; j < 5; j++ {
				iv := res.Intervals[ri][1+j]
				if iv == nil || math.IsInf(iv.Lo, 0) || math.IsInf(iv.Hi, 0) {
					t.Fatalf("column %d of %v has no finite interval: %v", 1+j, row, iv)
				}
				total[j]++
				if want[j] >= iv.Lo && want[j] <= iv.Hi {
					covered[j]++
				}
			}
		}
	}
	for j := range covered {
		c := float64(covered[j]) / float64(total[j])
		if c < 0.93 {
			t.Errorf("expression %d: its intervals cover the truth in %.3f of answers, want ≥ 0.93", j, c)
		}
		t.Logf("expression %d: coverage %.3f over %d answers", j, c, total[j])
	}
}
