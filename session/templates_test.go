package session

import (
	"context"
	"math"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// noCache turns the result cache off: each query is its own release.
func noCache(p *config.Policy) { p.Cache.Size = 0 }

// preparedFresh is what the session prepares for sql without templates.
func preparedFresh(t *testing.T, s *Session, sql string) *prepared {
	t.Helper()
	stmt, parsed, err := s.parseOne(sql)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.prepare(stmt, castLookup(parsed))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A DP query whose text differs from an earlier one only in the numbers
// its WHERE compares columns with gets its plan from the shape's template:
// the plan, cache key and charge a full analysis gives, without one.
func TestTemplates(t *testing.T) {
	e, s, acct, _ := sessionFixture(t, noCache)
	ctx := context.Background()
	const first = "SELECT COUNT(*), SUM(cost) FROM visits WHERE n >= 2 AND patient_id <> 7"
	const second = "SELECT COUNT(*), SUM(cost) FROM visits WHERE n >= 3 AND patient_id <> 9"
	exec(t, s, first)
	if e.Templates().Len() != 0 {
		t.Fatal("a shape seen once has a template: one-off queries would pay for it")
	}
	exec(t, s, "SELECT COUNT(*), SUM(cost) FROM visits WHERE n >= 4 AND patient_id <> 8")
	if e.Templates().Len() != 1 {
		t.Fatalf("%d shapes known after the second query of the shape, want 1", e.Templates().Len())
	}
	before := spent(t, acct, "ana")
	p, learn := s.templatedPlan(second)
	if p == nil || learn != nil {
		t.Fatalf("the second text got no plan from the template (learn %v)", learn != nil)
	}
	want := preparedFresh(t, s, second)
	if !reflect.DeepEqual(p.query, want.query) || p.canonical != want.canonical || !reflect.DeepEqual(p.release, want.release) {
		t.Fatalf("the template's plan differs from the analysis':\n got %+v %q\nwant %+v %q", p.query.Plan, p.canonical, want.query.Plan, want.canonical)
	}
	hits := e.TemplateHits()
	res := exec(t, s, second)
	if e.TemplateHits() != hits+1 {
		t.Error("the second query did not use the template")
	}
	if len(res.Rows) != 1 || len(res.Columns) != 2 {
		t.Errorf("answer %v", res.Rows)
	}
	if got := spent(t, acct, "ana") - before; got < 0.499 || got > 0.501 {
		t.Errorf("the templated query was charged ε = %v, want 0.5", got)
	}
	charges, err := acct.Charges(ctx, "ana", 1)
	if err != nil || len(charges) != 1 || charges[0].Query != second {
		t.Errorf("the ledger's last charge is %+v (%v), want the client's text", charges, err)
	}

	// Another ε is another key: analyzed in full, then its own template.
	exec(t, s, "SET dpproxy.epsilon = 0.7")
	if p, _ := s.templatedPlan(second); p != nil {
		t.Error("a template made at ε = 0.5 was used at ε = 0.7")
	}
	before = spent(t, acct, "ana")
	exec(t, s, second)
	if got := spent(t, acct, "ana") - before; got < 0.699 || got > 0.701 {
		t.Errorf("at ε = 0.7 the query was charged %v", got)
	}
	if p, _ := s.templatedPlan(first); p == nil || p.query.Plan.Epsilon != 0.7 {
		t.Error("no template at ε = 0.7")
	}

	// A reload: templates of the old policy are not used.
	reloaded := *e.Policy()
	if err := s.server.Reload(ctx, &reloaded, nil); err != nil {
		t.Fatal(err)
	}
	if p, learn := s.templatedPlan(second); p != nil || learn == nil {
		t.Error("a template made under the old policy was used after a reload, or its shape is not learned again")
	}
}

// Shapes without a template are remembered and analyzed in full each
// time; templates are not used where the plan is chosen per query or the
// front end is MySQL's.
func TestTemplatesNotUsed(t *testing.T) {
	e, s, _, _ := sessionFixture(t, func(p *config.Policy) {
		noCache(p)
		n := &p.ProtectedTables[0].Columns[3]
		n.GroupBy, n.Keys = true, []string{"2", "3", "4"}
	})
	// The analysis narrows n's keys to the ones WHERE names: a constant
	// compared with a grouped column is no slot.
	exec(t, s, "SELECT n, COUNT(*) FROM visits WHERE n = 3 GROUP BY n")
	exec(t, s, "SELECT n, COUNT(*) FROM visits WHERE n = 2 GROUP BY n")
	if p, learn := s.templatedPlan("SELECT n, COUNT(*) FROM visits WHERE n = 4 GROUP BY n"); p != nil || learn != nil {
		t.Errorf("a shape without a template: plan %v, learn %v", p != nil, learn != nil)
	}
	// Nor after a reload: the shape is tried again under the new policy.
	reloaded := *e.Policy()
	if err := s.server.Reload(context.Background(), &reloaded, nil); err != nil {
		t.Fatal(err)
	}
	if _, learn := s.templatedPlan("SELECT n, COUNT(*) FROM visits WHERE n = 4 GROUP BY n"); learn == nil {
		t.Error("a shape found to have no template under the old policy is not tried again after a reload")
	}
	// A refused query teaches nothing.
	execErr(t, s, "SELECT patient_id FROM visits WHERE n = 3")
	if _, learn := s.templatedPlan("SELECT patient_id FROM visits WHERE n = 4"); learn == nil {
		t.Error("a refused query's shape was remembered")
	}
	// A target error chooses ε per query.
	exec(t, s, "SET dpproxy.target_error = 5")
	if p, learn := s.templatedPlan("SELECT COUNT(*) FROM visits WHERE n = 4"); p != nil || learn != nil {
		t.Error("templates used with a target error")
	}
	exec(t, s, "SET dpproxy.target_error = off")

	// With the result cache on, a query an earlier release may answer
	// (WHERE on a grouped key) has no template; one it may not, has.
	e2, s2, _, _ := sessionFixture(t, nil)
	exec(t, s2, "SELECT COUNT(*) FROM visits WHERE n > 2")
	exec(t, s2, "SELECT COUNT(*) FROM visits WHERE n > 4")
	if p, _ := s2.templatedPlan("SELECT COUNT(*) FROM visits WHERE n > 3"); p == nil {
		t.Error("no template with the cache on")
	}
	exec(t, s2, "SELECT COUNT(*) FROM visits WHERE kind = 'a' AND n > 2")
	exec(t, s2, "SELECT COUNT(*) FROM visits WHERE kind = 'a' AND n > 4")
	if p, _ := s2.templatedPlan("SELECT COUNT(*) FROM visits WHERE kind = 'a' AND n > 3"); p != nil {
		t.Error("a template for a query an earlier release may answer")
	}
	// A unit's figures: no release of a GROUP BY of the unit can exist
	// (the unit is no group column), so it has a template.
	exec(t, s2, "SELECT COUNT(*) FROM visits WHERE patient_id = 2")
	exec(t, s2, "SELECT COUNT(*) FROM visits WHERE patient_id = 4")
	if p, _ := s2.templatedPlan("SELECT COUNT(*) FROM visits WHERE patient_id = 3"); p == nil {
		t.Error("no template for a lookup of one unit with the cache on")
	}
	// Templates are each analyst's own.
	bob := newSession(t, e2, "bob")
	if p, _ := bob.templatedPlan("SELECT COUNT(*) FROM visits WHERE patient_id = 3"); p != nil {
		t.Error("one analyst used another's template")
	}

	my, err := New(serverFor(t, e), "ana", rewrite.MySQLFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, my, "SELECT COUNT(*) FROM visits WHERE n > 2")
	exec(t, my, "SELECT COUNT(*) FROM visits WHERE n > 4")
	if p, learn := my.templatedPlan("SELECT COUNT(*) FROM visits WHERE n > 3"); p != nil || learn != nil {
		t.Error("templates used by the MySQL front end")
	}
}

// The extended protocol's texts without parameters (pgx's exec mode,
// JDBC's Statement) use templates too, to describe and to execute.
func TestTemplatesExtendedProtocol(t *testing.T) {
	e, s, acct, _ := sessionFixture(t, noCache)
	ctx := context.Background()
	run := func(sql string) *sqltypes.Prepared {
		t.Helper()
		p, err := s.Prepare(ctx, sql, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ExecutePrepared(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := run("SELECT COUNT(*) AS n, AVG(cost) FROM visits WHERE n < 4")
	hits := e.TemplateHits()
	before := spent(t, acct, "ana")
	second := run("SELECT COUNT(*) AS n, AVG(cost) FROM visits WHERE n < 5")
	if got := e.TemplateHits() - hits; got != 2 {
		t.Errorf("%d plans from the template for Parse and Execute, want 2", got)
	}
	if !reflect.DeepEqual(first.Columns, second.Columns) || len(second.Params) != 0 {
		t.Errorf("described %v (params %v), want %v", second.Columns, second.Params, first.Columns)
	}
	if got := spent(t, acct, "ana") - before; got < 0.499 || got > 0.501 {
		t.Errorf("charged ε = %v, want 0.5", got)
	}
	// With a parameter: analyzed in full, as before.
	hits = e.TemplateHits()
	p, err := s.Prepare(ctx, "SELECT COUNT(*) FROM visits WHERE n < $1 AND patient_id <> 5", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExecutePrepared(ctx, p, []any{int64(3)}); err != nil {
		t.Fatal(err)
	}
	if e.TemplateHits() != hits {
		t.Error("a statement with parameters used a template")
	}
}

// A prepared statement executed with other integer parameter values gets
// its plan from its execution's template, on both front ends.
func TestTemplatesPreparedParameters(t *testing.T) {
	e, s, acct, _ := sessionFixture(t, noCache)
	ctx := context.Background()
	my, err := New(serverFor(t, e), "ana", rewrite.MySQLFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s   *Session
		sql string
	}{
		{s, "SELECT COUNT(*), SUM(cost) FROM visits WHERE n < $1 AND patient_id <> $2"},
		{my, "SELECT COUNT(*), SUM(cost) FROM visits WHERE n < ? AND patient_id <> ?"},
	} {
		p, err := c.s.Prepare(ctx, c.sql, nil)
		if err != nil {
			t.Fatal(err)
		}
		run := func(params ...any) {
			t.Helper()
			if _, err := c.s.ExecutePrepared(ctx, p, params); err != nil {
				t.Fatal(err)
			}
		}
		run(int64(3), int64(7))
		run(int64(4), int64(8)) // the shape's second sighting: learned
		hits, before := e.TemplateHits(), spent(t, acct, "ana")
		run(int64(5), int64(9))
		run("6", int64(10)) // text for an integer: another shape, new
		run(int64(7), int64(11))
		if got := e.TemplateHits() - hits; got != 2 {
			t.Errorf("%s: %d executions planned from a template, want 2", c.sql, got)
		}
		if got := spent(t, acct, "ana") - before; got < 3*0.5-1e-9 || got > 3*0.5+1e-9 {
			t.Errorf("%s: three executions charged ε = %v", c.sql, got)
		}
		// The plan is what binding the values and analyzing gives.
		h := handleOf(p)
		params := []any{int64(4), int64(10)}
		got, _ := c.s.templatedExecution(p.SQL, h.markerParams, params, p.Params)
		if got == nil {
			t.Fatalf("%s: no template for %v", c.sql, params)
		}
		stmt, parsed, err := c.s.parseForBinding(p.SQL)
		if err != nil {
			t.Fatal(err)
		}
		if err := rewrite.BindParams(stmt, h.markerParams, params, p.Params); err != nil {
			t.Fatal(err)
		}
		want, err := c.s.prepare(stmt, castLookup(parsed))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.query, want.query) || got.canonical != want.canonical {
			t.Errorf("%s: the template's plan differs from the analysis'", c.sql)
		}
	}
}

// Sessions share an analyst's templates: eight of them at once, each
// sending new texts of one shape, all get their answers and charges (run
// under the race detector by scripts/test.sh).
func TestTemplatesConcurrent(t *testing.T) {
	e, _, acct, _ := sessionFixture(t, noCache)
	before := spent(t, acct, "ana")
	const sessions, each = 8, 10
	var wg sync.WaitGroup
	for i := range sessions {
		s := newSession(t, e, "ana")
		wg.Go(func() {
			for j := range each {
				sql := "SELECT COUNT(*) FROM visits WHERE n < " + strconv.Itoa(2+j) + " AND patient_id <> " + strconv.Itoa(100+i*each+j)
				if res, err := s.Execute(context.Background(), sql); err != nil || len(res) != 1 || len(res[0].Rows) != 1 {
					t.Errorf("%s: %v", sql, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := spent(t, acct, "ana") - before; math.Abs(got-0.5*sessions*each) > 1e-6 {
		t.Errorf("charged ε = %v, want 0.5 × %d", got, sessions*each)
	}
	if e.TemplateHits() < sessions*each/2 {
		t.Errorf("%d of %d queries planned from the template", e.TemplateHits(), sessions*each)
	}
}
