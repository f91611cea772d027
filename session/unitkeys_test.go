package session

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/rewrite"
)

// A unit path's key must be its table's primary key and of the kind of
// the column referencing it: SQLite equates the integer 1 with the texts
// '1' and '01', so one row could reference two people's rows.
func TestUnitKeysOfTheirKind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE accounts (account_id INTEGER PRIMARY KEY, code TEXT UNIQUE, person INTEGER)`,
		`CREATE TABLE tagged (account_code TEXT PRIMARY KEY, person INTEGER)`,
		`CREATE TABLE orders (account_id BIGINT, account_code INTEGER, n INTEGER)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	be, err := backend.OpenSQLite(context.Background(), path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
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
// unique, part of a key, or a key that admits NULLs is not.
func TestKeyUnitsMarked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "units.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE members (member_id INTEGER PRIMARY KEY, age INTEGER)`,
		`CREATE TABLE uniques (person INTEGER NOT NULL UNIQUE, age INTEGER)`,
		`CREATE TABLE pairs (person INTEGER NOT NULL, day TEXT NOT NULL, age INTEGER, PRIMARY KEY (person, day))`,
		`CREATE TABLE nullable (person INT PRIMARY KEY, age INTEGER)`,
		`CREATE TABLE coded (code TEXT NOT NULL PRIMARY KEY, age INTEGER)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	be, err := backend.OpenSQLite(context.Background(), path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
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
	pol.ProtectedTables[1].UnitIsKey = true // a reload clears a mark the database no longer backs
	if err := markKeyUnits(context.Background(), pol, be); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"members": true, "uniques": false, "pairs": false, "nullable": false, "coded": true, "absent": false}
	for _, pt := range pol.ProtectedTables {
		if pt.UnitIsKey != want[pt.Name] {
			t.Errorf("%s: UnitIsKey = %v, want %v", pt.Name, pt.UnitIsKey, want[pt.Name])
		}
	}
}
