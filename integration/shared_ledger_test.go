package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/demo"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ledgerDatabase creates an empty PostgreSQL database for a shared ledger
// and returns its DSN (skipping without a server).
func ledgerDatabase(t testing.TB) string {
	t.Helper()
	admin := os.Getenv("DPPROXY_TEST_PG_DSN")
	if admin == "" {
		t.Skip("DPPROXY_TEST_PG_DSN not set: no PostgreSQL server for the shared ledger (scripts/test.sh starts one)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("dpproxy_ledger_%d_%s", os.Getpid(), strings.ToLower(t.Name()))
	for _, sql := range []string{"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)", "CREATE DATABASE " + name} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(context.Background(), admin); err == nil {
			c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
}

// sharedLedgerPolicy writes a policy serving the demo data (SQLite) with
// its budgets on the shared ledger at dsn; rest lists analysts and teams.
func sharedLedgerPolicy(t testing.TB, dsn, epsilon, rest string) string {
	t.Helper()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "demo.db")
	if err := demo.GenerateSQLite(context.Background(), dbPath); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	yaml := "backend:\n  kind: sqlite\n  path: " + strconv.Quote(dbPath) +
		"\nledger:\n  postgres: " + strconv.Quote(dsn) + "\n  hold_lease: 3s\ndefaults:\n  epsilon: " + epsilon + "\nanalysts:\n" + rest + tablesYAML
	if err := os.WriteFile(policy, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return policy
}

// ledgerCharges counts the charges of analyst in a shared ledger and sums
// their ε.
func ledgerCharges(t testing.TB, dsn, analyst string) (n int, epsilon float64) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), `SELECT count(*), coalesce(sum(epsilon), 0) FROM dpproxy.charges WHERE analyst = $1`, analyst).Scan(&n, &epsilon); err != nil {
		t.Fatal(err)
	}
	return n, epsilon
}

// Three dpproxy processes on one PostgreSQL ledger; 10,000 queries race
// over 72 connections for the last ε of one analyst and of one team (two
// analysts), three times: exactly what fits is answered (100 answers of
// ε = 0.01 in ε = 1, 150 in the team's 1.5), every answer is charged and
// nothing more is.
func TestSharedLedgerRace(t *testing.T) {
	dsn := ledgerDatabase(t)
	const rounds = 3
	var analysts string
	for r := 1; r <= rounds; r++ {
		analysts += budgetAnalyst(fmt.Sprintf("ana%d", r), "{epsilon: 1}") +
			budgetAnalyst(fmt.Sprintf("bea%d", r), "{epsilon: 10}") + budgetAnalyst(fmt.Sprintf("cy%d", r), "{epsilon: 10}")
	}
	analysts += "teams:\n"
	for r := 1; r <= rounds; r++ {
		analysts += fmt.Sprintf("  - {name: ops%d, analysts: [bea%d, cy%d], budget: {epsilon: 1.5}}\n", r, r, r)
	}
	policy := sharedLedgerPolicy(t, dsn, "0.01", analysts)
	var procs []*proxyProcess
	for i := 0; i < 3; i++ {
		procs = append(procs, startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0"))
	}
	for r := 1; r <= rounds; r++ {
		start := time.Now()
		names := []string{fmt.Sprintf("ana%d", r), fmt.Sprintf("bea%d", r), fmt.Sprintf("cy%d", r)}
		answered := raceQueries(t, procs, names, 10000, 8)
		t.Logf("round %d: 10,000 queries in %v; answered %v", r, time.Since(start).Round(time.Millisecond), answered)
		if answered[0] != 100 {
			t.Errorf("round %d: %s got %d answers of ε = 0.01 from a budget of ε = 1, want 100", r, names[0], answered[0])
		}
		if team := answered[1] + answered[2]; team != 150 {
			t.Errorf("round %d: team ops%d got %d answers of ε = 0.01 from a budget of ε = 1.5, want 150", r, r, team)
		}
		for i, name := range names {
			n, eps := ledgerCharges(t, dsn, name)
			if n != answered[i] {
				t.Errorf("round %d: %s has %d charges for %d answers", r, name, n, answered[i])
			}
			if limit := map[bool]float64{true: 1, false: 1.5}[i == 0]; eps > limit+1e-9 {
				t.Errorf("round %d: %s's charges sum to ε = %v", r, name, eps)
			}
		}
	}
	// dpproxy budget reads the shared ledger while the processes run.
	out, err := exec.Command(binary, "budget", "--config", policy).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "team ops1 (bea1, cy1)  1.5 ") || !regexp.MustCompile(`(?m)^ana2 +1 +1 +0 `).Match(out) {
		t.Errorf("dpproxy budget on the shared ledger: %v\n%s", err, out)
	}
}

// raceQueries sends total distinct COUNT queries over perPair connections
// per (process, analyst) and returns each analyst's answers; refusals
// must say the budget is spent.
func raceQueries(t *testing.T, procs []*proxyProcess, names []string, total int64, perPair int) []int {
	ctx := context.Background()
	var next atomic.Int64
	answered := make([]atomic.Int64, len(names))
	var wg sync.WaitGroup
	for _, p := range procs {
		for a, name := range names {
			for c := 0; c < perPair; c++ {
				conn := connectAs(t, p, name)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > total {
							return
						}
						var n int64
						err := conn.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM patients WHERE income >= %d", 7000000+i)).Scan(&n)
						var pgErr *pgconn.PgError
						switch {
						case err == nil:
							answered[a].Add(1)
						case errors.As(err, &pgErr) && pgErr.Code == "53DP1":
						default:
							t.Errorf("%s: %v", name, err)
							return
						}
					}
				}()
			}
		}
	}
	wg.Wait()
	out := make([]int, len(names))
	for i := range out {
		out[i] = int(answered[i].Load())
	}
	return out
}

// kill -9 of one of three processes in the middle of a burst, twenty
// times: every answer a client received is in the shared ledger (the
// answer leaves only after its charge is committed).
func TestSharedLedgerKill9(t *testing.T) {
	dsn := ledgerDatabase(t)
	policy := sharedLedgerPolicy(t, dsn, "0.01", budgetAnalyst("analyst", "{epsilon: 100000}"))
	procs := []*proxyProcess{
		startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0"),
		startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0"),
	}
	var mu sync.Mutex
	var delivered []int64
	var next atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Clients keep querying whichever process they reach; a connection
	// cut by a kill is replaced.
	client := func(addr func() string) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			conn, err := pgx.Connect(context.Background(), "postgres://analyst:analyst@"+addr()+"/demo?sslmode=disable")
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			for {
				i := next.Add(1)
				var n int64
				if err := conn.QueryRow(context.Background(), fmt.Sprintf("SELECT COUNT(*) FROM patients WHERE income >= %d", 7000000+i)).Scan(&n); err != nil {
					break
				}
				mu.Lock()
				delivered = append(delivered, 7000000+i)
				mu.Unlock()
				select {
				case <-stop:
					conn.Close(context.Background())
					return
				default:
				}
			}
			conn.Close(context.Background())
		}
	}
	var victimAddr atomic.Value
	for kill := 0; kill < 20; kill++ {
		victim := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
		victimAddr.Store(victim.addr)
		if kill == 0 {
			for c := 0; c < 8; c++ {
				wg.Add(2)
				go client(func() string { return victimAddr.Load().(string) })
				go client(func() string { return procs[c%2].addr })
			}
		}
		time.Sleep(300 * time.Millisecond)
		if err := victim.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-victim.exited
	}
	close(stop)
	wg.Wait()
	if len(delivered) < 200 {
		t.Fatalf("only %d answers delivered: the test proves nothing", len(delivered))
	}
	if missing := uncharged(t, dsn, delivered); missing > 0 {
		t.Errorf("%d of %d delivered answers are not charged in the ledger", missing, len(delivered))
	}
	charged, _ := ledgerCharges(t, dsn, "analyst")
	t.Logf("%d answers delivered through 20 kill -9s; %d charges", len(delivered), charged)
}

// uncharged counts the delivered answers (by the 7-digit marker in their
// query) that have no charge of analyst in the shared ledger at dsn.
func uncharged(t *testing.T, dsn string, delivered []int64) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT query FROM dpproxy.charges WHERE analyst = 'analyst'`)
	if err != nil {
		t.Fatal(err)
	}
	charged := map[string]bool{}
	marker := regexp.MustCompile(`\b7\d{6}\b`)
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			t.Fatal(err)
		}
		for _, m := range marker.FindAllString(q, -1) {
			charged[m] = true
		}
	}
	missing := 0
	for _, d := range delivered {
		if !charged[strconv.FormatInt(d, 10)] {
			missing++
		}
	}
	return missing
}

// privatePostgres starts a PostgreSQL cluster of the test's own (so that
// it can be restarted without disturbing other tests) and returns its DSN
// and a function running pg_ctl on it. It skips without PostgreSQL's
// server binaries.
func privatePostgres(t *testing.T) (dsn string, pgCtl func(args ...string)) {
	t.Helper()
	if os.Getenv("DPPROXY_TEST_PG_DSN") == "" {
		t.Skip("DPPROXY_TEST_PG_DSN not set: no PostgreSQL installation (scripts/test.sh installs one)")
	}
	bin := os.Getenv("DPPROXY_TEST_PG_BIN")
	if bin == "" {
		bin = "/usr/lib/postgresql/15/bin"
	}
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		t.Skipf("no initdb in %s (set DPPROXY_TEST_PG_BIN): %v", bin, err)
	}
	dir, err := os.MkdirTemp("", "dpproxy-ledger-pg")
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL refuses to run as root: as root, run it as postgres.
	run := func(name string, args ...string) *exec.Cmd { return exec.Command(filepath.Join(bin, name), args...) }
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "postgres", dir).CombinedOutput(); err != nil {
			t.Skipf("no postgres user to run a private cluster as: %v %s", err, out)
		}
		run = func(name string, args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(bin, name)}, args...)...)
		}
	}
	t.Cleanup(func() {
		run("pg_ctl", "-D", filepath.Join(dir, "data"), "-m", "immediate", "stop").Run()
		os.RemoveAll(dir)
	})
	if out, err := run("initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust", "-N").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", port, dir)
	pgCtl = func(args ...string) {
		t.Helper()
		args = append([]string{"-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "log"), "-w", "-o", opts}, args...)
		if out, err := run("pg_ctl", args...).CombinedOutput(); err != nil {
			t.Fatalf("pg_ctl %v: %v\n%s", args, err, out)
		}
	}
	pgCtl("start")
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), pgCtl
}

// freePort is a TCP port free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// The ledger's PostgreSQL stops for two seconds under load and comes
// back: meanwhile charged queries fail closed with a clear error (no
// answer leaves uncharged) while the connections stay usable, and then
// they are answered again; every delivered answer is in the ledger.
func TestSharedLedgerRestart(t *testing.T) {
	dsn, pgCtl := privatePostgres(t)
	policy := sharedLedgerPolicy(t, dsn, "0.01", budgetAnalyst("analyst", "{epsilon: 100000}"))
	procs := []*proxyProcess{
		startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0"),
		startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0"),
	}
	var next atomic.Int64
	var phase atomic.Int32 // 0 before the stop, 1 while stopped, 2 after the start
	var mu sync.Mutex
	var delivered []int64
	var refused, answeredAfter atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		conn := connectAs(t, procs[c%2], "analyst")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := 7000000 + next.Add(1)
				var n int64
				err := conn.QueryRow(context.Background(), fmt.Sprintf("SELECT COUNT(*) FROM patients WHERE income >= %d", i)).Scan(&n)
				var pgErr *pgconn.PgError
				switch {
				case err == nil:
					mu.Lock()
					delivered = append(delivered, i)
					mu.Unlock()
					if phase.Load() == 2 {
						answeredAfter.Add(1)
					}
				case errors.As(err, &pgErr) && pgErr.Code == "58DP1":
					refused.Add(1)
					time.Sleep(10 * time.Millisecond)
				default:
					t.Errorf("query during the ledger's restart: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(time.Second)
	phase.Store(1)
	pgCtl("-m", "fast", "stop")
	time.Sleep(2 * time.Second)
	pgCtl("start")
	phase.Store(2)
	deadline := time.Now().Add(20 * time.Second)
	for answeredAfter.Load() < 50 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if refused.Load() == 0 {
		t.Error("no query was refused while the ledger was down")
	}
	if answeredAfter.Load() < 50 {
		t.Errorf("only %d answers after the ledger came back", answeredAfter.Load())
	}
	if missing := uncharged(t, dsn, delivered); missing > 0 {
		t.Errorf("%d of %d delivered answers are not charged in the ledger", missing, len(delivered))
	}
	n, _ := ledgerCharges(t, dsn, "analyst")
	t.Logf("%d answers delivered, %d refused while the ledger was down, %d answered after; %d charges", len(delivered), refused.Load(), answeredAfter.Load(), n)
}

// The result cache spans the instances on a shared ledger: a query
// repeated on another instance gets the release already paid for, at no
// cost, so that repeating it across instances cannot average the noise
// away, and so does one that only picks some of its keys; a different ε
// is a different release, charged.
func TestSharedLedgerReleaseCache(t *testing.T) {
	ctx := context.Background()
	dsn := ledgerDatabase(t)
	policy := sharedLedgerPolicy(t, dsn, "0.5", budgetAnalyst("analyst", "{epsilon: 10}"))
	a := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	b := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	const q = "SELECT diagnosis, COUNT(*) AS n, AVG(cost) AS mean_cost FROM visits GROUP BY diagnosis ORDER BY diagnosis"
	read := func(conn *pgx.Conn, sql string) [][]any {
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := read(connectAs(t, a, "analyst"), q)
	// EXPLAIN DP on the other instance knows the release is free there.
	if plan := read(connectAs(t, b, "analyst"), "EXPLAIN DP "+q); !strings.Contains(fmt.Sprint(plan), "costs nothing") {
		t.Errorf("EXPLAIN DP on another instance does not see the release:\n%v", plan)
	}
	again := read(connectAs(t, b, "analyst"), "select diagnosis, count(*) as n, avg(cost) as mean_cost  from visits group by diagnosis order by diagnosis")
	if fmt.Sprint(first) != fmt.Sprint(again) {
		t.Errorf("another instance released the query afresh:\n%v\n%v\n%s", first, again, a.stderr.String())
	}
	if n, eps := ledgerCharges(t, dsn, "analyst"); n != 1 || eps != 0.5 {
		t.Errorf("%d charges (ε = %v) for one query asked on two instances, want 1 (0.5)", n, eps)
	}
	// A dashboard's filter on the keys: rows of the same release, free.
	picked := read(connectAs(t, b, "analyst"), "SELECT diagnosis, COUNT(*) AS n, AVG(cost) AS mean_cost FROM visits WHERE diagnosis IN ('I10', 'J06') GROUP BY diagnosis ORDER BY diagnosis")
	var want [][]any
	for _, row := range first {
		if row[0] == "I10" || row[0] == "J06" {
			want = append(want, row)
		}
	}
	if len(want) != 2 || fmt.Sprint(picked) != fmt.Sprint(want) {
		t.Errorf("filtered on the keys:\n%v\nwant\n%v", picked, want)
	}
	if n, _ := ledgerCharges(t, dsn, "analyst"); n != 1 {
		t.Errorf("%d charges after a query picking keys of a release, want 1", n)
	}
	conn := connectAs(t, b, "analyst")
	if _, err := conn.Exec(ctx, "SET dpproxy.epsilon = 0.25"); err != nil {
		t.Fatal(err)
	}
	read(conn, q)
	if n, _ := ledgerCharges(t, dsn, "analyst"); n != 2 {
		t.Errorf("%d charges after the query at another ε, want 2", n)
	}
}
