package session

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/demo"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
)

// benchEngine is an engine over a small demo dataset in SQLite (2,000
// patients) with the demo policy, a durable ledger and a budget that never
// runs out. cacheSize 0 turns the result cache off.
func benchEngine(b *testing.B, cacheSize int) *engine.Engine {
	b.Helper()
	// Log lines would interleave with the benchmark output that
	// bench/run.sh parses.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	ctx := context.Background()
	dir := b.TempDir()
	dbPath := filepath.Join(dir, "demo.db")
	if err := demo.GenerateSQLiteWith(ctx, dbPath, demo.GenerateOptions{Patients: 2000}); err != nil {
		b.Fatal(err)
	}
	pol, err := config.Load("../cmd/dpproxy/demo_policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	pol.Cache.Size = cacheSize
	be, err := backend.OpenSQLite(ctx, dbPath, 4)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	store, err := budget.OpenSQLite(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	acct, err := budget.NewAccountant(ctx, store, map[string]budget.Cost{"analyst": {Epsilon: 1e15, Delta: 1}})
	if err != nil {
		b.Fatal(err)
	}
	e, err := engine.New(engine.Options{Policy: pol, Backend: be, Dialect: rewrite.SQLite, Accountant: acct})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

func benchSession(b *testing.B, e *engine.Engine) *Session {
	b.Helper()
	s, err := New(serverFor(b, e), "analyst", rewrite.PostgresFrontEnd)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

const benchDPQuery = `SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region`

// BenchmarkCacheHit is a repeated DP query answered from the result cache
// through Session.Execute: the plan memo's lookup (the first answer parsed
// and analyzed it), the release's cache lookup, and the cached release
// itself returned (issue 6, workload 3's in-process part).
func BenchmarkCacheHit(b *testing.B) {
	e := benchEngine(b, 1000)
	s := benchSession(b, e)
	ctx := context.Background()
	if _, err := s.Execute(ctx, benchDPQuery); err != nil { // the charged first answer
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Execute(ctx, benchDPQuery); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCacheHitParallel: 16 sessions per core repeating the query.
func BenchmarkCacheHitParallel(b *testing.B) {
	e := benchEngine(b, 1000)
	ctx := context.Background()
	if _, err := benchSession(b, e).Execute(ctx, benchDPQuery); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		s := benchSession(b, e)
		for pb.Next() {
			if _, err := s.Execute(ctx, benchDPQuery); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDPQueryNoCache is the whole protected path with the cache off:
// analyze, reserve, bounded query on SQLite (2,000 patients), noise and a
// durable ledger commit (one fsync per query when serial).
func BenchmarkDPQueryNoCache(b *testing.B) {
	e := benchEngine(b, 0)
	s := benchSession(b, e)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Execute(ctx, `SELECT COUNT(*) FROM patients`); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPassthrough is a public-table query through a session.
func BenchmarkPassthrough(b *testing.B) {
	e := benchEngine(b, 0)
	s := benchSession(b, e)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Execute(ctx, `SELECT clinic_id, name, city FROM clinics WHERE clinic_id = 7`); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDPQueryDistinctText is the protected path for a new query text
// each time (no plan memo, no cache): what a charged query costs dpproxy
// before and after the backend (bench/run.sh workload 5).
func BenchmarkDPQueryDistinctText(b *testing.B) {
	e := benchEngine(b, 0)
	s := benchSession(b, e)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Execute(ctx, `SELECT COUNT(*) FROM patients WHERE patient_id = `+strconv.Itoa(i%2000+1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanDistinctText is the planning of a new DP query text, the
// step a shape's template replaces: "analysis" parses and analyzes it in
// full, "template" takes its plan from the shape's template.
func BenchmarkPlanDistinctText(b *testing.B) {
	e := benchEngine(b, 0)
	s := benchSession(b, e)
	text := func(i int) string {
		return `SELECT COUNT(*) FROM patients WHERE patient_id = ` + strconv.Itoa(i%2000+2)
	}
	for i := range 2 { // a shape's template is made at its second sighting
		if _, err := s.Execute(context.Background(), text(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("analysis", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			stmt, parsed, err := s.parseOne(text(i))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.prepare(stmt, castLookup(parsed)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("template", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if p, _ := s.templatedPlan(text(i)); p == nil {
				b.Fatal("no template")
			}
		}
	})
}
