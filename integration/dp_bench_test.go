package integration

import (
	"context"
	"database/sql"
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

// BenchmarkJoinQueryCost times the joins issue's queries through dpproxy
// (cache off) on PostgreSQL and on MariaDB, against their floor sent
// directly to the same database: the GROUP BY unit, group over the same
// join, which is what any per-person bounding must compute first. The
// figure to read is the ratio of ns/op between each query's dpproxy and
// floor sub-benchmarks.
//
//	go test ./integration -run '^$' -bench JoinQueryCost -benchtime 20x
func BenchmarkJoinQueryCost(b *testing.B) {
	queries := []struct{ name, dp, floor string }{
		{"public dimension",
			`SELECT c.city, COUNT(*) FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id GROUP BY c.city`,
			`SELECT v.patient_id, c.city, COUNT(*) FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id GROUP BY v.patient_id, c.city`},
		{"on the unit",
			`SELECT p.sex, AVG(v.cost) FROM visits v JOIN patients p USING (patient_id) GROUP BY p.sex`,
			`SELECT v.patient_id, p.sex, COUNT(v.cost), SUM(v.cost) FROM visits v JOIN patients p ON v.patient_id = p.patient_id GROUP BY v.patient_id, p.sex`},
		// Prescriptions reach their patient through visits' primary key:
		// dpproxy adds the join, or uses the query's own.
		{"unit path",
			`SELECT drug, COUNT(*) FROM prescriptions GROUP BY drug`,
			`SELECT v.patient_id, rx.drug, COUNT(*) FROM prescriptions rx JOIN visits v ON rx.visit_id = v.visit_id GROUP BY v.patient_id, rx.drug`},
		{"along the path's key",
			`SELECT v.diagnosis, COUNT(*) FROM prescriptions rx JOIN visits v ON rx.visit_id = v.visit_id GROUP BY v.diagnosis`,
			`SELECT v.patient_id, v.diagnosis, COUNT(*) FROM prescriptions rx JOIN visits v ON rx.visit_id = v.visit_id GROUP BY v.patient_id, v.diagnosis`},
	}
	for _, backend := range []struct{ kind, driver string }{{"postgres", "pgx"}, {"mysql", "mysql"}} {
		var dsn string
		if backend.kind == "postgres" {
			dsn = pgDatabase(b)
		} else {
			dsn = mysqlDatabase(b)
		}
		path := filepath.Join(b.TempDir(), "policy.yaml")
		// The integration tables, with prescriptions at a fixed bound.
		tables := strings.Replace(tablesYAML, "      - {name: patient_id, type: int}\n      - {name: clinic_id", "      - {name: patient_id, type: int}\n      - {name: visit_id, type: int}\n      - {name: clinic_id", 1)
		tables = strings.Replace(tables, "public_tables:", strings.Replace(prescriptionsYAML, "max_rows_per_unit: auto", "max_rows_per_unit: 10", 1)+"public_tables:", 1)
		policy := "backend:\n  kind: " + backend.kind + "\n  dsn: " + strconv.Quote(dsn) + "\nledger:\n  path: ledger.db\ndefaults:\n  epsilon: 0.5\n  delta: 1e-6\ncache:\n  size: 0\n" +
			fmt.Sprintf(analystYAML, 1e9) + tables
		if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
			b.Fatal(err)
		}
		p := startProxy(b, "serve", "--config", path, "--pg-addr", "127.0.0.1:0")
		direct, err := sql.Open(backend.driver, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer direct.Close()
		for _, q := range queries {
			b.Run(backend.kind+"/"+q.name+"/dpproxy", func(b *testing.B) {
				ctx := context.Background()
				conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/dpproxy?sslmode=disable")
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close(ctx)
				b.ResetTimer()
				for range b.N {
					rows, err := conn.Query(ctx, q.dp)
					if err != nil {
						b.Fatal(err)
					}
					for rows.Next() {
					}
					rows.Close()
					if err := rows.Err(); err != nil {
						b.Fatalf("%s: %v", q.dp, err)
					}
				}
			})
			b.Run(backend.kind+"/"+q.name+"/floor", func(b *testing.B) {
				for range b.N {
					rows, err := direct.Query(q.floor)
					if err != nil {
						b.Fatal(err)
					}
					for rows.Next() {
					}
					rows.Close()
					if err := rows.Err(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
