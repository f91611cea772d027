package integration

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// A dashboard's bar chart (clinic_id, COUNT, SUM over its public keys),
// then its KPI tiles over a filter widget's keys — a sum and a ratio of
// sums — on PostgreSQL and MariaDB, through psql and the mariadb client:
// the tiles are the sums of the chart's rows and cost nothing.
func TestKeySumsFromEarlierRelease(t *testing.T) {
	const script = `SELECT clinic_id, COUNT(*), SUM(cost) FROM visits GROUP BY clinic_id ORDER BY clinic_id;
SELECT COUNT(*), SUM(cost) FROM visits WHERE clinic_id IN (2, 3, 5);
SELECT SUM(cost) / COUNT(*) FROM visits WHERE clinic_id IN (2, 3, 5);
SELECT epsilon_spent FROM dpproxy.budget;
`
	check := func(t *testing.T, out []string) {
		t.Helper()
		// 25 clinics, then the two tiles and the budget.
		if len(out) != 28 {
			t.Fatalf("output %q", out)
		}
		field := func(line string, i int) float64 {
			f := strings.FieldsFunc(line, func(r rune) bool { return r == '|' || r == '\t' })
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return v
		}
		count, sum := 0.0, 0.0
		for _, clinic := range []int{2, 3, 5} {
			count += field(out[clinic-1], 1)
			sum += field(out[clinic-1], 2)
		}
		if got := field(out[25], 0); got != count || math.Abs(field(out[25], 1)-sum) > 0.01 {
			t.Errorf("KPI %q, want the chart rows' sums %v and %.2f", out[25], count, sum)
		}
		if got := field(out[26], 0); math.Abs(got-sum/count) > 1e-6*sum/count {
			t.Errorf("ratio %q, want %v", out[26], sum/count)
		}
		if spent := field(out[27], 0); math.Abs(spent-0.1) > 1e-9 {
			t.Errorf("spent ε %v, want 0.1: only the chart is charged", spent)
		}
	}
	t.Run("postgres_psql", func(t *testing.T) {
		dsn := pgDatabase(t)
		p := startProxy(t, "serve", "--config", writePolicy(t, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n", 100), "--pg-addr", "127.0.0.1:0")
		r := psql(t, p, "analyst", "analyst", script)
		if r.err != nil {
			t.Fatalf("psql: %v\n%s", r.err, r.stderr)
		}
		check(t, lines(r.stdout))
	})
	t.Run("mariadb_cli", func(t *testing.T) {
		dsn := mysqlDatabase(t)
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		policy := writeMySQLPolicy(t, "backend:\n  kind: mysql\n  dsn: "+strconv.Quote(dsn)+"\n", 100)
		p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
		out := mysqlCLI(t, p.mysqlAddress(t), cfg.DBName, script)
		check(t, lines(out))
	})
}
