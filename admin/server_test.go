package admin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/session"
	"github.com/dpproxy/dpproxy/sqlerr"
)

func testServer(t *testing.T, ready func(context.Context) error) (*httptest.Server, *Metrics) {
	t.Helper()
	v, err := auth.NewSCRAMVerifier("pw")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(Sources{})
	s := New(Options{User: "ops", Verifier: v, Metrics: m, Ready: ready, Throttle: &auth.Throttle{Base: 50 * time.Millisecond, Max: time.Second}})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, m
}

func fetch(t *testing.T, url, user, password string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Only the admin user gets in; every other login is refused with 401 and
// a challenge, and no page says anything about what it would serve.
func TestAdminLogin(t *testing.T) {
	ts, _ := testServer(t, nil)
	for _, c := range []struct {
		user, password string
		status         int
	}{
		{"", "", http.StatusUnauthorized},
		{"ops", "", http.StatusUnauthorized},
		{"ops", "wrong", http.StatusUnauthorized},
		{"analyst", "pw", http.StatusUnauthorized},
		{"ops", "pw", http.StatusOK},
		{"ops", "pw", http.StatusOK}, // remembered
		{"ops", "pw2", http.StatusUnauthorized},
	} {
		status, body := fetch(t, ts.URL+"/metrics", c.user, c.password)
		if status != c.status {
			t.Errorf("%s/%s: %d, want %d", c.user, c.password, status, c.status)
		}
		if status == http.StatusUnauthorized && strings.Contains(body, "dpproxy_") {
			t.Errorf("a refused login got metrics: %s", body)
		}
	}
	if status, _ := fetch(t, ts.URL+"/nothing", "ops", "pw"); status != http.StatusNotFound {
		t.Errorf("an unknown path: %d", status)
	}
}

// /readyz answers 503 with the reason while what answering needs is down.
func TestReadyz(t *testing.T) {
	var down error
	ts, _ := testServer(t, func(context.Context) error { return down })
	if status, _ := fetch(t, ts.URL+"/readyz", "ops", "pw"); status != http.StatusOK {
		t.Errorf("ready: %d", status)
	}
	down = errors.New("backend: connection refused")
	if status, body := fetch(t, ts.URL+"/readyz", "ops", "pw"); status != http.StatusServiceUnavailable || !strings.Contains(body, "connection refused") {
		t.Errorf("not ready: %d %q", status, body)
	}
	if status, _ := fetch(t, ts.URL+"/healthz", "ops", "pw"); status != http.StatusOK {
		t.Errorf("healthz while not ready: %d", status)
	}
}

// Observe counts each statement under its labels.
func TestObserveCounts(t *testing.T) {
	ts, m := testServer(t, nil)
	for i := 0; i < 3; i++ {
		m.Observe(session.Statement{Protocol: "postgres", Kind: session.KindDP, Analyst: "ana", Charged: budget.Cost{Epsilon: 0.5}, Rows: 2, Duration: time.Millisecond})
	}
	m.Observe(session.Statement{Protocol: "mysql", Kind: session.KindDP, Analyst: "ana", SQLState: sqlerr.BudgetExhausted})
	m.Observe(session.Statement{Protocol: "mysql", Kind: session.KindCached, Analyst: "ana", CacheHit: true, Rows: 2})
	_, body := fetch(t, ts.URL+"/metrics", "ops", "pw")
	for _, want := range []string{
		`dpproxy_statements_total{kind="dp",outcome="answered",protocol="postgres",sqlstate_class="00"} 3`,
		`dpproxy_statements_total{kind="dp",outcome="budget_exhausted",protocol="mysql",sqlstate_class="53"} 1`,
		`dpproxy_statements_total{kind="cached",outcome="answered",protocol="mysql",sqlstate_class="00"} 1`,
		`dpproxy_epsilon_charged_total{analyst="ana"} 1.5`,
		`dpproxy_cache_hits_total 1`,
		`dpproxy_rows_released_total{kind="dp"} 6`,
		`dpproxy_statement_duration_seconds_count{kind="dp"} 4`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// The budget page lists every budget with its spending, draws the
// charges over time, and shows recent statements and refusals with their
// text escaped (a statement is the client's text: it must not become
// markup); it loads nothing from elsewhere.
func TestBudgetPage(t *testing.T) {
	ctx := context.Background()
	pol, err := config.Parse([]byte(`
backend: {kind: sqlite, path: unused.db}
analysts:
  - name: ana
    password: {scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="}
    budget: {epsilon: 4}
  - name: bob
    password: {scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="}
    budget: {epsilon: 2, window: day}
teams:
  - {name: research, analysts: [ana, bob], budget: {epsilon: 5}}
protected_tables:
  - name: t
    privacy_unit: uid
    budget: {epsilon: 3}
    columns: [{name: uid, type: int}]
`), "page.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store, err := budget.OpenSQLite(ctx, t.TempDir()+"/ledger.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	acct, err := budget.NewAccountant(ctx, store, map[string]budget.Cost{"ana": {Epsilon: 4}, "bob": {Epsilon: 2}})
	if err != nil {
		t.Fatal(err)
	}
	acct.SetTeams(map[string]budget.Team{"research": {Limit: budget.Cost{Epsilon: 5}, Members: []string{"ana", "bob"}}})
	acct.SetTableLimits(map[string]budget.Cost{"t": {Epsilon: 3}})
	if err := acct.SetWindow("bob", budget.Window{Period: "day"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		analyst string
		eps     float64
	}{{"ana", 0.5}, {"ana", 1}, {"bob", 0.25}} {
		r, err := acct.ReserveFor(ctx, c.analyst, []string{"t"}, budget.Cost{Epsilon: c.eps})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Commit(ctx, "SELECT COUNT(*) FROM t"); err != nil {
			t.Fatal(err)
		}
	}
	v, _ := auth.NewSCRAMVerifier("pw")
	recent := NewRecent(10)
	recent.Observe(session.Statement{Time: time.Now(), Analyst: "ana", Protocol: "postgres", Kind: session.KindDP, Text: "SELECT COUNT(*) FROM t", Charged: budget.Cost{Epsilon: 0.5}, Rows: 1})
	recent.Observe(session.Statement{Time: time.Now(), Analyst: "bob", Protocol: "mysql", Kind: session.KindDP, Text: "SELECT '<script>alert(1)</script>' FROM t", SQLState: sqlerr.InsufficientPrivilege, Error: "raw rows are never returned"})
	s := New(Options{User: "ops", Verifier: v, Metrics: NewMetrics(Sources{}), Policy: func() *config.Policy { return pol }, Accountant: acct, Recent: recent})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	status, body := fetch(t, ts.URL+"/", "ops", "pw")
	if status != http.StatusOK {
		t.Fatalf("GET /: %d %s", status, body)
	}
	for _, want := range []string{
		`data-scope="analyst" data-name="ana"`, `<td class="num">1.5</td><td class="num">4</td><td class="num">2.5</td>`,
		`data-scope="analyst" data-name="bob"`, `<td>this day</td>`,
		`data-scope="team" data-name="research"`, `<td class="num">1.75</td><td class="num">5</td>`,
		`data-scope="table" data-name="t"`,
		`<svg`, `ε charged over time`,
		`class="refusal"`, `raw rows are never returned`, `&lt;script&gt;alert(1)&lt;/script&gt;`,
		`class="statement"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, "src=\"http") || strings.Contains(body, "href=\"http") {
		t.Error("the page has a script or an external asset")
	}
	if status, _ := fetch(t, ts.URL+"/", "", ""); status != http.StatusUnauthorized {
		t.Errorf("the page without login: %d", status)
	}
}

// Found in review: a reload posted by another site's page (a browser
// holding the admin login) is refused; a script's (no Origin) and the
// listener's own origin are not.
func TestReloadOrigin(t *testing.T) {
	v, _ := auth.NewSCRAMVerifier("pw")
	reloads := 0
	s := New(Options{User: "ops", Verifier: v, Metrics: NewMetrics(Sources{}), Reload: func(context.Context) ReloadResult {
		reloads++
		return ReloadResult{Applied: true}
	}})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, c := range []struct {
		origin string
		status int
	}{{"", http.StatusOK}, {ts.URL, http.StatusOK}, {"http://evil.example", http.StatusForbidden}} {
		req, _ := http.NewRequest("POST", ts.URL+"/reload", nil)
		req.SetBasicAuth("ops", "pw")
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("Origin %q: %d, want %d", c.origin, resp.StatusCode, c.status)
		}
	}
	if reloads != 2 {
		t.Errorf("%d reloads, want 2", reloads)
	}
}

// The ledger's counters are read from the store at each scrape: charges,
// the transactions that committed them and those transactions' time.
func TestLedgerMetrics(t *testing.T) {
	store, err := budget.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m := NewMetrics(Sources{Ledger: store.Stats})
	read := func() map[string]float64 {
		t.Helper()
		families, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			if strings.HasPrefix(f.GetName(), "dpproxy_ledger_") {
				got[f.GetName()] = f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return got
	}
	if got := read(); got["dpproxy_ledger_charges_total"] != 0 || got["dpproxy_ledger_transactions_total"] != 0 || len(got) != 3 {
		t.Fatalf("before any charge: %v", got)
	}
	start := time.Now()
	for range 3 {
		if _, err := store.Append(t.Context(), budget.Charge{Analyst: "ana", Cost: budget.Cost{Epsilon: 0.1}, Query: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start).Seconds()
	got := read()
	if got["dpproxy_ledger_charges_total"] != 3 || got["dpproxy_ledger_transactions_total"] != 3 {
		t.Errorf("after 3 charges one after another: %v", got)
	}
	if s := got["dpproxy_ledger_transaction_seconds_total"]; s <= 0 || s > elapsed {
		t.Errorf("transactions took %v s in all, in %v s of appends", s, elapsed)
	}
}
