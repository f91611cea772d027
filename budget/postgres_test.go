package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgLedgerDSN is the test server's DSN, or a skip.
func pgLedgerDSN(t testing.TB) string {
	dsn := os.Getenv("DPPROXY_TEST_PG_DSN")
	if dsn == "" {
		t.Skip("DPPROXY_TEST_PG_DSN not set: no PostgreSQL server for the shared ledger (scripts/test.sh starts one)")
	}
	return dsn
}

// newPGSchema names a fresh ledger schema, dropped after the test.
func newPGSchema(t testing.TB) string {
	dsn := pgLedgerDSN(t)
	schema := fmt.Sprintf("ledger_test_%x", randomID()&0xffffffff)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Logf("dropping %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("dropping %s: %v", schema, err)
		}
	})
	return schema
}

// openPG opens a store on schema (one per simulated process), closed
// after the test.
func openPG(t testing.TB, schema string, lease time.Duration) *PostgresStore {
	t.Helper()
	s, err := OpenPostgres(context.Background(), pgLedgerDSN(t), PostgresOptions{Schema: schema, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pgExec runs a statement on the test server.
func pgExec(t testing.TB, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), pgLedgerDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// A charge on the shared ledger is durable and counted by every
// accountant on it, also one started afterwards; charges record their
// tables, which have totals of their own.
func TestPostgresLedgerCharges(t *testing.T) {
	ctx := context.Background()
	schema := newPGSchema(t)
	s := openPG(t, schema, 0)
	limits := map[string]Cost{"ana": {Epsilon: 1, Delta: 1e-6}}
	a := newTestAccountant(t, s, limits)
	r, err := a.ReserveFor(ctx, "ana", []string{"visits", "patients"}, Cost{Epsilon: 0.25, Delta: 1e-7})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := r.Commit(ctx, "SELECT COUNT(*) FROM visits")
	if err != nil {
		t.Fatal(err)
	}
	if ch.ID == 0 || ch.At.IsZero() {
		t.Errorf("charge %+v: want an id and a time", ch)
	}
	if again, err := r.Commit(ctx, "SELECT COUNT(*) FROM visits"); err != nil || again.ID != ch.ID {
		t.Errorf("commit again: %+v, %v; want the same charge", again, err)
	}
	// The hold and the charge each took a transaction, and some time.
	if st := s.Stats(); st.Charges != 1 || st.Transactions < 2 || st.TransactionTime <= 0 {
		t.Errorf("Stats = %+v, want 1 charge in at least 2 timed transactions", st)
	}
	// A second process.
	s2 := openPG(t, schema, 0)
	b := newTestAccountant(t, s2, limits)
	if st := mustStatus(t, b, "ana"); !approx(st.Spent.Epsilon, 0.25) || !approx(st.Spent.Delta, 1e-7) {
		t.Errorf("second process sees spent %v, want (0.25, 1e-7)", st.Spent)
	}
	tables, err := s2.TableSpent(ctx)
	if err != nil || !approx(tables["visits"].Epsilon, 0.25) || !approx(tables["patients"].Epsilon, 0.25) {
		t.Errorf("table totals %v, %v", tables, err)
	}
	cs, err := s2.Charges(ctx, "ana", 0)
	if err != nil || len(cs) != 1 || cs[0].Query != "SELECT COUNT(*) FROM visits" || len(cs[0].Tables) != 2 || cs[0].ID != ch.ID {
		t.Errorf("charges %+v, %v", cs, err)
	}
	// A hold of the first process counts in the second's decisions.
	held := mustReserve(t, a, "ana", Cost{Epsilon: 0.5})
	var ex *ExhaustedError
	if _, err := b.Reserve(ctx, "ana", Cost{Epsilon: 0.5}); !errors.As(err, &ex) || !approx(ex.Reserved.Epsilon, 0.5) {
		t.Errorf("second process reserving past the first's hold: %v", err)
	}
	held.Release()
	// Release is queued: the hold goes with the next transaction.
	waitFor(t, func() bool {
		r, err := b.Reserve(ctx, "ana", Cost{Epsilon: 0.5})
		if err == nil {
			r.Release()
		}
		return err == nil
	})
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	// Both processes answer unknown users alike: one server secret.
	s1, err1 := s.ServerSecret(ctx)
	s2s, err2 := s2.ServerSecret(ctx)
	if err1 != nil || err2 != nil || len(s1) != 32 || string(s1) != string(s2s) {
		t.Errorf("server secrets %x (%v) and %x (%v): want one 32-byte secret", s1, err1, s2s, err2)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5 s")
}

// Three processes race for one analyst's and one team's last ε: however
// the reservations interleave, exactly what fits is charged, and the
// ledger's totals are the sum of its charges.
func TestPostgresLedgerRace(t *testing.T) {
	ctx := context.Background()
	schema := newPGSchema(t)
	const processes, perProcess = 3, 400
	limits := map[string]Cost{"ana": {Epsilon: 1}, "bea": {Epsilon: 10}, "cy": {Epsilon: 10}}
	var accts []*Accountant
	for i := 0; i < processes; i++ {
		a := newTestAccountant(t, openPG(t, schema, 0), limits)
		// bea and cy share a team of ε = 1.5.
		if err := a.SetTeams(map[string]Team{"ops": {Limit: Cost{Epsilon: 1.5}, Members: []string{"bea", "cy"}}}); err != nil {
			t.Fatal(err)
		}
		accts = append(accts, a)
	}
	var charged [3]atomic.Int64 // ana, bea, cy
	names := []string{"ana", "bea", "cy"}
	var wg sync.WaitGroup
	for p, a := range accts {
		for i := 0; i < perProcess; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				who := (p + i) % 3
				r, err := a.Reserve(ctx, names[who], Cost{Epsilon: 0.01})
				if err != nil {
					var ex *ExhaustedError
					if !errors.As(err, &ex) {
						t.Errorf("reserve: %v", err)
					}
					return
				}
				if i%7 == 0 { // some queries never reach the data
					r.Release()
					return
				}
				if _, err := r.Commit(ctx, fmt.Sprintf("q%d-%d", p, i)); err != nil {
					t.Errorf("commit: %v", err)
					return
				}
				charged[who].Add(1)
			}()
		}
	}
	wg.Wait()
	if n := charged[0].Load(); n > 100 {
		t.Errorf("ana: %d charges of ε = 0.01 against a limit of 1", n)
	}
	if n := charged[1].Load() + charged[2].Load(); n > 150 {
		t.Errorf("team: %d charges of ε = 0.01 against a limit of 1.5", n)
	}
	// The totals are the charges' sums.
	conn, err := pgx.Connect(ctx, pgLedgerDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var bad int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.scopes s
		WHERE abs(s.epsilon - coalesce((SELECT sum(epsilon) FROM `+schema+`.holds h WHERE h.scope = s.scope), 0)
			- coalesce((SELECT sum(epsilon) FROM `+schema+`.charges c WHERE 'analyst:' || c.analyst = s.scope), 0)) > 1e-9
		  AND starts_with(s.scope, 'analyst:')`).Scan(&bad)
	if err != nil || bad != 0 {
		t.Errorf("%d scopes whose totals differ from their charges (%v)", bad, err)
	}
	for i, name := range names {
		cs, err := accts[0].Charges(ctx, name, 0)
		if err != nil || int64(len(cs)) != charged[i].Load() {
			t.Errorf("%s: %d charges in the ledger, %d committed (%v)", name, len(cs), charged[i].Load(), err)
		}
	}
	if err := accts[1].Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := accts[1].TeamStatus("ops")
	if st.Spent.Epsilon > 1.5+1e-9 {
		t.Errorf("team spent %v", st.Spent)
	}
}

// A process that stops renewing its holds (it crashed) gives them back
// after the lease; a hold reclaimed by another process's decision, even
// on one of its scopes only, cannot be charged afterwards, while one that
// expired but was not reclaimed (nothing was granted against it) can.
func TestPostgresLedgerHoldExpiry(t *testing.T) {
	ctx := context.Background()
	schema := newPGSchema(t)
	limits := map[string]Cost{"ana": {Epsilon: 1}, "bob": {Epsilon: 1}}
	a := newTestAccountant(t, openPG(t, schema, 0), limits)
	// A process that reserves the whole budget, then dies.
	dead := openPG(t, schema, 3*time.Second)
	mustReserve(t, newTestAccountant(t, dead, limits), "ana", Cost{Epsilon: 1})
	dead.pool.Close()
	var ex *ExhaustedError
	if _, err := a.Reserve(ctx, "ana", Cost{Epsilon: 0.1}); !errors.As(err, &ex) {
		t.Fatalf("reserving under a live hold of everything: %v", err)
	}
	waitFor(t, func() bool {
		r, err := a.Reserve(ctx, "ana", Cost{Epsilon: 1})
		if err == nil {
			r.Release()
		}
		return err == nil
	})
	// A hold whose renewals stopped is reclaimed by bob's query on the
	// same table (its table share only): it cannot be charged.
	r := mustReserveFor(t, a, "ana", []string{"visits"}, Cost{Epsilon: 0.1})
	expire := func() {
		pgExec(t, `UPDATE `+schema+`.holds SET expires_at = clock_timestamp() - interval '1 second'`)
	}
	expire()
	mustReserveFor(t, a, "bob", []string{"visits"}, Cost{Epsilon: 0.1}).Release()
	if _, err := r.Commit(ctx, "q"); !errors.Is(err, ErrHoldLost) {
		t.Fatalf("commit of a reclaimed hold: %v, want ErrHoldLost", err)
	}
	if cs, _ := a.Charges(ctx, "ana", 0); len(cs) != 0 {
		t.Errorf("a reclaimed hold was charged: %+v", cs)
	}
	// Expired but not reclaimed: still counted everywhere, so chargeable.
	r = mustReserveFor(t, a, "ana", []string{"visits"}, Cost{Epsilon: 0.1})
	expire()
	if _, err := r.Commit(ctx, "q"); err != nil {
		t.Errorf("commit of an expired hold nobody reclaimed: %v", err)
	}
	// Renewal keeps a live hold past its first lease.
	b := newTestAccountant(t, openPG(t, schema, 600*time.Millisecond), limits)
	r = mustReserve(t, b, "ana", Cost{Epsilon: 0.1})
	time.Sleep(1500 * time.Millisecond)
	mustReserve(t, a, "ana", Cost{Epsilon: 0.1}).Release() // reclaims what expired
	if _, err := r.Commit(ctx, "slow query"); err != nil {
		t.Errorf("commit of a renewed hold after 2.5 leases: %v", err)
	}
	// The release above is queued (it goes with the next transaction):
	// wait for it before reading what ana holds.
	var st Status
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st = mustStatus(t, a, "ana"); st.Reserved.Epsilon == 0 {
			break
		}
	}
	if !approx(st.Spent.Epsilon, 0.2) || st.Reserved.Epsilon != 0 {
		t.Errorf("ana spent %v, holds %v; want 0.2 and nothing", st.Spent, st.Reserved)
	}
}

// When the ledger's connections are cut, reservations fail closed with
// ErrLedgerUnavailable, and work again once it is reachable.
func TestPostgresLedgerOutage(t *testing.T) {
	ctx := context.Background()
	// A database of its own, whose connections can be refused.
	const db = "dpproxy_ledger_outage"
	pgExec(t, `DROP DATABASE IF EXISTS `+db+` WITH (FORCE)`)
	pgExec(t, `CREATE DATABASE `+db)
	defer pgExec(t, `DROP DATABASE IF EXISTS `+db+` WITH (FORCE)`)
	cfg, err := pgx.ParseConfig(pgLedgerDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable&connect_timeout=2", cfg.User, cfg.Host, cfg.Port, db)
	// A store whose server is unreachable from the start fails to open.
	if _, err := OpenPostgres(ctx, fmt.Sprintf("postgres://%s@127.0.0.1:1/%s?connect_timeout=1", cfg.User, db), PostgresOptions{}); !errors.Is(err, ErrLedgerUnavailable) {
		t.Errorf("opening an unreachable ledger: %v", err)
	}
	s, err := OpenPostgres(ctx, dsn, PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := newTestAccountant(t, s, map[string]Cost{"ana": {Epsilon: 1}})
	mustReserve(t, a, "ana", Cost{Epsilon: 0.1}).Release()
	held := mustReserve(t, a, "ana", Cost{Epsilon: 0.1})
	// Cut every connection of the store, and refuse new ones for a moment.
	pgExec(t, `ALTER DATABASE `+db+` ALLOW_CONNECTIONS false`)
	pgExec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db)
	if _, err := a.Reserve(ctx, "ana", Cost{Epsilon: 0.1}); !errors.Is(err, ErrLedgerUnavailable) {
		t.Fatalf("reserve during an outage: %v, want ErrLedgerUnavailable", err)
	}
	if _, err := held.Commit(ctx, "q"); !errors.Is(err, ErrLedgerUnavailable) {
		t.Fatalf("commit during an outage: %v, want ErrLedgerUnavailable", err)
	}
	pgExec(t, `ALTER DATABASE `+db+` ALLOW_CONNECTIONS true`)
	// The failed commit may be retried; a new reservation works.
	if _, err := held.Commit(ctx, "q"); err != nil {
		t.Fatalf("commit retried after the outage: %v", err)
	}
	r := mustReserve(t, a, "ana", Cost{Epsilon: 0.1})
	if _, err := r.Commit(ctx, "q2"); err != nil {
		t.Fatalf("commit after the outage: %v", err)
	}
	if st := mustStatus(t, a, "ana"); !approx(st.Spent.Epsilon, 0.2) {
		t.Errorf("spent %v after the outage, want 0.2", st.Spent)
	}
}

// Advanced composition and zCDP on the shared ledger: the moments come
// from the ledger's totals, so the boundaries are those of a local
// ledger (268 and 308 charges of ε = 0.05 in (5, 1e-5)).
func TestPostgresLedgerComposition(t *testing.T) {
	ctx := context.Background()
	schema := newPGSchema(t)
	s := openPG(t, schema, 0)
	limits := map[string]Cost{"adv": {Epsilon: 5, Delta: 1e-5}, "z": {Epsilon: 5, Delta: 1e-5}}
	a := newTestAccountant(t, s, limits)
	if err := a.SetComposition("adv", Composition{DeltaPrime: 1e-6}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetComposition("z", Composition{DeltaPrime: 1e-6, ZCDP: true}); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{"adv": 268, "z": 308} {
		var wg sync.WaitGroup
		var ok atomic.Int64
		for i := 0; i < n+40; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := a.Reserve(ctx, name, Cost{Epsilon: 0.05})
				if err != nil {
					return
				}
				if _, err := r.Commit(ctx, "q"); err == nil {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		if got := ok.Load(); got != int64(n) {
			t.Errorf("%s: %d charges fit, want %d", name, got, n)
		}
	}
	if st := mustStatus(t, a, "z"); math.Abs(st.Rho-308*0.05*0.05/2) > 1e-9 {
		t.Errorf("ρ = %v", st.Rho)
	}
}
