package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	if got := w.span(); got != 2 {
		t.Fatalf("span %v s, want 2", got)
	}
	// A late report's rate covers the time since the one before it.
	late := pgbenchWindow{seconds: 3}
	for _, p := range []progress{{1, 100, 1}, {2, 1000, 1}, {4.0, 500, 1}} {
		late.add(p)
	}
	if !late.done() || late.queries() != 2000 || late.span() != 3 {
		t.Fatalf("late report: done %v, queries %d, span %v; want true, 2000, 3", late.done(), late.queries(), late.span())
	}
}

// fakePgbench writes a script standing in for pgbench that prints body's
// lines to stderr, one every 0.1 s, then runs what follows.
func fakePgbench(t *testing.T, lines []string, then string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "echo '%s' >&2; sleep 0.1\n", l)
	}
	b.WriteString(then + "\n")
	path := filepath.Join(t.TempDir(), "pgbench")
	if err := os.WriteFile(path, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Without a ledger the window's queries and length are pgbench's own;
// the run stops pgbench once the window has closed, and what a late
// report covers counts in full.
func TestPgbenchWindowFromReports(t *testing.T) {
	bin := fakePgbench(t, []string{
		"progress: 1.0 s, 900.0 tps, lat 2.000 ms stddev 0.1, 0 failed",
		"progress: 2.0 s, 1000.0 tps, lat 4.000 ms stddev 0.1, 0 failed",
		"progress: 3.5 s, 2000.0 tps, lat 1.000 ms stddev 0.1, 0 failed",
		"progress: 4.5 s, 9999.0 tps, lat 9.000 ms stddev 0.1, 0 failed",
	}, "exec sleep 30")
	var out bytes.Buffer
	start := time.Now()
	err := pgbench([]string{"--pgbench", bin, "--dsn", "postgres://bench:bench@127.0.0.1:1/bench", "--query", "SELECT 1", "--duration", "2s"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the run took %v: pgbench not stopped at the window's end", d)
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	// 1000 in the second to 2.0 s, 2000 a second for the 1.5 s to 3.5 s.
	if r.Queries != 4000 || r.Seconds != 2.5 || r.QPS != 1600 || r.Errors != 0 {
		t.Fatalf("queries %d in %v s (%v q/s), %d errors; want 4000 in 2.5 s, 1600 q/s, none", r.Queries, r.Seconds, r.QPS, r.Errors)
	}
	if r.MeanUS != 1750 { // 1000 queries at 4 ms, 3000 at 1 ms
		t.Fatalf("mean latency %v µs, want 1750", r.MeanUS)
	}
}

// A client that aborts and a pgbench that ends before the window closes
// fail the run with pgbench's own words.
func TestPgbenchEndsEarly(t *testing.T) {
	bin := fakePgbench(t, []string{
		"progress: 1.0 s, 900.0 tps, lat 2.000 ms stddev 0.1, 0 failed",
		"pgbench: error: client 0 aborted in command 1 (SQL) of script 0; ERROR:  budget exhausted",
	}, "echo 'number of transactions actually processed: 900'; exit 2")
	err := pgbench([]string{"--pgbench", bin, "--dsn", "postgres://bench:bench@127.0.0.1:1/bench", "--query", "SELECT 1", "--duration", "2s"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "ended before its measured window") || !strings.Contains(err.Error(), "budget exhausted") ||
		!strings.Contains(err.Error(), "its output: number of transactions actually processed: 900") {
		t.Fatalf("err = %v", err)
	}
}

// The ledger's edges are its last charge ID; the window's charges and
// their transactions (distinct commit times) are counted between them.
func TestLedgerSpan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	if got := lastChargeID(path); got != -1 {
		t.Fatalf("lastChargeID of a missing ledger = %d, want -1", got)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE charges (id INTEGER PRIMARY KEY, at_ns INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if got := lastChargeID(path); got != 0 {
		t.Fatalf("lastChargeID of an empty ledger = %d, want 0", got)
	}
	// Charges 1-10 in transactions at 100 (1-3), 200 (4-7) and 300 (8-10).
	for i, at := range []int{100, 100, 100, 200, 200, 200, 200, 300, 300, 300} {
		if _, err := db.Exec(`INSERT INTO charges VALUES (?, ?)`, i+1, at); err != nil {
			t.Fatal(err)
		}
	}
	if got := lastChargeID(path); got != 10 {
		t.Fatalf("lastChargeID = %d, want 10", got)
	}
	charges, txs, err := ledgerSpan(path, 3, 9)
	if err != nil || charges != 6 || txs != 2 {
		t.Fatalf("ledgerSpan(3, 9) = %d charges, %d transactions, %v; want 6, 2", charges, txs, err)
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
