package integration

import (
	"strconv"
	"strings"
	"testing"
)

// The session features through psql against the demo: the budget as a
// view, SET/SHOW/RESET dpproxy.epsilon, the query log, the result cache
// and EXPLAIN DP.
func TestSessionFeaturesWithPsql(t *testing.T) {
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")

	r := psql(t, p, "analyst", "analyst", `SELECT * FROM dpproxy.budget;
SET dpproxy.epsilon = 0.25;
SHOW dpproxy.epsilon;
SELECT COUNT(*) FROM patients;
select   count(*)   from patients;
SELECT epsilon_spent, epsilon_remaining, session_epsilon FROM dpproxy.budget;
SELECT epsilon, query FROM dpproxy.queries;
SET dpproxy.epsilon = 'NaN';
SET dpproxy.epsilon TO 3;
SHOW dpproxy.epsilon;
RESET dpproxy.epsilon;
SHOW dpproxy.epsilon;
EXPLAIN DP SELECT COUNT(*) FROM patients;
SELECT epsilon_spent FROM dpproxy.budget;
`)
	if r.err != nil {
		t.Fatalf("psql: %v\nstderr:\n%s", r.err, r.stderr)
	}
	out := lines(r.stdout)
	// psql prints the tag of statements without rows (SET, RESET).
	var rows []string
	for _, l := range out {
		if l != "SET" && l != "RESET" {
			rows = append(rows, l)
		}
	}
	if len(rows) < 8 {
		t.Fatalf("psql output %q\nstderr:\n%s", out, r.stderr)
	}
	if rows[0] != "analyst|50|0|50|0.0001|0|0.0001|0.5|basic|||" {
		t.Errorf("dpproxy.budget at the start: %q", rows[0])
	}
	if rows[1] != "0.25" {
		t.Errorf("SHOW after SET: %q", rows[1])
	}
	// The repeated count (in other white space and case) is the cached
	// answer: the same number, charged once.
	if rows[2] != rows[3] {
		t.Errorf("repeated count %q, then %q; want the cached answer", rows[2], rows[3])
	}
	if n, err := strconv.Atoi(rows[2]); err != nil || n < 9000 || n > 11000 {
		t.Errorf("count %q", rows[2])
	}
	if rows[4] != "0.25|49.75|0.25" {
		t.Errorf("budget after one charge at ε=0.25: %q", rows[4])
	}
	// psql sends the statement with its semicolon; the log keeps the
	// first spelling, white space normalized.
	if rows[5] != "0.25|SELECT COUNT(*) FROM patients;" {
		t.Errorf("query log %q", rows[5])
	}
	if rows[6] != "0.25" {
		t.Errorf("SHOW after two refused SETs: %q, want 0.25", rows[6])
	}
	if rows[7] != "0.5" {
		t.Errorf("SHOW after RESET: %q", rows[7])
	}
	explain := strings.Join(rows[8:len(rows)-1], "\n")
	for _, want := range []string{"COUNT(*)|count|discrete Laplace|1|0.5|", "summary|cost: ε = 0.5", "backend SQL (sqlite)|"} {
		if !strings.Contains(explain, want) {
			t.Errorf("EXPLAIN DP output lacks %q:\n%s", want, explain)
		}
	}
	if last := rows[len(rows)-1]; last != "0.25" {
		t.Errorf("spent after EXPLAIN DP: %q, want 0.25 (explaining is free)", last)
	}
	if strings.Count(r.stderr, "22DP1") != 2 || !strings.Contains(r.stderr, "must be a finite number from 1e-06 to 2") {
		t.Errorf("refused SETs: stderr\n%s", r.stderr)
	}
}
