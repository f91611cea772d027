package integration

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/demo"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The "done when" of the walking skeleton, with the real binary and psql:
// a noisy count close to the truth, a rejected raw read, a public table in
// full, grouped answers with exactly the public keys.
func TestDemoWithPsql(t *testing.T) {
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	if !p.waitStdout("psql \"postgres://analyst:analyst@127.0.0.1:" + p.port() + "/demo\"") {
		t.Errorf("demo did not print how to connect:\n%s", p.stdout.String())
	}

	r := psql(t, p, "analyst", "analyst", "SELECT COUNT(*) FROM patients;\n")
	if r.err != nil {
		t.Fatalf("psql: %v\n%s", r.err, r.stderr)
	}
	n, err := strconv.Atoi(strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatalf("count %q: %v", r.stdout, err)
	}
	// ε = 0.1, sensitivity 1: Laplace scale 10; 5% of 10,000 is 50 scales.
	if math.Abs(float64(n)-10000) > 500 {
		t.Errorf("COUNT(*) = %d, want within 5%% of 10000", n)
	}

	// Raw rows: an error naming the reason, SQLSTATE 42501, and psql fails.
	r = psql(t, p, "analyst", "analyst", "\\set ON_ERROR_STOP 1\nSELECT * FROM patients;\n")
	if r.err == nil || !strings.Contains(r.stderr, "42501") || !strings.Contains(r.stderr, "raw rows are never returned") {
		t.Errorf("SELECT * FROM patients: err=%v stderr=%s stdout=%s", r.err, r.stderr, r.stdout)
	}
	if strings.TrimSpace(r.stdout) != "" {
		t.Errorf("rows leaked: %q", r.stdout)
	}

	// The public table in full.
	r = psql(t, p, "analyst", "analyst", "SELECT clinic_id, name, city FROM clinics ORDER BY clinic_id;\n")
	if r.err != nil {
		t.Fatalf("psql: %v\n%s", r.err, r.stderr)
	}
	if got := lines(r.stdout); len(got) != demo.NumClinics || !strings.HasPrefix(got[0], "1|") {
		t.Errorf("clinics: got %d rows (%q...), want %d", len(got), got, demo.NumClinics)
	}

	// One session: an error in the middle leaves the connection usable.
	r = psql(t, p, "analyst", "analyst", `SELECT COUNT(*) FROM patients WHERE age >= 18;
SELECT nosuch FROM patients;
SELECT 1 + ;
DELETE FROM patients;
SELECT sex, COUNT(*) FROM patients GROUP BY sex ORDER BY sex;
`)
	out := lines(r.stdout)
	if len(out) != 3 || !strings.HasPrefix(out[1], "F|") || !strings.HasPrefix(out[2], "M|") {
		t.Errorf("session after errors: stdout %q stderr %s", out, r.stderr)
	}
	for _, want := range []string{"42703", "42601", "25006"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks SQLSTATE %s:\n%s", want, r.stderr)
		}
	}

	// Intervals on request come as a NOTICE with the answer: for visits,
	// bounded per person, they cover what bounding removed too; patients
	// is keyed by its unit (one row per person), so only its noise.
	r = psql(t, p, "analyst", "analyst", "SET dpproxy.intervals = notice;\nSELECT COUNT(*) FROM visits;\nSELECT COUNT(*) FROM patients;\n")
	if !strings.Contains(r.stderr, "NOTICE:") || !strings.Contains(r.stderr, "dpproxy: 95 % confidence intervals (noise, and the bias of contribution bounding measured with a tenth of ε): count in [") ||
		!strings.Contains(r.stderr, "dpproxy: 95 % confidence intervals (noise): count in [") {
		t.Errorf("psql shows no interval notice: stderr %q", r.stderr)
	}

	// GROUP BY a column with a public key list: exactly the 8 regions.
	r = psql(t, p, "analyst", "analyst", "SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region;\n")
	got := map[string]bool{}
	for _, l := range lines(r.stdout) {
		got[strings.Split(l, "|")[0]] = true
	}
	if len(got) != len(demo.Regions) {
		t.Errorf("regions: got %v, want %v", got, demo.Regions)
	}
	for _, region := range demo.Regions {
		if !got[region] {
			t.Errorf("region %q missing from %v", region, got)
		}
	}
}

func TestDemoWrongPassword(t *testing.T) {
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	ctx := context.Background()
	for _, user := range []string{"analyst", "nobody"} {
		_, err := pgx.Connect(ctx, "postgres://"+user+":wrong@"+p.addr+"/demo?sslmode=disable")
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
			t.Errorf("user %s, wrong password: got %v, want SQLSTATE 28P01", user, err)
		}
	}
	r := psql(t, p, "analyst", "wrong", "SELECT 1;\n")
	if r.err == nil || !strings.Contains(r.stderr, "password authentication failed") {
		t.Errorf("psql with a wrong password: err=%v stderr=%s", r.err, r.stderr)
	}
}

// pgx against the demo: result types as PostgreSQL would give them, noise
// that differs between runs, and many clients at once.
func TestDemoWithPgx(t *testing.T) {
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	ctx := context.Background()
	url := "postgres://analyst:analyst@" + p.addr + "/demo?sslmode=disable&default_query_exec_mode=simple_protocol"
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	rows, err := conn.Query(ctx, "SELECT COUNT(*), SUM(age), AVG(income) FROM patients")
	if err != nil {
		t.Fatal(err)
	}
	fields := rows.FieldDescriptions()
	wantOIDs := []uint32{20, 20, 1700} // int8, int8 (sum of integer), numeric
	for i, f := range fields {
		if f.DataTypeOID != wantOIDs[i] {
			t.Errorf("column %s: type OID %d, want %d", f.Name, f.DataTypeOID, wantOIDs[i])
		}
	}
	var count, sumAge int64
	var avgIncome float64
	if !rows.Next() {
		t.Fatal("no row")
	}
	if err := rows.Scan(&count, &sumAge, &avgIncome); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	facts := demo.DefaultFacts()
	if math.Abs(float64(count-int64(facts.Patients))) > 500 {
		t.Errorf("count %d far from %d", count, facts.Patients)
	}
	if avgIncome < 0 || avgIncome > 200000 {
		t.Errorf("AVG(income) %v outside the bounds", avgIncome)
	}
	// The demo's bounds keep every visit: the visits count comes out within
	// 5 % of the truth at the demo's ε, and the counts per diagnosis within
	// ten noise scales (Laplace, 40/0.5 = 80: a chance of e^-10 per group
	// to fail), with no bias from bounding.
	var visits int64
	if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM visits").Scan(&visits); err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(visits)-float64(facts.Visits)) > 0.05*float64(facts.Visits) {
		t.Errorf("visits %d, more than 5 %% from the true %d", visits, facts.Visits)
	}
	byDiagnosis, err := conn.Query(ctx, "SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis")
	if err != nil {
		t.Fatal(err)
	}
	for byDiagnosis.Next() {
		var d string
		var n int64
		if err := byDiagnosis.Scan(&d, &n); err != nil {
			t.Fatal(err)
		}
		if want := float64(facts.VisitsByDiagnosis[d]); math.Abs(float64(n)-want) > 800 {
			t.Errorf("visits with %s: %d, more than ten noise scales from the true %v", d, n, want)
		}
	}
	byDiagnosis.Close()

	// Fresh noise per query: five runs of a (textually different) count
	// are not all equal (the chance they would be is below 1e-5).
	seen := map[int64]bool{}
	for i := 0; i < 5; i++ {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM patients WHERE age >= "+strconv.Itoa(i-10)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		seen[n] = true
	}
	if len(seen) == 1 {
		t.Errorf("five noisy counts were identical: %v", seen)
	}

	// Many concurrent clients.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(ctx)
			var names []string
			rows, err := c.Query(ctx, "SELECT name FROM clinics")
			if err != nil {
				errs <- err
				return
			}
			for rows.Next() {
				var s string
				rows.Scan(&s)
				names = append(names, s)
			}
			if len(names) != demo.NumClinics {
				errs <- errors.New("wrong clinic count")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
