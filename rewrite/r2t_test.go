package rewrite

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// r2tCases are the execute fixture's truncated sums at thresholds 1, 2,
// 4, ... (R2T's one query), hand-computed; the last value repeats up to
// the last threshold.
var r2tCases = []struct {
	sql  string
	sums []float64
}{
	// visits: p1 5 rows, p2 1, p3 10.
	{`SELECT COUNT(*) FROM visits`, []float64{3, 5, 9, 14, 16}},
	// p1's 5 nights, p2's 1; p3's are NULL.
	{`SELECT COUNT(nights) FROM visits`, []float64{2, 3, 5, 6}},
	// Costs clamped to [0, 1000]: p1 500, p2 1000, p3 100; thresholds
	// from 1000.
	{`SELECT SUM(cost) FROM visits WHERE cost >= 0`, []float64{1600}},
	// doses through admissions' key: p1 5, p2 1, p3 2; the orphan is out.
	{`SELECT COUNT(*) FROM doses`, []float64{3, 5, 7, 8}},
}

// checkR2T runs each R2T case's query on db (the execute fixture) and
// checks the truncated sums; other auto-bound shapes keep the quantile.
func checkR2T(t *testing.T, db *sql.DB, d Dialect) {
	pol := testPolicy(t)
	for i := range pol.ProtectedTables {
		if !pol.ProtectedTables[i].IsRowPrivacy() {
			pol.ProtectedTables[i].MaxRowsPerUnit = config.RowsAuto
		}
	}
	analyze := func(query string) *Plan {
		t.Helper()
		return planOf(t, pol, query, Options{Dialect: d, Epsilon: 1, R2T: true})
	}
	for _, c := range r2tCases {
		p := analyze(c.sql)
		if p.R2T == nil || p.Auto != nil || len(p.Measurements) != 0 || p.Epsilon != 1 {
			t.Fatalf("%s: R2T %v, auto %v, %d measurements, ε %v", c.sql, p.R2T, p.Auto, len(p.Measurements), p.Epsilon)
		}
		rows, err := db.QueryContext(context.Background(), p.R2T.SQL)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.sql, err, p.R2T.SQL)
		}
		got := make([]any, p.R2T.Thresholds)
		ptrs := make([]any, len(got))
		for i := range got {
			ptrs[i] = &got[i]
		}
		if !rows.Next() {
			t.Fatalf("%s: no row", c.sql)
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		want := make([]float64, p.R2T.Thresholds)
		for j := range want {
			want[j] = c.sums[min(j, len(c.sums)-1)]
		}
		var sums []float64
		for _, v := range got {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			sums = append(sums, sqltypes.Float(v))
		}
		if fmt.Sprint(sums) != fmt.Sprint(want) {
			t.Errorf("%s: truncated sums %v, want %v", c.sql, sums, want)
		}
	}
	for _, query := range []string{
		`SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis`,
		`SELECT AVG(cost) FROM visits`,
		`SELECT SUM(score) FROM visits`, // bounds below 0
		`SELECT COUNT(*), SUM(cost) FROM visits`,
		`SELECT COUNT(*) * 2 FROM visits`,
		`SELECT SUM(CASE WHEN nights > 2 THEN cost END) FROM visits`,
	} {
		if p := analyze(query); p.R2T != nil || p.Auto == nil {
			t.Errorf("%s: R2T %v, auto %v; want the quantile auto bound", query, p.R2T, p.Auto)
		}
	}
}
