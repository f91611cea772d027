package session

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// A reload the backend disagrees with (a public table it lacks) changes
// nothing: the engine's policy, the catalog and the accountant step stay
// as they were. A valid one is in force for the next statement of an open
// session; an analyst it removes can run nothing more.
func TestServerReload(t *testing.T) {
	e, s, _, _ := sessionFixture(t, nil)
	srv := s.server
	before, cat := e.Policy(), srv.catalog.Load()
	bad := *before
	bad.PublicTables = append(append([]config.PublicTable(nil), before.PublicTables...), config.PublicTable{Name: "no_such_table"})
	applied := false
	err := srv.Reload(context.Background(), &bad, func() error { applied = true; return nil })
	if err == nil || !strings.Contains(err.Error(), "no_such_table") {
		t.Fatalf("reload with a missing public table: %v", err)
	}
	if e.Policy() != before || srv.catalog.Load() != cat || applied {
		t.Fatal("a refused reload changed the policy, the catalog or ran the caller's step")
	}
	good := *before
	good.Analysts = []config.Analyst{before.Analysts[1]} // bob only: ana removed
	if err := srv.Reload(context.Background(), &good, nil); err != nil {
		t.Fatal(err)
	}
	if e.Policy() != &good || srv.catalog.Load() == cat {
		t.Fatal("the reload is not in force")
	}
	_, err = s.Execute(context.Background(), "SELECT COUNT(*) FROM visits")
	var e2 *sqlerr.Error
	if !errors.As(err, &e2) || e2.Code != sqlerr.InvalidAuthorization {
		t.Errorf("ana, removed, ran a statement: %v", err)
	}
}
