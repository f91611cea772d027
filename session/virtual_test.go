package session

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

func columnNames(res *sqltypes.Result) []string {
	var names []string
	for _, c := range res.Columns {
		names = append(names, c.Name)
	}
	return names
}

// dpproxy.budget shows what the accountant holds, and costs nothing.
func TestBudgetView(t *testing.T) {
	e, s, acct, _ := sessionFixture(t, nil)
	acct.SetLimit("ana", budget.Cost{Epsilon: 3, Delta: 1e-5})
	exec(t, s, "SELECT COUNT(*) FROM visits")
	exec(t, s, "SET dpproxy.epsilon = 0.25")
	exec(t, s, "SELECT SUM(n) FROM visits")

	res := exec(t, s, "SELECT * FROM dpproxy.budget")
	wantCols := []string{"analyst", "epsilon_limit", "epsilon_spent", "epsilon_remaining", "delta_limit", "delta_spent", "delta_remaining", "session_epsilon", "accountant", "rho_spent", "renews", "window_start"}
	if got := columnNames(res); !reflect.DeepEqual(got, wantCols) {
		t.Fatalf("columns %v, want %v", got, wantCols)
	}
	for i, c := range res.Columns {
		want := sqltypes.Float8
		switch c.Name {
		case "analyst", "accountant", "renews":
			want = sqltypes.Text
		case "window_start":
			want = sqltypes.Timestamptz
		}
		if c.Type != want {
			t.Errorf("column %d %s has type %v, want %v", i, c.Name, c.Type, want)
		}
	}
	st, _ := acct.Status("ana")
	want := [][]any{{"ana", 3.0, st.Spent.Epsilon, st.Remaining.Epsilon, 1e-5, st.Spent.Delta, st.Remaining.Delta, 0.25, "basic", nil, nil, nil}}
	if !reflect.DeepEqual(res.Rows, want) {
		t.Errorf("rows %v, want %v", res.Rows, want)
	}
	if st.Spent.Epsilon != 0.75 || st.Remaining.Epsilon != 2.25 {
		t.Errorf("status %+v, want 0.75 spent", st)
	}
	if res.Tag != "SELECT 1" {
		t.Errorf("tag %q", res.Tag)
	}

	// A list of columns, with an alias, qualified or not.
	res = exec(t, s, "SELECT epsilon_remaining AS left_eps, b.session_epsilon, B.analyst FROM dpproxy.budget AS b")
	if got := columnNames(res); !reflect.DeepEqual(got, []string{"left_eps", "session_epsilon", "analyst"}) || !reflect.DeepEqual(res.Rows, [][]any{{2.25, 0.25, "ana"}}) {
		t.Errorf("columns %v rows %v", got, res.Rows)
	}
	res = exec(t, s, `SELECT "dpproxy"."budget"."epsilon_spent", epsilon_remaining AS left_eps FROM "dpproxy"."budget"`)
	if got := columnNames(res); !reflect.DeepEqual(got, []string{"epsilon_spent", "left_eps"}) {
		t.Errorf("columns %v", got)
	}
	if !reflect.DeepEqual(res.Rows, [][]any{{0.75, 2.25}}) {
		t.Errorf("rows %v", res.Rows)
	}

	// Each analyst sees only their own row.
	bob := newSession(t, e, "bob")
	res = exec(t, bob, "SELECT analyst, epsilon_spent, session_epsilon FROM DPPROXY.BUDGET")
	if !reflect.DeepEqual(res.Rows, [][]any{{"bob", 0.0, 0.5}}) {
		t.Errorf("bob sees %v", res.Rows)
	}
	if got := spent(t, acct, "ana"); got != 0.75 {
		t.Errorf("reading the views spent budget: ε=%v", got)
	}
}

// dpproxy.queries is the analyst's own charges, newest first, with the
// normalized query text.
func TestQueriesView(t *testing.T) {
	e, s, acct, _ := sessionFixture(t, nil)
	queries := []string{
		"SELECT COUNT(*)\n  FROM visits",
		"SELECT SUM(n) FROM visits WHERE kind = 'a'",
		"select   avg(cost) from visits",
	}
	exec(t, s, queries[0])
	exec(t, s, "SET dpproxy.epsilon = 0.125")
	exec(t, s, queries[1])
	exec(t, s, "RESET dpproxy.epsilon")
	exec(t, s, queries[2])
	exec(t, newSession(t, e, "bob"), "SELECT COUNT(n) FROM visits")

	res := exec(t, s, "SELECT * FROM dpproxy.queries")
	if got := columnNames(res); !reflect.DeepEqual(got, []string{"id", "charged_at", "epsilon", "delta", "query"}) {
		t.Fatalf("columns %v", got)
	}
	wantTypes := []sqltypes.Type{sqltypes.Int8, sqltypes.Timestamptz, sqltypes.Float8, sqltypes.Float8, sqltypes.Text}
	for i, c := range res.Columns {
		if c.Type != wantTypes[i] {
			t.Errorf("column %s: %v, want %v", c.Name, c.Type, wantTypes[i])
		}
	}
	ledger, err := acct.Charges(context.Background(), "ana", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || len(ledger) != 3 {
		t.Fatalf("rows %v, ledger %v; want ana's 3 charges", res.Rows, ledger)
	}
	wantText := []string{"select avg(cost) from visits", "SELECT SUM(n) FROM visits WHERE kind = 'a'", "SELECT COUNT(*) FROM visits"}
	wantEps := []float64{0.5, 0.125, 0.5}
	for i, row := range res.Rows {
		c := ledger[i]
		if row[0] != c.ID || !row[1].(time.Time).Equal(c.At) || row[2] != c.Cost.Epsilon || row[3] != c.Cost.Delta || row[4] != c.Query {
			t.Errorf("row %d %v, ledger %+v", i, row, c)
		}
		if row[4] != wantText[i] || row[2] != wantEps[i] {
			t.Errorf("row %d: %q at ε=%v, want %q at ε=%v", i, row[4], row[2], wantText[i], wantEps[i])
		}
		if i > 0 && row[0].(int64) >= res.Rows[i-1][0].(int64) {
			t.Errorf("rows not newest first: %v", res.Rows)
		}
	}

	for _, tc := range []struct {
		sql  string
		want [][]any // expected rows, from the ledger
	}{
		{"SELECT query FROM dpproxy.queries LIMIT 1", [][]any{{wantText[0]}}},
		{"SELECT query FROM dpproxy.queries LIMIT 0", nil},
		{"SELECT query FROM dpproxy.queries ORDER BY id DESC LIMIT 2", [][]any{{wantText[0]}, {wantText[1]}}},
		{"SELECT query FROM dpproxy.queries ORDER BY id", [][]any{{wantText[2]}, {wantText[1]}, {wantText[0]}}},
		{"SELECT query FROM dpproxy.queries ORDER BY id ASC LIMIT 1", [][]any{{wantText[2]}}},
		{"SELECT query FROM dpproxy.queries ORDER BY charged_at ASC, id ASC LIMIT 1", [][]any{{wantText[2]}}},
		{"SELECT epsilon, query AS q FROM dpproxy.queries ORDER BY epsilon, q", [][]any{{0.125, wantText[1]}, {0.5, wantText[2]}, {0.5, wantText[0]}}},
		{"SELECT epsilon, query FROM dpproxy.queries ORDER BY 1 DESC, 2 DESC LIMIT 2", [][]any{{0.5, wantText[0]}, {0.5, wantText[2]}}},
		{"SELECT q.query FROM dpproxy.queries q ORDER BY q.epsilon LIMIT 1", [][]any{{wantText[1]}}},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			res := exec(t, s, tc.sql)
			if len(res.Rows) != len(tc.want) || len(tc.want) > 0 && !reflect.DeepEqual(res.Rows, tc.want) {
				t.Errorf("got %v, want %v", res.Rows, tc.want)
			}
		})
	}
	if got := charges(t, acct, "ana"); got != 3 {
		t.Errorf("reading the views added charges: %d", got)
	}
}

func TestVirtualViewsRejectOtherShapes(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	for _, tc := range []struct {
		sql  string
		code sqlerr.Code
		msg  string
	}{
		{"SELECT * FROM dpproxy.budget WHERE analyst = 'bob'", sqlerr.FeatureNotSupported, "WHERE is not supported on dpproxy.budget"},
		{"SELECT analyst, COUNT(*) FROM dpproxy.queries GROUP BY analyst", sqlerr.FeatureNotSupported, "not supported on dpproxy.queries"},
		{"SELECT COUNT(*) FROM dpproxy.queries", sqlerr.FeatureNotSupported, "only columns can be selected"},
		{"SELECT epsilon * 2 FROM dpproxy.queries", sqlerr.FeatureNotSupported, "only columns can be selected"},
		{"SELECT DISTINCT epsilon FROM dpproxy.queries", sqlerr.FeatureNotSupported, "SELECT DISTINCT"},
		{"SELECT * FROM dpproxy.queries LIMIT 1 OFFSET 1", sqlerr.FeatureNotSupported, "OFFSET"},
		{"SELECT * FROM dpproxy.queries ORDER BY length(query)", sqlerr.FeatureNotSupported, "must name a column"},
		{"SELECT * FROM dpproxy.queries ORDER BY 9", sqlerr.InvalidParameterValue, "position 9"},
		{"SELECT * FROM dpproxy.queries HAVING 1", sqlerr.FeatureNotSupported, "HAVING"},
		{"WITH x AS (SELECT 1) SELECT * FROM dpproxy.budget", sqlerr.FeatureNotSupported, "WITH"},
		{"SELECT * FROM dpproxy.budget, visits", sqlerr.FeatureNotSupported, "must be queried alone"},
		{"SELECT COUNT(*) FROM visits WHERE n IN (SELECT id FROM dpproxy.queries)", sqlerr.FeatureNotSupported, "must be queried alone"},
		{"SELECT * FROM dpproxy.queries JOIN notes ON 1=1", sqlerr.FeatureNotSupported, "must be queried alone"},
		{"SELECT body FROM notes UNION SELECT query FROM dpproxy.queries", sqlerr.FeatureNotSupported, "only SELECT"},
		{"SELECT * FROM (SELECT * FROM dpproxy.budget) AS b", sqlerr.FeatureNotSupported, "must be queried alone"},
		{"SELECT * FROM dpproxy.budget a JOIN dpproxy.budget b ON 1=1", sqlerr.FeatureNotSupported, "must be queried alone"},
		{"DELETE FROM dpproxy.queries", sqlerr.FeatureNotSupported, "read-only view"},
		{"SELECT * FROM dpproxy.secrets", sqlerr.UndefinedTable, `relation "dpproxy.secrets" does not exist`},
		{"SELECT nosuch FROM dpproxy.budget", sqlerr.UndefinedColumn, `column "nosuch" does not exist in dpproxy.budget`},
		{"SELECT visits.analyst FROM dpproxy.budget", sqlerr.UndefinedTable, "missing FROM-clause entry"},
		{"SELECT budget.analyst FROM dpproxy.budget AS b", sqlerr.UndefinedTable, "missing FROM-clause entry"},
		{"SELECT other.budget.analyst FROM dpproxy.budget", sqlerr.UndefinedTable, "missing FROM-clause entry"},
		{"SELECT * FROM dpproxy.budget LIMIT -1", sqlerr.SyntaxError, ""},
		{"SELECT * FROM dpproxy.budget FOR UPDATE", sqlerr.FeatureNotSupported, "locking clause"},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			e := execErr(t, s, tc.sql)
			if e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("got %s %q, want %s containing %q", e.Code, e.Message, tc.code, tc.msg)
			}
		})
	}
	if got := spent(t, acct, "ana"); got != 0 {
		t.Errorf("rejected view queries spent ε=%v", got)
	}
	// The session stays usable.
	exec(t, s, "SELECT * FROM dpproxy.budget")
}

// The views never touch the backend: they answer with it closed.
func TestVirtualViewsWithoutBackend(t *testing.T) {
	_, s, _, be := sessionFixture(t, nil)
	exec(t, s, "SELECT COUNT(*) FROM visits")
	be.Close()
	if code := execErr(t, s, "SELECT SUM(n) FROM visits").Code; code != sqlerr.BackendUnavailable {
		t.Fatalf("backend still reachable: %s", code)
	}
	if res := exec(t, s, "SELECT epsilon_spent FROM dpproxy.budget"); res.Rows[0][0] != 0.5 {
		t.Errorf("budget %v", res.Rows)
	}
	if res := exec(t, s, "SELECT query FROM dpproxy.queries"); len(res.Rows) != 1 || res.Rows[0][0] != "SELECT COUNT(*) FROM visits" {
		t.Errorf("queries %v", res.Rows)
	}
}

// A zCDP account shows its spending in ρ too: Σ ε²/2 over its charges.
func TestBudgetViewZCDP(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	acct.SetLimit("ana", budget.Cost{Epsilon: 3, Delta: 1e-5})
	if err := acct.SetComposition("ana", budget.Composition{DeltaPrime: 1e-6, ZCDP: true}); err != nil {
		t.Fatal(err)
	}
	exec(t, s, "SET dpproxy.epsilon = 0.25")
	exec(t, s, "SELECT COUNT(*) FROM visits")
	exec(t, s, "SELECT SUM(n) FROM visits")
	res := exec(t, s, "SELECT accountant, rho_spent, renews FROM dpproxy.budget")
	if want := [][]any{{"zcdp", 2 * 0.25 * 0.25 / 2, nil}}; !reflect.DeepEqual(res.Rows, want) {
		t.Errorf("rows %v, want %v", res.Rows, want)
	}
}

// EXPLAIN DP states the budget in the accountant's terms.
func TestBudgetLine(t *testing.T) {
	start := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		st   budget.Status
		want string
	}{
		{budget.Status{Accountant: "basic", Limit: budget.Cost{Epsilon: 3}, Spent: budget.Cost{Epsilon: 1}, Remaining: budget.Cost{Epsilon: 2}},
			"your budget (basic composition): ε 1 spent of 3, 2 remaining"},
		{budget.Status{Accountant: "zcdp", Limit: budget.Cost{Epsilon: 3}, Rho: 0.0625, Spent: budget.Cost{Epsilon: 1.2}, Remaining: budget.Cost{Epsilon: 1.8}},
			"your budget (zcdp composition): ε 1.2 spent of 3, 1.8 remaining; in zCDP terms ρ = 0.0625 spent, and this query adds ρ = ε²/2 = 0.03125"},
		{budget.Status{Accountant: "basic", Window: "this day", WindowStart: start, Limit: budget.Cost{Epsilon: 1}, Remaining: budget.Cost{Epsilon: 1}},
			"your budget (basic composition): ε 0 spent of 1, 1 remaining this day (since 2026-11-25 00:00 UTC)"},
	} {
		if got := budgetLine(tc.st, 0.25); got != tc.want {
			t.Errorf("budgetLine:\n got %q\nwant %q", got, tc.want)
		}
	}
}
