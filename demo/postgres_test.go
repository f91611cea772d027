package demo

import (
	"context"
	"fmt"
	"iter"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgDSN returns the test server's DSN or skips the test.
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("DPPROXY_TEST_PG_DSN")
	if dsn == "" {
		t.Skip("DPPROXY_TEST_PG_DSN not set: skipping PostgreSQL test (backend/testdata/start-postgres.sh starts a throwaway server)")
	}
	return dsn
}

func TestLoadPostgres(t *testing.T) {
	dsn := pgDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	schema := fmt.Sprintf("demo_test_%d", time.Now().UnixNano())

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	t.Cleanup(func() { // runs first
		if _, err := conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})

	start := time.Now()
	if err := LoadPostgres(ctx, dsn, schema); err != nil {
		t.Fatal(err)
	}
	t.Logf("LoadPostgres took %v", time.Since(start))
	// Loading again drops and recreates.
	start = time.Now()
	if err := LoadPostgres(ctx, dsn, schema); err != nil {
		t.Fatalf("second LoadPostgres: %v", err)
	}
	t.Logf("second LoadPostgres took %v", time.Since(start))

	if _, err := conn.Exec(ctx, `SET search_path = `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	one := func(q string, dst any) {
		t.Helper()
		if err := conn.QueryRow(ctx, q).Scan(dst); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	patients, visits := Stats()
	var n int64
	one(`SELECT count(*) FROM patients`, &n)
	if n != int64(patients) {
		t.Errorf("patients = %d, want %d", n, patients)
	}
	one(`SELECT count(*) FROM visits`, &n)
	if n != int64(visits) {
		t.Errorf("visits = %d, want %d", n, visits)
	}
	one(`SELECT count(*) FROM clinics`, &n)
	if n != NumClinics {
		t.Errorf("clinics = %d, want %d", n, NumClinics)
	}

	// Column types.
	rows, err := conn.Query(ctx, `SELECT table_name || '.' || column_name, format_type(atttypid, atttypmod)
		FROM information_schema.columns c
		JOIN pg_attribute a ON a.attrelid = (quote_ident(c.table_schema) || '.' || quote_ident(c.table_name))::regclass AND a.attname = c.column_name
		WHERE table_schema = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			t.Fatal(err)
		}
		types[col] = typ
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for col, want := range map[string]string{
		"patients.patient_id": "integer", "patients.age": "integer", "patients.sex": "text",
		"patients.region": "text", "patients.income": "integer",
		"visits.visit_id": "integer", "visits.patient_id": "integer", "visits.clinic_id": "integer",
		"visits.visit_date": "date", "visits.diagnosis": "text", "visits.cost": "numeric(10,2)",
		"clinics.clinic_id": "integer", "clinics.name": "text", "clinics.city": "text",
	} {
		if types[col] != want {
			t.Errorf("%s: type %q, want %q", col, types[col], want)
		}
	}

	// Vacuumed and analyzed by the loader, not left to autovacuum: every
	// page of visits is all-visible and the planner has its statistics.
	var vacuumed, analyzed bool
	var allVisible, pages int64
	if err := conn.QueryRow(ctx, `SELECT s.last_vacuum IS NOT NULL, s.last_analyze IS NOT NULL, c.relallvisible, c.relpages
		FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
		WHERE s.schemaname = $1 AND s.relname = 'visits'`, schema).Scan(&vacuumed, &analyzed, &allVisible, &pages); err != nil {
		t.Fatal(err)
	}
	if !vacuumed || !analyzed || pages == 0 || allVisible != pages {
		t.Errorf("visits after the load: vacuumed %v, analyzed %v, %d of %d pages all-visible", vacuumed, analyzed, allVisible, pages)
	}

	// True facts.
	f := DefaultFacts()
	var sumCost string
	one(`SELECT sum(cost)::text FROM visits`, &sumCost)
	if want := fmt.Sprintf("%d.%02d", f.SumCostCents/100, f.SumCostCents%100); sumCost != want {
		t.Errorf("sum(cost) = %s, want %s", sumCost, want)
	}
	one(`SELECT sum(income) FROM patients`, &n)
	if n != f.SumIncome {
		t.Errorf("sum(income) = %d, want %d", n, f.SumIncome)
	}

	// Row by row, the same rows as the generator (and so as SQLite).
	vrows, err := conn.Query(ctx, `SELECT visit_id, patient_id, clinic_id, visit_date::text, diagnosis, cost::text FROM visits ORDER BY visit_id`)
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iter.Pull(NewDataset(GenerateOptions{}).Visits())
	defer stop()
	count := 0
	for vrows.Next() {
		var v Visit
		var date, cost string
		if err := vrows.Scan(&v.ID, &v.PatientID, &v.ClinicID, &date, &v.Diagnosis, &cost); err != nil {
			t.Fatal(err)
		}
		want, ok := next()
		if !ok {
			t.Fatal("more visits in postgres than generated")
		}
		if v.ID != want.ID || v.PatientID != want.PatientID || v.ClinicID != want.ClinicID ||
			date != want.DateString() || v.Diagnosis != want.Diagnosis || cost != want.Cost() {
			t.Fatalf("visit %d: got (%d %d %d %s %s %s), want (%d %d %d %s %s %s)", count,
				v.ID, v.PatientID, v.ClinicID, date, v.Diagnosis, cost,
				want.ID, want.PatientID, want.ClinicID, want.DateString(), want.Diagnosis, want.Cost())
		}
		count++
	}
	if err := vrows.Err(); err != nil {
		t.Fatal(err)
	}
	if count != visits {
		t.Errorf("compared %d visits, want %d", count, visits)
	}

	var version string
	one(`SELECT value FROM demo_meta WHERE key = 'version'`, &version)
	if version != fmt.Sprint(Version) {
		t.Errorf("demo_meta version = %q", version)
	}
}
