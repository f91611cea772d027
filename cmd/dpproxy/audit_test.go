package main

// Tests of `dpproxy audit closeness`: from a CSV file and through a
// policy's SQLite backend, its failure (errAuditFailed, exit 1) and its
// refusals of bad flags (errUsage, exit 2).

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

var salariesCSV = filepath.Join("..", "..", "author", "testdata", "closeness", "salaries.csv")

// The t-closeness paper's salaries: with n = 9 each class of three is
// compared with the whole table, at emd 0.375, 1/6 and 17/72.
func TestAuditClosenessCSV(t *testing.T) {
	out, _, err := runCmd(t, "", "audit", "closeness", "--csv", salariesCSV, "--quasi", "zip,age", "--sensitive", "salary", "--n", "9", "--epsilon", "0.2")
	if !errors.Is(err, errAuditFailed) {
		t.Fatalf("got %v, want errAuditFailed\n%s", err, out)
	}
	for _, want := range []string{
		"fail    zip=476**, age=2* (3 records): nearest superset the whole table (9 records) at 0.3750 > ε 0.2\n",
		"fail    zip=476**, age=3* (3 records): nearest superset the whole table (9 records) at 0.2361 > ε 0.2\n",
		"3 classes, 2 failing (6 of 9 records in failing classes); salaries.csv does not have (9, 0.2)-closeness\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCmd(t, "", "audit", "closeness", "--csv", salariesCSV, "--quasi", "zip, age", "--sensitive", "salary", "--n", "9", "--epsilon", "0.375", "--distance", "emd")
	if err != nil || !strings.Contains(out, "salaries.csv has (9, 0.375)-closeness\n") {
		t.Errorf("at ε = 0.375: %v\n%s", err, out)
	}
	out, _, err = runCmd(t, "", "audit", "closeness", "--csv", salariesCSV, "--quasi", "zip,age", "--sensitive", "disease", "--n", "9", "--epsilon", "0.5", "--distance", "variational")
	if err != nil || !strings.Contains(out, "worst   zip=476**, age=2* (3 records): nearest superset the whole table (9 records) at 0.4444 ≤ ε 0.5\n") {
		t.Errorf("disease by the variational distance: %v\n%s", err, out)
	}
}

// Through a policy: the table is read with the policy's backend.
// readings(ward, shift, score): ward a has scores 1, 2 on the day shift
// and 9, 9 at night; ward b 9, 9, 9, 9 by day. With n = 4, class (a,
// day) is nearest ward=a (1, 2, 9, 9): cumulative differences over the
// values 1, 2, 9 are 1/4, 1/2, 0, so emd (3/4)/2 = 3/8; the day shift
// (1, 2, 9 ×4) is at 1/2, the whole table at 9/16. Class (a, night) is
// 3/16 from the whole table; (b, day) has 4 records.
func TestAuditClosenessPolicy(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "wards.db")
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`CREATE TABLE readings (ward TEXT, shift TEXT, score INTEGER)`,
		`INSERT INTO readings VALUES ('a', 'day', 1), ('a', 'day', 2), ('a', 'night', 9), ('a', 'night', 9), ('b', 'day', 9), ('b', 'day', 9), ('b', 'day', 9), ('b', 'day', 9)`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	policy := filepath.Join(dir, "policy.yaml")
	yaml := "backend:\n  kind: sqlite\n  path: " + strconv.Quote(dbPath) + `
analysts:
  - name: analyst
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU="
    budget: {epsilon: 1}
public_tables:
  - readings
`
	if err := os.WriteFile(policy, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := func(epsilon string, extra ...string) (string, error) {
		out, _, err := runCmd(t, "", append([]string{"audit", "closeness", "--config", policy, "--table", "readings", "--quasi", "ward,shift", "--sensitive", "score", "--n", "4", "--epsilon", epsilon}, extra...)...)
		return out, err
	}
	out, err := audit("0.3")
	want := "fail    ward=a, shift=day (2 records): nearest superset ward=a, shift=* (4 records) at 0.3750 > ε 0.3\n"
	if !errors.Is(err, errAuditFailed) || !strings.Contains(out, want) || !strings.Contains(out, "3 classes, 1 failing (2 of 8 records in failing classes)") {
		t.Errorf("at ε 0.3: %v, want %q in\n%s", err, want, out)
	}
	if out, err := audit("0.375"); err != nil || !strings.Contains(out, "readings has (4, 0.375)-closeness") {
		t.Errorf("at ε 0.375: %v\n%s", err, out)
	}
	if _, err := audit("0.5", "--quasi", "ward,colour"); errors.Is(err, errUsage) || err == nil || err.Error() != "colour: no such column in readings (its columns: ward, shift, score)" {
		t.Errorf("an unknown column: %v", err)
	}
	if _, _, err := runCmd(t, "", "audit", "closeness", "--config", policy, "--table", "nothing", "--quasi", "a", "--sensitive", "b", "--n", "1", "--epsilon", "0"); err == nil || !strings.Contains(err.Error(), `no table "nothing"`) {
		t.Errorf("an unknown table: %v", err)
	}
}

// Bad flags are usage errors (exit 2) that say what is wrong; -h prints
// the flags (exit 0).
func TestAuditClosenessUsage(t *testing.T) {
	base := []string{"audit", "closeness", "--csv", salariesCSV, "--quasi", "zip,age", "--sensitive", "salary"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--n", "9"}, "--epsilon E is required"},
		{[]string{"--epsilon", "0.1"}, "--n N is required"},
		{[]string{"--n", "0", "--epsilon", "0.1"}, "n must be at least 1 (got 0)"},
		{[]string{"--n", "3", "--epsilon", "-1"}, "ε must be a number ≥ 0 (got -1)"},
		{[]string{"--n", "3", "--epsilon", "0.1", "--distance", "hamming"}, `--distance: unknown distance "hamming": want variational, kl or emd`},
		{[]string{"--n", "3", "--epsilon", "0.1", "--quasi", "zip,salary"}, `the sensitive column "salary" is also a quasi-identifier`},
		{[]string{"--n", "3", "--epsilon", "0.1", "--quasi", ""}, "give at least one quasi-identifier column"},
		{[]string{"--n", "3", "--epsilon", "0.1", "--config", "policy.yaml"}, "give --csv FILE, or --config FILE and --table NAME, not both"},
		{[]string{"--n", "3", "--epsilon", "0.1", "extra"}, `unexpected argument "extra"`},
	} {
		_, stderr, err := runCmd(t, "", append(base, tc.args...)...)
		if !errors.Is(err, errUsage) || !strings.Contains(stderr, "dpproxy audit closeness: "+tc.want) {
			t.Errorf("%v: %v, stderr %q, want %q", tc.args, err, stderr, tc.want)
		}
	}
	if _, stderr, err := runCmd(t, "", "audit", "closeness", "--quasi", "a", "--sensitive", "b", "--n", "1", "--epsilon", "0"); !errors.Is(err, errUsage) || !strings.Contains(stderr, "give --config FILE and --table NAME (or --csv FILE)") {
		t.Errorf("no data: %v %q", err, stderr)
	}
	if _, _, err := runCmd(t, "", append(base, "--quasi", "zip,height", "--n", "3", "--epsilon", "0.1")...); err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), `no such column "height" (the header has: zip, age, salary, disease)`) {
		t.Errorf("an unknown CSV column: %v", err)
	}
	for _, args := range [][]string{{"audit", "-h"}, {"audit", "closeness", "-h"}} {
		if _, stderr, err := runCmd(t, "", args...); !errors.Is(err, errHelp) || !strings.Contains(stderr, "closeness") {
			t.Errorf("%v: %v %q", args, err, stderr)
		}
	}
	for _, args := range [][]string{{"audit"}, {"audit", "diversity"}, {"audit", "closeness", "--no-such-flag"}} {
		if _, _, err := runCmd(t, "", args...); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
