package engine

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/internal/dpaudit"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

const rrPolicy = `
backend: {kind: sqlite, path: unused.db}
defaults: {epsilon: 1, delta: 1e-5, neighbouring: %s}
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
      - {name: c, type: text, group_by: true, keys: [a, b, c, d]}
      - {name: f, type: bool}
      - {name: age, type: int, bounds: [0, 100]}
`

func rrPlan(t *testing.T, nb config.Neighbouring, query string) *rewrite.Plan {
	t.Helper()
	return rrPlanOf(t, nb, query, false)
}

// rrPlanOf is rrPlan, with t's unit its primary key when keyed (and
// max_rows_per_unit 3, which a keyed table's one record per person
// overrides).
func rrPlanOf(t *testing.T, nb config.Neighbouring, query string, keyed bool) *rewrite.Plan {
	t.Helper()
	pol, err := config.Parse([]byte(fmt.Sprintf(rrPolicy, nb)), "rr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if keyed {
		pol.ProtectedTables[0].MaxRowsPerUnit = 3
		pol.ProtectedTables[0].UnitIsKey = true
	}
	p := planWithOptions(t, pol, query, rewrite.Options{})
	if p.RR == nil {
		t.Fatalf("%s is not an RR release", query)
	}
	return p
}

// k-ary RR keeps the true value with probability e^ε/(e^ε + k − 1) and
// reports each other value with 1/(e^ε + k − 1): a χ² test of 200,000
// draws against those rates (3 degrees of freedom, 0.1 % level).
func TestRandomizedResponseRates(t *testing.T) {
	r := mechanisms.Seeded(3)
	const n, k, truth, eps = 200000, 4, 2, 1.0
	counts := make([]int, k)
	for i := 0; i < n; i++ {
		v, err := randomizedResponse(r, truth, k, eps)
		if err != nil {
			t.Fatal(err)
		}
		counts[v]++
	}
	p, q := rewrite.KeepProbability(eps, k), rewrite.FlipProbability(eps, k)
	if math.Abs(p+float64(k-1)*q-1) > 1e-12 {
		t.Fatalf("p + (k−1)q = %v", p+float64(k-1)*q)
	}
	chi2 := 0.0
	for v, c := range counts {
		want := q * n
		if v == truth {
			want = p * n
		}
		chi2 += (float64(c) - want) * (float64(c) - want) / want
	}
	if chi2 > 16.27 {
		t.Errorf("χ² = %.1f over counts %v (p = %.4f, q = %.4f): the rates are not the mechanism's", chi2, counts, p, q)
	}
	t.Logf("χ² = %.2f, counts %v, expected keep %.0f", chi2, counts, p*n)
}

// records is n records with values vs cycled, and the release's domains.
func rrRelease(t *testing.T, plan *rewrite.Plan, values []string, r *mechanisms.Rand) *sqltypes.Result {
	t.Helper()
	domains, err := rrDomains(plan)
	if err != nil {
		t.Fatal(err)
	}
	records := make([][]any, len(values))
	for i, v := range values {
		records[i] = []any{v}
	}
	res, err := releaseRR(plan, domains, records, r)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Black-box ε: releases on neighbouring databases — one person's value
// changed (replace), one person present or absent (add/remove) — and
// events on what is released (each value's count, the number of rows);
// the Clopper–Pearson lower bound on ε they support stays under the
// plan's ε. Without the dummy records the row count alone would tell the
// absent person (ε = ∞).
func TestRRPrivacyAudit(t *testing.T) {
	others := make([]string, 30)
	for i := range others {
		others[i] = []string{"a", "b", "c", "d"}[i%4]
	}
	for _, c := range []struct {
		name      string
		nb        config.Neighbouring
		d, dPrime []string
		keyed     bool
	}{
		{"value changed", config.Replace, append([]string{"a"}, others...), append([]string{"b"}, others...), false},
		{"person absent", config.AddRemove, append([]string{"a"}, others...), others, false},
		// The unit is the table's key: one record per person, read whole.
		{"person absent, unit is key", config.AddRemove, append([]string{"a"}, others...), others, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := rrPlanOf(t, c.nb, "SELECT dpproxy.rr(c) FROM t", c.keyed)
			if c.keyed && (plan.RR.RowsPerUnit != 1 || strings.Contains(plan.BackendSQL, "ROW_NUMBER")) {
				t.Fatalf("keyed: %d record(s) per person, %s", plan.RR.RowsPerUnit, plan.BackendSQL)
			}
			r := mechanisms.Seeded(11)
			shift, _ := plan.RR.Shift()
			center := int(shift) + len(others)
			// The row count near the records' own number (what dummies
			// hide) and around its center with them.
			names := []string{"rows≥" + strconv.Itoa(len(c.d))}
			for j := center - 20; j <= center+20; j += 4 {
				names = append(names, "rows≥"+strconv.Itoa(j))
			}
			for _, v := range []string{"a", "b"} {
				for j := -8; j <= 8; j += 2 {
					names = append(names, v+"≥"+strconv.Itoa(j))
				}
			}
			tally := dpaudit.NewTally(names...)
			const runs = 20000
			occurred := make([]bool, len(names))
			for i := 0; i < runs; i++ {
				for side, values := range [][]string{c.d, c.dPrime} {
					res := rrRelease(t, plan, values, r)
					counts := map[string]int{}
					for _, row := range res.Rows {
						counts[row[0].(string)]++
					}
					n := len(res.Rows)
					for j, name := range names {
						var threshold int
						switch {
						case name[:4] == "rows":
							threshold, _ = strconv.Atoi(name[len("rows≥"):])
							occurred[j] = n >= threshold
						default:
							// a value's count relative to a quarter of the rows
							threshold, _ = strconv.Atoi(name[len("a≥"):])
							occurred[j] = counts[name[:1]]-n/4 >= threshold
						}
					}
					tally.Add(side == 1, occurred)
				}
			}
			bound := tally.EpsilonLowerBound(plan.Delta, 0.05)
			if bound.Epsilon > plan.Epsilon {
				t.Errorf("the releases support %s, above the plan's ε = %g", bound, plan.Epsilon)
			}
			t.Logf("%s (plan ε = %g)", bound, plan.Epsilon)
		})
	}
}

// The debiased counts are unbiased over repeated releases, and their 95 %
// intervals cover the truth at least 93 % of the time (two columns, 400
// records, ε = 1).
func TestRREstimatesUnbiased(t *testing.T) {
	plan := rrPlan(t, config.AddRemove, "SELECT dpproxy.rr(c) AS c, dpproxy.rr(f) AS f FROM t")
	domains, err := rrDomains(plan)
	if err != nil {
		t.Fatal(err)
	}
	truth := map[string]float64{"c=a": 200, "c=b": 120, "c=c": 80, "c=d": 0, "f=true": 100, "f=false": 300}
	var records [][]any
	for i := 0; i < 400; i++ {
		c := "a"
		switch {
		case i >= 200 && i < 320:
			c = "b"
		case i >= 320:
			c = "c"
		}
		records = append(records, []any{c, i%4 == 0})
	}
	r := mechanisms.Seeded(5)
	const runs = 400
	sums, sq := map[string]float64{}, map[string]float64{}
	covered := map[string]int{}
	for i := 0; i < runs; i++ {
		res, err := releaseRR(plan, domains, records, r)
		if err != nil {
			t.Fatal(err)
		}
		est, err := RREstimates(plan, res)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range est {
			key := fmt.Sprintf("%s=%v", e.Column, e.Value)
			sums[key] += e.Estimate
			sq[key] += e.Estimate * e.Estimate
			if truth[key] >= e.Lo && truth[key] <= e.Hi {
				covered[key]++
			}
		}
	}
	for key, want := range truth {
		mean := sums[key] / runs
		sd := math.Sqrt(sq[key]/runs - mean*mean)
		se := sd / math.Sqrt(runs)
		if math.Abs(mean-want) > 4*se {
			t.Errorf("%s: mean estimate %.1f over %d releases, truth %.0f (standard error %.1f): biased", key, mean, runs, want, se)
		}
		if c := float64(covered[key]) / runs; c < 0.93 {
			t.Errorf("%s: 95 %% intervals cover the truth in %.3f of releases", key, c)
		}
		t.Logf("%s: mean %.1f (truth %.0f, se %.1f), sd %.1f, coverage %.3f", key, mean, want, se, sd, float64(covered[key])/runs)
	}
}

// A binned numeric column reports the bin of each value clamped to the
// bounds; at a large ε (keep probability ≈ 1) the records' own bins come
// out, and a NULL is a random bin.
func TestRRBins(t *testing.T) {
	plan := rrPlan(t, config.AddRemove, "SELECT dpproxy.rr(age, 25) FROM t")
	plan.RR.ColumnEpsilon = 60 // e^60: always kept
	domains, err := rrDomains(plan)
	if err != nil {
		t.Fatal(err)
	}
	records := [][]any{{int64(5)}, {int64(30)}, {int64(150)}, {int64(-4)}, {sqltypes.Decimal("99.5")}}
	res, err := releaseRR(plan, domains, records, mechanisms.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[any]int{}
	for _, row := range res.Rows {
		counts[row[0]]++
	}
	// Each record's bin at least once (dummies add uniform bins).
	for _, want := range []int64{0, 25, 100, 0, 75} {
		if counts[want] == 0 {
			t.Errorf("bin %d missing from %v", want, counts)
		}
	}
	for v := range counts {
		if _, ok := v.(int64); !ok {
			t.Errorf("bin %v of type %T, want int64", v, v)
		}
	}
}

// Found in review: SQLite returns a BOOLEAN column as text when one row
// holds 'yes'; every value is then keyed by the declared type on its own,
// so one person's odd value cannot turn everyone else's records into
// out-of-domain ones. On a real SQLite database, the release's debiased
// count of true is the same (within noise) with or without that person.
func TestRRKeysEachValueByItsType(t *testing.T) {
	ctx := context.Background()
	plan := rrPlan(t, config.AddRemove, "SELECT dpproxy.rr(f) FROM t")
	plan.RR.ColumnEpsilon = 3 // sharp enough to tell 500 from 0
	domains, err := rrDomains(plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range []string{"", "'yes'", "'t'", "'maybe'"} {
		path := filepath.Join(t.TempDir(), "d.db")
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		stmts := []string{`CREATE TABLE t (uid INTEGER, c TEXT, f BOOLEAN, age INTEGER)`}
		for i := 0; i < 500; i++ {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO t VALUES (%d, 'a', 1, 3)`, i))
		}
		if extra != "" {
			stmts = append(stmts, `INSERT INTO t VALUES (9999, 'a', `+extra+`, 3)`)
		}
		for _, s := range stmts {
			if _, err := db.Exec(s); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		be, err := backend.OpenSQLite(ctx, path, 1)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := be.Query(ctx, plan.BackendSQL)
		be.Close()
		if err != nil {
			t.Fatal(err)
		}
		res, err := releaseRR(plan, domains, rows.Values, mechanisms.Seeded(2))
		if err != nil {
			t.Fatal(err)
		}
		est, err := RREstimates(plan, res)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range est {
			if e.Value == true && (e.Estimate < 400 || e.Estimate > 620) {
				t.Errorf("with a row f = %s (column typed %v): estimate of true %.0f, want about 500", extra, rows.Columns[0].Type, e.Estimate)
			}
		}
	}
	for _, c := range []struct {
		v    any
		t    config.ColumnType
		want string
	}{
		{"yes", config.TypeBool, "btrue"}, {"f", config.TypeBool, "bfalse"}, {"1", config.TypeBool, "btrue"},
		{"2024-03-01", config.TypeDate, "d2024-03-01"}, {"2024-03-01 00:00:00", config.TypeDate, "d2024-03-01"},
		{" 42 ", config.TypeInt, "n42"}, {"maybe", config.TypeBool, "smaybe"},
	} {
		if got := canonicalKey(c.v, c.t); got != c.want {
			t.Errorf("canonicalKey(%q, %s) = %q, want %q", c.v, c.t, got, c.want)
		}
	}
}

// The two mechanisms of a release, each audited where it is sharp. k-ary
// RR of one value: the event "reported a" on a vs b has ratio exactly
// e^ε; the Clopper–Pearson bound stays under the column's ε but near it
// (it would pass a mechanism kept more often only if that broke the
// claim). The dummies' number on n records vs n + L: events N ≥ j.
func TestRRMechanismsAudit(t *testing.T) {
	r := mechanisms.Seeded(9)
	const eps, k, runs = 1.0, 4, 200000
	tally := dpaudit.NewTally("a")
	for i := 0; i < runs; i++ {
		for side, truth := range []int{0, 1} {
			v, err := randomizedResponse(r, truth, k, eps)
			if err != nil {
				t.Fatal(err)
			}
			tally.Add(side == 1, []bool{v == 0})
		}
	}
	b := tally.EpsilonLowerBound(0, 0.05)
	if b.Epsilon > eps || b.Epsilon < 0.9*eps {
		t.Errorf("k-ary RR at ε = %g: the audit finds %s; want it under ε and near it", eps, b)
	}
	plan := rrPlan(t, config.AddRemove, "SELECT dpproxy.rr(c) FROM t")
	rr := plan.RR
	shift, lambda := rr.Shift()
	var names []string
	for j := int(shift) - 30; j <= int(shift)+30; j += 3 {
		names = append(names, "N≥"+strconv.Itoa(j))
	}
	counts := dpaudit.NewTally(names...)
	occurred := make([]bool, len(names))
	for i := 0; i < 50000; i++ {
		for side, records := range []int64{0, int64(rr.CountSensitivity)} {
			z, err := r.TwoSidedGeometric(lambda)
			if err != nil {
				t.Fatal(err)
			}
			n := records + max(0, shift+z)
			for j := range names {
				threshold, _ := strconv.Atoi(names[j][len("N≥"):])
				occurred[j] = n >= int64(threshold)
			}
			counts.Add(side == 1, occurred)
		}
	}
	if b := counts.EpsilonLowerBound(rr.CountDelta, 0.05); b.Epsilon > rr.CountEpsilon {
		t.Errorf("the number of rows supports %s, above the dummies' ε = %g", b, rr.CountEpsilon)
	} else {
		t.Logf("%s (dummies' ε = %g)", b, rr.CountEpsilon)
	}
}
