package rewrite

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/sqltypes"
	_ "modernc.org/sqlite"
)

// The deterministic companion of the engine's plan-level privacy audit:
// for hand-built worst cases, run the plan's backend SQL on neighbouring
// databases D and D′ and measure how far each measurement and the
// selection's unit counts actually move. Each case is a step of the
// derivation in the package documentation ("Privacy of a plan"): the
// change must stay within the sensitivity the plan assumed, and on the
// cases built to reach the bound it must reach it exactly, so the bound is
// neither broken nor loose there.

const sensitivityPolicy = `
backend: {kind: sqlite, path: unused.db}
defaults: {epsilon: 1, delta: 1e-6, max_groups_per_unit: 2, max_rows_per_unit: 3, neighbouring: %s}
analysts:
  - name: ana
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget: {epsilon: 10}
protected_tables:
  - name: t
    privacy_unit: uid
    columns:
      - {name: uid, type: int}
      - {name: g, type: text, group_by: true}
      - {name: kg, type: text, group_by: true, keys: [h1, h2, h3, h4]}
      - {name: f, type: int}
      - {name: x, type: numeric, bounds: [-5, 10]}
  - name: r
    privacy_unit: row
    columns:
      - {name: g, type: text, group_by: true, keys: [h1, h2, h3, h4]}
      - {name: x, type: numeric, bounds: [-5, 10]}
`

// L0 = 2, Linf = 3, x ∈ [lo, hi] = [−5, 10]: M = max(|lo|, |hi|) = 10,
// mid = 2.5, h = (hi − lo)/2 = 7.5.
const (
	l0, linf, boundM, half = 2, 3, 10.0, 7.5
)

// rowsOf is one unit's rows: in each group, n rows of value x with flag f.
type rowsOf struct {
	groups []string
	n      int
	x      float64
	f      int
}

type sensitivityCase struct {
	name          string
	neighbouring  config.Neighbouring
	query         string
	inD, inDPrime rowsOf // the unit 0's rows (no groups: absent)
	// reached is the change, per measurement, summed over groups, that
	// the case reaches; it is the sensitivity where tight.
	reached []float64
	tight   bool
	// selectionGroups is the number of groups whose unit count moves.
	selectionGroups int
	// total, when not 0, is t's max_total_rows_per_unit (C).
	total int
	// bias adds the excess measurements (excess.go), after the others.
	bias bool
}

var five = rowsOf{n: 5, x: 1000, f: 1} // 5 rows > Linf, x clamped to hi

// ten has so many rows and so large a value that its excess reaches the
// clip in every case.
var ten = rowsOf{n: 10, x: 1000, f: 1}

func in(r rowsOf, groups ...string) rowsOf { r.groups = groups; return r }

var sensitivityCases = []sensitivityCase{
	// Ungrouped, add/remove: the unit adds its contribution's magnitude.
	// Counts cap at Linf; sums scale 5 clamped values to Linf of them.
	{name: "count", neighbouring: config.AddRemove, query: "SELECT COUNT(*) FROM t WHERE f = 1",
		inD: in(five, "h1"), reached: []float64{linf}, tight: true},
	{name: "sum", neighbouring: config.AddRemove, query: "SELECT SUM(x) FROM t WHERE f = 1",
		inD: in(five, "h1"), reached: []float64{linf * boundM}, tight: true},
	{name: "sum below zero", neighbouring: config.AddRemove, query: "SELECT SUM(x) FROM t WHERE f = 1",
		inD: in(rowsOf{n: 5, x: -1000, f: 1}, "h1"), reached: []float64{linf * 5}},
	// AVG: count and centred sum Σ(x − mid); VARIANCE adds Σ(x − mid)².
	{name: "avg", neighbouring: config.AddRemove, query: "SELECT AVG(x) FROM t WHERE f = 1",
		inD: in(five, "h1"), reached: []float64{linf, linf * half}, tight: true},
	{name: "variance", neighbouring: config.AddRemove, query: "SELECT VARIANCE(x) FROM t WHERE f = 1",
		inD: in(five, "h1"), reached: []float64{linf, linf * half, linf * half * half}, tight: true},
	{name: "distinct units", neighbouring: config.AddRemove, query: "SELECT COUNT(DISTINCT uid) FROM t WHERE f = 1",
		inD: in(five, "h1"), reached: []float64{1}, tight: true},

	// Ungrouped, replace: the unit stays and its contribution moves across
	// the width of its range: counts from Linf to 0 (filtered out), sums
	// from Linf·hi to Linf·lo, squares from Linf·h² to 0 (at mid).
	{name: "count", neighbouring: config.Replace, query: "SELECT COUNT(*) FROM t WHERE f = 1",
		inD: in(five, "h1"), inDPrime: in(rowsOf{n: 5, x: 1000, f: 0}, "h1"), reached: []float64{linf}, tight: true},
	{name: "sum", neighbouring: config.Replace, query: "SELECT SUM(x) FROM t WHERE f = 1",
		inD: in(five, "h1"), inDPrime: in(rowsOf{n: 5, x: -1000, f: 1}, "h1"), reached: []float64{linf * 15}, tight: true},
	{name: "avg", neighbouring: config.Replace, query: "SELECT AVG(x) FROM t WHERE f = 1",
		inD: in(five, "h1"), inDPrime: in(rowsOf{n: 5, x: 1000, f: 0}, "h1"), reached: []float64{linf, linf * half}},
	{name: "avg centred sum", neighbouring: config.Replace, query: "SELECT AVG(x) FROM t WHERE f = 1",
		inD: in(five, "h1"), inDPrime: in(rowsOf{n: 5, x: -1000, f: 1}, "h1"), reached: []float64{0, 2 * linf * half}},
	{name: "variance squares", neighbouring: config.Replace, query: "SELECT VARIANCE(x) FROM t WHERE f = 1",
		inD: in(five, "h1"), inDPrime: in(rowsOf{n: 5, x: 2.5, f: 1}, "h1"), reached: []float64{0, linf * half, linf * half * half}},
	{name: "distinct units", neighbouring: config.Replace, query: "SELECT COUNT(DISTINCT uid) FROM t WHERE f = 1",
		inD: in(five, "h1"), inDPrime: in(rowsOf{n: 5, x: 1000, f: 0}, "h1"), reached: []float64{1}, tight: true},

	// Public keys, add/remove: a unit in k = 4 > L0 groups weighs
	// L0/k = ½ in each; over its groups that is L0 groups' worth.
	{name: "keys count", neighbouring: config.AddRemove, query: "SELECT kg, COUNT(*) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2", "h3", "h4"), reached: []float64{l0 * linf}, tight: true},
	{name: "keys sum", neighbouring: config.AddRemove, query: "SELECT kg, SUM(x) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2", "h3", "h4"), reached: []float64{l0 * linf * boundM}, tight: true},
	{name: "keys distinct units", neighbouring: config.AddRemove, query: "SELECT kg, COUNT(DISTINCT uid) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2", "h3", "h4"), reached: []float64{l0}, tight: true},
	{name: "keys variance", neighbouring: config.AddRemove, query: "SELECT kg, VARIANCE(x) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2"), reached: []float64{l0 * linf, l0 * linf * half, l0 * linf * half * half}, tight: true},

	// Public keys, replace: the unit leaves L0 groups and joins L0 others,
	// 2·L0 groups each moved by the magnitude.
	{name: "keys count", neighbouring: config.Replace, query: "SELECT kg, COUNT(*) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2"), inDPrime: in(five, "h3", "h4"), reached: []float64{2 * l0 * linf}, tight: true},
	{name: "keys sum", neighbouring: config.Replace, query: "SELECT kg, SUM(x) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2"), inDPrime: in(five, "h3", "h4"), reached: []float64{2 * l0 * linf * boundM}, tight: true},
	// Staying in its groups with the opposite value moves each by the
	// width Linf·(hi − lo) ≤ 2·Linf·M: within the bound, two of its 2·L0.
	{name: "keys sum same groups", neighbouring: config.Replace, query: "SELECT kg, SUM(x) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2"), inDPrime: in(rowsOf{n: 5, x: -1000, f: 1}, "h1", "h2"), reached: []float64{l0 * linf * 15}},
	// A unit spread over 4 groups (½ each) becomes whole in one of them:
	// each group moves by Linf/2, well within 2·L0·Linf.
	{name: "keys count weighted to one group", neighbouring: config.Replace, query: "SELECT kg, COUNT(*) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2", "h3", "h4"), inDPrime: in(five, "h1"), reached: []float64{4 * linf / 2}},

	// Partition selection, add/remove: the unit's L0 groups (of more, L0
	// kept at random) gain one unit each; the selection runs per group at
	// (ε/L0, δ/L0).
	{name: "selection count", neighbouring: config.AddRemove, query: "SELECT g, COUNT(*) FROM t WHERE f = 1 GROUP BY g",
		inD: in(five, "h1", "h2"), reached: []float64{l0 * linf}, tight: true, selectionGroups: l0},
	{name: "selection count, random L0 of 4", neighbouring: config.AddRemove, query: "SELECT g, COUNT(*) FROM t WHERE f = 1 GROUP BY g",
		inD: in(five, "h1", "h2", "h3", "h4"), reached: []float64{l0 * linf}, tight: true, selectionGroups: l0},
	// Partition selection, replace: 2·L0 groups' unit counts move by one,
	// so the selection runs per group at (ε/(2·L0), δ/(2·L0)). (Before
	// issue 10 it assumed L0: this case failed with 4 > 2.)
	{name: "selection count", neighbouring: config.Replace, query: "SELECT g, COUNT(*) FROM t WHERE f = 1 GROUP BY g",
		inD: in(five, "h1", "h2"), inDPrime: in(five, "h3", "h4"), reached: []float64{2 * l0 * linf}, tight: true, selectionGroups: 2 * l0},
	{name: "selection avg", neighbouring: config.Replace, query: "SELECT g, AVG(x) FROM t WHERE f = 1 GROUP BY g",
		inD: in(five, "h1", "h2"), inDPrime: in(five, "h3", "h4"), reached: []float64{2 * l0 * linf, 2 * l0 * linf * half}, tight: true, selectionGroups: 2 * l0},
	{name: "selection distinct units", neighbouring: config.Replace, query: "SELECT g, COUNT(DISTINCT uid) FROM t WHERE f = 1 GROUP BY g",
		inD: in(five, "h1", "h2"), inDPrime: in(five, "h3", "h4"), reached: []float64{2 * l0}, tight: true, selectionGroups: 2 * l0},

	// Excess measurements: each unit's excess, clipped at M (the
	// measurement's sensitivity; half of it under replace, where the unit's
	// old and new excess both count), moves the vector by the sensitivity.
	{name: "excess count", neighbouring: config.AddRemove, query: "SELECT COUNT(*) FROM t WHERE f = 1",
		inD: in(ten, "h1"), reached: []float64{linf, linf}, tight: true, bias: true},
	{name: "excess sum", neighbouring: config.Replace, query: "SELECT SUM(x) FROM t WHERE f = 1",
		inD: in(ten, "h1"), inDPrime: in(rowsOf{n: 10, x: -1000, f: 1}, "h1"), reached: []float64{linf * 15, linf * 15}, tight: true, bias: true},
	{name: "excess avg", neighbouring: config.AddRemove, query: "SELECT AVG(x) FROM t WHERE f = 1",
		inD: in(ten, "h1"), reached: []float64{linf, linf * half, linf, linf * half}, tight: true, bias: true},
	{name: "excess keys count", neighbouring: config.AddRemove, query: "SELECT kg, COUNT(*) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(ten, "h1", "h2", "h3", "h4"), reached: []float64{l0 * linf, l0 * linf}, tight: true, bias: true},
	{name: "excess selection count", neighbouring: config.Replace, query: "SELECT g, COUNT(*) FROM t WHERE f = 1 GROUP BY g",
		inD: in(ten, "h1", "h2"), inDPrime: in(ten, "h3", "h4"), reached: []float64{2 * l0 * linf, 2 * l0 * linf}, tight: true, selectionGroups: 2 * l0, bias: true},
	// Cells beyond L0 (dropped at random) count in the excess whole.
	{name: "excess selection count and units, random L0 of 4", neighbouring: config.AddRemove, query: "SELECT g, COUNT(*), COUNT(DISTINCT uid) FROM t WHERE f = 1 GROUP BY g",
		inD: in(ten, "h1", "h2", "h3", "h4"), reached: []float64{l0 * linf, l0, l0 * linf, l0}, tight: true, selectionGroups: l0, bias: true},
	{name: "excess total keys count", neighbouring: config.AddRemove, query: "SELECT kg, COUNT(*) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(ten, "h1", "h2", "h3", "h4"), reached: []float64{4, 4 * (1 + totalCapSlack)}, tight: true, total: 4, bias: true},

	// The total bound C = 4 < L0·Linf = 6: a unit's capped rows over all
	// its groups (4 groups × 3 = 12) are weighted by C/12, so it moves
	// the groups by C in all (counts), C·M (sums); twice under replace.
	{name: "total keys count", neighbouring: config.AddRemove, query: "SELECT kg, COUNT(*) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2", "h3", "h4"), reached: []float64{4}, tight: true, total: 4},
	{name: "total keys sum", neighbouring: config.AddRemove, query: "SELECT kg, SUM(x) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2", "h3", "h4"), reached: []float64{4 * boundM}, tight: true, total: 4},
	{name: "total keys avg", neighbouring: config.Replace, query: "SELECT kg, AVG(x) FROM t WHERE f = 1 GROUP BY kg",
		inD: in(five, "h1", "h2"), inDPrime: in(five, "h3", "h4"), reached: []float64{2 * 4, 2 * 4 * half}, tight: true, total: 4},
	// With partition selection the unit first keeps L0 = 2 random groups
	// (6 capped rows, weighted by 4/6).
	{name: "total selection count", neighbouring: config.AddRemove, query: "SELECT g, COUNT(*) FROM t WHERE f = 1 GROUP BY g",
		inD: in(five, "h1", "h2", "h3", "h4"), reached: []float64{4}, tight: true, selectionGroups: l0, total: 4},
	// Units are counted in the kept groups, unweighted: L0.
	{name: "total selection count and units", neighbouring: config.AddRemove, query: "SELECT g, COUNT(*), COUNT(DISTINCT uid) FROM t WHERE f = 1 GROUP BY g",
		inD: in(five, "h1", "h2", "h3", "h4"), reached: []float64{4, l0}, tight: true, selectionGroups: l0, total: 4},
}

func TestSensitivityCoversWorstCases(t *testing.T) {
	for _, c := range sensitivityCases {
		t.Run(string(c.neighbouring)+"/"+c.name, func(t *testing.T) {
			pol, err := config.Parse([]byte(fmt.Sprintf(sensitivityPolicy, c.neighbouring)), "sensitivity.yaml")
			if err != nil {
				t.Fatal(err)
			}
			pol.ProtectedTables[0].MaxTotalRowsPerUnit = c.total
			p := planForOptions(t, pol, c.query, Options{BiasBounds: c.bias})
			if c.bias != p.HasExcess() {
				t.Fatalf("excess measurements: %v, the case expects %v", p.HasExcess(), c.bias)
			}
			if c.total > 0 && !p.TotalCapped() {
				t.Fatalf("the plan does not apply the total bound %d", c.total)
			}
			d := groupRows(t, p, sensitivityDB(t, c.inD))
			dPrime := groupRows(t, p, sensitivityDB(t, c.inDPrime))
			if len(p.Measurements) != len(c.reached) {
				t.Fatalf("%d measurements, the case expects %d", len(p.Measurements), len(c.reached))
			}
			for i, m := range p.Measurements {
				moved := 0.0
				for _, key := range unionKeys(d, dPrime) {
					moved += math.Abs(m.Value(d[key]) - m.Value(dPrime[key]))
				}
				if moved > m.Sensitivity*(1+1e-12) {
					t.Errorf("%s moved by %v, beyond its sensitivity %v", m.Kind, moved, m.Sensitivity)
				}
				if math.Abs(moved-c.reached[i]) > 1e-9*math.Max(1, moved) {
					t.Errorf("%s moved by %v; the case is built to move it by %v", m.Kind, moved, c.reached[i])
				}
				// (Tight up to the total bound's slack for rounding.)
				if c.tight && math.Abs(moved-m.Sensitivity) > 2e-9*m.Sensitivity {
					t.Errorf("%s: the worst case reaches %v, the sensitivity is %v: the derivation and the plan disagree", m.Kind, moved, m.Sensitivity)
				}
			}
			// The excess measurements take excessShare of ε; the rest is
			// split over the others and the selection.
			mainMeasurements, mainEpsilon := 0, p.Epsilon
			for _, m := range p.Measurements {
				if m.Kind == MeasureExcess {
					mainEpsilon -= m.Epsilon
				} else {
					mainMeasurements++
				}
			}
			if c.bias && math.Abs(mainEpsilon-p.Epsilon*(1-excessShare)) > 1e-12 {
				t.Errorf("the excess measurements spend %v of ε = %v, want %v", p.Epsilon-mainEpsilon, p.Epsilon, p.Epsilon*excessShare)
			}
			s := p.Selection
			if (s != nil) != (c.selectionGroups > 0) {
				t.Fatalf("selection %+v, the case expects it in %d groups", s, c.selectionGroups)
			}
			if s == nil {
				return
			}
			changed := 0
			for _, key := range unionKeys(d, dPrime) {
				units := func(row []any) float64 {
					if row == nil {
						return 0
					}
					return sqltypes.Float(row[p.UnitsColumn])
				}
				switch diff := math.Abs(units(d[key]) - units(dPrime[key])); {
				case diff > 1:
					t.Errorf("group %s: unit count moved by %v > 1", key, diff)
				case diff > 0:
					changed++
				}
			}
			if changed != c.selectionGroups || changed > s.ChangedGroups || (c.tight && s.ChangedGroups != changed) {
				t.Errorf("%d groups' unit counts moved (case built for %d); the selection is calibrated for %d", changed, c.selectionGroups, s.ChangedGroups)
			}
			if th := s.Threshold; th != nil {
				// Thresholding a count: no ε of its own, and a lone unit's
				// group (count ≤ MaxAlone) is what δ covers.
				m := p.Measurements[th.Measurement]
				if s.Delta != p.Delta || s.Epsilon != 0 || math.Abs(m.Epsilon-mainEpsilon/float64(mainMeasurements)) > 1e-12 || th.Tau <= float64(th.MaxAlone) {
					t.Errorf("threshold selection %+v (ε %v, δ %v) of the plan's (%v, %v) over %d measurements", th, s.Epsilon, s.Delta, p.Epsilon, p.Delta, len(p.Measurements))
				}
				for _, key := range unionKeys(d, dPrime) {
					if d[key] == nil || dPrime[key] == nil { // the lone unit's group
						row := d[key]
						if row == nil {
							row = dPrime[key]
						}
						if v := m.Value(row); v > float64(th.MaxAlone) {
							t.Errorf("group %s exists on one side only with count %v > MaxAlone %d", key, v, th.MaxAlone)
						}
					}
				}
			} else if s.Delta != p.Delta || math.Abs(s.Epsilon-mainEpsilon/float64(mainMeasurements+1)) > 1e-12 {
				t.Errorf("selection (ε, δ) = (%v, %v) of the plan's (%v, %v) over %d measurements", s.Epsilon, s.Delta, p.Epsilon, p.Delta, len(p.Measurements))
			}
		})
	}
}

// Row privacy: each row is a unit (L0 = Linf = 1). Under replace a row
// moves from one group to another: two groups change by one row each.
func TestSensitivityRowPrivacyReplace(t *testing.T) {
	pol, err := config.Parse([]byte(fmt.Sprintf(sensitivityPolicy, config.Replace)), "sensitivity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := planFor(t, pol, "SELECT g, COUNT(*), SUM(x) FROM r GROUP BY g")
	open := func(g string, x float64) map[string][]any {
		db := openSensitivityDB(t)
		mustExec(t, db, `INSERT INTO r VALUES ('h1', 1), ('h2', 2), ('h3', 3), (?, ?)`, g, x)
		return groupRows(t, p, db)
	}
	d, dPrime := open("h1", 10), open("h2", 10)
	want := []float64{2, 2 * boundM} // count: 1 + 1; sum: 10 out of h1, 10 into h2
	for i, m := range p.Measurements {
		moved := 0.0
		for _, key := range unionKeys(d, dPrime) {
			moved += math.Abs(m.Value(d[key]) - m.Value(dPrime[key]))
		}
		if moved != want[i] || moved != m.Sensitivity {
			t.Errorf("%s moved by %v, want %v = the sensitivity %v", m.Kind, moved, want[i], m.Sensitivity)
		}
	}
}

func planFor(t *testing.T, pol *config.Policy, query string) *Plan {
	t.Helper()
	return planForOptions(t, pol, query, Options{})
}

// planForOptions is planFor with opts (dialect and ε set here).
func planForOptions(t *testing.T, pol *config.Policy, query string, opts Options) *Plan {
	t.Helper()
	stmts, err := Parse(query, PostgresFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	opts.Dialect, opts.Epsilon = SQLite, pol.Defaults.Epsilon
	q, err := Analyze(stmts[0], pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	return q.Plan
}

func openSensitivityDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mustExec(t, db, `CREATE TABLE t (uid INTEGER, g TEXT, kg TEXT, f INTEGER, x NUMERIC)`)
	mustExec(t, db, `CREATE TABLE r (g TEXT, x NUMERIC)`)
	return db
}

// sensitivityDB holds units 1–8, two in each of h1–h4 with one row
// (x = 1), and unit 0's rows.
func sensitivityDB(t *testing.T, unit rowsOf) *sql.DB {
	db := openSensitivityDB(t)
	for uid := 1; uid <= 8; uid++ {
		g := fmt.Sprintf("h%d", (uid+1)/2)
		mustExec(t, db, `INSERT INTO t VALUES (?, ?, ?, 1, 1)`, uid, g, g)
	}
	for _, g := range unit.groups {
		for i := 0; i < unit.n; i++ {
			mustExec(t, db, `INSERT INTO t VALUES (0, ?, ?, ?, ?)`, g, g, unit.f, unit.x)
		}
	}
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatal(err)
	}
}

// groupRows runs the plan's backend SQL, folds weighted groups, and
// returns the rows by group key ("" without GROUP BY).
func groupRows(t *testing.T, p *Plan, db *sql.DB) map[string][]any {
	t.Helper()
	rows, err := db.Query(p.BackendSQL)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var values [][]any
	for rows.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		values = append(values, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	folded, err := p.FoldGroups(values)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]any{}
	for _, row := range folded {
		var key []string
		for _, g := range p.Groups {
			key = append(key, fmt.Sprint(row[g.BackendColumn]))
		}
		out[strings.Join(key, "/")] = row
	}
	return out
}

func unionKeys(a, b map[string][]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// The Gaussian mechanism's calibration in a plan: L2 sensitivity √L0 (add
// or remove) or 2√L0 (replace) times a unit's largest contribution to one
// group, one coordinate without GROUP BY; the query's δ shared by the
// selection and the Gaussian measurements; auto picks Gaussian where its
// 95 % bound is smaller.
func TestGaussianAssignment(t *testing.T) {
	pol := testPolicy(t)
	pol.Defaults.Delta = 1e-6
	plan := func(mech config.Mechanism, nb config.Neighbouring, sql string) *Plan {
		t.Helper()
		pol.Defaults.Mechanism, pol.Defaults.Neighbouring = mech, nb
		parsed, err := ParseStatement(sql, PostgresFrontEnd)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Analyze(parsed.Stmts[0], pol, Options{Dialect: SQLite, Epsilon: 1})
		if err != nil || q.Plan == nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return q.Plan
	}
	// visits: L0 = 3, Linf = 2; region has no key list (selection).
	p := plan(config.MechanismGaussian, config.AddRemove, `SELECT region, COUNT(*) FROM visits GROUP BY region`)
	m := p.Measurements[0]
	if !m.Gaussian || math.Abs(m.L2-math.Sqrt(3)*2) > 1e-12 || m.Sensitivity != 6 {
		t.Errorf("grouped add/remove: %+v, want Gaussian with L2 = √3·2, L1 = 6", m)
	}
	if total := m.Delta + p.Selection.Delta; total > p.Delta*(1+1e-12) || p.Delta != 1e-6 {
		t.Errorf("δ: measurement %g + selection %g > query %g", m.Delta, p.Selection.Delta, p.Delta)
	}
	p = plan(config.MechanismGaussian, config.Replace, `SELECT region, COUNT(*) FROM visits GROUP BY region`)
	if m := p.Measurements[0]; math.Abs(m.L2-2*math.Sqrt(3)*2) > 1e-12 {
		t.Errorf("grouped replace: L2 = %g, want 2·√3·2", m.L2)
	}
	p = plan(config.MechanismGaussian, config.AddRemove, `SELECT SUM(cost) FROM visits`)
	if m := p.Measurements[0]; m.L2 != m.Sensitivity || m.L2 != 2000 {
		t.Errorf("ungrouped: L2 %g, L1 %g, want both 2·1000", m.L2, m.Sensitivity)
	}
	// Laplace by default; auto where Gaussian's bound is smaller.
	if p := plan(config.MechanismLaplace, config.AddRemove, `SELECT region, COUNT(*) FROM visits GROUP BY region`); p.Measurements[0].Gaussian {
		t.Error("laplace policy chose Gaussian")
	}
	auto := plan(config.MechanismAuto, config.AddRemove, `SELECT region, COUNT(*) FROM visits GROUP BY region`).Measurements[0]
	sigma, _ := mechanisms.AnalyticGaussianSigma(auto.Epsilon, 1e-6/2, math.Sqrt(3)*2)
	if want := 1.96*sigma < math.Log(20)*6/auto.Epsilon; auto.Gaussian != want {
		t.Errorf("auto chose Gaussian=%v; Gaussian bound %g vs Laplace %g", auto.Gaussian, 1.96*sigma, math.Log(20)*6/auto.Epsilon)
	}
}

// Top-k's stop score: a group one unit alone could create (score ≤ Δ) is
// picked in a round with probability at most δ/k against ⊥, under both
// neighbouring definitions, and the picks add up to the top-k share less
// δ.
func TestTopKCalibration(t *testing.T) {
	for _, nb := range []config.Neighbouring{config.AddRemove, config.Replace} {
		pol, err := config.Parse([]byte(fmt.Sprintf(sensitivityPolicy, nb)), "sensitivity.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p := planFor(t, pol, "SELECT g, COUNT(*) FROM t WHERE f = 1 GROUP BY g ORDER BY COUNT(*) DESC LIMIT 4")
		tk := p.Selection.TopK
		if tk == nil {
			t.Fatalf("%s: no top-k in %+v", nb, p.Selection)
		}
		weight := func(score float64) float64 { return math.Exp(tk.PickEpsilon * score / (2 * tk.EMSensitivity)) }
		lone := float64(p.MaxGroupsPerUnit) * weight(linf) / weight(tk.Tau)
		if lone > p.Selection.Delta/float64(tk.K)*(1+1e-9) {
			t.Errorf("%s: lone groups are picked with probability %g per round, above δ/k = %g", nb, lone, p.Selection.Delta/float64(tk.K))
		}
		if got := float64(tk.K)*tk.PickEpsilon + p.Selection.Delta; math.Abs(got-tk.Epsilon) > 1e-12 || tk.Delta < linf {
			t.Errorf("%s: k·ε_pick + δ = %v, want the top-k share %v; Δ = %v", nb, got, tk.Epsilon, tk.Delta)
		}
		if want := tk.Delta / 2; nb == config.AddRemove && tk.EMSensitivity != want {
			t.Errorf("add/remove: monotone scores should use Δ/2, got %v", tk.EMSensitivity)
		}
		// The measured count covers the k picked groups only.
		if m := p.Measurements[0]; m.Sensitivity > float64(tk.K)*linf*2 {
			t.Errorf("%s: count sensitivity %v over k = %d groups", nb, m.Sensitivity, tk.K)
		}
	}
}

// max_rows_per_unit: auto: the provisional plan spends AutoShare of ε on
// the choice, and the rebound plan runs at the chosen Linf with the rest,
// charging the same ε in all.
func TestAutoBoundPlan(t *testing.T) {
	pol := testPolicy(t)
	pol.ProtectedTables[0].MaxRowsPerUnit = config.RowsAuto
	stmts, err := Parse("SELECT diagnosis, COUNT(*), AVG(cost) FROM visits GROUP BY diagnosis", PostgresFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Analyze(stmts[0], pol, Options{Dialect: SQLite, Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := q.Plan
	if p.Auto == nil || p.Auto.Epsilon != AutoShare || p.Auto.Rebind == nil || p.Epsilon != 1 {
		t.Fatalf("provisional plan: auto %+v, ε %v", p.Auto, p.Epsilon)
	}
	r, err := p.Auto.Rebind(7)
	if err != nil {
		t.Fatal(err)
	}
	spent := AutoShare
	for _, m := range r.Measurements {
		spent += m.Epsilon
	}
	if r.Auto != nil || r.MaxRowsPerUnit != 7 || r.Epsilon != 1 || math.Abs(spent-1) > 1e-12 {
		t.Errorf("rebound plan: Linf %d, ε %v, auto share + measurements %v", r.MaxRowsPerUnit, r.Epsilon, spent)
	}
	if m := r.Measurements[0]; m.Sensitivity != float64(r.MaxGroupsPerUnit*7) {
		t.Errorf("count sensitivity %v at Linf 7, L0 %d", m.Sensitivity, r.MaxGroupsPerUnit)
	}
}

func TestAutoGrid(t *testing.T) {
	g := autoGrid(1000)
	if g[0] != 1 || g[len(g)-1] != 1000 || len(g) > 40 {
		t.Fatalf("grid %v", g)
	}
	for i := 1; i < len(g); i++ {
		if g[i] <= g[i-1] || float64(g[i]) > 1.3*float64(g[i-1])+1 {
			t.Fatalf("grid step %d → %d in %v", g[i-1], g[i], g)
		}
	}
}
