package budget

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A team's analysts together spend at most the team's budget: a member's
// query is refused, naming the team, when the team has no room although
// the member has; the team's spending follows from the ledger after a
// restart; teams change on a reload.
func TestTeamBudget(t *testing.T) {
	ctx := context.Background()
	store, _ := openTestStore(t)
	limits := map[string]Cost{"ana": {Epsilon: 1}, "bob": {Epsilon: 1}, "cy": {Epsilon: 1}}
	a := newTestAccountant(t, store, limits)
	if err := a.SetTeams(map[string]Team{"growth": {Limit: Cost{Epsilon: 1.5}, Members: []string{"ana", "bob"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mustReserve(t, a, "ana", Cost{Epsilon: 1}).Commit(ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	held := mustReserve(t, a, "bob", Cost{Epsilon: 0.4})
	_, err := a.Reserve(context.Background(), "bob", Cost{Epsilon: 0.2})
	var ex *ExhaustedError
	if !errors.As(err, &ex) || ex.Team != "growth" || !approxCost(ex.Spent, Cost{Epsilon: 1}) || !approxCost(ex.Reserved, Cost{Epsilon: 0.4}) ||
		!strings.Contains(err.Error(), `privacy budget exhausted for team "growth" of analyst "bob": spent ε=1 of 1.5`) {
		t.Fatalf("bob past the team's budget: %v", err)
	}
	// cy is in no team: only her own budget counts.
	mustReserve(t, a, "cy", Cost{Epsilon: 1}).Release()
	if st, ok := a.TeamStatus("growth"); !ok || !approxCost(st.Remaining, Cost{Epsilon: 0.1}) {
		t.Errorf("team status %+v, %v", st, ok)
	}
	if _, err := held.Commit(ctx, "q2"); err != nil {
		t.Fatal(err)
	}
	// A restart: the team's spending is its members' charges.
	b := newTestAccountant(t, store, limits)
	if err := b.SetTeams(map[string]Team{"growth": {Limit: Cost{Epsilon: 1.5}, Members: []string{"ana", "bob"}}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.TeamStatus("growth"); !approxCost(st.Spent, Cost{Epsilon: 1.4}) {
		t.Errorf("after a restart the team spent %v, want 1.4", st.Spent)
	}
	if _, err := b.Reserve(context.Background(), "bob", Cost{Epsilon: 0.2}); !errors.As(err, &ex) || ex.Team != "growth" {
		t.Errorf("after a restart: %v", err)
	}
	// A reload without the team: bob's own budget has room.
	if err := b.SetTeams(nil); err != nil {
		t.Fatal(err)
	}
	mustReserve(t, b, "bob", Cost{Epsilon: 0.2}).Release()
	if err := b.SetTeams(map[string]Team{"x": {Limit: Cost{Epsilon: -1}}}); err == nil {
		t.Error("a negative team limit was accepted")
	}
	if got := a.TeamsOf("ana"); len(got) != 1 || got[0] != "growth" {
		t.Errorf("TeamsOf(ana) = %v", got)
	}
}

// A protected table's own budget (a privacy domain): every analyst's
// queries that read the table draw on it; a query reading it is refused,
// naming the table, when it is spent, while queries on other tables go on;
// the spending follows from the ledger after a restart, tables without a
// budget included, so that a budget given later starts from it.
func TestTableBudget(t *testing.T) {
	ctx := context.Background()
	store, _ := openTestStore(t)
	limits := map[string]Cost{"ana": {Epsilon: 10}, "bob": {Epsilon: 10}}
	a := newTestAccountant(t, store, limits)
	if err := a.SetTableLimits(map[string]Cost{"visits": {Epsilon: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ReserveFor(context.Background(), "ana", []string{"visits", "patients", "visits"}, Cost{Epsilon: 0.6}); err != nil {
		t.Fatal(err)
	} // held: 0.6 of visits' 1
	_, err := a.ReserveFor(context.Background(), "bob", []string{"visits"}, Cost{Epsilon: 0.5})
	var ex *ExhaustedError
	if !errors.As(err, &ex) || ex.Table != "visits" || !strings.Contains(err.Error(), `privacy budget exhausted for table "visits"`) {
		t.Fatalf("bob past the table's budget: %v", err)
	}
	r := mustReserveFor(t, a, "bob", []string{"visits"}, Cost{Epsilon: 0.4})
	if _, err := r.Commit(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	mustReserveFor(t, a, "bob", []string{"patients"}, Cost{Epsilon: 5}).Release()
	if st, ok := a.TableStatus("visits"); !ok || !approxCost(st.Spent, Cost{Epsilon: 0.4}) || !approxCost(st.Reserved, Cost{Epsilon: 0.6}) {
		t.Errorf("visits: %+v, %v", st, ok)
	}
	if _, ok := a.TableStatus("patients"); ok {
		t.Error("patients has no budget of its own")
	}
	// A restart, with a budget for patients now: its earlier spending
	// (none committed) and visits' 0.4 come from the ledger.
	b := newTestAccountant(t, store, limits)
	if err := b.SetTableLimits(map[string]Cost{"visits": {Epsilon: 1}, "patients": {Epsilon: 0.1}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.TableStatus("visits"); !approxCost(st.Spent, Cost{Epsilon: 0.4}) {
		t.Errorf("after a restart visits spent %v", st.Spent)
	}
	mustReserveFor(t, b, "ana", []string{"patients"}, Cost{Epsilon: 0.1}).Release()
	if _, err := b.ReserveFor(context.Background(), "ana", []string{"patients"}, Cost{Epsilon: 0.2}); !errors.As(err, &ex) || ex.Table != "patients" {
		t.Errorf("patients past its budget: %v", err)
	}
}

func mustReserveFor(t *testing.T, a *Accountant, analyst string, tables []string, c Cost) *Reservation {
	t.Helper()
	r, err := a.ReserveFor(context.Background(), analyst, tables, c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
