package rewrite

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
)

const rrTestPolicy = `
backend: {kind: sqlite, path: unused.db}
defaults: {epsilon: 1, delta: %s, max_rows_per_unit: 2}
analysts:
  - name: ana
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget: {epsilon: 10}
protected_tables:
  - name: people
    privacy_unit: uid
    columns:
      - {name: uid, type: int}
      - {name: sex, type: text, group_by: true, keys: [F, M]}
      - {name: smoker, type: bool}
      - {name: age, type: int, bounds: [0, 100]}
      - {name: city, type: text, group_by: true}
  - name: visits
    privacy_unit: {via: uid, references: people.uid}
    columns:
      - {name: uid, type: int}
      - {name: visit_id, type: int}
      - {name: kind, type: text, group_by: true, keys: [a, b]}
  - name: notes
    privacy_unit: {via: visit_id, references: visits.visit_id}
    columns:
      - {name: visit_id, type: int}
      - {name: tag, type: text, group_by: true, keys: [x, y]}
public_tables: [clinics]
`

// A randomized-response release: the columns with public domains, the
// backend query keeping at most max_rows_per_unit records per person, the
// ε split (a tenth for the dummies, the rest over records and columns).
func TestRRPlan(t *testing.T) {
	pol, err := config.Parse([]byte(fmt.Sprintf(rrTestPolicy, "1e-6")), "rr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := planFor(t, pol, "SELECT dpproxy.rr(sex) AS s, dpproxy.rr(smoker) FROM people")
	if p.RR == nil || len(p.RR.Columns) != 2 || p.RR.RowsPerUnit != 2 || p.Output[0].Name != "s" || p.Output[1].Name != "smoker" {
		t.Fatalf("plan %+v", p.RR)
	}
	if want := 0.9 / 2 / 2; p.RR.ColumnEpsilon != want || p.RR.CountEpsilon != 0.1 || p.RR.CountSensitivity != 2 {
		t.Errorf("ε split: column %v (want %v), count %v, sensitivity %d", p.RR.ColumnEpsilon, want, p.RR.CountEpsilon, p.RR.CountSensitivity)
	}
	if d := p.RR.Columns[1].Domain; len(d) != 2 || d[0] != "false" || d[1] != "true" {
		t.Errorf("boolean domain %v", d)
	}
	want := `SELECT "sex", "smoker" FROM (SELECT "sex", "smoker", ROW_NUMBER() OVER (PARTITION BY "uid" ORDER BY random()) AS dp_rn FROM "people") AS dp_rr WHERE dp_rn <= 2`
	if p.BackendSQL != want {
		t.Errorf("backend SQL\n got %s\nwant %s", p.BackendSQL, want)
	}
	// Bins of a numeric column's bounds.
	b := planFor(t, pol, "SELECT dpproxy.rr(age, 25) FROM people")
	if d := b.RR.Columns[0].Domain; b.RR.Columns[0].Width != 25 || strings.Join(d, ",") != "0,25,50,75,100" || b.Output[0].Type.String() != "integer" {
		t.Errorf("bins of age: width %v, domain %v, type %v", b.RR.Columns[0].Width, d, b.Output[0].Type)
	}
	if b := planFor(t, pol, "SELECT dpproxy.rr(age, 2.5) FROM people"); b.Output[0].Type.String() != "double precision" || len(b.RR.Columns[0].Domain) != 41 {
		t.Errorf("fractional bins: type %v, %d bins", b.Output[0].Type, len(b.RR.Columns[0].Domain))
	}
	// A table whose unit is a foreign key to the person's row: records
	// are bounded per that key.
	if p := planFor(t, pol, "SELECT dpproxy.rr(kind) FROM visits"); !strings.Contains(p.BackendSQL, `PARTITION BY "uid"`) {
		t.Errorf("visits: %s", p.BackendSQL)
	}
	// people's unit as its primary key (UnitIsKey): one record per
	// person, read whole, ε not divided by records.
	keyed := withKeyUnits(pol)
	k := planFor(t, keyed, "SELECT dpproxy.rr(sex) AS s, dpproxy.rr(smoker) FROM people")
	if want := `SELECT "sex", "smoker" FROM "people"`; k.BackendSQL != want || k.RR.RowsPerUnit != 1 || k.RR.ColumnEpsilon != 0.9/2 || k.RR.CountSensitivity != 1 {
		t.Errorf("keyed people: %s, %d record(s) per person, column ε %v, count sensitivity %d", k.BackendSQL, k.RR.RowsPerUnit, k.RR.ColumnEpsilon, k.RR.CountSensitivity)
	}
}

// What a randomized-response release refuses, each with its reason.
func TestRRRefusals(t *testing.T) {
	pol, err := config.Parse([]byte(fmt.Sprintf(rrTestPolicy, "1e-6")), "rr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sql, want string }{
		{"SELECT dpproxy.rr(uid) FROM people", "uid is the privacy unit of people: it is never released"},
		{"SELECT dpproxy.rr(age) FROM people", "people.age has no public domain"},
		{"SELECT dpproxy.rr(city) FROM people", "people.city has no public domain"},
		{"SELECT dpproxy.rr(nope) FROM people", `column "nope" does not exist`},
		{"SELECT dpproxy.rr(sex) FROM people WHERE age > 3", "WHERE, GROUP BY, HAVING, ORDER BY, LIMIT and DISTINCT are not supported"},
		{"SELECT dpproxy.rr(sex) FROM people LIMIT 3", "are not supported"},
		{"SELECT dpproxy.rr(sex), COUNT(*) FROM people", "every column of a randomized-response release is dpproxy.rr(column)"},
		{"SELECT dpproxy.rr(sex), age FROM people", "every column of a randomized-response release is dpproxy.rr(column)"},
		{"SELECT dpproxy.rr(sex), dpproxy.rr(sex) FROM people", "sex is released twice"},
		{"SELECT dpproxy.rr(upper(sex)) FROM people", "dpproxy.rr takes a column, not an expression"},
		{"SELECT dpproxy.rr(sex, smoker, age) FROM people", "dpproxy.rr takes one column"},
		{"SELECT dpproxy.rr(age, 0) FROM people", "the width is a positive number"},
		{"SELECT dpproxy.rr(age, 'x') FROM people", "the width is a positive number"},
		{"SELECT dpproxy.rr(age, 0.01) FROM people", "at most 1000"},
		{"SELECT dpproxy.rr(sex, 2) FROM people", "people.sex has no bounds"},
		{"SELECT dpproxy.rr(p.sex) FROM people p JOIN visits v ON p.uid = v.uid", "reads one table"},
		{"SELECT dpproxy.rr(name) FROM clinics", "clinics is public"},
		{"SELECT dpproxy.rr(tag) FROM notes", "reach a person through another table's key"},
	} {
		stmts, err := Parse(c.sql, PostgresFrontEnd)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		_, err = Analyze(stmts[0], pol, Options{Dialect: SQLite, Epsilon: 1})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.sql, err, c.want)
		}
	}
	// Found in review: a tiny ε would need millions of dummies (refused);
	// a huge one would make the keep probability 1 (held at 30).
	stmts, _ := Parse("SELECT dpproxy.rr(sex) FROM people", PostgresFrontEnd)
	if _, err := Analyze(stmts[0], pol, Options{Dialect: SQLite, Epsilon: 1e-5}); err == nil || !strings.Contains(err.Error(), "dummy records") {
		t.Errorf("ε = 1e-5: %v", err)
	}
	if q, err := Analyze(stmts[0], pol, Options{Dialect: SQLite, Epsilon: 1000}); err != nil || q.Plan.RR.ColumnEpsilon != maxRRColumnEpsilon {
		t.Errorf("ε = 1000: %v, column ε %v", err, q.Plan.RR)
	}
	noDelta, err := config.Parse([]byte(fmt.Sprintf(rrTestPolicy, "0")), "rr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Analyze(stmts[0], noDelta, Options{Dialect: SQLite, Epsilon: 1}); err == nil || !strings.Contains(err.Error(), "needs δ > 0") {
		t.Errorf("δ = 0: %v", err)
	}
}
