package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkDPQueryCost times DP queries through dpproxy (the result cache
// off, so every run is a fresh release) against the same SQL sent
// directly to the PostgreSQL server behind it: the floor. The figure to
// read is the ratio of ns/op between each query's two sub-benchmarks.
// dpproxy's quantiles run one histogram query per column and one
// exponential mechanism per group; its top-k one mechanism per pick.
//
//	go test ./integration -run '^$' -bench DPQueryCost -benchtime 50x
func BenchmarkDPQueryCost(b *testing.B) {
	queries := []struct{ name, sql string }{
		{"count", `SELECT COUNT(*) FROM visits`},
		{"median", `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY cost) FROM visits`},
		{"median by diagnosis", `SELECT diagnosis, percentile_cont(0.5) WITHIN GROUP (ORDER BY cost) FROM visits GROUP BY diagnosis`},
		{"top 5 weeks", `SELECT date_trunc('week', visit_date) AS w, COUNT(*) FROM visits GROUP BY 1 ORDER BY 2 DESC LIMIT 5`},
	}
	dsn := pgDatabase(b)
	path := filepath.Join(b.TempDir(), "policy.yaml")
	tables := strings.Replace(tablesYAML, "{name: visit_date, type: date}", "{name: visit_date, type: date, group_by: true}", 1)
	policy := "backend:\n  kind: postgres\n  dsn: " + strconv.Quote(dsn) + "\nledger:\n  path: ledger.db\ndefaults:\n  epsilon: 0.5\n  delta: 1e-6\ncache:\n  size: 0\n" +
		fmt.Sprintf(analystYAML, 1e9) + tables
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		b.Fatal(err)
	}
	p := startProxy(b, "serve", "--config", path, "--pg-addr", "127.0.0.1:0")
	cfg, _ := pgx.ParseConfig(dsn)
	proxyURL := "postgres://analyst:analyst@" + p.addr + "/" + cfg.Database + "?sslmode=disable"
	for _, q := range queries {
		for _, target := range []struct{ name, url string }{{"dpproxy", proxyURL}, {"postgres", dsn}} {
			b.Run(q.name+"/"+target.name, func(b *testing.B) {
				ctx := context.Background()
				conn, err := pgx.Connect(ctx, target.url)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close(ctx)
				b.ResetTimer()
				for range b.N {
					rows, err := conn.Query(ctx, q.sql)
					if err != nil {
						b.Fatal(err)
					}
					for rows.Next() {
					}
					rows.Close()
					if err := rows.Err(); err != nil {
						b.Fatalf("%s: %v", q.sql, err)
					}
				}
			})
		}
	}
}
