package session

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/dpproxy/dpproxy/backend"
)

// sqliteBackend creates the SQLite database dir/name with stmts run in it
// and returns a backend over it (maxConns connections), closed when the
// test ends.
func sqliteBackend(t *testing.T, dir, name string, maxConns int, stmts ...string) backend.Backend {
	t.Helper()
	path := filepath.Join(dir, name)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	be, err := backend.OpenSQLite(context.Background(), path, maxConns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}
