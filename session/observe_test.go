package session

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Every statement a session runs reaches the server's observer once, with
// its kind, its charge, its row count and how it ended; a prepared
// statement's record carries its parameters.
func TestStatementRecords(t *testing.T) {
	_, s, _, _ := sessionFixture(t, nil)
	var mu sync.Mutex
	var got []Statement
	s.server.Observe(func(st Statement) {
		mu.Lock()
		got = append(got, st)
		mu.Unlock()
	})
	s.SetClient("192.0.2.7:5555")
	ctx := context.Background()
	statements := []struct {
		sql      string
		kind     string
		charged  float64
		cacheHit bool
		sqlstate sqlerr.Code
	}{
		{"SELECT COUNT(*) FROM visits", KindDP, 0.5, false, ""},
		{"SELECT COUNT(*) FROM visits", KindCached, 0, true, ""},
		{"SELECT * FROM notes", KindPublic, 0, false, ""},
		{"SELECT * FROM visits", KindDP, 0, false, sqlerr.InsufficientPrivilege},
		{"SELECT relname FROM pg_catalog.pg_class", KindCatalog, 0, false, ""},
		{"SET dpproxy.epsilon = 0.25", KindSession, 0, false, ""},
		{"SELEC 1", KindSession, 0, false, sqlerr.SyntaxError},
		{"SELECT * FROM dpproxy.budget", KindSession, 0, false, ""},
	}
	for _, st := range statements {
		s.Execute(ctx, st.sql)
	}
	prep, err := s.Prepare(ctx, "SELECT COUNT(*) FROM visits WHERE cost > $1", []sqltypes.Type{sqltypes.Int8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExecutePrepared(ctx, prep, []any{int64(3)}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(statements)+1 {
		t.Fatalf("%d records for %d statements: %+v", len(got), len(statements)+1, got)
	}
	for i, want := range statements {
		r := got[i]
		if r.Text != want.sql || r.Kind != want.kind || r.Charged.Epsilon != want.charged || r.CacheHit != want.cacheHit || r.SQLState != want.sqlstate {
			t.Errorf("%s: record %+v, want kind %s, ε %v, cache hit %v, SQLSTATE %q", want.sql, r, want.kind, want.charged, want.cacheHit, want.sqlstate)
		}
		if r.Analyst != "ana" || r.Client != "192.0.2.7:5555" || r.Protocol != "postgres" || r.Time.IsZero() || r.Duration <= 0 {
			t.Errorf("%s: record %+v", want.sql, r)
		}
		if (want.sqlstate != "") != (r.Error != "") {
			t.Errorf("%s: error %q", want.sql, r.Error)
		}
	}
	if got[0].Rows != 1 || got[2].Rows == 0 {
		t.Errorf("rows released: %d and %d", got[0].Rows, got[2].Rows)
	}
	last := got[len(got)-1]
	if last.Kind != KindDP || last.Charged.Epsilon != 0.25 || !strings.HasSuffix(last.Text, "-- parameters: $1=3") {
		t.Errorf("prepared statement's record %+v", last)
	}
}
