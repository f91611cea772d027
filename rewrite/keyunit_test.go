package rewrite

import (
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A table whose privacy unit is its primary key (UnitIsKey) is answered
// without the per-unit step: each unit is one row, so bounding it cannot
// change anything. On such a table both plans must compute the same
// bounded aggregates, on every backend.
//
// members (testdata/policy.yaml: L0 = 3, Linf = 2, C = 3, spend clamped
// to [0, 100], age to [0, 100]): one row per member; spend 250 and age
// 130 and -4 are clamped; NULLs in spend, age and city.
var keyUnitFixture = []string{
	`CREATE TABLE members (member_id INTEGER PRIMARY KEY, tier TEXT, city TEXT, clinic_id INTEGER, spend NUMERIC, age INTEGER)`,
	`INSERT INTO members VALUES (1, 'gold', 'Oslo', 1, 40, 30), (2, 'gold', 'Oslo', 1, 250, 130), (3, 'silver', 'Bergen', 2, 10, 50),
		(4, 'silver', 'Oslo', 3, NULL, -4), (5, 'bronze', 'Bergen', 2, 60, NULL), (6, 'gold', NULL, 1, 100, 70), (7, 'silver', 'Tromso', 2, 0, 20)`,
}

// keyUnitCases are compared between the two plans; want is the
// hand-computed value of backend value column col (0: the first after
// the group keys) per group.
var keyUnitCases = []struct {
	sql  string
	col  int
	want map[string]float64
}{
	{`SELECT COUNT(*) FROM members WHERE member_id = 3`, 0, map[string]float64{"": 1}},
	{`SELECT COUNT(*), SUM(spend), AVG(age) FROM members WHERE tier <> 'bronze'`, 0, map[string]float64{"": 6}},
	// Public keys: bronze, not one of them, is dropped when released.
	{`SELECT tier, COUNT(*), AVG(spend), VARIANCE(age) FROM members GROUP BY tier`, 0, map[string]float64{"gold": 3, "silver": 3, "bronze": 1}},
	// Partition selection, and the units it counts.
	{`SELECT city, COUNT(*), SUM(spend), COUNT(DISTINCT member_id) FROM members GROUP BY city`, 0, map[string]float64{"Oslo": 3, "Bergen": 2, "Tromso": 1, "<nil>": 1}},
	// Columns: the values counted, then their clamped sum (COUNT and SUM
	// of one column share them).
	{`SELECT SUM(spend) FROM members`, 1, map[string]float64{"": 40 + 100 + 10 + 60 + 100 + 0}},
	{`SELECT COUNT(age), SUM(age) FROM members WHERE age > 25`, 1, map[string]float64{"": 30 + 100 + 50 + 70}},
}

// keyUnitSideCases compare the side queries (quantile histograms and
// distinct counts).
var keyUnitSideCases = []string{
	`SELECT tier, MEDIAN(age), COUNT(DISTINCT city) FROM members GROUP BY tier`,
	`SELECT COUNT(DISTINCT tier) FROM members`,
}

func checkKeyUnits(t *testing.T, db *sql.DB, d Dialect) {
	for _, stmt := range keyUnitFixture {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("fixture: %v\n%s", err, stmt)
		}
	}
	pol := testPolicy(t)
	keyed := withKeyUnits(pol)
	plan := func(t *testing.T, query string, key bool) *Plan {
		stmts, err := Parse(query, PostgresFrontEnd)
		if err != nil {
			t.Fatal(err)
		}
		p := pol
		if key {
			p = keyed
		}
		q, err := Analyze(stmts[0], p, Options{Dialect: d, Epsilon: 1})
		if err != nil {
			t.Fatal(err)
		}
		if q.Plan.OneRowPerUnit != key {
			t.Fatalf("OneRowPerUnit = %v, want %v", q.Plan.OneRowPerUnit, key)
		}
		return q.Plan
	}
	for _, c := range keyUnitCases {
		t.Run("key unit/"+c.sql, func(t *testing.T) {
			byUnit, byRow := plan(t, c.sql, false), plan(t, c.sql, true)
			if byRow.MaxGroupsPerUnit != 1 || byRow.MaxRowsPerUnit != 1 || byRow.TotalCapped() {
				t.Errorf("key plan bounds L0 = %d, Linf = %d, total capped %v; want 1, 1, false", byRow.MaxGroupsPerUnit, byRow.MaxRowsPerUnit, byRow.TotalCapped())
			}
			if strings.Contains(byRow.BackendSQL, "dp_u") {
				t.Errorf("the key plan still bounds per unit:\n%s", byRow.BackendSQL)
			}
			want := boundedRows(t, db, byUnit)
			got := boundedRows(t, db, byRow)
			if !slices.EqualFunc(got, want, func(a, b []string) bool { return slices.Equal(a, b) }) {
				t.Fatalf("one row per unit: %v\nper unit: %v\nSQL: %s\nper unit: %s", got, want, byRow.BackendSQL, byUnit.BackendSQL)
			}
			first := map[string]float64{}
			for _, r := range got {
				var v float64
				fmt.Sscan(r[1+c.col], &v)
				first[r[0]] = v
			}
			if fmt.Sprint(first) != fmt.Sprint(c.want) {
				t.Fatalf("got %v, want %v", first, c.want)
			}
		})
	}
	for _, query := range keyUnitSideCases {
		t.Run("key unit side queries/"+query, func(t *testing.T) {
			byUnit, byRow := plan(t, query, false), plan(t, query, true)
			unitSQL, rowSQL := sideSQL(byUnit), sideSQL(byRow)
			if len(unitSQL) != len(rowSQL) || len(rowSQL) == 0 {
				t.Fatalf("side queries: %d per unit, %d by row", len(unitSQL), len(rowSQL))
			}
			for i := range rowSQL {
				got, want := sortedRows(t, db, rowSQL[i]), sortedRows(t, db, unitSQL[i])
				if !slices.EqualFunc(got, want, func(a, b []string) bool { return slices.Equal(a, b) }) {
					t.Fatalf("side query %d, one row per unit: %v\nper unit: %v\nSQL: %s", i, got, want, rowSQL[i])
				}
			}
		})
	}
}

// boundedRows runs a plan's backend SQL and returns its rows, folded
// (Plan.FoldGroups), without the group count column, as text: the group
// keys, then each value rounded to 9 digits; sorted.
func boundedRows(t *testing.T, db *sql.DB, p *Plan) [][]string {
	t.Helper()
	raws, err := p.FoldGroups(queryRaw(t, db, p.BackendSQL))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, raw := range raws {
		var row []string
		if len(p.Groups) == 0 {
			row = append(row, "")
		}
		for i, v := range raw {
			switch {
			case i == p.GroupCountColumn:
			case i < len(p.Groups):
				row = append(row, keyText(v))
			default:
				row = append(row, roundedText(number(t, v)))
			}
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(strings.Join(a, "|"), strings.Join(b, "|")) })
	return out
}

// sortedRows runs a side query and returns its rows as text, sorted.
func sortedRows(t *testing.T, db *sql.DB, query string) [][]string {
	t.Helper()
	var out [][]string
	for _, raw := range queryRaw(t, db, query) {
		row := make([]string, len(raw))
		for i, v := range raw {
			row[i] = keyText(v)
			if f, ok := asFloat(v); ok {
				row[i] = roundedText(f)
			}
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(strings.Join(a, "|"), strings.Join(b, "|")) })
	return out
}

func sideSQL(p *Plan) []string {
	var out []string
	for _, h := range p.Histograms {
		out = append(out, h.BackendSQL)
	}
	return append(out, p.SideQueries...)
}

// asFloat reads a number in any backend's form (MySQL's decimals are
// text).
func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case []byte:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	}
	return 0, false
}

func roundedText(f float64) string {
	return fmt.Sprint(math.Round(f*1e9) / 1e9)
}
