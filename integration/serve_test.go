package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// analystYAML is the analyst "analyst" with password "analyst".
const analystYAML = `
analysts:
  - name: analyst
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget:
      epsilon: %g
      delta: 1e-4
`

const tablesYAML = `
protected_tables:
  - name: patients
    privacy_unit: patient_id
    columns:
      - {name: patient_id, type: int}
      - {name: age, type: int, bounds: [0, 100]}
      - {name: sex, type: text, group_by: true, keys: [F, M]}
      - {name: income, type: int, bounds: [0, 200000]}
  - name: visits
    privacy_unit: patient_id
    max_groups_per_unit: 4
    max_rows_per_unit: 5
    columns:
      - {name: patient_id, type: int}
      - {name: clinic_id, type: int, group_by: true, keys_from: clinics(clinic_id)}
      - {name: visit_date, type: date}
      - {name: diagnosis, type: text, group_by: true, keys: [J06, I10, E11, M54, K21, F32, J45, N39, R51, L20, H66, Z00]}
      - {name: cost, type: numeric, bounds: [0, 2000]}
public_tables:
  - clinics
`

func writePolicy(t testing.TB, backend string, budgetEpsilon float64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	policy := backend + "\nledger:\n  path: ledger.db\ndefaults:\n  epsilon: 0.1\n" + fmt.Sprintf(analystYAML, budgetEpsilon) + tablesYAML
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// pgDatabase creates a fresh database holding the demo data and returns
// its DSN. It skips the test without a PostgreSQL server.
func pgDatabase(t testing.TB) string {
	t.Helper()
	admin := os.Getenv("DPPROXY_TEST_PG_DSN")
	if admin == "" {
		t.Skip("DPPROXY_TEST_PG_DSN not set: no PostgreSQL server (scripts/test.sh starts one)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("dpproxy_it_%d_%s", os.Getpid(), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_")))
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err == nil {
			c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	if err := demo.LoadPostgres(ctx, dsn, "public"); err != nil {
		t.Fatalf("loading demo data: %v", err)
	}
	return dsn
}

// dpproxy serve against a real PostgreSQL 15, queried with psql and pgx.
func TestServePostgres(t *testing.T) {
	dsn := pgDatabase(t)
	policy := writePolicy(t, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n", 100)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	facts := demo.DefaultFacts()

	r := psql(t, p, "analyst", "analyst", `SELECT COUNT(*) FROM patients;
SELECT diagnosis, COUNT(*) FROM visits WHERE visit_date >= '2024-01-01' GROUP BY diagnosis;
SELECT * FROM visits;
SELECT COUNT(*) FROM clinics;
`)
	out := lines(r.stdout)
	if len(out) != 1+12+1 {
		t.Fatalf("psql output %q\nstderr %s", out, r.stderr)
	}
	n, _ := strconv.Atoi(out[0])
	if math.Abs(float64(n-facts.Patients)) > 500 {
		t.Errorf("COUNT(*) = %d, want near %d", n, facts.Patients)
	}
	if out[13] != strconv.Itoa(demo.NumClinics) {
		t.Errorf("public COUNT(*) FROM clinics = %s, want the exact %d", out[13], demo.NumClinics)
	}
	if !strings.Contains(r.stderr, "42501") {
		t.Errorf("SELECT * FROM visits was not refused with 42501: %s", r.stderr)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var sum float64
	var avg float64
	// SUM(cost) over numeric is numeric in PostgreSQL, and so it is here.
	rows, err := conn.Query(ctx, "SELECT SUM(cost), AVG(cost) FROM visits WHERE diagnosis = 'J06'")
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range rows.FieldDescriptions() {
		if f.DataTypeOID != 1700 {
			t.Errorf("column %d: OID %d, want numeric (1700)", i, f.DataTypeOID)
		}
	}
	rows.Next()
	if err := rows.Scan(&sum, &avg); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if sum <= 0 || avg < 0 || avg > 2000 {
		t.Errorf("SUM %v AVG %v out of range", sum, avg)
	}
	checkMedianAge(t, conn, demo.DefaultFacts())
	checkClinicKeys(t, conn, demo.DefaultFacts())
}

// checkClinicKeys groups visits by clinic_id, whose key list the policy
// reads from the public clinics table: every clinic is released, each
// count near the truth.
func checkClinicKeys(t *testing.T, conn *pgx.Conn, facts demo.Facts) {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT clinic_id, COUNT(*) FROM visits GROUP BY clinic_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, count int64
		if err := rows.Scan(&id, &count); err != nil {
			t.Fatal(err)
		}
		if _, ok := facts.VisitsByClinic[id]; !ok {
			t.Errorf("clinic %d is not a clinic", id)
		}
		n++
	}
	if n != demo.NumClinics {
		t.Errorf("%d clinics released, want all %d from the clinics table", n, demo.NumClinics)
	}
}

// checkMedianAge asks for the median age two ways (MEDIAN and the
// WITHIN GROUP form): the DP quantile lands within a few years of the
// truth (10,000 patients; its rank error is a few dozen people), typed
// as PostgreSQL types them.
func checkMedianAge(t *testing.T, conn *pgx.Conn, facts demo.Facts) {
	t.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, "SELECT MEDIAN(age), percentile_disc(0.5) WITHIN GROUP (ORDER BY age) AS p50, MAX(age) FROM patients")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	if fields[0].DataTypeOID != 701 || fields[1].Name != "p50" {
		t.Errorf("columns %+v: want MEDIAN as double precision and p50 named", fields)
	}
	if !rows.Next() {
		t.Fatalf("no row: %v", rows.Err())
	}
	var median float64
	var p50, maxAge int64
	if err := rows.Scan(&median, &p50, &maxAge); err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{median, float64(p50)} {
		if math.Abs(v-float64(facts.MedianAge)) > 3 {
			t.Errorf("median age %v, want within 3 of %d", v, facts.MedianAge)
		}
	}
	if maxAge < 50 || maxAge > 100 {
		t.Errorf("MAX(age) = %d outside what the data and bounds allow", maxAge)
	}
}

// The budget runs out with a clear error, and stays spent across restarts.
func TestBudgetExhaustionPersistsAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	// Budget 0.35 at 0.1 per query: three answers, then refusals.
	policy := writePolicy(t, "backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 0.35)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	url := "postgres://analyst:analyst@" + p.addr + "/demo?sslmode=disable&default_query_exec_mode=simple_protocol"
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM patients WHERE age > "+strconv.Itoa(i)).Scan(&n); err != nil {
			t.Fatalf("query %d: %v", i+1, err)
		}
	}
	var n int64
	err = conn.QueryRow(ctx, "SELECT COUNT(*) FROM visits").Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "53DP1" {
		t.Fatalf("fourth query: got %v, want SQLSTATE 53DP1", err)
	}
	for _, want := range []string{"exhausted", "0.3", "0.35", "0.1"} {
		if !strings.Contains(pgErr.Message, want) {
			t.Errorf("budget error %q lacks %q (spent, limit, cost)", pgErr.Message, want)
		}
	}
	// Public tables stay readable, and the connection is still usable.
	var clinics int64
	if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM clinics").Scan(&clinics); err != nil || clinics != demo.NumClinics {
		t.Errorf("public query after exhaustion: %d, %v", clinics, err)
	}
	conn.Close(ctx)
	p.stop(t)

	// The ledger outlives the process.
	out, err := exec.Command(binary, "budget", "--config", policy).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "analyst") || !strings.Contains(string(out), "0.3") {
		t.Errorf("dpproxy budget: %v\n%s", err, out)
	}
	p2 := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	conn2, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p2.addr+"/demo?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(ctx)
	err = conn2.QueryRow(ctx, "SELECT COUNT(*) FROM patients").Scan(&n)
	if !errors.As(err, &pgErr) || pgErr.Code != "53DP1" {
		t.Fatalf("after restart: got %v, want the budget still exhausted (53DP1)", err)
	}
}

// An invalid policy stops serve at start with file, line and field.
func TestServeRejectsInvalidPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(path, []byte("backend:\n  kind: oracle\n"), 0o600)
	out, err := exec.Command(binary, "serve", "--config", path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bad.yaml:2:") || !strings.Contains(string(out), "backend.kind") {
		t.Errorf("serve with a bad policy: err=%v output:\n%s", err, out)
	}
}

// kill -9 in the middle of a stream of charged queries: every answer a
// client received is in the ledger after a restart.
func TestLedgerSurvivesKill9(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t, "backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 1000)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	url := "postgres://analyst:analyst@" + p.addr + "/demo?sslmode=disable&default_query_exec_mode=simple_protocol"
	answered := make(chan int, 1)
	go func() {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			answered <- 0
			return
		}
		n := 0
		for i := 0; ; i++ {
			var c int64
			if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM patients WHERE age > "+strconv.Itoa(i%90)+" AND income >= "+strconv.Itoa(i)).Scan(&c); err != nil {
				break // the proxy died
			}
			n++
		}
		answered <- n
	}()
	time.Sleep(1500 * time.Millisecond)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	n := <-answered
	if n < 5 {
		t.Fatalf("only %d queries answered before the kill; the test proves nothing", n)
	}
	out, err := exec.Command(binary, "budget", "--config", policy).CombinedOutput()
	if err != nil {
		t.Fatalf("dpproxy budget: %v\n%s", err, out)
	}
	// analyst  ε spent  ε limit ...
	var spent float64
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "analyst" {
			spent, _ = strconv.ParseFloat(f[1], 64)
		}
	}
	if spent < float64(n)*0.1-1e-9 {
		t.Errorf("ledger holds ε=%v after kill -9, but %d answers at ε=0.1 were sent", spent, n)
	}
	t.Logf("%d answers sent before kill -9; ledger holds ε=%v", n, spent)
}
