package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/admin"
	"github.com/dpproxy/dpproxy/demo"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A policy reload, by SIGHUP and by the admin listener, while clients
// stay connected: budgets, analysts and columns change for the next
// statement of every open connection; sections that need a restart are
// reported; an invalid policy is refused with its file:line errors and
// the one in force stays.
func TestReloadWhileConnected(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	head := "backend:\n  kind: sqlite\n  path: " + strconv.Quote(dbPath) + "\n" + adminYAML(t)
	analyst := strings.SplitN(fmt.Sprintf(analystYAML, 10.0), "\n", 3)[2] // the analyst's entry, without "analysts:"
	bob := strings.Replace(analyst, "name: analyst", "name: bob", 1)
	policy := func(budget float64, extraAnalyst string, extra string) string {
		return head + extra + "ledger:\n  path: ledger.db\ndefaults:\n  epsilon: 0.1\nanalysts:\n" +
			strings.Replace(analyst, "epsilon: 10", "epsilon: "+strconv.FormatFloat(budget, 'g', -1, 64), 1) + extraAnalyst + tablesYAML
	}
	path := filepath.Join(dir, "policy.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(policy(10, "", ""))
	p := startProxy(t, "serve", "--config", path, "--pg-addr", "127.0.0.1:0")
	adminURL := "http://" + p.adminAddress(t)
	connect := func(user string) *pgx.Conn {
		t.Helper()
		c, err := pgx.Connect(ctx, "postgres://"+user+":analyst@"+p.addr+"/demo?sslmode=disable")
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		t.Cleanup(func() { c.Close(ctx) })
		return c
	}
	count := func(c *pgx.Conn, sql string) (int64, string) {
		var n int64
		err := c.QueryRow(ctx, sql).Scan(&n)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return 0, pgErr.Code
		} else if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n, ""
	}
	ana := connect("analyst")
	if _, code := count(ana, "SELECT COUNT(*) FROM patients"); code != "" {
		t.Fatalf("before the reload: %s", code)
	}

	// 1. SIGHUP: a budget of 0.15 (0.1 is spent), bob added, income no
	// longer exposed, a listen setting changed.
	write(strings.Replace(policy(0.15, bob, "listen:\n  max_connections: 50\n"), "      - {name: income, type: int, bounds: [0, 200000]}\n", "", 1))
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, p, `msg="policy reloaded"`, 1)
	if !strings.Contains(p.stderr.String(), `restart_needed=listen`) {
		t.Errorf("the reload did not report that listen needs a restart:\n%s", p.stderr.String())
	}
	if _, code := count(ana, "SELECT COUNT(*) FROM visits"); code != "53DP1" {
		t.Errorf("the open connection after its budget was lowered: SQLSTATE %q, want 53DP1", code)
	}
	b := connect("bob")
	if _, code := count(b, "SELECT COUNT(*) FROM patients WHERE income > 10"); code != "42703" {
		t.Errorf("a column the new policy no longer exposes: SQLSTATE %q, want 42703", code)
	}
	if n, code := count(b, "SELECT COUNT(*) FROM patients"); code != "" || n < 9000 {
		t.Errorf("bob, added by the reload: %d %s", n, code)
	}

	// 2. An invalid policy by the admin listener: refused with file:line,
	// nothing changes.
	write(strings.Replace(policy(10, bob, ""), "epsilon: 0.1", "epsilon: -1", 1))
	res, status := postReload(t, adminURL)
	if status != http.StatusUnprocessableEntity || res.Applied || len(res.Errors) == 0 || !strings.Contains(res.Errors[0], "policy.yaml:") || !strings.Contains(res.Errors[0], "defaults.epsilon") {
		t.Errorf("an invalid policy: %d %+v", status, res)
	}
	if _, code := count(ana, "SELECT COUNT(*) FROM visits"); code != "53DP1" {
		t.Errorf("after a refused reload the lowered budget should stand: %q", code)
	}

	// 3. A valid one by the admin listener: bob removed, the budget raised,
	// listen as running (the change the first reload reported never took
	// effect, so nothing needs a restart).
	write(policy(10, "", ""))
	res, status = postReload(t, adminURL)
	if status != http.StatusOK || !res.Applied || len(res.RestartNeeded) != 0 {
		t.Errorf("a valid policy: %d %+v", status, res)
	}
	if _, code := count(b, "SELECT COUNT(*) FROM patients"); code != "28000" {
		t.Errorf("bob's open connection after bob was removed: SQLSTATE %q, want 28000", code)
	}
	if _, code := count(ana, "SELECT COUNT(*) FROM visits"); code != "" {
		t.Errorf("after the budget was raised again: %q", code)
	}
	if err := ana.Ping(ctx); err != nil {
		t.Errorf("the first connection did not survive three reloads: %v", err)
	}
}

func postReload(t *testing.T, adminURL string) (admin.ReloadResult, int) {
	t.Helper()
	req, _ := http.NewRequest("POST", adminURL+"/reload", nil)
	req.SetBasicAuth("ops", "opspw")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res admin.ReloadResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	return res, resp.StatusCode
}

// waitLog waits for the n-th occurrence of want in the process's log.
func waitLog(t *testing.T, p *proxyProcess, want string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Count(p.stderr.String(), want) >= n {
			return
		}
	}
	t.Fatalf("no %q in the log:\n%s", want, p.stderr.String())
}
