package rewrite

import (
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Benchmarks of the per-query front half of the engine: parse (with the
// PostgreSQL normalizer), analyze against the policy and emit backend SQL.
// Issue 6 targets ≤ 50 µs per query; bench/run.sh reads these figures, no
// test asserts them.

// benchPolicy is the demo policy (cmd/dpproxy/demo_policy.yaml): the
// queries below are the ones the demo suggests.
func benchPolicy(b *testing.B) *config.Policy {
	b.Helper()
	pol, err := config.Load("../cmd/dpproxy/demo_policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	return pol
}

var benchQueries = []struct{ name, sql string }{
	{"CountPatients", `SELECT COUNT(*) FROM patients`},
	{"RegionCountAvg", `SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region`},
	{"DiagnosisOrdered", `SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis ORDER BY 2 DESC`},
	{"MonthBuckets", `SELECT date_trunc('month', visit_date) AS month, COUNT(*) FROM visits GROUP BY 1 ORDER BY 1`},
	{"AvgCost", `SELECT AVG(cost) FROM visits`},
	{"WhereCast", `SELECT clinic_id, SUM(cost) FROM visits WHERE visit_date >= '2024-06-01'::date AND diagnosis IN ('J06', 'I10') GROUP BY clinic_id`},
	{"MetabaseNested", `SELECT "source"."diagnosis" AS "diagnosis", "source"."count" AS "count" FROM (SELECT "public"."visits"."diagnosis" AS "diagnosis", COUNT(*) AS "count" FROM "public"."visits" GROUP BY "public"."visits"."diagnosis" ORDER BY "public"."visits"."diagnosis" ASC) AS "source" ORDER BY "source"."count" DESC LIMIT 1048575`},
	{"Passthrough", `SELECT clinic_id, name, city FROM clinics WHERE clinic_id = 7`},
}

func analyzeOnce(b *testing.B, pol *config.Policy, sql string) *Query {
	p, err := ParseStatement(sql, PostgresFrontEnd)
	if err != nil {
		b.Fatal(err)
	}
	q, err := Analyze(p.Stmts[0], pol, Options{Dialect: Postgres, Epsilon: pol.Defaults.Epsilon, FrontEnd: PostgresFrontEnd, Casts: p.CastOf})
	if err != nil {
		b.Fatal(err)
	}
	return q
}

// BenchmarkParseAnalyzeRewrite is parse + analyze + backend SQL emission
// (PostgreSQL dialect) of typical queries.
func BenchmarkParseAnalyzeRewrite(b *testing.B) {
	pol := benchPolicy(b)
	for _, q := range benchQueries {
		b.Run(q.name, func(b *testing.B) {
			analyzeOnce(b, pol, q.sql) // fail fast outside the timer
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				analyzeOnce(b, pol, q.sql)
			}
		})
	}
}

// BenchmarkParseAnalyzeRewriteParams is what an extended-protocol Execute
// does: parse the prepared text afresh, bind the parameter values into the
// tree as constants, then analyze and emit.
func BenchmarkParseAnalyzeRewriteParams(b *testing.B) {
	pol := benchPolicy(b)
	const sql = `SELECT diagnosis, COUNT(*), AVG(cost) FROM visits WHERE visit_date >= $1 AND clinic_id = $2 GROUP BY diagnosis`
	values := []any{time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), int64(7)}
	run := func() {
		p, err := ParseStatement(sql, PostgresFrontEnd)
		if err != nil {
			b.Fatal(err)
		}
		types := InferParamTypes(p.Stmts[0], pol, p.Params, p.ParamCount)
		if len(types) != 2 || types[0] == sqltypes.Unknown {
			b.Fatalf("parameter types %v", types)
		}
		if err := BindParams(p.Stmts[0], p.Params, values, types); err != nil {
			b.Fatal(err)
		}
		if _, err := Analyze(p.Stmts[0], pol, Options{Dialect: Postgres, Epsilon: pol.Defaults.Epsilon, FrontEnd: PostgresFrontEnd, Casts: p.CastOf}); err != nil {
			b.Fatal(err)
		}
	}
	run()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
}

// BenchmarkParseAnalyzeRewriteParallel is the typical mix on every core at
// once (the parser pool and the policy are shared).
func BenchmarkParseAnalyzeRewriteParallel(b *testing.B) {
	pol := benchPolicy(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			analyzeOnce(b, pol, benchQueries[i%len(benchQueries)].sql)
			i++
		}
	})
}
