package session

import (
	"context"
	"reflect"
	"testing"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// A repeated DP query is answered from the plan memo and the result cache:
// the same release at no cost, without parsing. Every setting analysis
// reads gives another plan, and a reload or a session statement empties
// the memo.
func TestPlanMemo(t *testing.T) {
	e, s, acct, _ := sessionFixture(t, nil)
	ctx := context.Background()
	spent := func() float64 { st, _ := acct.Status("ana"); return st.Spent.Epsilon }
	const q = "SELECT kind, COUNT(*) FROM visits GROUP BY kind"
	first := exec(t, s, q)
	before := spent()
	if s.memoizedPlan(q, nil) == nil {
		t.Fatal("the DP query was not memoized")
	}
	again := exec(t, s, q)
	if spent() != before || !reflect.DeepEqual(first.Rows, again.Rows) {
		t.Errorf("a repeat through the memo: spent %v more, rows %v then %v", spent()-before, first.Rows, again.Rows)
	}

	// Another ε is another plan and another release.
	exec(t, s, "SET dpproxy.epsilon = 0.7")
	exec(t, s, q)
	if got := spent() - before; got < 0.69 || got > 0.71 {
		t.Errorf("after SET dpproxy.epsilon = 0.7 the query was charged %v", got)
	}
	// Another setting: the interval columns appear.
	exec(t, s, "SET dpproxy.intervals = 'columns'")
	if res := exec(t, s, q); len(res.Columns) != len(first.Columns)+2 {
		t.Errorf("with interval columns: %d columns, want %d", len(res.Columns), len(first.Columns)+2)
	}
	if s.plans == nil || len(s.plans.entries) == 0 {
		t.Fatal("nothing memoized")
	}

	// A session statement (a GUC here) empties the memo.
	exec(t, s, "SET search_path = public")
	if s.plans != nil {
		t.Errorf("SET search_path kept %d memoized plans", len(s.plans.entries))
	}
	exec(t, s, q)
	// A policy reload makes every entry stale.
	reloaded := *e.Policy()
	if err := s.server.Reload(ctx, &reloaded, nil); err != nil {
		t.Fatal(err)
	}
	if s.memoizedPlan(q, nil) != nil {
		t.Error("a plan memoized under the old policy is used after a reload")
	}
	exec(t, s, q)
	if s.memoizedPlan(q, nil) == nil {
		t.Error("not memoized again under the new policy")
	}
}

// A prepared DP statement is memoized per parameter value: each value is
// its own release, and a repeated value is the same release at no cost.
func TestPlanMemoPreparedParameters(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	ctx := context.Background()
	spent := func() float64 { st, _ := acct.Status("ana"); return st.Spent.Epsilon }
	p, err := s.Prepare(ctx, "SELECT COUNT(*) FROM visits WHERE kind = $1", nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func(v any) *sqltypes.Result {
		t.Helper()
		res, err := s.ExecutePrepared(ctx, p, []any{v})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a := run("a")
	afterA := spent()
	run("b")
	if spent() == afterA {
		t.Error("another parameter value was answered from the first value's plan")
	}
	afterB := spent()
	if again := run("a"); spent() != afterB || !reflect.DeepEqual(a.Rows, again.Rows) {
		t.Errorf("value a again: spent %v more, rows %v then %v", spent()-afterB, a.Rows, again.Rows)
	}
	if len(s.plans.entries) != 2 {
		t.Errorf("%d memoized plans, want one per value", len(s.plans.entries))
	}
}

// MySQL user variables can change what a text means: setting one empties
// the memo.
func TestPlanMemoMySQLSessionStatements(t *testing.T) {
	e, _, _, _ := sessionFixture(t, nil)
	s, err := New(serverFor(t, e), "ana", rewrite.MySQLFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	const q = "SELECT COUNT(*) FROM visits"
	exec(t, s, q)
	if s.memoizedPlan(q, nil) == nil {
		t.Fatal("not memoized")
	}
	exec(t, s, "SET @k = 'b'")
	if s.plans != nil {
		t.Error("SET @k kept the memo")
	}
	exec(t, s, q)
	exec(t, s, "USE information_schema")
	if s.plans != nil {
		t.Error("USE kept the memo")
	}
}

// Two parameter lists are one memo key only when they are equal: a text
// holding the key's separators does not pass for two values.
func TestPlanMemoParamsKey(t *testing.T) {
	for _, pair := range [][2][]any{
		{{"a\x01string\x00b", "c"}, {"a", "b\x01string\x00c"}},
		{{"a;string:b", "c"}, {"a", "b;string:c"}},
		{{`a";string:"b`, "c"}, {"a", `b";string:"c`}},
		{{int64(1)}, {"1"}},
		{{nil}, {"<nil>"}},
	} {
		if paramsKey(pair[0]) == paramsKey(pair[1]) {
			t.Errorf("%q and %q share the key %q", pair[0], pair[1], paramsKey(pair[0]))
		}
	}
}
