package rewrite

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
)

var update = flag.Bool("update", false, "rewrite golden files")

type testCase struct{ name, sql string }

// readCases reads testdata/cases.sql: "-- name: X" lines, each followed by
// one query.
func readCases(t *testing.T) []testCase {
	t.Helper()
	data, err := os.ReadFile("testdata/cases.sql")
	if err != nil {
		t.Fatal(err)
	}
	var cases []testCase
	for _, block := range strings.Split(string(data), "-- name: ")[1:] {
		name, sql, _ := strings.Cut(block, "\n")
		cases = append(cases, testCase{strings.TrimSpace(name), strings.TrimSpace(sql)})
	}
	return cases
}

func testPolicy(t testing.TB) *config.Policy {
	t.Helper()
	pol, err := config.Load("testdata/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// withTables returns a copy of pol whose protected tables (and their
// columns) are copies, each changed by change.
func withTables(pol *config.Policy, change func(t *config.ProtectedTable)) *config.Policy {
	copied := *pol
	copied.ProtectedTables = slices.Clone(pol.ProtectedTables)
	for i := range copied.ProtectedTables {
		t := &copied.ProtectedTables[i]
		t.Columns = slices.Clone(t.Columns)
		change(t)
	}
	return &copied
}

// withKeyUnits returns a copy of pol whose tables with a unit column have
// it for their primary key (config.ProtectedTable.UnitIsKey).
func withKeyUnits(pol *config.Policy) *config.Policy {
	return withTables(pol, func(t *config.ProtectedTable) {
		t.UnitIsKey = !t.IsRowPrivacy() && t.UnitPath == nil
	})
}

// withNotNullColumns returns a copy of pol whose protected tables'
// columns and unit columns are all declared NOT NULL
// (config.Column.NotNull, ProtectedTable.UnitNotNull).
func withNotNullColumns(pol *config.Policy) *config.Policy {
	return withTables(pol, func(t *config.ProtectedTable) {
		t.UnitNotNull = !t.IsRowPrivacy()
		for j := range t.Columns {
			t.Columns[j].NotNull = true
		}
	})
}

// render shows everything a rewrite decides: the backend SQL per dialect,
// each measurement's sensitivity and ε share, and the output columns.
func render(t *testing.T, pol *config.Policy, sql string) string {
	t.Helper()
	if neighbouring, ok := strings.CutPrefix(sql, "-- neighbouring: "); ok {
		var rest string
		neighbouring, rest, _ = strings.Cut(neighbouring, "\n")
		copied := *pol
		copied.Defaults.Neighbouring = config.Neighbouring(neighbouring)
		pol, sql = &copied, rest
	}
	// "-- unit is key" marks every table whose unit is a column as
	// having it for its primary key (UnitIsKey, set at start from the
	// database).
	if rest, ok := strings.CutPrefix(sql, "-- unit is key\n"); ok {
		pol, sql = withKeyUnits(pol), rest
	}
	// "-- columns not null" marks every column and every unit column the
	// database declares NOT NULL (config.Column.NotNull and
	// ProtectedTable.UnitNotNull, set at start from the database).
	if rest, ok := strings.CutPrefix(sql, "-- columns not null\n"); ok {
		pol, sql = withNotNullColumns(pol), rest
	}
	// "-- rows per unit as total" gives every table with a total bound
	// as many rows per group (Linf = C).
	if rest, ok := strings.CutPrefix(sql, "-- rows per unit as total\n"); ok {
		pol = withTables(pol, func(t *config.ProtectedTable) {
			if t.MaxTotalRowsPerUnit > 0 {
				t.MaxRowsPerUnit = t.MaxTotalRowsPerUnit
			}
		})
		sql = rest
	}
	// "-- intervals" asks for the excess measurements (BiasBounds).
	biasBounds := false
	if rest, ok := strings.CutPrefix(sql, "-- intervals\n"); ok {
		biasBounds, sql = true, rest
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "-- sql\n%s\n", sql)
	for _, d := range []Dialect{Postgres, SQLite, MySQL} {
		parsed, err := ParseStatement(sql, PostgresFrontEnd)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		q, err := Analyze(parsed.Stmts[0], pol, Options{Dialect: d, Epsilon: 1, Casts: parsed.CastOf, BiasBounds: biasBounds})
		if err != nil {
			t.Fatalf("analyze: %v", err)
		}
		if q.Passthrough != nil {
			fmt.Fprintf(&sb, "-- %s passthrough\n%s\n", d.Name(), q.Passthrough.SQL)
			continue
		}
		fmt.Fprintf(&sb, "-- %s\n%s\n", d.Name(), q.Plan.BackendSQL)
		for i, h := range q.Plan.Histograms {
			fmt.Fprintf(&sb, "-- %s histogram %d\n%s\n", d.Name(), i, h.BackendSQL)
		}
		for i, sql := range q.Plan.SideQueries {
			fmt.Fprintf(&sb, "-- %s side query %d\n%s\n", d.Name(), i, sql)
		}
		if d != Postgres {
			continue
		}
		p := q.Plan
		sb.WriteString("-- relational plan\n")
		for _, op := range p.Relational() {
			sb.WriteString(op.String() + "\n")
		}
		fmt.Fprintf(&sb, "-- plan\nL0=%d Linf=%d neighbouring=%s epsilon=%g delta=%g units_column=%d group_count_column=%d limit=%d\n",
			p.MaxGroupsPerUnit, p.MaxRowsPerUnit, p.Neighbouring, p.Epsilon, p.Delta, p.UnitsColumn, p.GroupCountColumn, p.Limit)
		if s := p.Selection; s != nil {
			fmt.Fprintf(&sb, "partition selection: epsilon=%g delta=%g changed_groups=%d", s.Epsilon, s.Delta, s.ChangedGroups)
			if th := s.Threshold; th != nil {
				fmt.Fprintf(&sb, " threshold: measurement=%d max_alone=%d tau=%g", th.Measurement, th.MaxAlone, th.Tau)
			}
			if tk := s.TopK; tk != nil {
				fmt.Fprintf(&sb, " top-k: measurement=%d k=%d epsilon=%g pick_epsilon=%.6g delta=%.6g em_sensitivity=%.6g tau=%.6g", tk.Measurement, tk.K, tk.Epsilon, tk.PickEpsilon, tk.Delta, tk.EMSensitivity, tk.Tau)
			}
			sb.WriteString("\n")
		}
		for i, m := range p.Measurements {
			fmt.Fprintf(&sb, "measurement %d: %s sensitivity=%g epsilon=%g integer=%v count_col=%d sum_col=%d squares_col=%d mid=%g",
				i, m.Kind, m.Sensitivity, m.Epsilon, m.Integer, m.CountColumn, m.SumColumn, m.SquaresColumn, m.Mid)
			if m.SideQuery > 0 {
				fmt.Fprintf(&sb, " side_query=%d", m.SideQuery-1)
			}
			if m.Excess > 0 {
				fmt.Fprintf(&sb, " excess=%d", m.Excess-1)
			}
			if m.Kind == MeasureExcess {
				fmt.Fprintf(&sb, " of=%d clip=%g", m.Of, m.Clip)
			}
			sb.WriteString("\n")
		}
		for i, h := range p.Histograms {
			fmt.Fprintf(&sb, "histogram %d: %s grid=%+v\n", i, h.Column.Name, h.Grid)
		}
		for i, q := range p.Quantiles {
			fmt.Fprintf(&sb, "quantile %d: histogram=%d level=%g epsilon=%g mechanism_epsilon=%g changed_groups=%d mass_sensitivity=%g\n", i, q.Histogram, q.Level, q.Epsilon, q.MechanismEpsilon, q.ChangedGroups, q.MassSensitivity)
		}
		for _, a := range p.Aggregates {
			col := "*"
			if a.Column != nil {
				col = a.Column.Name
			}
			fmt.Fprintf(&sb, "aggregate %s(%s) bounds=[%g,%g] measurements=%v\n", a.Func, col, a.Bounds.Lo, a.Bounds.Hi, a.Measurements)
		}
		for _, g := range p.Groups {
			fmt.Fprintf(&sb, "group %s keys=%v backend_col=%d\n", g.Column.Name, g.Keys, g.BackendColumn)
		}
		for _, o := range p.Output {
			fmt.Fprintf(&sb, "output %s %s group=%d aggregate=%d", o.Name, o.Type, o.Source.Group, o.Source.Aggregate)
			if o.Source.Derived != nil {
				fmt.Fprintf(&sb, " derived=%s", o.Source.Derived.Text)
			}
			sb.WriteString("\n")
		}
		if p.Having != nil {
			fmt.Fprintf(&sb, "having %s\n", p.Having.Text)
		}
		for _, o := range p.OrderBy {
			fmt.Fprintf(&sb, "order output=%d desc=%v\n", o.Output, o.Desc)
		}
		if o := p.Outer; o != nil {
			fmt.Fprintf(&sb, "outer columns=%+v order=%+v limit=%d offset=%d\n", o.Columns, o.OrderBy, o.Limit, o.Offset)
		}
	}
	return sb.String()
}

func TestGoldenRewrites(t *testing.T) {
	pol := testPolicy(t)
	for _, c := range readCases(t) {
		t.Run(c.name, func(t *testing.T) {
			got := render(t, pol, c.sql)
			path := filepath.Join("testdata", "golden", c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./rewrite -update)", err)
			}
			if got != string(want) {
				t.Errorf("rewrite changed; got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// MySQL clients see expression columns named as written, PostgreSQL
// clients by the function's name.
func TestOutputNamesPerFrontEnd(t *testing.T) {
	pol := testPolicy(t)
	sql := "SELECT diagnosis, COUNT(*), avg(cost) AS a, SUM( nights ) FROM visits GROUP BY diagnosis"
	for fe, want := range map[FrontEnd]string{PostgresFrontEnd: "diagnosis,count,a,sum", MySQLFrontEnd: "diagnosis,COUNT(*),a,SUM( nights )"} {
		parsed, err := ParseStatement(sql, fe)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Analyze(parsed.Stmts[0], pol, Options{Dialect: Postgres, Epsilon: 1, FrontEnd: fe, Casts: castLookupOf(parsed)})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range q.Plan.Columns() {
			names = append(names, o.Name)
		}
		if got := strings.Join(names, ","); got != want {
			t.Errorf("front end %d: %s, want %s", fe, got, want)
		}
	}
}

func castLookupOf(p *Parsed) CastLookup {
	if p.Casts == nil {
		return nil
	}
	return p.CastOf
}

// planOf analyzes one statement with opts (PostgreSQL front end) and
// returns its plan, failing the test on an error.
func planOf(t *testing.T, pol *config.Policy, sql string, opts Options) *Plan {
	t.Helper()
	stmts, err := Parse(sql, PostgresFrontEnd)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	q, err := Analyze(stmts[0], pol, opts)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return q.Plan
}
