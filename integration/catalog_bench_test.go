package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkCatalogCorpus times the client corpus's catalog queries (those
// reading pg_catalog or information_schema) answered by dpproxy's virtual
// catalog against the same queries sent directly to the PostgreSQL server
// behind it, one connection each, pgx's default (extended) protocol. The
// figure to read is the ratio of ns/op between the two sub-benchmarks.
//
//	go test ./integration -run '^$' -bench CatalogCorpus -benchtime 2000x
func BenchmarkCatalogCorpus(b *testing.B) {
	var queries []string
	for _, q := range readClientQueries(b) {
		lower := strings.ToLower(q.sql)
		if strings.Contains(lower, "pg_catalog") || strings.Contains(lower, "information_schema") || strings.Contains(lower, " pg_") {
			queries = append(queries, q.sql)
		}
	}
	if len(queries) == 0 {
		b.Fatal("no catalog queries in the corpus")
	}
	run := func(b *testing.B, url string) {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		b.ResetTimer()
		for i := range b.N {
			rows, err := conn.Query(ctx, queries[i%len(queries)])
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				b.Fatalf("%s: %v", queries[i%len(queries)], err)
			}
		}
		b.ReportMetric(float64(len(queries)), "queries")
	}
	dsn := pgDatabase(b)
	policy := writePolicy(b, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n", 100)
	p := startProxy(b, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	cfg, _ := pgx.ParseConfig(dsn)
	b.Run("dpproxy", func(b *testing.B) { run(b, "postgres://analyst:analyst@"+p.addr+"/"+cfg.Database+"?sslmode=disable") })
	b.Run("postgres", func(b *testing.B) { run(b, dsn) })
}
