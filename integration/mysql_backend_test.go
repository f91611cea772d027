package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpproxy/dpproxy/demo"
)

// mysqlDatabase creates a fresh database on the test MySQL/MariaDB server
// holding the demo data and returns its DSN. It skips the test without a
// server.
func mysqlDatabase(t testing.TB) string {
	t.Helper()
	admin := os.Getenv("DPPROXY_TEST_MYSQL_DSN")
	if admin == "" {
		t.Skip("DPPROXY_TEST_MYSQL_DSN not set: no MySQL/MariaDB server (scripts/test.sh starts one)")
	}
	cfg, err := mysql.ParseDSN(admin)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	name := fmt.Sprintf("dpproxy_it_%d_%s", os.Getpid(), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_")))
	if _, err := db.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DROP DATABASE IF EXISTS " + name) }) // before db.Close
	cfg.DBName = name
	dsn := cfg.FormatDSN()
	if err := demo.LoadMySQL(context.Background(), dsn); err != nil {
		t.Fatalf("loading demo data: %v", err)
	}
	return dsn
}

// dpproxy serve with a MariaDB backend, queried through the PostgreSQL
// front end with psql and pgx: noisy answers near the truth, public
// tables in full, raw reads refused, and every answer charged.
func TestServeMySQLBackend(t *testing.T) {
	dsn := mysqlDatabase(t)
	policy := writePolicy(t, "backend:\n  kind: mysql\n  dsn: "+strconv.Quote(dsn)+"\n", 100)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	facts := demo.DefaultFacts()

	r := psql(t, p, "analyst", "analyst", `SELECT COUNT(*) FROM patients;
SELECT diagnosis, COUNT(*) FROM visits WHERE visit_date >= '2024-01-01' GROUP BY diagnosis;
SELECT * FROM visits;
SELECT clinic_id, name, city FROM clinics ORDER BY clinic_id;
`)
	out := lines(r.stdout)
	if len(out) != 1+12+demo.NumClinics {
		t.Fatalf("psql output %q\nstderr %s", out, r.stderr)
	}
	n, _ := strconv.Atoi(out[0])
	if math.Abs(float64(n-facts.Patients)) > 500 {
		t.Errorf("COUNT(*) = %d, want near %d", n, facts.Patients)
	}
	for i, line := range out[1:13] {
		f := strings.Split(line, "|")
		if len(f) != 2 {
			t.Fatalf("group line %d: %q", i, line)
		}
		c, _ := strconv.Atoi(f[1])
		// L0 = 4, Linf = 5 bound each patient's visits; the count is a
		// lower bound of the truth, within noise of the bounded count.
		if want := facts.VisitsByDiagnosis[f[0]]; c < 0 || c > want+500 {
			t.Errorf("COUNT(*) for %s = %d, true unbounded count %d", f[0], c, want)
		}
	}
	clinics := demo.NewDataset(demo.GenerateOptions{}).Clinics()
	for i, c := range clinics {
		if want := fmt.Sprintf("%d|%s|%s", c.ID, c.Name, c.City); out[13+i] != want {
			t.Errorf("clinics row %d: %q, want %q", i, out[13+i], want)
		}
	}
	if !strings.Contains(r.stderr, "42501") {
		t.Errorf("SELECT * FROM visits was not refused with 42501: %s", r.stderr)
	}

	ctx := context.Background()
	for _, mode := range []string{"simple_protocol", "cache_statement"} {
		conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable&default_query_exec_mode="+mode)
		if err != nil {
			t.Fatal(err)
		}
		// SUM(cost) over DECIMAL(10,2) comes back as numeric.
		rows, err := conn.Query(ctx, "SELECT SUM(cost), AVG(cost) FROM visits WHERE diagnosis = 'J06'")
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		for i, f := range rows.FieldDescriptions() {
			if f.DataTypeOID != 1700 {
				t.Errorf("%s: column %d: OID %d, want numeric (1700)", mode, i, f.DataTypeOID)
			}
		}
		var sum, avg float64
		rows.Next()
		if err := rows.Scan(&sum, &avg); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		rows.Close()
		if sum <= 0 || avg < 0 || avg > 2000 {
			t.Errorf("%s: SUM %v AVG %v out of range", mode, sum, avg)
		}
		checkMedianAge(t, conn, demo.DefaultFacts())
		checkClinicKeys(t, conn, demo.DefaultFacts())
		// Parameters (bound by dpproxy, not the client, in extended mode),
		// and a string with a backslash and a quote (the MySQL dialect's
		// escaping): no such sex, so every adult counts.
		q, args := "SELECT COUNT(*) FROM patients WHERE age >= $1 AND sex <> $2", []any{int32(18), `x\'y`}
		if mode == "simple_protocol" {
			// pgx's simple protocol sends every argument as a quoted
			// string ('18'), which dpproxy refuses to compare with an
			// integer column; the literal form instead.
			q, args = `SELECT COUNT(*) FROM patients WHERE age >= 18 AND sex <> 'x\''y'`, nil
		}
		var c int64
		if err := conn.QueryRow(ctx, q, args...).Scan(&c); err != nil {
			t.Fatalf("%s: %s: %v", mode, q, err)
		}
		if math.Abs(float64(c)-float64(facts.Patients)*0.8) > 1000 {
			t.Errorf("%s: adults = %d, want near %v", mode, c, float64(facts.Patients)*0.8)
		}
		// Raw reads are refused before anything runs.
		var pgErr *pgconn.PgError
		if _, err := conn.Exec(ctx, "SELECT patient_id, age FROM patients"); !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("%s: raw read: err = %v, want SQLSTATE 42501", mode, err)
		}
		conn.Close(ctx)
	}

	// Charged at ε = 0.1: 2 psql answers and 4 pgx answers (with the
	// quantiles and the clinics); the second
	// pgx mode asks the same statements with the same values and gets the
	// cached answers for free, and refusals and public tables are free.
	out2, err := exec.Command(binary, "budget", "--config", policy).CombinedOutput()
	if err != nil {
		t.Fatalf("dpproxy budget: %v\n%s", err, out2)
	}
	var spent float64
	for _, line := range strings.Split(string(out2), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "analyst" {
			spent, _ = strconv.ParseFloat(f[1], 64)
		}
	}
	if math.Abs(spent-0.6) > 1e-9 {
		t.Errorf("ledger: analyst spent ε=%v, want 0.6\n%s", spent, out2)
	}
}
