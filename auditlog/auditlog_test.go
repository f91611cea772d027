package auditlog

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/session"
	"github.com/dpproxy/dpproxy/sqlerr"
)

func readLines(t *testing.T, path string) []Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// Each statement is one JSON line with its fields; the decision follows
// the SQLSTATE.
func TestRecordLines(t *testing.T) {
	for _, fsync := range []string{config.AuditFsyncNever, config.AuditFsyncAlways} {
		path := filepath.Join(t.TempDir(), "logs", "audit.jsonl")
		l, err := Open(config.Audit{Path: path, MaxSizeMB: 10, MaxFiles: 2, Fsync: fsync})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		statements := []session.Statement{
			{Time: at, Analyst: "ana", Client: "192.0.2.1:4000", Protocol: "postgres", Text: "SELECT COUNT(*) FROM visits", Kind: session.KindDP, Charged: budget.Cost{Epsilon: 0.5}, Rows: 1, Duration: 1500 * time.Microsecond},
			{Time: at, Analyst: "ana", Protocol: "mysql", Text: "SELECT COUNT(*) FROM visits", Kind: session.KindCached, Rows: 1, CacheHit: true},
			{Time: at, Analyst: "bob", Text: "SELECT * FROM visits", Kind: session.KindDP, SQLState: sqlerr.InsufficientPrivilege, Error: "raw rows are never returned"},
			{Time: at, Analyst: "bob", Text: "SELECT COUNT(*) FROM visits", Kind: session.KindDP, SQLState: sqlerr.BudgetExhausted, Error: "budget exhausted"},
			{Time: at, Analyst: "bob", Text: "SELECT SUM(cost) FROM visits", Kind: session.KindDP, SQLState: sqlerr.LedgerUnavailable, Error: "the ledger is unavailable"},
		}
		for _, st := range statements {
			l.Record(st)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		lines := readLines(t, path)
		if len(lines) != len(statements) {
			t.Fatalf("%d lines for %d statements", len(lines), len(statements))
		}
		want := []Line{
			{Time: at, Analyst: "ana", Client: "192.0.2.1:4000", Protocol: "postgres", Statement: "SELECT COUNT(*) FROM visits", Kind: "dp", Decision: "answered", Epsilon: 0.5, Rows: 1, DurationMS: 1.5},
			{Time: at, Analyst: "ana", Protocol: "mysql", Statement: "SELECT COUNT(*) FROM visits", Kind: "cached", Decision: "answered", Rows: 1, CacheHit: true},
			{Time: at, Analyst: "bob", Statement: "SELECT * FROM visits", Kind: "dp", Decision: "refused", SQLState: "42501", Error: "raw rows are never returned"},
			{Time: at, Analyst: "bob", Statement: "SELECT COUNT(*) FROM visits", Kind: "dp", Decision: "budget_exhausted", SQLState: "53DP1", Error: "budget exhausted"},
			{Time: at, Analyst: "bob", Statement: "SELECT SUM(cost) FROM visits", Kind: "dp", Decision: "failed", SQLState: "58DP1", Error: "the ledger is unavailable"},
		}
		for i := range want {
			if lines[i] != want[i] {
				t.Errorf("fsync %s: line %d\n got %+v\nwant %+v", fsync, i, lines[i], want[i])
			}
		}
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("the log's mode: %v %v, want 0600 (statements are sensitive)", info.Mode(), err)
		}
	}
}

// Past max_size_mb the file is rotated; max_files rotated files are kept
// and no line is lost or split across files, with fsync on.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(config.Audit{Path: path, MaxSizeMB: 1, MaxFiles: 2, Fsync: config.AuditFsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("x", 10_000)
	const n = 450 // ~4.5 MB: four rotations
	for i := 0; i < n; i++ {
		l.Record(session.Statement{Time: time.Now(), Analyst: "ana", Text: text, Kind: session.KindSession, Rows: i})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.Errors() != 0 {
		t.Fatalf("%d lines not written", l.Errors())
	}
	// Old files are deleted in the background: wait for it.
	var files []string
	for deadline := time.Now().Add(5 * time.Second); ; {
		files, _ = filepath.Glob(filepath.Join(dir, "audit*.jsonl"))
		if len(files) <= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(files) != 3 {
		t.Fatalf("files %v: want the current one and 2 rotated", files)
	}
	// The kept lines are the newest, consecutive, each whole.
	var rows []int
	for _, f := range files {
		info, _ := os.Stat(f)
		if info.Size() > 1<<20 {
			t.Errorf("%s has %d bytes, over max_size_mb", f, info.Size())
		}
	}
	// Rotated names (audit-<time>.jsonl) sort by time, before the
	// current file.
	for _, f := range files {
		for _, line := range readLines(t, f) {
			rows = append(rows, line.Rows)
		}
	}
	if len(rows) == 0 || rows[len(rows)-1] != n-1 {
		t.Fatalf("the last line kept is row %v, want %d", rows[len(rows)-1:], n-1)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i] != rows[i-1]+1 {
			t.Fatalf("lines kept are not consecutive at %d: %d then %d", i, rows[i-1], rows[i])
		}
	}
}

// A log that cannot be created fails at start.
func TestOpenFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(config.Audit{Path: filepath.Join(dir, "file", "audit.jsonl"), MaxSizeMB: 1, MaxFiles: 1}); err == nil {
		t.Error("an audit log under a file opened")
	}
}
