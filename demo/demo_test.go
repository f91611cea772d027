package demo

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"
)

// sharedDB is one generated standard dataset, shared by the read-only
// tests of this file.
var sharedDB = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "dpproxy-demo-test-")
	if err != nil {
		return "", err
	}
	sharedDir = dir
	path := filepath.Join(dir, "demo.db")
	start := time.Now()
	err = GenerateSQLite(context.Background(), path)
	sharedGenTime = time.Since(start)
	return path, err
})

// sharedGenTime is how long generating sharedDB took; sharedDir is its
// directory ("" if it was never needed).
var (
	sharedGenTime time.Duration
	sharedDir     string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

func openShared(t *testing.T) *sql.DB {
	t.Helper()
	path, err := sharedDB()
	if err != nil {
		t.Fatalf("GenerateSQLite: %v", err)
	}
	return openRO(t, path)
}

func openRO(t *testing.T, path string) *sql.DB {
	t.Helper()
	uri, err := sqliteURI(path, "mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func queryInt(t *testing.T, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n.Int64
}

func queryStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checksum hashes every row of the demo tables in primary key order.
func checksum(t *testing.T, db *sql.DB) string {
	t.Helper()
	h := sha256.New()
	for _, q := range []string{
		`SELECT * FROM clinics ORDER BY clinic_id`,
		`SELECT * FROM patients ORDER BY patient_id`,
		`SELECT visit_id, patient_id, clinic_id, visit_date, diagnosis, printf('%.2f', cost) FROM visits ORDER BY visit_id`,
		`SELECT * FROM demo_meta ORDER BY key`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%v\n", vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestRowCounts(t *testing.T) {
	db := openShared(t)
	patients, visits := Stats()
	if patients != DefaultPatients {
		t.Errorf("Stats patients = %d, want %d", patients, DefaultPatients)
	}
	if visits < 10_000 || visits > 400_000 {
		t.Errorf("Stats visits = %d, want 10000..400000", visits)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM patients`); n != 10_000 {
		t.Errorf("patients rows = %d, want 10000", n)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM visits`); n != int64(visits) {
		t.Errorf("visits rows = %d, want Stats() = %d", n, visits)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM clinics`); n != NumClinics {
		t.Errorf("clinics rows = %d, want %d", n, NumClinics)
	}
	t.Logf("patients=%d visits=%d", patients, visits)
}

func TestValueRanges(t *testing.T) {
	db := openShared(t)
	checks := []struct {
		name string
		q    string
		want int64
	}{
		{"patient ids 1..10000", `SELECT count(*) FROM patients WHERE patient_id BETWEEN 1 AND 10000`, 10_000},
		{"max patient id", `SELECT max(patient_id) FROM patients`, 10_000},
		{"ages out of range", `SELECT count(*) FROM patients WHERE age NOT BETWEEN 0 AND 100 OR typeof(age) <> 'integer'`, 0},
		{"min age", `SELECT min(age) FROM patients`, 0},
		{"max age", `SELECT max(age) FROM patients`, 100},
		{"bad sex", `SELECT count(*) FROM patients WHERE sex NOT IN ('F', 'M')`, 0},
		{"incomes out of range", `SELECT count(*) FROM patients WHERE income NOT BETWEEN 0 AND 250000 OR typeof(income) <> 'integer'`, 0},
		{"children with income", `SELECT count(*) FROM patients WHERE age < 18 AND income <> 0`, 0},
		{"visits of unknown patients", `SELECT count(*) FROM visits WHERE patient_id NOT IN (SELECT patient_id FROM patients)`, 0},
		{"patients without visits", `SELECT count(*) FROM patients WHERE patient_id NOT IN (SELECT patient_id FROM visits)`, 0},
		{"max visits per patient > 40", `SELECT count(*) FROM (SELECT count(*) c FROM visits GROUP BY patient_id) WHERE c > 40`, 0},
		{"clinic ids out of range", `SELECT count(*) FROM visits WHERE clinic_id NOT BETWEEN 1 AND 25`, 0},
		{"clinics used", `SELECT count(DISTINCT clinic_id) FROM visits`, 25},
		{"dates out of range", `SELECT count(*) FROM visits WHERE visit_date NOT BETWEEN '2024-01-01' AND '2025-12-31'`, 0},
		{"malformed dates", `SELECT count(*) FROM visits WHERE typeof(visit_date) <> 'text' OR date(visit_date) IS NOT visit_date`, 0},
		{"costs out of range", `SELECT count(*) FROM visits WHERE cost < 20 OR cost > 20000`, 0},
		{"costs with more than 2 decimals", `SELECT count(*) FROM visits WHERE abs(cost * 100 - round(cost * 100)) > 1e-6`, 0},
		{"cost types", `SELECT count(*) FROM visits WHERE typeof(cost) NOT IN ('real', 'integer')`, 0},
		{"visit ids 1..n", `SELECT max(visit_id) - count(*) FROM visits`, 0},
	}
	for _, c := range checks {
		if got := queryInt(t, db, c.q); got != c.want {
			t.Errorf("%s: got %d, want %d (%s)", c.name, got, c.want, c.q)
		}
	}

	if got := queryStrings(t, db, `SELECT DISTINCT region FROM patients ORDER BY 1`); !reflect.DeepEqual(got, sorted(Regions)) {
		t.Errorf("regions = %v, want %v", got, sorted(Regions))
	}
	if got := queryStrings(t, db, `SELECT DISTINCT diagnosis FROM visits ORDER BY 1`); !reflect.DeepEqual(got, sorted(Diagnoses)) {
		t.Errorf("diagnoses = %v, want %v", got, sorted(Diagnoses))
	}
	if len(Regions) != 8 || len(Diagnoses) != 12 {
		t.Errorf("len(Regions) = %d, len(Diagnoses) = %d; want 8, 12", len(Regions), len(Diagnoses))
	}

	// "A few" outliers: present but rare.
	rich := queryInt(t, db, `SELECT count(*) FROM patients WHERE income > 200000`)
	if rich < 1 || rich > 100 {
		t.Errorf("patients with income > 200000: %d, want a few (1..100)", rich)
	}
	visits := queryInt(t, db, `SELECT count(*) FROM visits`)
	expensive := queryInt(t, db, `SELECT count(*) FROM visits WHERE cost > 2000`)
	if expensive < 1 || expensive*100 > visits {
		t.Errorf("visits with cost > 2000: %d of %d, want a few (< 1%%)", expensive, visits)
	}
	// Regions are not uniform.
	big := queryInt(t, db, `SELECT max(c) FROM (SELECT count(*) c FROM patients GROUP BY region)`)
	small := queryInt(t, db, `SELECT min(c) FROM (SELECT count(*) c FROM patients GROUP BY region)`)
	if big < 3*small {
		t.Errorf("region sizes %d..%d: want a skewed distribution", small, big)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func TestFactsMatchDatabase(t *testing.T) {
	db := openShared(t)
	f := DefaultFacts()
	if got := queryInt(t, db, `SELECT sum(age) FROM patients`); got != f.SumAge {
		t.Errorf("sum(age) = %d, facts %d", got, f.SumAge)
	}
	if got := queryInt(t, db, `SELECT sum(income) FROM patients`); got != f.SumIncome {
		t.Errorf("sum(income) = %d, facts %d", got, f.SumIncome)
	}
	if got := queryInt(t, db, `SELECT sum(CAST(round(cost * 100) AS INTEGER)) FROM visits`); got != f.SumCostCents {
		t.Errorf("sum(cost) cents = %d, facts %d", got, f.SumCostCents)
	}
	if got := queryInt(t, db, `SELECT count(*) FROM patients WHERE income > 200000`); got != int64(f.IncomeOver200k) {
		t.Errorf("income > 200000: %d, facts %d", got, f.IncomeOver200k)
	}
	if got := queryInt(t, db, `SELECT count(*) FROM visits WHERE cost > 2000`); got != int64(f.CostOver2000) {
		t.Errorf("cost > 2000: %d, facts %d", got, f.CostOver2000)
	}
	if got := queryInt(t, db, `SELECT max(c) FROM (SELECT count(*) c FROM visits GROUP BY patient_id)`); got != int64(f.MaxVisitsPerPatient) {
		t.Errorf("max visits per patient: %d, facts %d", got, f.MaxVisitsPerPatient)
	}
	groups := func(q string) map[string]int {
		t.Helper()
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		m := map[string]int{}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				t.Fatal(err)
			}
			m[k] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if got := groups(`SELECT region, count(*) FROM patients GROUP BY 1`); !reflect.DeepEqual(got, f.PatientsByRegion) {
		t.Errorf("patients by region %v, facts %v", got, f.PatientsByRegion)
	}
	if got := groups(`SELECT sex, count(*) FROM patients GROUP BY 1`); !reflect.DeepEqual(got, f.PatientsBySex) {
		t.Errorf("patients by sex %v, facts %v", got, f.PatientsBySex)
	}
	if got := groups(`SELECT diagnosis, count(*) FROM visits GROUP BY 1`); !reflect.DeepEqual(got, f.VisitsByDiagnosis) {
		t.Errorf("visits by diagnosis %v, facts %v", got, f.VisitsByDiagnosis)
	}
	byClinic := map[string]int{}
	for id, n := range f.VisitsByClinic {
		byClinic[fmt.Sprint(id)] = n
	}
	if got := groups(`SELECT CAST(clinic_id AS TEXT), count(*) FROM visits GROUP BY 1`); !reflect.DeepEqual(got, byClinic) {
		t.Errorf("visits by clinic %v, facts %v", got, byClinic)
	}
	// DefaultFacts hands out copies.
	f.PatientsByRegion["north"] = -1
	if DefaultFacts().PatientsByRegion["north"] == -1 {
		t.Error("DefaultFacts returned a shared map")
	}
}

func TestDeterminism(t *testing.T) {
	ctx := context.Background()
	shared, err := sharedDB()
	if err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	if err := GenerateSQLite(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	a, b := openRO(t, shared), openRO(t, fresh)
	ca, cb := checksum(t, a), checksum(t, b)
	if ca != cb {
		t.Errorf("checksums differ: %s vs %s", ca, cb)
	}
	// The aggregate checksum query agrees too.
	const q = `SELECT sum(visit_id * 7 + patient_id * 13 + clinic_id * 17 + unicode(diagnosis) * 19
		+ CAST(round(cost * 100) AS INTEGER) + CAST(julianday(visit_date) AS INTEGER)) FROM visits`
	if x, y := queryInt(t, a, q), queryInt(t, b, q); x != y {
		t.Errorf("checksum query: %d vs %d", x, y)
	}
	if !reflect.DeepEqual(ComputeFacts(GenerateOptions{}), ComputeFacts(GenerateOptions{Patients: DefaultPatients})) {
		t.Error("ComputeFacts is not deterministic")
	}
	t.Logf("checksum %s", ca)
}

func TestGenerationTime(t *testing.T) {
	if _, err := sharedDB(); err != nil {
		t.Fatal(err)
	}
	t.Logf("generating the standard dataset took %v (race detector: %v)", sharedGenTime, raceEnabled)
	if raceEnabled {
		t.Skip("timing is not meaningful under the race detector")
	}
	if sharedGenTime > 5*time.Second {
		t.Errorf("generation took %v, want well under 10s", sharedGenTime)
	}
}

func TestReuse(t *testing.T) {
	ctx := context.Background()
	path, err := sharedDB()
	if err != nil {
		t.Fatal(err)
	}
	st1, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st1.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", st1.Mode().Perm())
	}

	start := time.Now()
	if err := GenerateSQLite(ctx, path); err != nil {
		t.Fatal(err)
	}
	reuseTime := time.Since(start)
	st2, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(st1, st2) || !st1.ModTime().Equal(st2.ModTime()) {
		t.Error("second GenerateSQLite rewrote a complete file")
	}
	t.Logf("reuse check took %v", reuseTime)

	// No temporary files left behind.
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only demo.db", len(entries))
	}

	// Another scale is another dataset: regenerated.
	small := filepath.Join(t.TempDir(), "small.db")
	if err := GenerateSQLiteWith(ctx, small, GenerateOptions{Patients: 300}); err != nil {
		t.Fatal(err)
	}
	st3, err := os.Stat(small)
	if err != nil {
		t.Fatal(err)
	}
	if err := GenerateSQLiteWith(ctx, small, GenerateOptions{Patients: 400}); err != nil {
		t.Fatal(err)
	}
	st4, err := os.Stat(small)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(st3, st4) {
		t.Error("GenerateSQLiteWith(Patients: 400) reused the 300-patient file")
	}
	if n := queryInt(t, openRO(t, small), `SELECT count(*) FROM patients`); n != 400 {
		t.Errorf("patients = %d, want 400", n)
	}
}

func TestRegenerateOutdated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "demo.db")
	opts := GenerateOptions{Patients: 200}
	if err := GenerateSQLiteWith(ctx, path, opts); err != nil {
		t.Fatal(err)
	}
	for _, damage := range []string{
		`UPDATE demo_meta SET value = '0' WHERE key = 'version'`,
		`DELETE FROM visits WHERE visit_id = 1`,
	} {
		st1, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		rw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rw.Exec(damage); err != nil {
			t.Fatal(err)
		}
		rw.Close()
		if err := GenerateSQLiteWith(ctx, path, opts); err != nil {
			t.Fatal(err)
		}
		st2, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if os.SameFile(st1, st2) {
			t.Errorf("after %q: file was not regenerated", damage)
		}
		db := openRO(t, path)
		if v := queryInt(t, db, `SELECT CAST(value AS INTEGER) FROM demo_meta WHERE key = 'version'`); v != Version {
			t.Errorf("after %q: version %d", damage, v)
		}
		if n := queryInt(t, db, `SELECT count(*) FROM visits WHERE visit_id = 1`); n != 1 {
			t.Errorf("after %q: visit 1 missing", damage)
		}
	}
}

func TestRefusesForeignFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	other := filepath.Join(dir, "other.db")
	rw, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Exec(`CREATE TABLE precious (x INTEGER); INSERT INTO precious VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	if err := GenerateSQLite(ctx, other); !errors.Is(err, ErrNotDemo) {
		t.Errorf("GenerateSQLite over a foreign database: err = %v, want ErrNotDemo", err)
	}
	if n := queryInt(t, openRO(t, other), `SELECT x FROM precious`); n != 42 {
		t.Errorf("foreign database changed")
	}

	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not a database, but long enough to not look empty at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := GenerateSQLite(ctx, text); !errors.Is(err, ErrNotDemo) {
		t.Errorf("GenerateSQLite over a text file: err = %v, want ErrNotDemo", err)
	}

	// An empty file is fair game.
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := GenerateSQLiteWith(ctx, empty, GenerateOptions{Patients: 10}); err != nil {
		t.Errorf("GenerateSQLite over an empty file: %v", err)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	if err := GenerateSQLite(ctx, filepath.Join(dir, "demo.db")); err == nil {
		t.Fatal("GenerateSQLite with a canceled context succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("canceled generation left %d files", len(entries))
	}
}

// TestScale checks that the scale option changes only the number of
// patients: a smaller dataset is a prefix of a larger one.
func TestScale(t *testing.T) {
	small := NewDataset(GenerateOptions{Patients: 50})
	big := NewDataset(GenerateOptions{})
	if big.Options().Patients != DefaultPatients {
		t.Fatalf("default Patients = %d", big.Options().Patients)
	}
	var sp, bp []Patient
	var sv, bv []Visit
	for p, vs := range small.All() {
		sp = append(sp, p)
		sv = append(sv, vs...)
	}
	for p, vs := range big.All() {
		if p.ID > 50 {
			break
		}
		bp = append(bp, p)
		bv = append(bv, vs...)
	}
	if !reflect.DeepEqual(sp, bp) || !reflect.DeepEqual(sv, bv) {
		t.Error("the first 50 patients differ between scales")
	}
	if len(sp) != 50 {
		t.Errorf("patients = %d, want 50", len(sp))
	}
	// Patients() and Visits() agree with All().
	var pp []Patient
	for p := range small.Patients() {
		pp = append(pp, p)
	}
	var vv []Visit
	for v := range small.Visits() {
		vv = append(vv, v)
	}
	if !reflect.DeepEqual(pp, sp) || !reflect.DeepEqual(vv, sv) {
		t.Error("Patients()/Visits() disagree with All()")
	}
	f := ComputeFacts(GenerateOptions{Patients: 50})
	if f.Patients != 50 || f.Visits != len(sv) {
		t.Errorf("facts %d/%d, want 50/%d", f.Patients, f.Visits, len(sv))
	}
}

func TestVisitCost(t *testing.T) {
	for cents, want := range map[int64]string{2000: "20.00", 12345: "123.45", 2000000: "20000.00", 2005: "20.05"} {
		if got := (Visit{CostCents: cents}).Cost(); got != want {
			t.Errorf("Cost(%d) = %q, want %q", cents, got, want)
		}
	}
}

// TestVisitRate: the benchmarks' VisitRate 2 gives the same patients and
// more visits, though not twice as many: the 40-visit cap bites.
func TestVisitRate(t *testing.T) {
	base := ComputeFacts(GenerateOptions{Patients: 3000})
	more := ComputeFacts(GenerateOptions{Patients: 3000, VisitRate: 2})
	if base.Patients != more.Patients {
		t.Errorf("patients %d and %d, want the same", base.Patients, more.Patients)
	}
	ratio := float64(more.Visits) / float64(base.Visits)
	if ratio < 1.45 || ratio > 1.7 {
		t.Errorf("visits %d → %d (×%.2f), want about ×1.57", base.Visits, more.Visits, ratio)
	}
	if more.MaxVisitsPerPatient > MaxVisitsPerPatient {
		t.Errorf("a patient has %d visits, more than the cap %d", more.MaxVisitsPerPatient, MaxVisitsPerPatient)
	}
	if unit := ComputeFacts(GenerateOptions{Patients: 3000, VisitRate: 1}); unit.Visits != base.Visits {
		t.Errorf("VisitRate 1 gives %d visits, the default %d", unit.Visits, base.Visits)
	}
}
