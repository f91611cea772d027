package session

import (
	"strconv"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// SET dpproxy.auto_bound = r2t: a count without GROUP BY on a table with
// max_rows_per_unit: auto is answered by R2T, charged the query's ε; a
// grouped one keeps the quantile bound; bad values are refused; RESET
// restores the quantile.
func TestAutoBoundR2T(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, func(pol *config.Policy) {
		pol.ProtectedTables[0].MaxRowsPerUnit = config.RowsAuto
	})
	if got := exec(t, s, "SHOW dpproxy.auto_bound").Rows[0][0]; got != "quantile" {
		t.Errorf("default %v", got)
	}
	if e := execErr(t, s, "SET dpproxy.auto_bound = sometimes"); e.Code != sqlerr.InvalidParameterValue || !strings.Contains(e.Hint, "r2t") {
		t.Errorf("bad value: %v (hint %q)", e, e.Hint)
	}
	exec(t, s, "SET dpproxy.auto_bound = R2T")
	if got := exec(t, s, "SHOW dpproxy.auto_bound").Rows[0][0]; got != "r2t" {
		t.Errorf("after SET: %v", got)
	}
	before := spent(t, acct, "ana")
	res := exec(t, s, "SELECT COUNT(*) FROM visits")
	if len(res.Notices) == 0 || !strings.Contains(res.Notices[0], "answered by R2T") {
		t.Errorf("notices %q", res.Notices)
	}
	if n, ok := res.Rows[0][0].(int64); !ok || n < 0 {
		t.Errorf("answer %v", res.Rows[0][0])
	}
	if got := spent(t, acct, "ana") - before; got != 0.5 {
		t.Errorf("charged ε = %v, want the query's 0.5", got)
	}
	explain := exec(t, s, "EXPLAIN DP SELECT SUM(cost) FROM visits")
	notes, _ := explainParts(t, explain)
	if !strings.Contains(strings.Join(notes["summary"], "\n"), "R2T (Dong et al., SIGMOD 2022)") || len(notes["plan: measure"]) != 1 {
		t.Errorf("explain of an R2T sum: %v", notes)
	}
	grouped := exec(t, s, "SELECT kind, COUNT(*) FROM visits GROUP BY kind")
	if len(grouped.Notices) == 0 || !strings.Contains(grouped.Notices[0], "max_rows_per_unit: auto: the DP 0.95 quantile") {
		t.Errorf("grouped notices %q", grouped.Notices)
	}
	exec(t, s, "RESET dpproxy.auto_bound")
	res = exec(t, s, "SELECT COUNT(*) FROM visits WHERE n >= 0")
	if len(res.Notices) == 0 || strings.Contains(res.Notices[0], "R2T") {
		t.Errorf("after RESET: %q", res.Notices)
	}
}

// R2T answers go through LIMIT and an outer query like any other, a
// large integer sum gets float noise rather than failing after the
// charge, and dpproxy.target_error refuses R2T plans (all found in
// review).
func TestR2TAnswerShapes(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, func(pol *config.Policy) {
		pol.ProtectedTables[0].MaxRowsPerUnit = config.RowsAuto
		pol.ProtectedTables[0].Columns[3].Bounds = &config.Bounds{Lo: 0, Hi: 1e9}
	})
	exec(t, s, "SET dpproxy.auto_bound = r2t")
	for _, c := range []struct {
		sql, column string
		rows        int
	}{
		{"SELECT n AS total FROM (SELECT COUNT(*) AS n FROM visits) AS s", "total", 1},
		{"SELECT * FROM (SELECT COUNT(*) AS n FROM visits) AS s OFFSET 1", "n", 0},
		{"SELECT n FROM (SELECT COUNT(*) AS n FROM visits) AS s LIMIT 0", "n", 0},
		{"SELECT COUNT(*) AS c FROM visits LIMIT 0", "c", 0},
	} {
		res := exec(t, s, c.sql)
		if len(res.Rows) != c.rows || res.Columns[0].Name != c.column || res.Tag != "SELECT "+strconv.Itoa(c.rows) {
			t.Errorf("%s: columns %v, rows %v, tag %q", c.sql, res.Columns, res.Rows, res.Tag)
		}
	}
	exec(t, s, "SET dpproxy.epsilon = 0.01")
	if res := exec(t, s, "SELECT SUM(n) FROM visits"); len(res.Rows) != 1 {
		t.Errorf("large integer sum: %v", res.Rows)
	}
	exec(t, s, "SET dpproxy.target_error = 50")
	before := spent(t, acct, "ana")
	if e := execErr(t, s, "SELECT COUNT(*) FROM visits WHERE n > 0"); e.Code != sqlerr.FeatureNotSupported || !strings.Contains(e.Message, "max_rows_per_unit: auto") {
		t.Errorf("target error with R2T: %v", e)
	}
	if spent(t, acct, "ana") != before {
		t.Error("a refused query was charged")
	}
}
