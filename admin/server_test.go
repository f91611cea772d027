package admin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/budget"
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
