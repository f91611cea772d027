package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/demo"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Two analysts of one team draw on its budget: once the team's is spent,
// a member with budget of their own left is refused, told which budget is
// exhausted, and `dpproxy budget` shows the team's spending.
func TestTeamBudget(t *testing.T) {
	ctx := context.Background()
	p, policy := serveDemo(t, "  epsilon: 0.1\n", budgetAnalyst("analyst", "{epsilon: 10}")+
		budgetAnalyst("colleague", "{epsilon: 10}")+
		"teams:\n  - {name: research, analysts: [analyst, colleague], budget: {epsilon: 0.25}}\n"+tablesYAML)
	ana, col := connectAs(t, p, "analyst"), connectAs(t, p, "colleague")
	var n int64
	for i := 0; i < 2; i++ {
		if err := ana.QueryRow(ctx, "SELECT COUNT(*) FROM patients WHERE age > "+strconv.Itoa(i)).Scan(&n); err != nil {
			t.Fatalf("query %d: %v", i+1, err)
		}
	}
	err := col.QueryRow(ctx, "SELECT COUNT(*) FROM visits").Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "53DP1" || !strings.Contains(pgErr.Message, `team "research" of analyst "colleague"`) || !strings.Contains(pgErr.Message, "0.25") {
		t.Fatalf("the colleague past the team's budget: %v", err)
	}
	p.stop(t)
	out, err := exec.Command(binary, "budget", "--config", policy).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "team research (analyst, colleague)  0.2") {
		t.Errorf("dpproxy budget: %v\n%s", err, out)
	}
}

// A protected table's own budget: every analyst's queries that read it
// draw on it, so once it is spent a query reading it is refused, naming
// the table, whoever asks, while other tables stay open.
func TestTableBudget(t *testing.T) {
	ctx := context.Background()
	tables := strings.Replace(tablesYAML, "  - name: visits\n    privacy_unit: patient_id\n", "  - name: visits\n    privacy_unit: patient_id\n    budget: {epsilon: 0.25}\n", 1)
	p, policy := serveDemo(t, "  epsilon: 0.1\n", budgetAnalyst("analyst", "{epsilon: 10}")+budgetAnalyst("colleague", "{epsilon: 10}")+tables)
	ana, col := connectAs(t, p, "analyst"), connectAs(t, p, "colleague")
	var n int64
	if err := ana.QueryRow(ctx, "SELECT COUNT(*) FROM visits").Scan(&n); err != nil {
		t.Fatal(err)
	}
	// A join on the unit reads visits too.
	if err := ana.QueryRow(ctx, "SELECT COUNT(*) FROM patients p JOIN visits v USING (patient_id)").Scan(&n); err != nil {
		t.Fatal(err)
	}
	err := col.QueryRow(ctx, "SELECT COUNT(*) FROM visits WHERE cost > 10").Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "53DP1" || !strings.Contains(pgErr.Message, `privacy budget exhausted for table "visits"`) {
		t.Fatalf("the colleague past the table's budget: %v", err)
	}
	if err := col.QueryRow(ctx, "SELECT COUNT(*) FROM patients").Scan(&n); err != nil {
		t.Errorf("another table after visits' budget is spent: %v", err)
	}
	p.stop(t)
	out, err := exec.Command(binary, "budget", "--config", policy).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "table visits  0.2") {
		t.Errorf("dpproxy budget: %v\n%s", err, out)
	}
}

// Advanced composition (accountant: advanced, δ′ = 1e-6): queries of
// ε = 0.01 against a budget of ε = 0.5 — 50 under basic composition — fit
// 87 times before one is refused.
func TestAdvancedCompositionBudget(t *testing.T) {
	ctx := context.Background()
	p, policy := serveDemo(t, "  epsilon: 0.01\n  delta: 1e-9\n", budgetAnalyst("analyst", "{epsilon: 0.5, delta: 1e-5, accountant: advanced, delta_prime: 1e-6}")+tablesYAML)
	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	for i := 0; i < 87; i++ {
		if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM patients WHERE age > "+strconv.Itoa(i)).Scan(&n); err != nil {
			t.Fatalf("query %d: %v", i+1, err)
		}
	}
	err = conn.QueryRow(ctx, "SELECT COUNT(*) FROM patients WHERE age > 200").Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "53DP1" {
		t.Fatalf("the 88th query: %v", err)
	}
	var accountant string
	var spent float64
	if err := conn.QueryRow(ctx, "SELECT accountant, epsilon_spent FROM dpproxy.budget").Scan(&accountant, &spent); err != nil || accountant != "advanced" || spent > 0.5 || spent < 0.49 {
		t.Errorf("dpproxy.budget: %q spent %v (%v), want advanced and about 0.5", accountant, spent, err)
	}
	conn.Close(ctx)
	p.stop(t)
	out, err := exec.Command(binary, "budget", "--config", policy).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "advanced (δ′ = 1e-06)") || !strings.Contains(string(out), "0.499") {
		t.Errorf("dpproxy budget: %v\n%s", err, out)
	}
}

// A budget that renews per day: within the day it is spent like any other
// (the refusal says which period), and dpproxy budget says when the day
// began. (The renewal itself is tested with a clock in the budget package.)
func TestWindowedBudgetThroughServe(t *testing.T) {
	ctx := context.Background()
	p, policy := serveDemo(t, "  epsilon: 0.1\n", budgetAnalyst("analyst", "{epsilon: 0.25, window: day, lifetime: {epsilon: 10}}")+tablesYAML)
	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for i := 0; i < 2; i++ {
		if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM patients WHERE age > "+strconv.Itoa(i)).Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	err = conn.QueryRow(ctx, "SELECT COUNT(*) FROM visits").Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "53DP1" || !strings.Contains(pgErr.Message, `analyst "analyst" (this day)`) {
		t.Fatalf("past the day's budget: %v", err)
	}
	var renews string
	var start time.Time
	var rho *float64
	if err := conn.QueryRow(ctx, "SELECT renews, window_start, rho_spent FROM dpproxy.budget").Scan(&renews, &start, &rho); err != nil ||
		renews != "this day" || !start.Equal(time.Now().UTC().Truncate(24*time.Hour)) || rho != nil {
		t.Errorf("dpproxy.budget: renews %q since %v, ρ %v (%v); want this day since midnight UTC, no ρ", renews, start, rho, err)
	}
	conn.Close(ctx)
	p.stop(t)
	out, err := exec.Command(binary, "budget", "--config", policy).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "renews: day since ") || !strings.Contains(string(out), "lifetime ε 10") {
		t.Errorf("dpproxy budget: %v\n%s", err, out)
	}
}

// serveDemo serves the demo data (SQLite) under a policy with the given
// defaults (YAML lines) and the rest of the policy after them (analysts,
// teams, tables), and returns the proxy and the policy's path.
func serveDemo(t *testing.T, defaults, rest string) (*proxyProcess, string) {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(context.Background(), dbPath); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	yaml := "backend:\n  kind: sqlite\n  path: " + strconv.Quote(dbPath) + "\nledger:\n  path: ledger.db\ndefaults:\n" + defaults + "analysts:\n" + rest
	if err := os.WriteFile(policy, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0"), policy
}

// budgetAnalyst is a policy's analyst line: the password "analyst" and
// the given budget mapping.
func budgetAnalyst(name, budget string) string {
	return "  - {name: " + name + ", password: {scram_sha_256: \"SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU=\"}, budget: " + budget + "}\n"
}

// connectAs connects to p as user (password "analyst"), closed when the
// test ends.
func connectAs(t *testing.T, p *proxyProcess, user string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), "postgres://"+user+":analyst@"+p.addr+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// A team's and a table's budget may renew per period too: past the day's
// team budget a member is refused naming the team and the day, and
// dpproxy budget shows both renewals.
func TestTeamAndTableWindowsThroughServe(t *testing.T) {
	ctx := context.Background()
	tables := strings.Replace(tablesYAML, "  - name: visits\n    privacy_unit: patient_id\n", "  - name: visits\n    privacy_unit: patient_id\n    budget: {epsilon: 5, window: week}\n", 1)
	p, policy := serveDemo(t, "  epsilon: 0.1\n", budgetAnalyst("analyst", "{epsilon: 10}")+
		budgetAnalyst("colleague", "{epsilon: 10}")+
		"teams:\n  - {name: research, analysts: [analyst, colleague], budget: {epsilon: 0.25, window: day, lifetime: {epsilon: 3}}}\n"+tables)
	ana, col := connectAs(t, p, "analyst"), connectAs(t, p, "colleague")
	var n int64
	for i := 0; i < 2; i++ {
		if err := ana.QueryRow(ctx, "SELECT COUNT(*) FROM visits WHERE cost > "+strconv.Itoa(i)).Scan(&n); err != nil {
			t.Fatalf("query %d: %v", i+1, err)
		}
	}
	err := col.QueryRow(ctx, "SELECT COUNT(*) FROM patients").Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "53DP1" || !strings.Contains(pgErr.Message, `team "research" (this day) of analyst "colleague"`) {
		t.Fatalf("the colleague past the team's day: %v", err)
	}
	p.stop(t)
	out, err := exec.Command(binary, "budget", "--config", policy).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "renews: day since ") || !strings.Contains(string(out), "lifetime ε 3") || !strings.Contains(string(out), "renews: week since ") {
		t.Errorf("dpproxy budget: %v\n%s", err, out)
	}
}
