package demo

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlBatchRows is the number of rows per multi-row INSERT (well below
// the 65535 placeholders a prepared statement may have).
const mysqlBatchRows = 1000

// LoadMySQL loads the standard demo dataset into the database named in
// dsn (go-sql-driver form, user:password@tcp(host:port)/database). See
// LoadMySQLWith.
func LoadMySQL(ctx context.Context, dsn string) error {
	return LoadMySQLWith(ctx, dsn, GenerateOptions{})
}

// LoadMySQLWith loads the dataset for opts into the MySQL or MariaDB
// database named in dsn (which must name one), dropping and recreating the
// tables patients, visits, clinics and demo_meta there. Column types: INT,
// VARCHAR, DATE, DECIMAL(10,2); InnoDB, utf8mb4; an index on
// visits(patient_id).
//
// DDL is not transactional in MySQL: the tables are recreated first, then
// every row is inserted (multi-row INSERTs with bound parameters) in one
// transaction, so readers see empty tables until it commits.
func LoadMySQLWith(ctx context.Context, dsn string, opts GenerateOptions) error {
	opts = opts.withDefaults()
	start := time.Now()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("demo: parse mysql dsn: %w", err)
	}
	if cfg.DBName == "" {
		return fmt.Errorf("demo: mysql dsn %q names no database", dsn)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = false
	cfg.MultiStatements = false
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("demo: mysql dsn: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	conn, err := db.Conn(ctx) // one session: the transaction and its statements
	if err != nil {
		return fmt.Errorf("demo: connect to mysql: %w", err)
	}
	defer conn.Close()

	ddl := []string{
		"DROP TABLE IF EXISTS prescriptions, visits, patients, clinics, demo_meta",
		"CREATE TABLE clinics (clinic_id INT PRIMARY KEY, name VARCHAR(100) NOT NULL, city VARCHAR(100) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
		"CREATE TABLE patients (patient_id INT PRIMARY KEY, age INT NOT NULL, sex VARCHAR(1) NOT NULL, region VARCHAR(20) NOT NULL, income INT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
		"CREATE TABLE visits (visit_id INT PRIMARY KEY, patient_id INT NOT NULL, clinic_id INT NOT NULL, visit_date DATE NOT NULL, diagnosis VARCHAR(10) NOT NULL, cost DECIMAL(10,2) NOT NULL, INDEX visits_patient_id (patient_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
		"CREATE TABLE prescriptions (prescription_id INT PRIMARY KEY, visit_id INT NOT NULL, drug VARCHAR(20) NOT NULL, days_supply INT NOT NULL, INDEX prescriptions_visit_id (visit_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
		"CREATE TABLE demo_meta (`key` VARCHAR(64) PRIMARY KEY, value VARCHAR(255) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
	}
	for _, stmt := range ddl {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("demo: create tables: %w", err)
		}
	}

	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("demo: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // no-op after Commit

	d := NewDataset(opts)
	clinics := d.Clinics()
	nc, err := insertBatches(ctx, tx, "clinics", []string{"clinic_id", "name", "city"},
		func(yield func(Clinic) bool) {
			for _, c := range clinics {
				if !yield(c) {
					return
				}
			}
		},
		func(c Clinic) []any { return []any{c.ID, c.Name, c.City} })
	if err != nil {
		return err
	}
	np, err := insertBatches(ctx, tx, "patients", []string{"patient_id", "age", "sex", "region", "income"},
		d.Patients(), func(p Patient) []any { return []any{p.ID, p.Age, p.Sex, p.Region, p.Income} })
	if err != nil {
		return err
	}
	nv, err := insertBatches(ctx, tx, "visits", []string{"visit_id", "patient_id", "clinic_id", "visit_date", "diagnosis", "cost"},
		d.Visits(), func(v Visit) []any {
			return []any{v.ID, v.PatientID, v.ClinicID, v.DateString(), v.Diagnosis, v.Cost()}
		})
	if err != nil {
		return err
	}
	nrx, err := insertBatches(ctx, tx, "prescriptions", []string{"prescription_id", "visit_id", "drug", "days_supply"},
		d.Prescriptions(), func(r Prescription) []any { return []any{r.ID, r.VisitID, r.Drug, r.DaysSupply} })
	if err != nil {
		return err
	}
	for _, kv := range metaRows(opts, np, nv, nrx, nc) {
		if _, err := tx.ExecContext(ctx, "INSERT INTO demo_meta (`key`, value) VALUES (?, ?)", kv[0], kv[1]); err != nil {
			return fmt.Errorf("demo: write demo_meta: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("demo: commit: %w", err)
	}
	for _, t := range []string{"clinics", "patients", "visits", "prescriptions"} {
		if _, err := conn.ExecContext(ctx, "ANALYZE TABLE "+t); err != nil {
			return fmt.Errorf("demo: analyze %s: %w", t, err)
		}
	}
	slog.InfoContext(ctx, "demo: mysql dataset loaded", "database", cfg.DBName,
		"patients", np, "visits", nv, "elapsed", time.Since(start))
	return nil
}

// insertBatches inserts the rows of seq, converted by row, into table with
// multi-row INSERTs of up to mysqlBatchRows rows, and returns the number
// of rows inserted.
func insertBatches[T any](ctx context.Context, tx *sql.Tx, table string, cols []string, seq iter.Seq[T], row func(T) []any) (int, error) {
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	prefix := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES "
	var args []any
	n, pending := 0, 0
	flush := func() error {
		if pending == 0 {
			return nil
		}
		stmt := prefix + strings.TrimSuffix(strings.Repeat(tuple+", ", pending), ", ")
		if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("demo: insert into %s: %w", table, err)
		}
		n += pending
		args, pending = args[:0], 0
		return nil
	}
	for v := range seq {
		args = append(args, row(v)...)
		pending++
		if pending == mysqlBatchRows {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := flush(); err != nil {
		return n, err
	}
	return n, nil
}
