package author

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	_ "modernc.org/sqlite"
)

// smallDB is a SQLite database of 10 people: people(person_id, age),
// orders(order_id, person_id, amount, shop) with person i having i
// orders of amount 10·i, and items(item_id, order_id).
func smallDB(t *testing.T) (string, backend.Backend) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "small.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		`CREATE TABLE people (person_id INTEGER PRIMARY KEY, age INTEGER, name TEXT)`,
		`CREATE TABLE orders (order_id INTEGER PRIMARY KEY, person_id INTEGER, amount NUMERIC, shop TEXT)`,
		`CREATE TABLE items (item_id INTEGER PRIMARY KEY, order_id INTEGER, blob_data BLOB)`,
		`CREATE TABLE shops (shop TEXT PRIMARY KEY)`,
	}
	order := 0
	for i := 1; i <= 10; i++ {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO people VALUES (%d, %d, 'p%d')`, i, 20+i, i))
		for j := 0; j < i; j++ {
			order++
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO orders VALUES (%d, %d, %d, 's%d')`, order, i, 10*i, j%3))
		}
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	be, err := backend.OpenSQLite(context.Background(), path, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return path, be
}

func verifiers(t *testing.T) config.Verifiers {
	v, err := config.NewVerifiers("pw")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The draft loads as it is: every table protected but the one named
// public, a person's column guessed, a unit reached through a key, a
// column of a type the policy cannot describe left out.
func TestDraft(t *testing.T) {
	path, be := smallDB(t)
	draft, err := Draft(context.Background(), be, DraftOptions{Kind: config.BackendSQLite, Path: path, Public: []string{"shops"}, Analyst: "ana", Verifiers: verifiers(t)})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := config.Parse([]byte(draft), "draft.yaml")
	if err != nil {
		t.Fatalf("the draft does not load: %v\n%s", err, draft)
	}
	if len(pol.ProtectedTables) != 3 || len(pol.PublicTables) != 1 || pol.PublicTables[0].Name != "shops" {
		t.Errorf("tables: %d protected, public %v", len(pol.ProtectedTables), pol.PublicTables)
	}
	units := map[string]string{}
	for _, pt := range pol.ProtectedTables {
		units[pt.Name] = pt.PrivacyUnit
		if pt.UnitPath != nil {
			units[pt.Name] += " via " + pt.UnitPath.String()
		}
		for _, c := range pt.Columns {
			if c.Bounds != nil || c.GroupBy {
				t.Errorf("%s.%s is drafted with bounds or GROUP BY: nothing should be allowed until the author says so", pt.Name, c.Name)
			}
			if c.Name == "blob_data" {
				t.Error("a BLOB column was drafted")
			}
		}
	}
	want := map[string]string{"people": "person_id", "orders": "person_id", "items": "order_id via orders.order_id"}
	for name, unit := range want {
		if units[name] != unit {
			t.Errorf("%s: privacy unit %q, want %q", name, units[name], unit)
		}
	}
	if !strings.Contains(draft, "CHECK") {
		t.Error("the draft marks nothing for the author to check")
	}
	// Found in review: with a schema, public tables are written with it
	// (unqualified, they named the default schema's table).
	qualified, err := Draft(context.Background(), be, DraftOptions{Kind: config.BackendSQLite, Path: path, Schema: "main", Public: []string{"shops"}, Analyst: "ana", Verifiers: verifiers(t)})
	if err != nil {
		t.Fatal(err)
	}
	if pol, err := config.Parse([]byte(qualified), "qualified.yaml"); err != nil || pol.PublicTables[0].Schema != "main" || pol.ProtectedTables[0].Schema != "main" {
		t.Errorf("a draft of schema main: %v\n%s", err, qualified)
	}
	if _, err := Draft(context.Background(), be, DraftOptions{Kind: config.BackendSQLite, Path: path, Public: []string{"nope"}, Analyst: "ana", Verifiers: verifiers(t)}); err == nil {
		t.Error("--public naming no table was accepted")
	}
}

// Check finds a missing column, a wrong type and a missing table (errors)
// and measures exactly what bounds and limits cut.
func TestCheck(t *testing.T) {
	path, be := smallDB(t)
	v := verifiers(t)
	policy := fmt.Sprintf(`
backend: {kind: sqlite, path: %q}
analysts:
  - name: ana
    password: {scram_sha_256: %q}
    budget: {epsilon: 1}
defaults: {max_groups_per_unit: 2, max_rows_per_unit: 4}
protected_tables:
  - name: people
    privacy_unit: person_id
    columns:
      - {name: person_id, type: int}
      - {name: age, type: int, bounds: [0, 26]}
      - {name: height, type: float}
  - name: orders
    privacy_unit: person_id
    max_total_rows_per_unit: 6
    columns:
      - {name: person_id, type: int}
      - {name: amount, type: numeric, bounds: [0, 60]}
      - {name: shop, type: text, group_by: true}
  - name: wrong
    privacy_unit: person_id
    columns:
      - {name: person_id, type: int}
  - name: typed
    privacy_unit: row
    columns: [{name: x, type: int}]
public_tables: [shops, missing_public]
`, path, v.SCRAMSHA256)
	pol, err := config.Parse([]byte(strings.Replace(policy, "  - name: typed\n    privacy_unit: row\n    columns: [{name: x, type: int}]\n", "", 1)), "check.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A column of the wrong type: name is text.
	pol.ProtectedTables[0].Columns = append(pol.ProtectedTables[0].Columns, config.Column{Name: "name", Type: config.TypeInt})
	r, err := Check(context.Background(), pol, be)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	r.Write(&sb)
	out := sb.String()
	for _, want := range []string{
		"error   people.height: no such column in people",
		"error   people.name: the policy says int, the database has text",
		"error   wrong: no such table in the database",
		"error   missing_public: public table not in the database",
		// amount 10·i for person i's i orders, i ≤ 10: 60 < amount for
		// i = 7..10, 34 of the 55 orders.
		"warning orders.amount: bounds [0, 60] clip 61.8% of its 55 values (they range from 10 to 100)",
		// more than 4 orders: persons 5..10, 6 of 10; rows dropped Σ(i−4) = 21 of 55
		"warning orders: max_rows_per_unit 4 truncates 60.0% of the 10 people (38.2% of the rows; the most rows one person has is 10)",
		// shops s0, s1, s2: persons with ≥ 3 orders are in 3 shops: 8 of 10
		"warning orders.shop: max_groups_per_unit 2: GROUP BY shop keeps 2 of the groups of 80.0% of the people (the most one person is in is 3)",
		// more than 6 orders: persons 7..10
		"warning orders: max_total_rows_per_unit 6: 40.0% of the 10 people have more rows (the most one person has is 10), which a grouped query weighs down to 6 in all where capping each group at max_rows_per_unit leaves more\n",
		"4 error(s), 4 warning(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	// people has column errors: its data is not read (the queries would fail).
	if strings.Contains(out, "people.age") {
		t.Errorf("bounds of a table with column errors were measured:\n%s", out)
	}
	// A total bound of L0·Linf = 8 binds nothing: not reported.
	pol.ProtectedTables[1].MaxTotalRowsPerUnit = 8
	if r, err = Check(context.Background(), pol, be); err != nil {
		t.Fatal(err)
	}
	sb.Reset()
	r.Write(&sb)
	if out := sb.String(); strings.Contains(out, "max_total_rows_per_unit") {
		t.Errorf("a total bound that binds nothing is reported:\n%s", out)
	}
}

// A table whose unit is its primary key skips the bounding step; one that
// holds one row per person without declaring it gets the ALTER TABLE that
// would; one with several rows per person (or without a person) gets
// neither.
func TestCheckKeyUnits(t *testing.T) {
	path, be := smallDB(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE members (member_id INTEGER, age INTEGER)`,
		`INSERT INTO members VALUES (1, 30), (2, 40), (3, 50)`,
		`CREATE TABLE nulls (member_id INTEGER, age INTEGER)`,
		`INSERT INTO nulls VALUES (1, 30), (NULL, 40), (NULL, 50)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	v := verifiers(t)
	pol, err := config.Parse([]byte(fmt.Sprintf(`
backend: {kind: sqlite, path: %q}
analysts:
  - {name: ana, password: {scram_sha_256: %q}, budget: {epsilon: 1}}
protected_tables:
  - {name: people, privacy_unit: person_id, columns: [{name: person_id, type: int}]}
  - {name: orders, privacy_unit: person_id, columns: [{name: person_id, type: int}]}
  - {name: members, privacy_unit: member_id, columns: [{name: member_id, type: int}]}
  - {name: nulls, privacy_unit: member_id, columns: [{name: member_id, type: int}]}
`, path, v.SCRAMSHA256)), "check.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(context.Background(), pol, be)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	r.Write(&sb)
	out := sb.String()
	for _, want := range []string{
		"info    people.person_id: the primary key of people: each person is one row, so queries that read people alone skip the per-person bounding step",
		`info    members.member_id: members holds one row per person, but the database does not declare member_id its primary key: recreated with "member_id" INTEGER PRIMARY KEY`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"orders.person_id", "nulls.member_id"} {
		if strings.Contains(out, not) {
			t.Errorf("the report names %s, which has several rows per person or rows without one:\n%s", not, out)
		}
	}
}
