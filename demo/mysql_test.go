package demo

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlTestDatabase creates a fresh database on the test MySQL/MariaDB
// server (DPPROXY_TEST_MYSQL_DSN, or the test is skipped), dropped when
// the test ends, and returns an open handle on it and its DSN.
func mysqlTestDatabase(t *testing.T) (*sql.DB, string) {
	t.Helper()
	admin := os.Getenv("DPPROXY_TEST_MYSQL_DSN")
	if admin == "" {
		t.Skip("DPPROXY_TEST_MYSQL_DSN not set: skipping MySQL/MariaDB test (scripts/test.sh starts a throwaway MariaDB)")
	}
	cfg, err := mysql.ParseDSN(admin)
	if err != nil {
		t.Fatal(err)
	}
	adb, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adb.Close() })
	name := fmt.Sprintf("demo_test_%d", time.Now().UnixNano())
	if _, err := adb.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // runs before adb.Close
		if _, err := adb.Exec("DROP DATABASE " + name); err != nil {
			t.Errorf("drop database: %v", err)
		}
	})
	cfg.DBName = name
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, cfg.FormatDSN()
}

func TestLoadMySQL(t *testing.T) {
	db, dsn := mysqlTestDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	start := time.Now()
	if err := LoadMySQL(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	t.Logf("LoadMySQL took %v", time.Since(start))
	// Loading again drops and recreates.
	start = time.Now()
	if err := LoadMySQL(ctx, dsn); err != nil {
		t.Fatalf("second LoadMySQL: %v", err)
	}
	t.Logf("second LoadMySQL took %v", time.Since(start))

	one := func(q string, dst any) {
		t.Helper()
		if err := db.QueryRowContext(ctx, q).Scan(dst); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	facts := DefaultFacts()
	var n int64
	one(`SELECT COUNT(*) FROM patients`, &n)
	if n != int64(facts.Patients) {
		t.Errorf("patients = %d, want %d", n, facts.Patients)
	}
	one(`SELECT COUNT(*) FROM visits`, &n)
	if n != int64(facts.Visits) {
		t.Errorf("visits = %d, want %d", n, facts.Visits)
	}
	one(`SELECT COUNT(*) FROM clinics`, &n)
	if n != NumClinics {
		t.Errorf("clinics = %d, want %d", n, NumClinics)
	}
	var s string
	one(`SELECT CAST(SUM(cost) * 100 AS CHAR) FROM visits`, &s)
	if want := fmt.Sprintf("%d.00", facts.SumCostCents); s != want {
		t.Errorf("sum of cost × 100 = %s, want %s", s, want)
	}
	one(`SELECT CAST(SUM(income) AS CHAR) FROM patients`, &s)
	if want := fmt.Sprint(facts.SumIncome); s != want {
		t.Errorf("sum of income = %s, want %s", s, want)
	}
	one("SELECT value FROM demo_meta WHERE `key` = 'visits_rows'", &s)
	if s != fmt.Sprint(facts.Visits) {
		t.Errorf("demo_meta visits_rows = %s, want %d", s, facts.Visits)
	}

	// Column types and the index.
	rows, err := db.QueryContext(ctx, `SELECT CONCAT(table_name, '.', column_name), column_type
		FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name IN ('patients', 'visits', 'clinics')`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			t.Fatal(err)
		}
		got[col] = typ
	}
	rows.Close()
	for col, want := range map[string]string{
		"patients.patient_id": "int(11)", "patients.age": "int(11)", "patients.sex": "varchar(1)",
		"visits.visit_date": "date", "visits.cost": "decimal(10,2)", "visits.diagnosis": "varchar(10)",
		"clinics.name": "varchar(100)",
	} {
		// MySQL 8 omits the display width: int, not int(11).
		if g := got[col]; g != want && !(want == "int(11)" && g == "int") {
			t.Errorf("%s: %s, want %s", col, g, want)
		}
	}
	one(`SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'visits' AND column_name = 'patient_id'`, &n)
	if n != 1 {
		t.Errorf("indexes on visits(patient_id): %d, want 1", n)
	}
	var d string
	one(`SELECT CAST(MIN(visit_date) AS CHAR) FROM visits`, &d)
	if d < FirstVisitDate.Format(time.DateOnly) {
		t.Errorf("first visit %s before %s", d, FirstVisitDate.Format(time.DateOnly))
	}
}
