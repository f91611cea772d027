package budget

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// A version 1 ledger (before table budgets) is read as it is by
// OpenSQLiteReadOnly and upgraded by OpenSQLite: its charges are kept,
// counting for no table, and new charges record their tables.
func TestLedgerUpgradeFromVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT NOT NULL, epsilon REAL NOT NULL CHECK (epsilon >= 0),
			delta REAL NOT NULL CHECK (delta >= 0), query TEXT NOT NULL, at_ns INTEGER NOT NULL) STRICT`,
		`CREATE INDEX charges_by_analyst ON charges (analyst, id)`,
		`INSERT INTO charges (analyst, epsilon, delta, query, at_ns) VALUES ('ana', 0.5, 0, 'SELECT 1', 1)`,
		`PRAGMA journal_mode = WAL`,
		`PRAGMA user_version = 1`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()

	ro, err := OpenSQLiteReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := ro.History(ctx); err != nil || !approxCost(h.Spent["ana"], Cost{Epsilon: 0.5}) || len(h.TableSpent) != 0 {
		t.Errorf("read-only v1: %+v, %v", h, err)
	}
	ro.Close()

	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, Charge{Analyst: "bob", Cost: Cost{Epsilon: 0.25}, Query: "q", Tables: []string{"visits"}}); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(ctx)
	if err != nil || !approxCost(h.Spent["ana"], Cost{Epsilon: 0.5}) || !approxCost(h.Spent["bob"], Cost{Epsilon: 0.25}) {
		t.Errorf("after the upgrade: %v, %v", h.Spent, err)
	}
	if tables := h.TableSpent; len(tables) != 1 || !approxCost(tables["visits"], Cost{Epsilon: 0.25}) {
		t.Errorf("after the upgrade tables: %v", tables)
	}
}
