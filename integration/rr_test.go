package integration

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/demo"
)

// An analyst gets a randomized-response table of two categorical columns
// from the demo through psql, charged once; its debiased counts hold the
// truth; the mysql client gets the same release (the cache) at no cost.
func TestRandomizedResponseRelease(t *testing.T) {
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	facts := demo.DefaultFacts()
	r := psql(t, p, "analyst", "analyst", `SELECT dpproxy.rr(sex), dpproxy.rr(region) FROM patients;
SELECT column_name, value, released, estimate, estimate_lo95, estimate_hi95 FROM dpproxy.rr_counts;
SELECT epsilon_spent FROM dpproxy.budget;
SELECT dpproxy.rr(patient_id) FROM patients;
`)
	if !strings.Contains(r.stderr, "patient_id is the privacy unit of patients") || !strings.Contains(r.stderr, "randomized response: each value is kept with probability") {
		t.Fatalf("psql: %v\n%s", r.err, r.stderr)
	}
	out := lines(r.stdout)
	var released, counts []string
	for _, l := range out {
		switch strings.Count(l, "|") {
		case 1:
			released = append(released, l)
		case 5:
			counts = append(counts, l)
		}
	}
	if len(released) < facts.Patients || len(released) > facts.Patients+2000 {
		t.Errorf("%d rows released for %d patients (and dummies)", len(released), facts.Patients)
	}
	if spent := out[len(out)-1]; spent != "0.5" {
		t.Errorf("spent %q after one release, want 0.5", spent)
	}
	truth := map[string]int{}
	for v, n := range facts.PatientsBySex {
		truth["sex|"+v] = n
	}
	for v, n := range facts.PatientsByRegion {
		truth["region|"+v] = n
	}
	if len(counts) != len(truth) {
		t.Fatalf("rr_counts %q, want a row per value of sex and region", counts)
	}
	for _, l := range counts {
		f := strings.Split(l, "|")
		est, _ := strconv.ParseFloat(f[3], 64)
		lo, _ := strconv.ParseFloat(f[4], 64)
		hi, _ := strconv.ParseFloat(f[5], 64)
		want, ok := truth[f[0]+"|"+f[1]]
		// The stated 95 % interval, widened to 99.9 % (3.29/1.96) so that
		// ten values rarely miss by chance.
		half := (hi - lo) / 2 * 3.29 / 1.96
		if !ok || math.Abs(est-float64(want)) > half {
			t.Errorf("%s=%s: estimate %.0f (95 %% interval [%.0f, %.0f]), truth %d", f[0], f[1], est, lo, hi, want)
		}
	}
	// The same release through the MySQL front end: the cache, free.
	my := mysqlCLI(t, p.mysqlAddress(t), "demo", "SELECT dpproxy.rr(sex), dpproxy.rr(region) FROM patients;\nSELECT epsilon_spent FROM dpproxy.budget;\n")
	myLines := lines(my)
	if len(myLines) != len(released)+1 || myLines[len(myLines)-1] != "0.5" {
		t.Errorf("mysql client: %d lines (want %d rows and the budget), budget %q", len(myLines)-1, len(released), myLines[len(myLines)-1])
	}
}
