package session

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/internal/fixture"
	"github.com/dpproxy/dpproxy/rewrite"
)

// A unit path's key must be its table's primary key and of the kind of
// the column referencing it: SQLite equates the integer 1 with the texts
// '1' and '01', so one row could reference two people's rows.
func TestUnitKeysOfTheirKind(t *testing.T) {
	be := sqliteBackend(t, t.TempDir(), "keys.db", 1,
		`CREATE TABLE accounts (account_id INTEGER PRIMARY KEY, code TEXT UNIQUE, person INTEGER)`,
		`CREATE TABLE tagged (account_code TEXT PRIMARY KEY, person INTEGER)`,
		`CREATE TABLE orders (account_id BIGINT, account_code INTEGER, n INTEGER)`)
	policy := func(ref string) *config.Policy {
		pol, err := config.Parse([]byte(`
backend: {kind: sqlite, path: keys.db}
analysts:
  - name: ana
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget: {epsilon: 1}
protected_tables:
  - name: accounts
    privacy_unit: person
    columns: [{name: person, type: int}]
  - name: tagged
    privacy_unit: person
    columns: [{name: person, type: int}]
  - name: orders
    privacy_unit: `+ref+`
    columns: [{name: account_id, type: bigint}, {name: account_code, type: int}]
`), "keys.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return pol
	}
	for _, c := range []struct{ ref, want string }{
		// BIGINT referencing INTEGER: both integers.
		{`{via: account_id, references: accounts.account_id}`, ""},
		{`{via: account_code, references: tagged.account_code}`, "joins orders.account_code (integer) to tagged.account_code (text)"},
		{`{via: account_code, references: accounts.code}`, "which must be the primary key of accounts (it has primary key (account_id))"},
	} {
		err := checkUnitKeys(context.Background(), policy(c.ref), be)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.ref, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error saying %q", c.ref, err, c.want)
		}
	}
}

// A public table without group_keys: its small columns' values are public
// key lists, read at start, so a join grouped by one releases every value
// (here both notes, which no visit's kind matches: noisy zeros) with no
// partition selection.
func TestAutomaticPublicKeys(t *testing.T) {
	e, _, _, _ := sessionFixture(t, nil)
	srv, err := NewServer(context.Background(), e) // reads the key lists
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := New(srv, "ana", rewrite.PostgresFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	res := exec(t, s, "SELECT n.body, COUNT(*) FROM visits v JOIN notes n ON v.kind = n.body GROUP BY n.body")
	var keys []string
	for _, row := range res.Rows {
		keys = append(keys, row[0].(string))
	}
	if strings.Join(keys, ",") != "hello,world" {
		t.Errorf("released keys %v, want every note", keys)
	}
	notes, _ := explainParts(t, exec(t, s, "EXPLAIN DP SELECT n.body, COUNT(*) FROM visits v JOIN notes n ON v.kind = n.body GROUP BY n.body"))
	if summary := strings.Join(notes["summary"], "\n"); !strings.Contains(summary, "public list of 2 key(s), the public table's values read at start") {
		t.Errorf("explain: %s", summary)
	}
}

// A table whose privacy unit is its primary key, alone and never NULL, is
// marked at start (UnitIsKey): each unit is one row. A unit that is only
// unique, part of a key, or a key that admits NULLs is not. Each column
// the database declares NOT NULL is marked NotNull, and no other.
func TestKeyUnitsMarked(t *testing.T) {
	be := sqliteBackend(t, t.TempDir(), "units.db", 1,
		`CREATE TABLE members (member_id INTEGER PRIMARY KEY, age INTEGER)`,
		`CREATE TABLE uniques (person INTEGER NOT NULL UNIQUE, age INTEGER)`,
		`CREATE TABLE pairs (person INTEGER NOT NULL, day TEXT NOT NULL, age INTEGER, PRIMARY KEY (person, day))`,
		`CREATE TABLE nullable (person INT PRIMARY KEY, age INTEGER)`,
		`CREATE TABLE coded (code TEXT NOT NULL PRIMARY KEY, age INTEGER)`)
	pol, err := config.Parse([]byte(`
backend: {kind: sqlite, path: units.db}
analysts:
  - name: ana
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget: {epsilon: 1}
protected_tables:
  - {name: members, privacy_unit: member_id, columns: [{name: member_id, type: int}, {name: age, type: int, bounds: [0, 100]}]}
  - {name: uniques, privacy_unit: person, columns: [{name: person, type: int}, {name: age, type: int}]}
  - {name: pairs, privacy_unit: person, columns: [{name: person, type: int}, {name: age, type: int}]}
  - {name: nullable, privacy_unit: person, columns: [{name: person, type: int}, {name: age, type: int}]}
  - {name: coded, privacy_unit: code, columns: [{name: code, type: text}, {name: age, type: int}]}
  - {name: absent, privacy_unit: person, columns: [{name: person, type: int}]}
`), "units.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol.ProtectedTables[1].UnitIsKey = true          // a reload clears a mark the database no longer backs
	pol.ProtectedTables[3].Columns[1].NotNull = true // nullable.age: likewise
	if err := markDeclarations(context.Background(), pol, be); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"members": true, "uniques": false, "pairs": false, "nullable": false, "coded": true, "absent": false}
	// SQLite declares an INTEGER PRIMARY KEY (the rowid) never NULL.
	wantNotNull := map[string]bool{"members.member_id": true, "uniques.person": true, "pairs.person": true, "coded.code": true}
	for _, pt := range pol.ProtectedTables {
		if pt.UnitIsKey != want[pt.Name] {
			t.Errorf("%s: UnitIsKey = %v, want %v", pt.Name, pt.UnitIsKey, want[pt.Name])
		}
		for _, c := range pt.Columns {
			if name := pt.Name + "." + c.Name; c.NotNull != wantNotNull[name] {
				t.Errorf("%s: NotNull = %v, want %v", name, c.NotNull, wantNotNull[name])
			}
		}
	}
}

// End to end: NewServer reads the keys (CompletePolicy), and a query of
// a keyed table alone is answered without the per-person step (EXPLAIN
// DP says so and shows the SQL); joined to a public table it keeps it.
func TestKeyUnitsServed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	be := sqliteBackend(t, dir, "served.db", 2,
		`CREATE TABLE members (member_id INTEGER PRIMARY KEY, age INTEGER, shop_id INTEGER)`,
		`INSERT INTO members VALUES (1, 30, 1), (2, 40, 1), (3, 50, 2)`,
		`CREATE TABLE shops (shop_id INTEGER, city TEXT)`,
		`INSERT INTO shops VALUES (1, 'Oslo'), (2, 'Bergen')`)
	acct := fixture.Accountant(t, dir, 10)
	pol, err := config.Parse([]byte(`
backend: {kind: sqlite, path: served.db}
defaults: {epsilon: 0.5, max_groups_per_unit: 2, max_rows_per_unit: 3}
analysts:
  - name: ana
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget: {epsilon: 10}
protected_tables:
  - {name: members, privacy_unit: member_id, columns: [{name: member_id, type: int}, {name: age, type: int, bounds: [0, 100]}, {name: shop_id, type: int}]}
public_tables: [shops]
`), "served.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Options{Policy: pol, Backend: be, Dialect: rewrite.SQLite, Accountant: acct})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := New(srv, "ana", rewrite.PostgresFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	text := func(query string) string {
		var sb strings.Builder
		for _, row := range exec(t, s, "EXPLAIN DP "+query).Rows {
			fmt.Fprintln(&sb, row...)
		}
		return sb.String()
	}
	alone := text("SELECT SUM(age) FROM members")
	if !strings.Contains(alone, "one row per unit: member_id is the primary key of members") || strings.Contains(alone, "dp_u") {
		t.Errorf("members alone:\n%s", alone)
	}
	joined := text("SELECT s.city, COUNT(*) FROM members m JOIN shops s ON s.shop_id = m.shop_id GROUP BY s.city")
	if strings.Contains(joined, "one row per unit") || !strings.Contains(joined, "dp_u") {
		t.Errorf("members joined to shops:\n%s", joined)
	}
	if res := exec(t, s, "SELECT COUNT(*) FROM members"); len(res.Rows) != 1 {
		t.Errorf("answer %v", res.Rows)
	}
	// The interval notice of a variance (no excess measured for it): no
	// per-person limits to speak of, but its values are still clamped.
	exec(t, s, "SET dpproxy.intervals = notice")
	res := exec(t, s, "SELECT VARIANCE(age) FROM members")
	if notices := strings.Join(res.Notices, "\n"); !strings.Contains(notices, "values are clamped to the policy's bounds: what clamping changes is not in the intervals") ||
		strings.Contains(notices, "row(s) per person") {
		t.Errorf("interval notice: %s", notices)
	}
}
