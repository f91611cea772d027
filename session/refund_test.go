package session

import (
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/internal/fixture"
	"github.com/dpproxy/dpproxy/rewrite"
)

// Which failures are charged: a statement the database refuses while
// preparing it (here a function SQLite does not have) never read a row
// and is refunded, with the database's message; a
// failure while running (here SQLite's integer overflow in one person's
// sum) may depend on the data and is charged.
func TestRefundsOnlyWhatNeverReachedTheData(t *testing.T) {
	dir := t.TempDir()
	be := sqliteBackend(t, dir, "data.db", 1,
		`CREATE TABLE visits (patient_id INTEGER, kind TEXT, n INTEGER)`,
		`INSERT INTO visits VALUES (1, 'a', 9000000000000000000), (1, 'a', 9000000000000000000), (2, 'b', 5)`,
		`CREATE TABLE notes (body TEXT)`,
		`INSERT INTO notes VALUES ('a')`)
	acct := fixture.Accountant(t, dir, 10)
	pol, err := config.Parse([]byte(`
backend: {kind: sqlite, path: data.db}
defaults: {epsilon: 0.5, max_groups_per_unit: 1, max_rows_per_unit: 2}
analysts:
  - name: ana
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget: {epsilon: 10}
protected_tables:
  - name: visits
    privacy_unit: patient_id
    columns:
      - {name: patient_id, type: int}
      - {name: kind, type: text}
      - {name: n, type: bigint, bounds: [0, 9000000000000000000]}
public_tables:
  - name: notes
    columns: [{name: body, type: text}]
`), "refund.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Options{Policy: pol, Backend: be, Dialect: rewrite.SQLite, Accountant: acct})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, e, "ana")

	refused := execErr(t, s, "SELECT COUNT(*) FROM visits WHERE kind IN (SELECT INITCAP(body) FROM notes)")
	if !strings.Contains(refused.Message, "no such function") || spent(t, acct, "ana") != 0 || charges(t, acct, "ana") != 0 {
		t.Errorf("a statement refused while preparing: %v; spent ε = %v in %d charge(s), want a refund", refused, spent(t, acct, "ana"), charges(t, acct, "ana"))
	}
	failed := execErr(t, s, "SELECT SUM(n) FROM visits")
	if strings.Contains(failed.Message, "overflow") || spent(t, acct, "ana") != 0.5 {
		t.Errorf("a failure while running: %v; spent ε = %v, want the 0.5 charged and no database text", failed, spent(t, acct, "ana"))
	}
	// The connection stays usable.
	if res := exec(t, s, "SELECT COUNT(*) FROM visits"); len(res.Rows) != 1 {
		t.Errorf("after the failures: %v", res.Rows)
	}
}
