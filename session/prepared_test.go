package session

import (
	"context"
	"math"
	"testing"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

func TestPreparedDPQueryWithParameters(t *testing.T) {
	e, acct, _ := engineFixture(t)
	ctx := context.Background()
	s, _ := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)

	p, err := s.Prepare(ctx, "SELECT kind, COUNT(*) AS n FROM visits WHERE n >= ? AND cost < ? GROUP BY kind", nil)
	if err != nil {
		t.Fatal(err)
	}
	// n is an int column, cost numeric: the context types the parameters.
	if len(p.Params) != 2 || p.Params[0] != sqltypes.Int4 || p.Params[1] != sqltypes.Numeric {
		t.Errorf("parameter types %v, want [integer numeric]", p.Params)
	}
	if len(p.Columns) != 2 || p.Columns[0].Type != sqltypes.Text || p.Columns[1].Type != sqltypes.Int8 || p.Columns[1].Name != "n" {
		t.Errorf("columns %+v", p.Columns)
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != 0 {
		t.Fatalf("Prepare charged ε=%v", st.Spent.Epsilon)
	}

	res, err := s.ExecutePrepared(ctx, p, []any{int64(1), sqltypes.Decimal("100")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 { // the public keys a, b, empty
		t.Errorf("rows %v", res.Rows)
	}
	// The same values again: the cached answer, free.
	again, err := s.ExecutePrepared(ctx, p, []any{int64(1), sqltypes.Decimal("100")})
	if err != nil {
		t.Fatal(err)
	}
	if again.Rows[0][1] != res.Rows[0][1] {
		t.Errorf("repeat gave %v, then %v; want the cached answer", res.Rows, again.Rows)
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != 0.5 {
		t.Errorf("spent ε=%v after one release and one repeat, want 0.5", st.Spent.Epsilon)
	}
	charges, _ := acct.Charges(ctx, "ana", 1)
	if len(charges) != 1 || charges[0].Query != "SELECT kind, COUNT(*) AS n FROM visits WHERE n >= ? AND cost < ? GROUP BY kind -- parameters: $1=1 $2=100" {
		t.Errorf("query log %+v", charges)
	}

	// Bad values are refused before anything runs.
	for _, c := range []struct {
		params []any
		code   sqlerr.Code
	}{
		{[]any{"abc", int64(1)}, sqlerr.InvalidTextRepresent},
		{[]any{int64(1), math.NaN()}, sqlerr.InvalidParameterValue},
		{[]any{int64(1), math.Inf(1)}, sqlerr.InvalidParameterValue},
		{[]any{int64(1)}, sqlerr.ProtocolViolation},
	} {
		if _, err := s.ExecutePrepared(ctx, p, c.params); sqlerr.As(err).Code != c.code {
			t.Errorf("params %v: got %v, want %s", c.params, err, c.code)
		}
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != 0.5 {
		t.Errorf("refused executions charged: spent ε=%v", st.Spent.Epsilon)
	}
}

// A parameter is a value, never SQL: a quote in it cannot change the query.
func TestPreparedParametersCannotInject(t *testing.T) {
	e, _, _ := engineFixture(t)
	ctx := context.Background()
	s, _ := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)
	p, err := s.Prepare(ctx, "SELECT body FROM notes WHERE body = ?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Columns) != 1 || p.Columns[0].Name != "body" {
		t.Fatalf("columns %+v", p.Columns)
	}
	for _, v := range []string{"x' OR '1'='1", `x\' OR 1=1 --`, "hello"} {
		res, err := s.ExecutePrepared(ctx, p, []any{v})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if v == "hello" {
			want = 1
		}
		if len(res.Rows) != want {
			t.Errorf("value %q: %d rows, want %d", v, len(res.Rows), want)
		}
	}
}

func TestPrepareRefusesWhatExecuteWould(t *testing.T) {
	e, _, _ := engineFixture(t)
	ctx := context.Background()
	s, _ := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)
	if _, err := s.Prepare(ctx, "SELECT * FROM visits WHERE n = ?", nil); sqlerr.As(err).Code != sqlerr.InsufficientPrivilege {
		t.Errorf("raw read: %v", err)
	}
	p, err := s.Prepare(ctx, " -- nothing", nil)
	if err != nil || !p.Empty {
		t.Errorf("empty statement: %+v, %v", p, err)
	}
	p, err = s.Prepare(ctx, "SET dpproxy.epsilon = 0.25", nil)
	if err != nil || p.Tag != "SET" {
		t.Fatalf("SET: %+v, %v", p, err)
	}
	if s.Epsilon() != 0.5 {
		t.Error("Prepare of SET changed the session")
	}
	if _, err := s.ExecutePrepared(ctx, p, nil); err != nil || s.Epsilon() != 0.25 {
		t.Errorf("executing SET: %v, ε=%v", err, s.Epsilon())
	}
	p, err = s.Prepare(ctx, "SELECT * FROM dpproxy.budget", nil)
	if err != nil || len(p.Columns) == 0 || p.Columns[0].Name != "analyst" {
		t.Errorf("view: %+v, %v", p, err)
	}
}

// Prepared public-table queries are described once and shared; each
// execution still binds its own values in the database. DP statements are
// never shared this way.
func TestPreparedPassthroughMemo(t *testing.T) {
	e, _, _ := engineFixture(t)
	ctx := context.Background()
	s1, _ := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)
	s2, _ := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)
	p1, err := s1.Prepare(ctx, "SELECT body FROM notes WHERE body = ?", nil)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := s2.Prepare(ctx, "SELECT body FROM notes WHERE body = ?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p1 != p2 {
		t.Error("the second Prepare described the statement again")
	}
	for v, want := range map[string]int{"hello": 1, "world": 1, "nope": 0} {
		res, err := s2.ExecutePrepared(ctx, p2, []any{v})
		if err != nil || len(res.Rows) != want {
			t.Errorf("%q: %v rows, %v", v, res, err)
		}
	}
	d1, err := s1.Prepare(ctx, "SELECT COUNT(*) FROM visits WHERE n > ?", nil)
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := s2.Prepare(ctx, "SELECT COUNT(*) FROM visits WHERE n > ?", nil)
	if d1 == d2 {
		t.Error("a DP statement was shared between sessions")
	}
}

func TestInOrder(t *testing.T) {
	for _, c := range []struct {
		markers []int
		n       int
		want    bool
	}{
		{nil, 0, true},
		{[]int{1, 2, 3}, 3, true},
		{[]int{1, 2}, 3, false},    // a parameter no marker uses
		{[]int{2, 1}, 2, false},    // out of text order
		{[]int{1, 1}, 1, false},    // one parameter at two markers
		{[]int{1, 2, 2}, 2, false}, // the same, at the end
	} {
		if got := inOrder(c.markers, c.n); got != c.want {
			t.Errorf("inOrder(%v, %d) = %v, want %v", c.markers, c.n, got, c.want)
		}
	}
}

func TestLogText(t *testing.T) {
	for _, c := range []struct {
		params []any
		want   string
	}{
		{nil, "SELECT ?"},
		{[]any{int64(-5), nil, "it's", 1.5, sqltypes.Decimal("2.50")}, "SELECT ? -- parameters: $1=-5 $2=NULL $3=it's $4=1.5 $5=2.50"},
	} {
		if got := logText("SELECT ?", c.params); got != c.want {
			t.Errorf("%v: got %q, want %q", c.params, got, c.want)
		}
	}
}
