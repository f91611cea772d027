package session

import (
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
