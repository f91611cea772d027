package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/dpproxy/dpproxy/internal/fixture"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// cacheFixture is engineFixture's engine, rebuilt over the same backend
// and ledger with the policy changed by mutate (nil: unchanged), a second
// analyst "bob", and a budget of ε = 100 for both analysts so that tests
// can run many queries. It returns an asker for ana.
func cacheFixture(t *testing.T, mutate func(*config.Policy)) (*Engine, *asker, *budget.Accountant, backend.Backend) {
	t.Helper()
	_, acct, be := engineFixture(t)
	pol := loadPolicy(t)
	bob := pol.Analysts[0]
	bob.Name = "bob"
	pol.Analysts = append(pol.Analysts, bob)
	if mutate != nil {
		mutate(pol)
	}
	acct.SetLimit("ana", budget.Cost{Epsilon: 100, Delta: 1e-4})
	acct.SetLimit("bob", budget.Cost{Epsilon: 100, Delta: 1e-4})
	e, err := New(Options{Policy: pol, Backend: be, Dialect: rewrite.SQLite, Accountant: acct})
	if err != nil {
		t.Fatal(err)
	}
	return e, newAsker(e, "ana"), acct, be
}

// exec asks one statement and returns its result, failing the test on an
// error.
func exec(t *testing.T, a *asker, sql string) *sqltypes.Result {
	t.Helper()
	res, err := a.ask(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

// execErr asks one statement that must fail and returns its error.
func execErr(t *testing.T, a *asker, sql string) *sqlerr.Error {
	t.Helper()
	res, err := a.ask(context.Background(), sql)
	if err == nil {
		t.Fatalf("%s: got %v, want an error", sql, res)
	}
	var e *sqlerr.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T) is not an *sqlerr.Error", sql, err, err)
	}
	return e
}

// spent is the analyst's committed ε.
func spent(t *testing.T, acct *budget.Accountant, analyst string) float64 {
	return fixture.Spent(t, acct, analyst)
}

// charges is the number of ledger entries of the analyst.
func charges(t *testing.T, acct *budget.Accountant, analyst string) int {
	return fixture.Charges(t, acct, analyst)
}

func TestCacheRepeatedQueries(t *testing.T) {
	const first = "SELECT kind, COUNT(*), SUM(cost) FROM visits GROUP BY kind"
	for _, tc := range []struct {
		name   string
		repeat string
		// hit: the repetition returns the first answer and costs nothing.
		hit bool
	}{
		{"identical", first, true},
		{"white space", "SELECT   kind,COUNT(*),\n\tSUM(cost)\nFROM visits   GROUP BY kind", true},
		{"keyword and function case", "select kind, count(*), sum(cost) from visits group by kind", true},
		{"comments and semicolon", "/* again */ SELECT kind, COUNT(*), SUM(cost) FROM visits GROUP BY kind; -- same", true},
		{"WHERE 1=1", first[:len("SELECT kind, COUNT(*), SUM(cost) FROM visits")] + " WHERE 1=1 GROUP BY kind", false},
		{"another literal", "SELECT kind, COUNT(*), SUM(cost) FROM visits WHERE n >= 0 GROUP BY kind", false},
		{"another column order", "SELECT kind, SUM(cost), COUNT(*) FROM visits GROUP BY kind", false},
		{"an alias", "SELECT kind, COUNT(*) AS c, SUM(cost) FROM visits GROUP BY kind", false},
		{"identifier case", "SELECT KIND, COUNT(*), SUM(COST) FROM VISITS GROUP BY KIND", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s, acct, _ := cacheFixture(t, nil)
			a := exec(t, s, first)
			if got := spent(t, acct, "ana"); got != 0.5 {
				t.Fatalf("first query spent ε=%v, want 0.5", got)
			}
			b := exec(t, s, tc.repeat)
			wantSpent, wantCharges := 1.0, 2
			if tc.hit {
				wantSpent, wantCharges = 0.5, 1
				if !reflect.DeepEqual(a, b) {
					t.Errorf("repetition answered\n%v\nwant the cached\n%v", b, a)
				}
			}
			if got := spent(t, acct, "ana"); got != wantSpent {
				t.Errorf("spent ε=%v after the repetition, want %v", got, wantSpent)
			}
			if got := charges(t, acct, "ana"); got != wantCharges {
				t.Errorf("%d ledger entries, want %d", got, wantCharges)
			}
		})
	}
}

// Changing ε misses the cache; going back to the first ε hits it again.
func TestCacheKeyedByEpsilon(t *testing.T) {
	_, s, acct, _ := cacheFixture(t, nil)
	const q = "SELECT COUNT(*) FROM visits"
	a := exec(t, s, q)
	s.epsilon = 0.25
	exec(t, s, q)
	if got := spent(t, acct, "ana"); got != 0.75 {
		t.Fatalf("spent ε=%v, want 0.5 + 0.25", got)
	}
	s.epsilon = 0.5 // the policy's default
	if b := exec(t, s, q); !reflect.DeepEqual(a, b) {
		t.Errorf("back at ε=0.5: %v, want the cached %v", b, a)
	}
	if got := spent(t, acct, "ana"); got != 0.75 {
		t.Errorf("spent ε=%v, want 0.75 (the last query was cached)", got)
	}
}

// Analysts never share entries, and each pays for their own answer.
func TestCacheSeparatesAnalysts(t *testing.T) {
	e, ana, acct, _ := cacheFixture(t, nil)
	bob := newAsker(e, "bob")
	const q = "SELECT COUNT(*), SUM(cost) FROM visits"
	exec(t, ana, q)
	exec(t, bob, q)
	exec(t, bob, q)
	if a, b := spent(t, acct, "ana"), spent(t, acct, "bob"); a != 0.5 || b != 0.5 {
		t.Errorf("spent ana ε=%v bob ε=%v, want 0.5 each", a, b)
	}
	// Another connection of the same analyst shares the analyst's entries.
	exec(t, newAsker(e, "ana"), q)
	if a := spent(t, acct, "ana"); a != 0.5 {
		t.Errorf("ana's second connection was charged: spent ε=%v", a)
	}
}

func TestCacheTTLAndSize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cache   config.Cache
		queries []string
		sleep   time.Duration // before the last query
		charges int
	}{
		{"within TTL", config.Cache{Size: 10, TTL: time.Hour}, []string{"A", "A"}, 0, 1},
		{"after TTL", config.Cache{Size: 10, TTL: 50 * time.Millisecond}, []string{"A", "A"}, 150 * time.Millisecond, 2},
		{"size 0 disables", config.Cache{Size: 0, TTL: time.Hour}, []string{"A", "A", "A"}, 0, 3},
		{"size 1 evicts", config.Cache{Size: 1, TTL: time.Hour}, []string{"A", "B", "A"}, 0, 3},
		{"size 2 keeps both", config.Cache{Size: 2, TTL: time.Hour}, []string{"A", "B", "A", "B"}, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s, acct, _ := cacheFixture(t, func(p *config.Policy) { p.Cache = tc.cache })
			sql := map[string]string{"A": "SELECT COUNT(*) FROM visits", "B": "SELECT SUM(n) FROM visits"}
			for i, q := range tc.queries {
				if i == len(tc.queries)-1 {
					time.Sleep(tc.sleep)
				}
				exec(t, s, sql[q])
			}
			if got := charges(t, acct, "ana"); got != tc.charges {
				t.Errorf("%d charges, want %d", got, tc.charges)
			}
		})
	}
}

// Only successful DP releases are cached: not refusals, not public
// passthrough results.
func TestCacheStoresOnlyReleases(t *testing.T) {
	e, s, acct, _ := cacheFixture(t, nil)
	exec(t, s, "SELECT body FROM notes")
	if n := e.cache.lru.Len(); n != 0 {
		t.Errorf("a passthrough result was cached (%d entries)", n)
	}
	acct.SetLimit("ana", budget.Cost{Epsilon: 0.1})
	const q = "SELECT COUNT(*) FROM visits"
	if code := execErr(t, s, q).Code; code != sqlerr.BudgetExhausted {
		t.Fatalf("got %s, want %s", code, sqlerr.BudgetExhausted)
	}
	if n := e.cache.lru.Len(); n != 0 {
		t.Errorf("a refusal was cached (%d entries)", n)
	}
	acct.SetLimit("ana", budget.Cost{Epsilon: 1})
	a := exec(t, s, q)
	if got := spent(t, acct, "ana"); got != 0.5 {
		t.Fatalf("spent ε=%v, want 0.5", got)
	}
	// With the budget spent, the cached answer is still given: it reveals
	// nothing new.
	acct.SetLimit("ana", budget.Cost{Epsilon: 0.5})
	if b := exec(t, s, q); !reflect.DeepEqual(a, b) {
		t.Errorf("cached answer after exhaustion %v, want %v", b, a)
	}
	if code := execErr(t, s, "SELECT SUM(n) FROM visits").Code; code != sqlerr.BudgetExhausted {
		t.Errorf("a new query got %s, want %s", code, sqlerr.BudgetExhausted)
	}
}

// Callers cannot change each other's (or the cache's) rows.
func TestCacheReturnsCopies(t *testing.T) {
	_, s, _, _ := cacheFixture(t, nil)
	const q = "SELECT COUNT(*) FROM visits"
	a := exec(t, s, q)
	want := a.Rows[0][0]
	a.Rows[0][0] = int64(-1)
	a.Columns[0].Name = "changed"
	b := exec(t, s, q)
	if b.Rows[0][0] != want || b.Columns[0].Name != "count" {
		t.Errorf("the cached answer changed with the caller's copy: %v", b)
	}
}

// N identical new queries at once: exactly one charge, one answer.
func TestCacheConcurrentIdenticalQueries(t *testing.T) {
	e, _, acct, _ := cacheFixture(t, nil)
	const n = 16
	const q = "SELECT kind, AVG(cost) FROM visits GROUP BY kind"
	results := make([]*sqltypes.Result, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		s := newAsker(e, "ana")
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = s.ask(context.Background(), q)
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("query %d: %v", i, errs[i])
		}
		if !reflect.DeepEqual(results[i], results[0]) {
			t.Errorf("answer %d %v differs from answer 0 %v", i, results[i], results[0])
		}
	}
	if got := charges(t, acct, "ana"); got != 1 {
		t.Errorf("%d charges for %d identical concurrent queries, want 1", got, n)
	}
	if got := spent(t, acct, "ana"); got != 0.5 {
		t.Errorf("spent ε=%v, want 0.5", got)
	}
}

// A waiting caller gives up when its own context ends; the leader's
// failure is not shared: the next caller tries again.
func TestCacheFlightWaitAndFailure(t *testing.T) {
	c := newResultCache(10, time.Hour)
	key := cacheKey{analyst: "ana", epsilon: 1, query: "q"}
	release := make(chan struct{})
	leaderDone := make(chan error, 1)
	go func() {
		_, _, err := c.do(context.Background(), key, func() (*sqltypes.Result, error) {
			<-release
			return nil, sqlerr.New(sqlerr.InternalError, "failed")
		})
		leaderDone <- err
	}()
	// Wait until the leader is in flight.
	for {
		c.mu.Lock()
		_, ok := c.inflight[key]
		c.mu.Unlock()
		if ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.do(ctx, key, func() (*sqltypes.Result, error) { t.Error("a waiter computed"); return nil, nil }); sqlerr.As(err).Code != sqlerr.QueryCanceled {
		t.Errorf("canceled waiter got %v, want %s", err, sqlerr.QueryCanceled)
	}
	waiter := make(chan *sqltypes.Result, 1)
	go func() {
		res, hit, err := c.do(context.Background(), key, func() (*sqltypes.Result, error) {
			return &sqltypes.Result{Tag: "SELECT 0"}, nil
		})
		if err != nil || hit {
			t.Errorf("retrying waiter: hit=%v err=%v, want its own answer", hit, err)
		}
		waiter <- res
	}()
	time.Sleep(10 * time.Millisecond)
	close(release)
	if err := <-leaderDone; err == nil {
		t.Error("leader's error lost")
	}
	if res := <-waiter; res == nil || res.Tag != "SELECT 0" {
		t.Errorf("waiter got %v", res)
	}
	if res, hit, err := c.do(context.Background(), key, func() (*sqltypes.Result, error) { return nil, nil }); err != nil || !hit || res.Tag != "SELECT 0" {
		t.Errorf("after the retry: %v %v %v, want the cached answer", res, hit, err)
	}
}

// The cache key is built without fmt on every hit; the shared cache hashes
// its strings, so they must stay exactly what the fmt-built key was.
func TestCacheKeyStrings(t *testing.T) {
	plans := []*rewrite.Plan{
		{BackendSQL: `SELECT COUNT(*) FROM "t"`, Mechanism: config.MechanismLaplace, Neighbouring: config.Replace, MaxGroupsPerUnit: 3, MaxRowsPerUnit: 1},
		{BackendSQL: "SELECT 1", SideQueries: []string{"SELECT \"a\"\n", "x|y"}, Mechanism: config.MechanismGaussian, MaxTotalRowsPerUnit: 7,
			Selection: &rewrite.PartitionSelection{}, R2T: &rewrite.R2TRelease{}, Epsilon: 0.5, Delta: 1e-6},
		{},
	}
	for _, plan := range plans {
		got := keyOf("ana", plan, "q")
		want := cacheKey{analyst: "ana", epsilon: plan.Epsilon, delta: plan.Delta, query: "q",
			variant: fmt.Sprintf("bias=%t excess=%t r2t=%t rr=%s", plan.Bias != nil, plan.HasExcess(), plan.R2T != nil, rrVariant(plan)),
			plan: fmt.Sprintf("%s|%q|%s|%s|%d|%d|%d|%t", plan.BackendSQL, plan.SideQueries, plan.Mechanism, plan.Neighbouring,
				plan.MaxGroupsPerUnit, plan.MaxRowsPerUnit, plan.MaxTotalRowsPerUnit, plan.Selection != nil)}
		if got != want {
			t.Errorf("keyOf:\n got %#v\nwant %#v", got, want)
		}
	}
}
