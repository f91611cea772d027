package integration

import (
	"context"
	"database/sql"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// TestPlanTemplatesPostgres: nine pgx clients, a third in the simple
// protocol, a third in the extended one (texts without parameters) and a
// third executing one prepared statement with integer parameters, each asking
// through dpproxy in front of PostgreSQL how many patients have an id
// below a bound, a new text each time. After the first, the queries are
// planned from their shape's template (the metric says so), each answer
// is its own query's (within 30 noise scales of the true count, where a
// neighbouring bound's count is 200 away), and each query is charged its
// ε.
func TestPlanTemplatesPostgres(t *testing.T) {
	dsn := pgDatabase(t)
	ctx := context.Background()
	policy := writePolicy(t, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n  max_conns: 4\n"+adminYAML(t), 1e6)
	start := time.Now()
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	const clients, each = 9, 40
	var seq atomic.Int64
	seq.Store(1_000_000)
	var wg sync.WaitGroup
	for c := range clients {
		mode := []string{"simple_protocol", "exec", "cache_statement"}[c%3]
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable&default_query_exec_mode="+mode)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			direct, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Error(err)
				return
			}
			defer direct.Close(ctx)
			for range each {
				bound := 200 * (1 + rand.IntN(40))
				var got float64
				// Each text new (patient_id <> a number used once): no
				// answer comes from the result cache.
				sql := "SELECT COUNT(*) FROM patients WHERE patient_id < " + strconv.Itoa(bound) + " AND patient_id <> " + strconv.FormatInt(seq.Add(1), 10)
				var err error
				if mode == "cache_statement" {
					// One prepared statement, its integers parameters.
					err = conn.QueryRow(ctx, "SELECT COUNT(*) FROM patients WHERE patient_id < $1 AND patient_id <> $2", bound, seq.Add(1)).Scan(&got)
				} else {
					err = conn.QueryRow(ctx, sql).Scan(&got)
				}
				if err != nil {
					t.Errorf("%s: %s: %v", mode, sql, err)
					return
				}
				var want float64
				if err := direct.QueryRow(ctx, sql).Scan(&want); err != nil {
					t.Error(err)
					return
				}
				// ε = 0.1, sensitivity 1: the noise's scale is 10.
				if math.Abs(got-want) > 300 {
					t.Errorf("%s: %s: %v, the true count is %v", mode, sql, got, want)
				}
			}
		})
	}
	wg.Wait()

	families := scrape(t, "http://"+p.adminAddress(t))
	hits := metricValue(families, "dpproxy_plan_template_hits_total", nil)
	charged := metricValue(families, "dpproxy_epsilon_charged_total", map[string]string{"analyst": "analyst"})
	t.Logf("%v of %d queries planned from a template", hits, clients*each)
	// The extended protocol's texts use the template twice (to describe
	// and to run), the prepared statement's executions once each.
	if uses := clients * each * 4 / 3; hits < float64(uses)*0.9 {
		t.Errorf("%v of %d plannings from a template, want nearly all", hits, uses)
	}
	if math.Abs(charged-0.1*clients*each) > 1e-9*clients*each {
		t.Errorf("charged ε = %v, want 0.1 × %d queries", charged, clients*each)
	}
	// The ledger's counters: one charge per query, in at most one
	// transaction each (clients charged at once share one), each taking
	// some time.
	charges := metricValue(families, "dpproxy_ledger_charges_total", nil)
	txs := metricValue(families, "dpproxy_ledger_transactions_total", nil)
	txTime := metricValue(families, "dpproxy_ledger_transaction_seconds_total", nil)
	t.Logf("ledger: %v charges in %v transactions, %v s", charges, txs, txTime)
	if charges != clients*each || txs < 1 || txs > charges || txTime <= 0 || txTime > time.Since(start).Seconds() {
		t.Errorf("ledger metrics: %v charges (want %d), %v transactions, %v s of transactions in a %v run",
			charges, clients*each, txs, txTime, time.Since(start))
	}
}

// TestPlanTemplatesMariaDB: go-sql-driver clients through dpproxy's MySQL
// front end in front of MariaDB, executing one prepared statement (the
// binary protocol) with new integer parameters each time: after the
// first, the executions are planned from their shape's template, and
// each answer is its own query's.
func TestPlanTemplatesMariaDB(t *testing.T) {
	dsn := mysqlDatabase(t)
	ctx := context.Background()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	policy := writeMySQLPolicy(t, "backend:\n  kind: mysql\n  dsn: "+strconv.Quote(dsn)+"\n  max_conns: 4\n"+adminYAML(t), 1e6)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	const clients, each = 4, 30
	var seq atomic.Int64
	seq.Store(1_000_000)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			db, err := sql.Open("mysql", "analyst:analyst@tcp("+p.mysqlAddress(t)+")/"+cfg.DBName)
			if err != nil {
				t.Error(err)
				return
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			direct, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Error(err)
				return
			}
			defer direct.Close()
			const q = "SELECT COUNT(*) FROM patients WHERE patient_id < ? AND patient_id <> ?"
			stmt, err := db.PrepareContext(ctx, q)
			if err != nil {
				t.Error(err)
				return
			}
			defer stmt.Close()
			for range each {
				bound, other := 200*(1+rand.IntN(40)), seq.Add(1)
				var got, want float64
				if err := stmt.QueryRowContext(ctx, bound, other).Scan(&got); err != nil {
					t.Errorf("%s with %d, %d: %v", q, bound, other, err)
					return
				}
				if err := direct.QueryRowContext(ctx, q, bound, other).Scan(&want); err != nil {
					t.Error(err)
					return
				}
				if math.Abs(got-want) > 300 {
					t.Errorf("%s with %d: %v, the true count is %v", q, bound, got, want)
				}
			}
		})
	}
	wg.Wait()
	hits := metricValue(scrape(t, "http://"+p.adminAddress(t)), "dpproxy_plan_template_hits_total", nil)
	t.Logf("%v of %d executions planned from a template", hits, clients*each)
	if hits < clients*each*9/10 {
		t.Errorf("%v of %d executions planned from a template, want nearly all", hits, clients*each)
	}
}
