package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// A reload the backend disagrees with (a public table it lacks) changes
// nothing: the engine's policy, the catalog and the accountant step stay
// as they were. A valid one is in force for the next statement of an open
// session; an analyst it removes can run nothing more.
func TestServerReload(t *testing.T) {
	e, s := reloadFixture(t)
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

// notesProtected is the fixture's policy with the public table notes made
// protected (raw rows of it must no longer be answered).
func notesProtected(pol *config.Policy) *config.Policy {
	p := *pol
	p.PublicTables = nil
	p.ProtectedTables = append(append([]config.ProtectedTable(nil), p.ProtectedTables...), config.ProtectedTable{
		Name: "notes", PrivacyUnit: "body", Columns: []config.Column{{Name: "body", Type: "text"}},
	})
	return &p
}

// Found in review: a statement prepared while a table was public kept
// reading it raw after a reload made it protected. It is checked again.
func TestPreparedPassthroughAfterReload(t *testing.T) {
	e, s := reloadFixture(t)
	ctx := context.Background()
	p, err := s.Prepare(ctx, "SELECT body FROM notes WHERE body <> $1", []sqltypes.Type{sqltypes.Text})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExecutePrepared(ctx, p, []any{"x"}); err != nil {
		t.Fatalf("before the reload: %v", err)
	}
	if err := s.server.Reload(ctx, notesProtected(e.Policy()), nil); err != nil {
		t.Fatal(err)
	}
	if res, err := s.ExecutePrepared(ctx, p, []any{"x"}); err == nil {
		t.Errorf("prepared before the reload, executed after: raw rows of a protected table: %v", res.Rows)
	}
	// And preparing the same text again (the engine's memo) is refused.
	if _, err := s.Prepare(ctx, "SELECT body FROM notes WHERE body <> $1", []sqltypes.Type{sqltypes.Text}); err == nil {
		t.Error("preparing it again after the reload was accepted")
	}
}

// Found in review: a statement analyzed under the old policy could add its
// memo entry after the reload purged the memo; such an entry is never
// used under the new policy. Statements race reloads here; after each
// reload that protects notes, every text the memo holds is refused.
func TestPassthroughMemoAcrossReloads(t *testing.T) {
	e, s := reloadFixture(t)
	ctx := context.Background()
	public := e.Policy()
	var n atomic.Int64
	for round := 0; round < 40; round++ {
		pub := *public
		if err := s.server.Reload(ctx, &pub, nil); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.Execute(ctx, fmt.Sprintf("SELECT body FROM notes WHERE body <> 'x%d'", n.Add(1)))
			}
		}()
		for i := 0; i < 20; i++ { // let a few statements run
			newSessionOn(t, s.server, "bob").Close()
		}
		if err := s.server.Reload(ctx, notesProtected(public), nil); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		bob := newSessionOn(t, s.server, "bob")
		for _, key := range e.Passthroughs().Keys() {
			sql := key.SQL
			if res, err := bob.Execute(ctx, sql); err == nil {
				t.Fatalf("round %d: %q answered raw after notes was protected: %v", round, sql, res[0].Rows)
			}
		}
		bob.Close()
	}
}

// reloadFixture is the session fixture on a server of its own: a reload
// closes the catalog it replaces, which the tests' shared servers must
// keep (found in CI: a later test's catalog closed under it).
func reloadFixture(t *testing.T) (*engine.Engine, *Session) {
	t.Helper()
	e, _, _, _ := sessionFixture(t, nil)
	srv, err := NewServer(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return e, newSessionOn(t, srv, "ana")
}

func newSessionOn(t *testing.T, srv *Server, analyst string) *Session {
	t.Helper()
	s, err := New(srv, analyst, rewrite.PostgresFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
