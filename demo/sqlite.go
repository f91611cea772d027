package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrNotDemo is returned when a file exists at the target path but is not
// a dpproxy demo database; it is left alone rather than overwritten.
var ErrNotDemo = errors.New("not a dpproxy demo database")

// sqliteSchema creates the tables. Column types are the SQLite spellings
// of the PostgreSQL ones LoadPostgres uses.
var sqliteSchema = []string{
	`CREATE TABLE clinics (clinic_id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL)`,
	`CREATE TABLE patients (patient_id INTEGER PRIMARY KEY, age INTEGER NOT NULL, sex TEXT NOT NULL, region TEXT NOT NULL, income INTEGER NOT NULL)`,
	`CREATE TABLE visits (visit_id INTEGER PRIMARY KEY, patient_id INTEGER NOT NULL, clinic_id INTEGER NOT NULL, visit_date DATE NOT NULL, diagnosis TEXT NOT NULL, cost NUMERIC NOT NULL)`,
	`CREATE TABLE prescriptions (prescription_id INTEGER PRIMARY KEY, visit_id INTEGER NOT NULL, drug TEXT NOT NULL, days_supply INTEGER NOT NULL)`,
	`CREATE TABLE demo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
}

var sqliteIndexes = []string{
	`CREATE INDEX visits_patient_id ON visits (patient_id)`,
	`CREATE INDEX prescriptions_visit_id ON prescriptions (visit_id)`,
}

// GenerateSQLite writes the standard demo dataset to a SQLite file at
// path. See GenerateSQLiteWith.
func GenerateSQLite(ctx context.Context, path string) error {
	return GenerateSQLiteWith(ctx, path, GenerateOptions{})
}

// GenerateSQLiteWith writes the demo dataset for opts to a SQLite file at
// path, unless path already holds that dataset complete (same generator
// Version, same options, row counts as recorded in demo_meta), in which
// case it returns at once.
//
// The file is written in one transaction to a temporary file in the same
// directory, synced, and renamed over path, so readers see either the old
// file or the complete new one. An existing file that is not a demo
// database (no demo_meta table) is not replaced: the error wraps
// ErrNotDemo.
func GenerateSQLiteWith(ctx context.Context, path string, opts GenerateOptions) error {
	opts = opts.withDefaults()
	start := time.Now()

	ok, err := sqliteComplete(ctx, path, opts)
	if err != nil {
		return err
	}
	if ok {
		slog.DebugContext(ctx, "demo: sqlite dataset up to date", "path", path)
		return nil
	}

	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("demo: create temporary file: %w", err)
	}
	tmp := f.Name()
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("demo: create temporary file: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(tmp) // best effort: a leftover only wastes space
		}
	}()

	patients, visits, err := writeSQLite(ctx, tmp, opts)
	if err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	// CreateTemp makes the file private; give it the mode os.Create would.
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("demo: chmod %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("demo: install %s: %w", path, err)
	}
	committed = true
	if err := syncFile(dir); err != nil {
		slog.WarnContext(ctx, "demo: sync directory", "dir", dir, "err", err)
	}
	slog.InfoContext(ctx, "demo: sqlite dataset generated", "path", path,
		"patients", patients, "visits", visits, "elapsed", time.Since(start))
	return nil
}

// sqliteURI is the URI filename of path with the given query.
func sqliteURI(path, query string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("demo: resolve %q: %w", path, err)
	}
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(abs))
	if !strings.HasPrefix(esc, "/") {
		esc = "/" + esc
	}
	return "file:" + esc + "?" + query, nil
}

// sqliteComplete reports whether path holds the complete dataset for opts.
// A missing or empty file is not complete; an existing file that is not a
// demo database is an error.
func sqliteComplete(ctx context.Context, path string, opts GenerateOptions) (bool, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("demo: %w", err)
	case st.IsDir():
		return false, fmt.Errorf("demo: %s is a directory", path)
	case st.Size() == 0:
		return false, nil
	}

	uri, err := sqliteURI(path, "mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return false, err
	}
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return false, fmt.Errorf("demo: open %s: %w", path, err)
	}
	defer db.Close()

	var hasMeta int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'demo_meta'`).Scan(&hasMeta)
	if err != nil {
		return false, fmt.Errorf("demo: %s: %w: %w", path, ErrNotDemo, err)
	}
	if hasMeta == 0 {
		return false, fmt.Errorf("demo: %s: %w (no demo_meta table)", path, ErrNotDemo)
	}
	meta := map[string]string{}
	rows, err := db.QueryContext(ctx, `SELECT key, value FROM demo_meta`)
	if err != nil {
		return false, fmt.Errorf("demo: read demo_meta of %s: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return false, fmt.Errorf("demo: read demo_meta of %s: %w", path, err)
		}
		meta[k] = v
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("demo: read demo_meta of %s: %w", path, err)
	}
	if meta["version"] != strconv.Itoa(Version) || meta["patients"] != strconv.Itoa(opts.Patients) {
		slog.InfoContext(ctx, "demo: sqlite dataset outdated, regenerating", "path", path,
			"version", meta["version"], "patients", meta["patients"])
		return false, nil
	}
	// The rows are committed together with demo_meta, so this only catches
	// files damaged by other means; counting is cheap.
	for _, t := range []string{"patients", "visits", "clinics"} {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+t).Scan(&n); err != nil {
			slog.InfoContext(ctx, "demo: sqlite dataset unreadable, regenerating", "path", path, "err", err)
			return false, nil
		}
		if strconv.Itoa(n) != meta[t+"_rows"] {
			slog.InfoContext(ctx, "demo: sqlite dataset incomplete, regenerating", "path", path, "table", t)
			return false, nil
		}
	}
	return true, nil
}

// writeSQLite writes the dataset into the (new, empty) file at path.
func writeSQLite(ctx context.Context, path string, opts GenerateOptions) (patients, visits int, err error) {
	// The file is private until renamed, so it needs no journal and no
	// syncs; GenerateSQLiteWith syncs it once at the end.
	uri, err := sqliteURI(path, "_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)")
	if err != nil {
		return 0, 0, err
	}
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return 0, 0, fmt.Errorf("demo: open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("demo: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // no-op after Commit

	for _, stmt := range sqliteSchema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return 0, 0, fmt.Errorf("demo: create schema: %w", err)
		}
	}

	d := NewDataset(opts)
	insClinic, err := tx.PrepareContext(ctx, `INSERT INTO clinics VALUES (?, ?, ?)`)
	if err != nil {
		return 0, 0, fmt.Errorf("demo: prepare: %w", err)
	}
	defer insClinic.Close()
	for _, c := range d.Clinics() {
		if _, err := insClinic.ExecContext(ctx, c.ID, c.Name, c.City); err != nil {
			return 0, 0, fmt.Errorf("demo: insert clinic %d: %w", c.ID, err)
		}
	}

	insPatient, err := tx.PrepareContext(ctx, `INSERT INTO patients VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return 0, 0, fmt.Errorf("demo: prepare: %w", err)
	}
	defer insPatient.Close()
	insVisit, err := tx.PrepareContext(ctx, `INSERT INTO visits VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return 0, 0, fmt.Errorf("demo: prepare: %w", err)
	}
	defer insVisit.Close()

	insPrescription, err := tx.PrepareContext(ctx, `INSERT INTO prescriptions VALUES (?, ?, ?, ?)`)
	if err != nil {
		return 0, 0, fmt.Errorf("demo: prepare: %w", err)
	}
	defer insPrescription.Close()
	var rx []Prescription
	prescriptions := 0

	for p, vs := range d.All() {
		if _, err := insPatient.ExecContext(ctx, p.ID, p.Age, p.Sex, p.Region, p.Income); err != nil {
			return 0, 0, fmt.Errorf("demo: insert patient %d: %w", p.ID, err)
		}
		patients++
		for _, v := range vs {
			// cents/100 is the double nearest the two-place decimal; the
			// NUMERIC column stores it as REAL (INTEGER when whole).
			_, err := insVisit.ExecContext(ctx, v.ID, v.PatientID, v.ClinicID, v.DateString(), v.Diagnosis,
				float64(v.CostCents)/100)
			if err != nil {
				return 0, 0, fmt.Errorf("demo: insert visit %d: %w", v.ID, err)
			}
			rx = genPrescriptions(v, int64(prescriptions)+1, rx[:0])
			for _, r := range rx {
				if _, err := insPrescription.ExecContext(ctx, r.ID, r.VisitID, r.Drug, r.DaysSupply); err != nil {
					return 0, 0, fmt.Errorf("demo: insert prescription %d: %w", r.ID, err)
				}
			}
			prescriptions += len(rx)
		}
		visits += len(vs)
	}

	for _, stmt := range sqliteIndexes {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return 0, 0, fmt.Errorf("demo: create index: %w", err)
		}
	}
	meta := metaRows(opts, patients, visits, prescriptions, len(d.Clinics()))
	for _, kv := range meta {
		if _, err := tx.ExecContext(ctx, `INSERT INTO demo_meta VALUES (?, ?)`, kv[0], kv[1]); err != nil {
			return 0, 0, fmt.Errorf("demo: write demo_meta: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("demo: commit: %w", err)
	}
	if err := db.Close(); err != nil {
		return 0, 0, fmt.Errorf("demo: close %s: %w", path, err)
	}
	return patients, visits, nil
}

// metaRows are the demo_meta rows of a generated dataset.
func metaRows(opts GenerateOptions, patients, visits, prescriptions, clinics int) [][2]string {
	return [][2]string{
		{"version", strconv.Itoa(Version)},
		{"patients", strconv.Itoa(opts.Patients)},
		{"patients_rows", strconv.Itoa(patients)},
		{"visits_rows", strconv.Itoa(visits)},
		{"prescriptions_rows", strconv.Itoa(prescriptions)},
		{"clinics_rows", strconv.Itoa(clinics)},
	}
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("demo: sync %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("demo: sync %s: %w", path, err)
	}
	return nil
}
