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
	sums := map[string]float64{}
	for _, l := range counts {
		f := strings.Split(l, "|")
		est, _ := strconv.ParseFloat(f[3], 64)
		lo, _ := strconv.ParseFloat(f[4], 64)
		hi, _ := strconv.ParseFloat(f[5], 64)
		want, ok := truth[f[0]+"|"+f[1]]
		sums[f[0]] += est
		// The stated 95 % interval, widened to 4.42 standard errors
		// (p = 10⁻⁵ per value): ten values at 99.9 % each missed by chance
		// in about one run in a hundred (one did, 3.7 standard errors
		// out). The intervals' coverage itself is tested on many releases
		// in engine (TestRREstimatesUnbiased).
		half := (hi - lo) / 2 * 4.42 / 1.96
		if !ok || math.Abs(est-float64(want)) > half {
			t.Errorf("%s=%s: estimate %.0f (95 %% interval [%.0f, %.0f]), truth %d", f[0], f[1], est, lo, hi, want)
		}
	}
	// Exactly, whatever the draws: each column's estimates add up to the
	// rows released less the dummies' mean (every value in the domain),
	// the same for both columns; so at most the rows released, and at
	// least the patients less a few dummies' spread.
	if d := math.Abs(sums["sex"] - sums["region"]); d > 1 || sums["sex"] > float64(len(released)) || sums["sex"] < float64(facts.Patients)-500 {
		t.Errorf("estimates sum to %.1f (sex) and %.1f (region) for %d rows released, %d patients", sums["sex"], sums["region"], len(released), facts.Patients)
	}
	// The same release through the MySQL front end: the cache, free.
	my := mysqlCLI(t, p.mysqlAddress(t), "demo", "SELECT dpproxy.rr(sex), dpproxy.rr(region) FROM patients;\nSELECT epsilon_spent FROM dpproxy.budget;\n")
	myLines := lines(my)
	if len(myLines) != len(released)+1 || myLines[len(myLines)-1] != "0.5" {
		t.Errorf("mysql client: %d lines (want %d rows and the budget), budget %q", len(myLines)-1, len(released), myLines[len(myLines)-1])
	}
}
