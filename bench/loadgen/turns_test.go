package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// turns runs each target for its share in slices and reports every slice:
// two servers answering from memory, three slices each.
func TestTurns(t *testing.T) {
	a := serveAnswers(t, answerPostgres(pgAnswer()))
	b := serveAnswers(t, answerPostgres(pgAnswer()))
	var out bytes.Buffer
	err := turns([]string{"--query", "SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region",
		"--clients", "2", "--slice", "50ms", "--duration", "150ms",
		"--target", "a", "--dsn", "postgres://bench:bench@" + a + "/bench?sslmode=disable",
		"--target", "b", "--dsn", "postgres://bench:bench@" + b + "/bench?sslmode=disable"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d results, want 2:\n%s", len(lines), out.String())
	}
	for i, line := range lines {
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if want := []string{"a", "b"}[i]; r.Target != want || r.Clients != 2 || r.Errors != 0 {
			t.Errorf("result %d: %+v", i, r)
		}
		if len(r.SlicesQPS) != 3 || r.Queries == 0 || r.Seconds < 0.14 || r.Seconds > 1 {
			t.Errorf("%s: %d queries in %.3f s, slices %v", r.Target, r.Queries, r.Seconds, r.SlicesQPS)
		}
		for _, q := range r.SlicesQPS {
			if q <= 0 {
				t.Errorf("%s: an empty slice: %v", r.Target, r.SlicesQPS)
			}
		}
		if r.SlicesCPUUS != nil || r.ProcCPUUS != 0 {
			t.Errorf("%s: CPU per query without --pid: %v", r.Target, r.SlicesCPUUS)
		}
	}
	// Refused: a slice longer than the run, a --dsn missing, --pid for
	// one target of two.
	for _, args := range [][]string{
		{"--query", "SELECT 1", "--slice", "2s", "--duration", "1s", "--target", "a", "--dsn", "x"},
		{"--query", "SELECT 1", "--target", "a", "--dsn", "x", "--target", "b"},
		{"--query", "SELECT 1", "--target", "a", "--dsn", "x", "--pid", "1", "--target", "b", "--dsn", "y"},
	} {
		if err := turns(args, &out); err == nil {
			t.Errorf("turns %v: no error", args)
		}
	}
}
