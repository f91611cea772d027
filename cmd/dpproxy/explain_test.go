package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// explain --backend reads the database first, as serve does: a table
// whose privacy unit is its primary key is explained without the
// per-person step; without --backend, offline, with it. A database that
// cannot be read is an error saying so.
func TestExplainFromTheBackend(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "members.db")
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE members (member_id INTEGER PRIMARY KEY, age INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	policy := func(path string) string {
		return writeMembersPolicy(t, filepath.Join(dir, "policy-"+filepath.Base(path)+".yaml"), fmt.Sprintf("{kind: sqlite, path: %q}", path), "")
	}
	const q = "SELECT SUM(age) FROM members WHERE member_id = 7"
	offline, _, err := runCmd(t, "", "explain", "--config", policy(dbPath), q)
	if err != nil {
		t.Fatal(err)
	}
	served, _, err := runCmd(t, "", "explain", "--backend", "--config", policy(dbPath), q)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(offline, `"dp_u"`) || !strings.Contains(offline, "at most 3 row(s) per unit") {
		t.Errorf("offline, the plan bounds per person:\n%s", offline)
	}
	if strings.Contains(served, `"dp_u"`) || !strings.Contains(served, "contribution bounds: one row per unit: member_id is the primary key of members") {
		t.Errorf("with --backend, one row per person:\n%s", served)
	}
	// One row: the sum's sensitivity is one clamped value, not Linf = 3 of them.
	if !strings.Contains(strings.Join(strings.Fields(served), " "), "SUM(age) sum discrete Laplace 100 ") {
		t.Errorf("with --backend, the sum's sensitivity is one value's:\n%s", served)
	}
	_, _, err = runCmd(t, "", "explain", "--backend", "--config", policy(filepath.Join(dir, "missing", "none.db")), q)
	if err == nil || !strings.Contains(err.Error(), "sqlite") {
		t.Errorf("an unreadable database: %v", err)
	}
}

// On PostgreSQL explain also shows the SQL as serve sends it, the query's
// constants as parameters; other backends get the constants in the SQL.
func TestExplainShowsTheConstantsAsParameters(t *testing.T) {
	dir := t.TempDir()
	policy := func(backend string) string {
		return writeMembersPolicy(t, filepath.Join(dir, "policy.yaml"), backend, "{name: city, type: text}, ")
	}
	const q = "SELECT SUM(age) FROM members WHERE age > 17 AND city = 'Oslo'"
	out, _, err := runCmd(t, "", "explain", "--config", policy(`{kind: postgres, dsn: "postgres://ana@127.0.0.1:1/none"}`), q)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `("age" > 17) AND ("city" = 'Oslo')`) {
		t.Errorf("the backend SQL has lost its constants:\n%s", out)
	}
	if !strings.Contains(out, "sent with the constants as parameters:") || !strings.Contains(out, `("age" > $1::integer) AND ("city" = $2)`) ||
		!strings.Contains(out, "parameters: $1 = '17', $2 = 'Oslo'") {
		t.Errorf("no SQL as sent, with parameters:\n%s", out)
	}
	out, _, err = runCmd(t, "", "explain", "--config", policy(`{kind: sqlite, path: "`+filepath.Join(dir, "none.db")+`"}`), q)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "parameters") || !strings.Contains(out, `("city" = 'Oslo')`) {
		t.Errorf("SQLite gets its constants in the SQL:\n%s", out)
	}
}

// writeMembersPolicy writes, at path, a policy with the given backend and
// one protected table, members (its unit member_id, age bounded to
// [0, 100], and extra columns before age), and returns path.
func writeMembersPolicy(t *testing.T, path, backend, extra string) string {
	t.Helper()
	yaml := `
backend: ` + backend + `
analysts:
  - name: ana
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget: {epsilon: 1}
defaults: {epsilon: 0.5, max_groups_per_unit: 2, max_rows_per_unit: 3}
protected_tables:
  - {name: members, privacy_unit: member_id, columns: [{name: member_id, type: int}, ` + extra + `{name: age, type: int, bounds: [0, 100]}]}
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
