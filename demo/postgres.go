package demo

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// LoadPostgres loads the standard demo dataset into schema (default
// "public") of the PostgreSQL database at dsn. See LoadPostgresWith.
func LoadPostgres(ctx context.Context, dsn string, schema string) error {
	return LoadPostgresWith(ctx, dsn, schema, GenerateOptions{})
}

// LoadPostgresWith loads the dataset for opts into schema (created if
// missing; "" means "public"), dropping and recreating the tables patients,
// visits, clinics and demo_meta there. Rows are loaded with COPY, all in
// one transaction: concurrent readers see the old tables or the new ones.
// The new tables are then vacuumed and analyzed before it returns.
// Column types: integer, text, date, numeric(10,2).
func LoadPostgresWith(ctx context.Context, dsn string, schema string, opts GenerateOptions) error {
	opts = opts.withDefaults()
	if schema == "" {
		schema = "public"
	}
	start := time.Now()

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("demo: connect to postgres: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx) // best effort; the work is committed or rolled back
	}()

	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("demo: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // no-op after Commit

	q := func(table string) string { return pgx.Identifier{schema, table}.Sanitize() }
	ddl := []string{
		`CREATE SCHEMA IF NOT EXISTS ` + pgx.Identifier{schema}.Sanitize(),
		`DROP TABLE IF EXISTS ` + q("prescriptions") + `, ` + q("visits") + `, ` + q("patients") + `, ` + q("clinics") + `, ` + q("demo_meta"),
		`CREATE TABLE ` + q("clinics") + ` (clinic_id integer PRIMARY KEY, name text NOT NULL, city text NOT NULL)`,
		`CREATE TABLE ` + q("patients") + ` (patient_id integer PRIMARY KEY, age integer NOT NULL, sex text NOT NULL, region text NOT NULL, income integer NOT NULL)`,
		`CREATE TABLE ` + q("visits") + ` (visit_id integer PRIMARY KEY, patient_id integer NOT NULL, clinic_id integer NOT NULL, visit_date date NOT NULL, diagnosis text NOT NULL, cost numeric(10,2) NOT NULL)`,
		`CREATE TABLE ` + q("prescriptions") + ` (prescription_id integer PRIMARY KEY, visit_id integer NOT NULL, drug text NOT NULL, days_supply integer NOT NULL)`,
		`CREATE TABLE ` + q("demo_meta") + ` (key text PRIMARY KEY, value text NOT NULL)`,
	}
	for _, stmt := range ddl {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("demo: create schema: %w", err)
		}
	}

	d := NewDataset(opts)
	clinics := d.Clinics()
	nc, err := tx.CopyFrom(ctx, pgx.Identifier{schema, "clinics"}, []string{"clinic_id", "name", "city"},
		pgx.CopyFromSlice(len(clinics), func(i int) ([]any, error) {
			c := clinics[i]
			return []any{c.ID, c.Name, c.City}, nil
		}))
	if err != nil {
		return fmt.Errorf("demo: copy clinics: %w", err)
	}

	patientRows, stopPatients := copySource(d.Patients(), func(p Patient) []any {
		return []any{p.ID, p.Age, p.Sex, p.Region, p.Income}
	})
	defer stopPatients()
	np, err := tx.CopyFrom(ctx, pgx.Identifier{schema, "patients"},
		[]string{"patient_id", "age", "sex", "region", "income"}, patientRows)
	if err != nil {
		return fmt.Errorf("demo: copy patients: %w", err)
	}

	visitRows, stopVisits := copySource(d.Visits(), func(v Visit) []any {
		cost := pgtype.Numeric{Int: big.NewInt(v.CostCents), Exp: -2, Valid: true}
		return []any{v.ID, v.PatientID, v.ClinicID, v.Date, v.Diagnosis, cost}
	})
	defer stopVisits()
	nv, err := tx.CopyFrom(ctx, pgx.Identifier{schema, "visits"},
		[]string{"visit_id", "patient_id", "clinic_id", "visit_date", "diagnosis", "cost"}, visitRows)
	if err != nil {
		return fmt.Errorf("demo: copy visits: %w", err)
	}

	rxRows, stopRx := copySource(d.Prescriptions(), func(r Prescription) []any {
		return []any{r.ID, r.VisitID, r.Drug, r.DaysSupply}
	})
	defer stopRx()
	nrx, err := tx.CopyFrom(ctx, pgx.Identifier{schema, "prescriptions"},
		[]string{"prescription_id", "visit_id", "drug", "days_supply"}, rxRows)
	if err != nil {
		return fmt.Errorf("demo: copy prescriptions: %w", err)
	}

	for _, kv := range metaRows(opts, int(np), int(nv), int(nrx), int(nc)) {
		if _, err := tx.Exec(ctx, `INSERT INTO `+q("demo_meta")+` VALUES ($1, $2)`, kv[0], kv[1]); err != nil {
			return fmt.Errorf("demo: write demo_meta: %w", err)
		}
	}
	post := []string{
		`CREATE INDEX ON ` + q("visits") + ` (patient_id)`,
		`CREATE INDEX ON ` + q("prescriptions") + ` (visit_id)`,
	}
	for _, stmt := range post {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("demo: %s: %w", stmt, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("demo: commit: %w", err)
	}
	// VACUUM (outside the transaction, as it must be) sets the hint bits
	// and the visibility map of the freshly copied rows and gathers the
	// planner's statistics. Left to autovacuum, the same work would start
	// within a minute of the load, in the middle of whatever is measured
	// next.
	vacuum := `VACUUM (ANALYZE) ` + q("clinics") + `, ` + q("patients") + `, ` + q("visits") + `, ` + q("prescriptions")
	if _, err := conn.Exec(ctx, vacuum); err != nil {
		return fmt.Errorf("demo: %s: %w", vacuum, err)
	}
	slog.InfoContext(ctx, "demo: postgres dataset loaded", "schema", schema,
		"patients", np, "visits", nv, "elapsed", time.Since(start))
	return nil
}

// copySource feeds the rows of seq, converted by row, to CopyFrom. The
// caller must call stop when done (CopyFrom may give up early).
func copySource[T any](seq iter.Seq[T], row func(T) []any) (src pgx.CopyFromSource, stop func()) {
	next, stop := iter.Pull(seq)
	return &pullSource[T]{next: next, row: row}, stop
}

type pullSource[T any] struct {
	next func() (T, bool)
	row  func(T) []any
	cur  []any
}

func (s *pullSource[T]) Next() bool {
	v, ok := s.next()
	if !ok {
		return false
	}
	s.cur = s.row(v)
	return true
}

func (s *pullSource[T]) Values() ([]any, error) { return s.cur, nil }

func (s *pullSource[T]) Err() error { return nil }
