package integration

// End-to-end tests of `dpproxy audit closeness` on the demo data (SQLite),
// through a policy and from CSV files. The classes expected to fail are
// computed here, independently of package author: every class is
// compared, by brute force over the records, with every superset
// obtained by suppressing quasi-identifiers, on dense distributions.

import (
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/demo"
)

// closenessRecord is one record: its quasi-identifier values and its
// sensitive value (num when numeric).
type closenessRecord struct {
	quasi []string
	value string
	num   float64
}

// closenessExpect computes, for each class, the smallest distance to a
// superset of at least n records (+Inf when none), keyed as the report
// shows classes: "a=1, b=x".
func closenessExpect(quasi []string, recs []closenessRecord, numeric bool, n int, distance string) map[string]float64 {
	// The sensitive values in order: numbers by value, text by its bytes.
	seen := map[string]float64{}
	for _, r := range recs {
		seen[r.value] = r.num
	}
	values := make([]string, 0, len(seen))
	for v := range seen {
		values = append(values, v)
	}
	sort.Slice(values, func(i, j int) bool {
		if numeric {
			return seen[values[i]] < seen[values[j]]
		}
		return values[i] < values[j]
	})
	pos := map[string]int{}
	for i, v := range values {
		pos[v] = i
	}
	m := len(values)
	dist := func(p, q []float64) float64 {
		var d float64
		switch {
		case distance == "kl":
			for i := range p {
				if p[i] > 0 {
					d += p[i] * math.Log(p[i]/q[i])
				}
			}
		case distance == "emd" && numeric:
			if m == 1 {
				return 0
			}
			var cp, cq float64
			for i := range p {
				cp, cq = cp+p[i], cq+q[i]
				d += math.Abs(cp - cq)
			}
			d /= float64(m - 1)
		default:
			for i := range p {
				d += math.Abs(p[i] - q[i])
			}
			d /= 2
		}
		return d
	}
	share := func(members []int) []float64 {
		out := make([]float64, m)
		for _, i := range members {
			out[pos[recs[i].value]] += 1 / float64(len(members))
		}
		return out
	}
	key := func(vals []string) string {
		parts := make([]string, len(quasi))
		for i, q := range quasi {
			parts[i] = q + "=" + vals[i]
		}
		return strings.Join(parts, ", ")
	}
	classes := map[string][]int{}
	for i, r := range recs {
		classes[key(r.quasi)] = append(classes[key(r.quasi)], i)
	}
	out := map[string]float64{}
	for k, members := range classes {
		p, best := share(members), math.Inf(1)
		for mask := 0; mask < 1<<len(quasi); mask++ {
			var superset []int
			for i, r := range recs {
				match := true
				for j := range quasi {
					if mask&(1<<j) == 0 && r.quasi[j] != recs[members[0]].quasi[j] {
						match = false
					}
				}
				if match {
					superset = append(superset, i)
				}
			}
			if len(superset) >= n {
				best = min(best, dist(p, share(superset)))
			}
		}
		out[k] = best
	}
	return out
}

// closenessRead reads quasi-identifier and sensitive columns of a demo
// table.
func closenessRead(t *testing.T, db *sql.DB, table string, quasi []string, sensitive string, numeric bool) []closenessRecord {
	t.Helper()
	rows, err := db.Query(fmt.Sprintf("SELECT %s, %s FROM %s", strings.Join(quasi, ", "), sensitive, table))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var recs []closenessRecord
	for rows.Next() {
		vals := make([]string, len(quasi)+1)
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		r := closenessRecord{quasi: vals[:len(quasi)], value: vals[len(quasi)]}
		if numeric {
			if r.num, err = strconv.ParseFloat(r.value, 64); err != nil {
				t.Fatal(err)
			}
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

var closenessFail = regexp.MustCompile(`(?m)^fail    (.*) \((\d+) records?\): nearest superset .* at (\d+\.\d{4}) > ε `)

// closenessCheck runs an audit and compares the classes it fails, and
// their distances, with want (every class's nearest distance).
func closenessCheck(t *testing.T, args []string, want map[string]float64, epsilon float64) string {
	t.Helper()
	stdout, stderr, code := dpproxyCmd(t, append([]string{"audit", "closeness"}, args...)...)
	failing := map[string]bool{}
	for k, d := range want {
		if d > epsilon+1e-9 {
			failing[k] = true
		}
	}
	if len(failing) == 0 || len(failing) == len(want) {
		t.Fatalf("%v: %d of %d classes fail: pick n and ε that tell classes apart", args, len(failing), len(want))
	}
	if code != 1 || strings.Contains(stderr, "dpproxy:") {
		t.Errorf("%v: exit %d, want 1 (a class fails) and no error message\n%s", args, code, stderr)
	}
	got := map[string]bool{}
	for _, m := range closenessFail.FindAllStringSubmatch(stdout, -1) {
		got[m[1]] = true
		d, _ := strconv.ParseFloat(m[3], 64)
		if math.Abs(d-want[m[1]]) > 5.1e-5 {
			t.Errorf("%v: class %s at %v, want %.6f", args, m[1], d, want[m[1]])
		}
	}
	if !closenessSameSet(got, failing) {
		var extra, missing []string
		for k := range got {
			if !failing[k] {
				extra = append(extra, k)
			}
		}
		for k := range failing {
			if !got[k] {
				missing = append(missing, k)
			}
		}
		t.Errorf("%v: failed %d classes, want %d; wrongly failed %q, missed %q\n%s", args, len(got), len(failing), extra, missing, stdout)
	}
	if summary := fmt.Sprintf("%d classes, %d failing", len(want), len(failing)); !strings.Contains(stdout, summary) {
		t.Errorf("%v: no %q in\n%s", args, summary, stdout)
	}
	return stdout
}

func closenessSameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func TestClosenessAuditDemo(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "demo.db")
	if err := demo.GenerateSQLite(context.Background(), dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t, "backend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath), 10)
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	audit := func(table, quasi, sensitive string, n int, epsilon float64, distance string) []string {
		return []string{"--config", policy, "--table", table, "--quasi", quasi, "--sensitive", sensitive,
			"--n", strconv.Itoa(n), "--epsilon", strconv.FormatFloat(epsilon, 'g', -1, 64), "--distance", distance}
	}

	// The public table clinics: a city with one clinic is a class of one,
	// 1 − 1/25 from the whole table by the variational distance (ln 25 by
	// kl); a city with two clinics passes as it is.
	clinics := closenessRead(t, db, "clinics", []string{"city"}, "name", false)
	out := closenessCheck(t, audit("clinics", "city", "name", 2, 0.9, "variational"), closenessExpect([]string{"city"}, clinics, false, 2, "variational"), 0.9)
	if !strings.Contains(out, "fail    city=Oakford (1 record): nearest superset the whole table (25 records) at 0.9600 > ε 0.9\n") {
		t.Errorf("clinics: Oakford\n%s", out)
	}
	closenessCheck(t, audit("clinics", "city", "name", 2, 3, "kl"), closenessExpect([]string{"city"}, clinics, false, 2, "kl"), 3)

	// The protected table patients, age (numeric) by region and sex: 16
	// classes, each compared with its region, its sex and all patients.
	quasi := []string{"region", "sex"}
	patients := closenessRead(t, db, "patients", quasi, "age", true)
	byAge := closenessExpect(quasi, patients, true, 1000, "emd")
	out = closenessCheck(t, audit("patients", "region,sex", "age", 1000, 0.015, "emd"), byAge, 0.015)
	if !strings.Contains(out, "sensitive age (numeric, 101 distinct values)") || !strings.Contains(out, "by emd (ordered earth mover's distance)") {
		t.Errorf("patients by age:\n%s", out)
	}
	// At a larger ε every class passes (exit 0).
	if stdout, _, code := dpproxyCmd(t, append([]string{"audit", "closeness"}, audit("patients", "region,sex", "age", 1000, 0.05, "emd")...)...); code != 0 || !strings.Contains(stdout, "16 classes, 0 failing") {
		t.Errorf("at ε 0.05: exit %d\n%s", code, stdout)
	}

	// region (categorical) by age and sex: 200 classes of about 50, most
	// of them compared with the patients of their age (about 100), their
	// sex, or all; emd on text is the variational distance.
	quasi = []string{"age", "sex"}
	regions := closenessRead(t, db, "patients", quasi, "region", false)
	closenessCheck(t, audit("patients", "age,sex", "region", 100, 0.1, "kl"), closenessExpect(quasi, regions, false, 100, "kl"), 0.1)
	variational := closenessExpect(quasi, regions, false, 100, "variational")
	closenessCheck(t, audit("patients", "age,sex", "region", 100, 0.15, "variational"), variational, 0.15)
	out = closenessCheck(t, audit("patients", "age,sex", "region", 100, 0.15, "emd"), variational, 0.15)
	if !strings.Contains(out, "note    region is not numeric: emd takes every two values as 1 apart, which is the variational distance\n") {
		t.Errorf("emd over text:\n%s", out)
	}

	// The same patients from a CSV file give the same classes.
	csvPath := filepath.Join(dir, "patients.csv")
	f, err := os.Create(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	w.Write([]string{"region", "sex", "age"})
	for _, r := range patients {
		w.Write([]string{r.quasi[0], r.quasi[1], r.value})
	}
	w.Flush()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	out = closenessCheck(t, []string{"--csv", csvPath, "--quasi", "region,sex", "--sensitive", "age", "--n", "1000", "--epsilon", "0.015"}, byAge, 0.015)
	if !strings.Contains(out, "table   patients.csv: 10000 records in 16 classes") {
		t.Errorf("from CSV:\n%s", out)
	}

	// Bad flags exit 2 with a message; an unknown column too.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{audit("patients", "region,sex", "age", 0, 0.1, "emd"), "dpproxy audit closeness: n must be at least 1 (got 0)"},
		{audit("patients", "region,sex", "age", 10, -0.1, "emd"), "dpproxy audit closeness: ε must be a number ≥ 0 (got -0.1)"},
		{audit("patients", "region,sex", "age", 10, 0.1, "jaccard"), `dpproxy audit closeness: --distance: unknown distance "jaccard"`},
		{audit("patients", "region,age", "age", 10, 0.1, "emd"), `dpproxy audit closeness: the sensitive column "age" is also a quasi-identifier`},
		{audit("patients", "region,colour", "age", 10, 0.1, "emd"), "dpproxy: colour: no such column in patients (its columns: patient_id, age, sex, region, income)"},
	} {
		_, stderr, code := dpproxyCmd(t, append([]string{"audit", "closeness"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s", tc.args, code, tc.want, stderr)
		}
	}
}

// The t-closeness paper's salaries from a CSV file: with n = 9 each class
// of three is compared with the whole table, at emd 0.375 (3k, 4k, 5k),
// 1/6 (6k, 8k, 11k) and 17/72 (7k, 9k, 10k).
func TestClosenessAuditCSV(t *testing.T) {
	salaries := filepath.Join("..", "author", "testdata", "closeness", "salaries.csv")
	f, err := os.Open(salaries)
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var recs []closenessRecord
	for _, r := range records[1:] {
		num, _ := strconv.ParseFloat(r[2], 64)
		recs = append(recs, closenessRecord{quasi: r[:2], value: r[2], num: num})
	}
	want := closenessExpect([]string{"zip", "age"}, recs, true, 9, "emd")
	got := []float64{want["zip=476**, age=2*"], want["zip=4790*, age=≥40"], want["zip=476**, age=3*"]}
	for i, d := range []float64{0.375, 1.0 / 6, 17.0 / 72} {
		if math.Abs(got[i]-d) > 1e-12 {
			t.Fatalf("the test's own emd: %v, want 0.375, 1/6, 17/72", got)
		}
	}
	out := closenessCheck(t, []string{"--csv", salaries, "--quasi", "zip,age", "--sensitive", "salary", "--n", "9", "--epsilon", "0.2"}, want, 0.2)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !slices.Contains(lines, "worst   zip=476**, age=2* (3 records): nearest superset the whole table (9 records) at 0.3750 > ε 0.2") {
		t.Errorf("the worst class:\n%s", out)
	}
}
