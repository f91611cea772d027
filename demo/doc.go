// Package demo builds dpproxy's deterministic demo dataset: a small health
// database of patients, their clinic visits and the clinics.
//
// The data is synthetic and generated from fixed seeds, so every run
// produces the same rows: tests can compare noisy answers with the true
// values (see Facts and Stats), and benchmarks can scale it up with
// GenerateOptions.Patients. The randomness here shapes data; it is not
// privacy noise and must never be used as such.
//
// Tables (the same in SQLite and PostgreSQL):
//
//	patients(patient_id, age, sex, region, income)              one row per patient
//	visits(visit_id, patient_id, clinic_id, visit_date, diagnosis, cost)  1..40 per patient
//	clinics(clinic_id, name, city)                              25 rows
//	demo_meta(key, value)                                       version and row counts
//
// GenerateSQLite writes a SQLite file (reused when it is already complete);
// LoadPostgres loads the same rows into a PostgreSQL schema with COPY.
package demo
