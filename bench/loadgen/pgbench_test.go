package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPgbenchScript(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"SELECT COUNT(*) FROM patients WHERE patient_id = {i}",
			"\\set i random(1, 4611686018427387904)\nSELECT COUNT(*) FROM patients WHERE patient_id = :i;\n"},
		{" SELECT 1; ", "SELECT 1;\n"},
	} {
		if got := pgbenchScript(tc.query); got != tc.want {
			t.Errorf("pgbenchScript(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}

func TestParseProgress(t *testing.T) {
	for _, tc := range []struct {
		line string
		want progress
		ok   bool
	}{
		{"progress: 2.0 s, 38365.8 tps, lat 0.096 ms stddev 0.146, 0 failed", progress{2, 38365.8, 0.096}, true},
		{"progress: 13.0 s, 9120.0 tps, lat 14.015 ms stddev 5.2", progress{13, 9120, 14.015}, true},
		{"pgbench: error: client 3 aborted in command 1 (SQL) of script 0", progress{}, false},
		{"progress: soon", progress{}, false},
	} {
		got, ok := parseProgress(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseProgress(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// The window opens at the first report and closes seconds later; what
// pgbench counted in it is the sum of the reports after the first, and
// its latency their mean weighted by transactions.
func TestPgbenchWindow(t *testing.T) {
	w := pgbenchWindow{seconds: 2}
	events := []windowEvent{
		w.add(progress{1, 500, 9}),
		w.add(progress{2, 1000, 1}),
		w.add(progress{3, 3000, 2}),
		w.add(progress{4, 7000, 5}),
	}
	want := []windowEvent{windowStarts, windowNothing, windowEnds, windowNothing}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("events %v, want %v", events, want)
		}
	}
	if !w.done() || w.queries() != 4000 {
		t.Fatalf("done %v, queries %d; want true, 4000", w.done(), w.queries())
	}
	if got := w.meanLatencyUS(); got != 1750 {
		t.Fatalf("mean latency %v µs, want 1750", got)
	}
}

// findPgbench is pgbench on PATH or in a Debian PostgreSQL's bin.
func findPgbench(t *testing.T) string {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(m) == 0 {
		t.Skip("pgbench not installed")
	}
	return m[len(m)-1]
}

// pgbench's clients against the answer server: the run reports what
// pgbench counted in its window and what pgbench itself spent.
func TestPgbenchAgainstAnswerServer(t *testing.T) {
	bin := findPgbench(t)
	addr := serveAnswers(t, answerPostgres(pgAnswer()))
	var out bytes.Buffer
	err := pgbench([]string{"--pgbench", bin, "--dsn", "postgres://bench:bench@" + addr + "/bench?sslmode=disable",
		"--query", "SELECT region, COUNT(*) FROM patients WHERE patient_id = {i} GROUP BY region",
		"--clients", "4", "--threads", "2", "--duration", "1s"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Driver != "pgbench" || r.Clients != 4 || r.Queries < 100 || r.QPS <= 0 || r.Errors != 0 {
		t.Fatalf("result %+v", r)
	}
	if r.Seconds < 0.8 || r.Seconds > 1.5 {
		t.Fatalf("window of %v s, want about 1", r.Seconds)
	}
	if r.MeanUS <= 0 || r.ClientCPUUS <= 0 {
		t.Fatalf("mean latency %v µs, client CPU %v µs per query", r.MeanUS, r.ClientCPUUS)
	}
}

// A server pgbench cannot reach ends the run with pgbench's own reason.
func TestPgbenchRefused(t *testing.T) {
	bin := findPgbench(t)
	err := pgbench([]string{"--pgbench", bin, "--dsn", "postgres://bench:bench@127.0.0.1:1/bench?sslmode=disable",
		"--query", "SELECT 1", "--duration", "1s"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "ended before its measured window") || !strings.Contains(err.Error(), "connection") {
		t.Fatalf("err = %v", err)
	}
}

func TestPgbenchNeedsAQuery(t *testing.T) {
	err := pgbench([]string{"--dsn", "postgres://x@127.0.0.1:1/x"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "required") {
		t.Fatalf("err = %v", err)
	}
}
