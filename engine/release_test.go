package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

const releasePolicy = `
backend: {kind: sqlite, path: unused.db}
defaults: {epsilon: 1, delta: 1e-5, max_groups_per_unit: 2, max_rows_per_unit: 1}
analysts:
  - name: ana
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget: {epsilon: 100}
protected_tables:
  - name: t
    privacy_unit: uid
    columns:
      - {name: uid, type: int}
      - {name: city, type: text, group_by: true}
      - {name: kind, type: text, group_by: true, keys: [x, y]}
      - {name: v, type: float, bounds: [0, 10]}
      - {name: fixed, type: int, bounds: [5, 5]}
`

func releasePlan(t *testing.T, query string) *rewrite.Plan {
	t.Helper()
	pol, err := config.Parse([]byte(releasePolicy), "release_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return plan(t, pol, query)
}

// Groups from the data are released only when they pass partition
// selection: a group of thousands of units always, a group of one unit
// (which would single a person out) essentially never.
func TestPartitionSelectionReleasesOnlyLargeGroups(t *testing.T) {
	p := releasePlan(t, "SELECT city, COUNT(*) FROM t GROUP BY city")
	if p.Selection == nil || p.UnitsColumn != 2 {
		t.Fatalf("plan has no partition selection: %+v", p)
	}
	rows := &backend.Rows{Values: [][]any{
		{"oslo", int64(5000), int64(5000)},
		{"lonely", int64(1), int64(1)},
		{"bergen", int64(3000), int64(3000)},
	}}
	r := mechanisms.Seeded(7)
	lonely := 0
	const runs = 2000
	for i := 0; i < runs; i++ {
		res, err := release(p, bounded{rows: rows}, r, measurementMechanism)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, row := range res.Rows {
			keys = append(keys, row[0].(string))
		}
		if len(keys) < 2 || keys[0] != "bergen" || keys[1] != "oslo" && keys[1] != "lonely" {
			t.Fatalf("released %v; want bergen and oslo, sorted", keys)
		}
		if len(keys) == 3 {
			lonely++
		}
	}
	// One unit passes with probability at most δ/L0 = 5e-6 per run.
	if lonely > 0 {
		t.Errorf("the one-unit group was released %d times in %d runs", lonely, runs)
	}
}

// With mixed key lists, data keys outside a column's public list are
// dropped even when they pass selection.
func TestPartitionSelectionRespectsPublicKeys(t *testing.T) {
	p := releasePlan(t, "SELECT city, kind, COUNT(*) FROM t GROUP BY city, kind")
	rows := &backend.Rows{Values: [][]any{
		{"oslo", "x", int64(5000), int64(5000)},
		{"oslo", "secret", int64(5000), int64(5000)},
	}}
	res, err := release(p, bounded{rows: rows}, mechanisms.Seeded(1), measurementMechanism)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0][1] != "x" {
		t.Fatalf("released %v; want only (oslo, x)", res.Rows)
	}
}

// Released values scatter around the exact ones as explain predicts: about
// 95% of them within the 95% error bound.
func TestSpreadMatchesExplainedErrorBound(t *testing.T) {
	p := releasePlan(t, "SELECT COUNT(*), SUM(v) FROM t")
	table, err := Explain(p)
	if err != nil {
		t.Fatal(err)
	}
	bounds := []float64{table.Rows[0][6].(float64), table.Rows[1][6].(float64)}
	rows := &backend.Rows{Values: [][]any{{int64(100), int64(100), 450.0}}}
	r := mechanisms.Seeded(3)
	within := []int{0, 0}
	const runs = 4000
	for i := 0; i < runs; i++ {
		res, err := release(p, bounded{rows: rows}, r, measurementMechanism)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(float64(res.Rows[0][0].(int64))-100) <= bounds[0] {
			within[0]++
		}
		// The sum is clamped at 0 (post-processing); 450 is far above
		// the bound, so clamping does not move it into the interval.
		if math.Abs(res.Rows[0][1].(float64)-450) <= bounds[1] {
			within[1]++
		}
	}
	for i, w := range within {
		frac := float64(w) / runs
		// 95% coverage; 4.4 standard errors of a proportion ≈ 0.015.
		if frac < 0.95-0.015 || frac > 0.975 {
			t.Errorf("%s: %.3f of releases within the explained bound %.4g; want about 0.95", table.Rows[i][0], frac, bounds[i])
		}
	}
}

// Variance and standard deviation stay within what values in the bounds
// allow, and a column with degenerate bounds is released exactly.
func TestVarianceAndConstantsPostProcessing(t *testing.T) {
	p := releasePlan(t, "SELECT VAR_POP(v), STDDEV(v), AVG(fixed) FROM t")
	// columns: count(v), sum(v), squares(v), count(fixed), sum(fixed)
	rows := &backend.Rows{Values: [][]any{{int64(1000), 5000.0, 34000.0, int64(3), int64(15)}}}
	r := mechanisms.Seeded(5)
	for i := 0; i < 500; i++ {
		res, err := release(p, bounded{rows: rows}, r, measurementMechanism)
		if err != nil {
			t.Fatal(err)
		}
		varPop, stddev := res.Rows[0][0].(float64), res.Rows[0][1].(float64)
		if varPop < 0 || varPop > 25 || stddev < 0 || stddev > math.Sqrt(25*1000.0/999)+1e-9 {
			t.Fatalf("VAR_POP %v, STDDEV %v outside [0, 25] and [0, 5]", varPop, stddev)
		}
		if avg := res.Rows[0][2].(sqltypes.Decimal); avg != "5" {
			t.Fatalf("AVG over bounds [5, 5] = %v, want exactly 5", avg)
		}
	}
	// The exact variance is 34000/1000 − 5² = 9; the noisy one is close
	// at n = 1000 (the centred squares' scale is 25·2·3/1 = 150 per 1000 rows).
	res, _ := release(p, bounded{rows: rows}, r, measurementMechanism)
	if v := res.Rows[0][0].(float64); math.Abs(v-9) > 2 {
		t.Errorf("VAR_POP = %v, want about 9", v)
	}
}

// A BI tool's nested question: the outer query picks, renames, orders and
// limits the released rows.
func TestReleaseOuterQuery(t *testing.T) {
	p := releasePlan(t, `SELECT "source"."kind" AS "k", "source"."n" AS "visits" FROM (SELECT "kind", COUNT(*) AS "n" FROM "t" GROUP BY "kind") AS "source" ORDER BY "source"."n" DESC LIMIT 1`)
	// Backend rows per group and k (the units' number of groups).
	rows := &backend.Rows{Values: [][]any{{"x", int64(10), int64(1)}, {"y", int64(4000), int64(1)}, {"y", int64(1000), int64(2)}}}
	res, err := release(p, bounded{rows: rows}, mechanisms.Seeded(9), measurementMechanism)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Columns) != 2 || res.Columns[0].Name != "k" || res.Columns[1].Name != "visits" || res.Columns[1].Type != sqltypes.Int8 {
		t.Fatalf("columns %+v", res.Columns)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] != "y" {
		t.Fatalf("rows %v; want the largest group only", res.Rows)
	}
	if res.Tag != "SELECT 1" {
		t.Errorf("tag %q", res.Tag)
	}
}

// A released quantile's rank lies within the explained rank error bound
// at least 95 % of the time, over fresh runs of the whole release path.
func TestQuantileCoverageOfExplainedBound(t *testing.T) {
	p := releasePlan(t, "SELECT MEDIAN(v) FROM t")
	table, err := Explain(p)
	if err != nil {
		t.Fatal(err)
	}
	bound := table.Rows[0][6].(float64)
	grid := p.Histograms[0].Grid
	// 3,000 values spread over [0, 10]: bucket j holds 1 + j%5.
	hist := make([]float64, grid.Buckets)
	var rows [][]any
	total := 0.0
	for j := range hist {
		hist[j] = float64(1 + j%5)
		total += hist[j]
		rows = append(rows, []any{int64(j), hist[j]})
	}
	scores := mechanisms.QuantileScores(hist, 0.5, total)
	data := bounded{rows: &backend.Rows{}, histograms: []*backend.Rows{{Values: rows}}}
	r := mechanisms.Seeded(11)
	const runs = 300
	within := 0
	for i := 0; i < runs; i++ {
		res, err := release(p, data, r, measurementMechanism)
		if err != nil {
			t.Fatal(err)
		}
		v := res.Rows[0][0].(float64)
		j := int(math.Floor((v - grid.Lo) / grid.Width()))
		if -scores[j] <= bound {
			within++
		}
	}
	if frac := float64(within) / runs; frac < 0.93 {
		t.Errorf("%.3f of medians within the explained rank bound %.4g; want ≥ 0.95", frac, bound)
	}
	if bound > total/10 {
		t.Errorf("the rank bound %.4g is a tenth of the data (%v): vacuous", bound, total)
	}
}

// Quantiles of one column come out in level order; a group without
// values still gets a value inside the bounds.
func TestQuantilesOrderedAndWithinBounds(t *testing.T) {
	p := releasePlan(t, "SELECT kind, MIN(v), MEDIAN(v), MAX(v) FROM t GROUP BY kind")
	grid := p.Histograms[0].Grid
	var rows [][]any
	for j := 0; j < grid.Buckets; j += 7 {
		rows = append(rows, []any{"x", int64(j), 1.0})
	}
	data := bounded{rows: &backend.Rows{}, histograms: []*backend.Rows{{Values: rows}}}
	r := mechanisms.Seeded(12)
	for i := 0; i < 50; i++ {
		res, err := release(p, data, r, measurementMechanism)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 2 {
			t.Fatalf("released %d groups, want the public keys x and y", len(res.Rows))
		}
		for _, row := range res.Rows {
			lo, med, hi := sqltypes.Float(row[1]), sqltypes.Float(row[2]), sqltypes.Float(row[3])
			if !(lo <= med && med <= hi) || lo < 0 || hi > 10 {
				t.Fatalf("group %v: MIN %v, MEDIAN %v, MAX %v not ordered within [0, 10]", row[0], lo, med, hi)
			}
		}
	}
}

// The released 95 % intervals cover the exact (bounded) value in at least
// 95 % of fresh runs, for every aggregate that has one; a broken interval
// (say, half as wide) would cover far less.
func TestIntervalsCoverExactValues(t *testing.T) {
	p := releasePlan(t, "SELECT COUNT(*), SUM(v), AVG(v), VAR_POP(v), STDDEV_SAMP(v) FROM t")
	// Bounded data: 200 values in [0, 10]: Σv = 900 (mean 4.5), Σv² = 5000
	// (population variance 25 − 20.25 = 4.75).
	exact := []float64{200, 900, 4.5, 4.75, math.Sqrt(4.75 * 200 / 199)}
	// Backend columns: count(*), then v's count, sum and sum of squares.
	vals := []any{int64(200), int64(200), 900.0, 5000.0}
	rows := &backend.Rows{Values: [][]any{vals}}
	r := mechanisms.Seeded(21)
	const runs = 400
	covered := make([]int, len(exact))
	halfCovered := 0 // the count's interval at half its width
	for i := 0; i < runs; i++ {
		res, err := release(p, bounded{rows: rows}, r, measurementMechanism)
		if err != nil {
			t.Fatal(err)
		}
		for c, w := range exact {
			iv := res.Intervals[0][c]
			if iv == nil {
				t.Fatalf("column %d has no interval", c)
			}
			if v := sqltypes.Float(res.Rows[0][c]); v < iv.Lo-1e-9 || v > iv.Hi+1e-9 {
				t.Fatalf("column %d: released %v outside its own interval %+v", c, v, *iv)
			}
			if w >= iv.Lo && w <= iv.Hi {
				covered[c]++
			}
			if mid, half := (iv.Lo+iv.Hi)/2, (iv.Hi-iv.Lo)/4; c == 0 && math.Abs(w-mid) <= half {
				halfCovered++
			}
		}
	}
	if frac := float64(halfCovered) / runs; frac > 0.85 {
		t.Errorf("intervals at half width still cover %.3f: the test could not tell a broken interval", frac)
	}
	for c, k := range covered {
		if frac := float64(k) / runs; frac < 0.93 {
			t.Errorf("%s: the 95 %% interval covers the exact value in %.3f of runs", p.Output[c].Name, frac)
		}
	}
}

// DP top-k returns the true top k when they stand out, never a group of
// one person, and stops early when nothing stands out.
func TestTopKPicksTheLargestGroups(t *testing.T) {
	p := releasePlan(t, "SELECT city, COUNT(*) FROM t GROUP BY city ORDER BY COUNT(*) DESC LIMIT 3")
	if p.Selection == nil || p.Selection.TopK == nil {
		t.Fatalf("plan has no top-k: %+v", p.Selection)
	}
	row := func(city string, n int64) []any { return []any{city, n, n} }
	rows := &backend.Rows{Values: [][]any{
		row("a", 5000), row("b", 4000), row("c", 3000), row("d", 300), row("e", 200),
		row("lone1", 1), row("lone2", 1), row("lone3", 1),
	}}
	r := mechanisms.Seeded(31)
	const runs = 300
	exact := 0
	for i := 0; i < runs; i++ {
		res, err := release(p, bounded{rows: rows}, r, measurementMechanism)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, row := range res.Rows {
			got = append(got, row[0].(string))
			if strings.HasPrefix(row[0].(string), "lone") {
				t.Fatalf("run %d released a one-person group: %v", i, res.Rows)
			}
		}
		if len(got) == 3 && got[0] == "a" && got[1] == "b" && got[2] == "c" {
			exact++
		}
	}
	if exact < runs*95/100 {
		t.Errorf("the true top 3 in order in %d of %d runs", exact, runs)
	}
	// Nothing near the stop score: at most a few groups, usually none.
	small := &backend.Rows{Values: [][]any{row("x", 3), row("y", 2), row("z", 2)}}
	released := 0
	for i := 0; i < runs; i++ {
		res, err := release(p, bounded{rows: small}, r, measurementMechanism)
		if err != nil {
			t.Fatal(err)
		}
		released += len(res.Rows)
	}
	if released > runs/100 {
		t.Errorf("%d groups of 2 or 3 people released over %d runs", released, runs)
	}
}

// The auto bound lands at the 0.95 quantile of people's largest groups:
// of 20,000 people, 97.5 % have at most 5 rows (the quantile's rank, 19,000,
// falls among those with 5) and the rest 40.
func TestPickRowBound(t *testing.T) {
	pol, err := config.Parse([]byte(releasePolicy), "release_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol.ProtectedTables[0].MaxRowsPerUnit = config.RowsAuto
	p := plan(t, pol, "SELECT COUNT(*) FROM t")
	if p.Auto == nil {
		t.Fatal("no auto bound")
	}
	rows := [][]any{{int64(1), int64(10000)}, {int64(3), int64(5000)}, {int64(5), int64(4500)}, {int64(40), int64(500)}}
	r := mechanisms.Seeded(41)
	five := 0
	for range 200 {
		linf, err := pickRowBound(p.Auto, rows, r)
		if err != nil {
			t.Fatal(err)
		}
		if linf == 5 {
			five++
		}
	}
	if five < 190 {
		t.Errorf("the bound was 5 in %d of 200 runs", five)
	}
}

// At small ε the prior keeps the auto bound near the data: 10,000 people
// with at most 8 rows each, the quantile chosen at ε = 0.01. Without the
// prior the 20-odd empty candidates above 8, tied at the top score, took
// the bound above 15 in most runs.
func TestPickRowBoundAtSmallEpsilon(t *testing.T) {
	pol, err := config.Parse([]byte(releasePolicy), "release_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol.ProtectedTables[0].MaxRowsPerUnit = config.RowsAuto
	p := plan(t, pol, "SELECT COUNT(*) FROM t")
	p.Auto.Epsilon = 0.01
	rows := [][]any{{int64(1), int64(3000)}, {int64(2), int64(3000)}, {int64(3), int64(2000)}, {int64(5), int64(1500)}, {int64(8), int64(500)}}
	r := mechanisms.Seeded(42)
	far := 0
	for range 400 {
		linf, err := pickRowBound(p.Auto, rows, r)
		if err != nil {
			t.Fatal(err)
		}
		if linf > 15 {
			far++
		}
	}
	if far > 40 {
		t.Errorf("the bound was above 15 (twice the largest) in %d of 400 runs", far)
	}
}

// Group keys match exactly (found in review: a float rendering merged
// large integers, an untagged NULL matched a text key, a separator inside
// text faked a second column).
func TestCanonicalKeys(t *testing.T) {
	same := [][2]any{
		{int64(20), sqltypes.Decimal("20.000")},
		{int64(20), 20.0},
		{sqltypes.Decimal("0.1"), 0.1},
		{math.Copysign(0, -1), int64(0)},
		{"abc", []byte("abc")},
	}
	for _, c := range same {
		if a, b := canonicalKey(c[0], config.TypeNumeric), canonicalKey(c[1], config.TypeNumeric); a != b {
			t.Errorf("%#v and %#v: %q ≠ %q", c[0], c[1], a, b)
		}
	}
	differ := []struct {
		a, b any
		t    config.ColumnType
	}{
		{int64(1500000000000000001), int64(1500000000000000100), config.TypeBigint},
		{nil, "\x01NULL", config.TypeText},
		{nil, "N", config.TypeText},
		{"1", int64(1), config.TypeText},
		{sqltypes.Decimal("0.10000000000000001"), sqltypes.Decimal("0.1"), config.TypeNumeric},
	}
	for _, c := range differ {
		if a, b := canonicalKey(c.a, c.t), canonicalKey(c.b, c.t); a == b {
			t.Errorf("%#v and %#v share the key %q", c.a, c.b, a)
		}
	}
	if joinKeys([]string{"sa\x00sb", "sc"}) == joinKeys([]string{"sa", "sb\x00sc"}) {
		t.Error("joined keys collide across columns")
	}
}
