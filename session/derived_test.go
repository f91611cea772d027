package session

import (
	"reflect"
	"strings"
	"testing"
)

// A query that only narrows an earlier GROUP BY to some of its keys is
// answered from that release, at no cost: the same rows, the same
// values; a release not in the cache (here: at another ε) is charged.
func TestAnswerFromEarlierRelease(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	base := exec(t, s, "SELECT kind, COUNT(*) AS n, SUM(cost) FROM visits GROUP BY kind ORDER BY kind")
	if len(base.Rows) != 3 {
		t.Fatalf("base release %v: want the 3 public keys", base.Rows)
	}
	spent := func() float64 { st, _ := acct.Status("ana"); return st.Spent.Epsilon }
	before := spent()
	for _, tc := range []struct {
		sql  string
		want [][]any
	}{
		{"SELECT kind, COUNT(*) AS n, SUM(cost) FROM visits WHERE kind = 'b' GROUP BY kind ORDER BY kind", base.Rows[1:2]},
		{"select kind, count(*) as n, sum(cost) from visits where kind in ('a', 'empty') group by kind order by kind", [][]any{base.Rows[0], base.Rows[2]}},
		{"SELECT kind, COUNT(*) AS n, SUM(cost) FROM visits WHERE 'zz' = kind GROUP BY kind ORDER BY kind", nil},
	} {
		res := exec(t, s, tc.sql)
		if !reflect.DeepEqual(res.Rows, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.sql, res.Rows, tc.want)
		}
		if len(res.Notices) == 0 || !strings.HasPrefix(res.Notices[0], `answered at no cost from your earlier release of SELECT "kind"`) {
			t.Errorf("%s: notices %q", tc.sql, res.Notices)
		}
	}
	if after := spent(); after != before {
		t.Errorf("derived answers spent ε %v", after-before)
	}
	explained := exec(t, s, "EXPLAIN DP SELECT kind, COUNT(*) AS n, SUM(cost) FROM visits WHERE kind = 'a' GROUP BY kind ORDER BY kind")
	found := false
	for _, row := range explained.Rows {
		for _, v := range row {
			if text, ok := v.(string); ok && strings.Contains(text, "only picks keys of your earlier release") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("EXPLAIN DP does not say the query is answered from the earlier release: %v", explained.Rows)
	}
	// Another ε is another release: not in the cache, so charged.
	exec(t, s, "SET dpproxy.epsilon = 0.3")
	res := exec(t, s, "SELECT kind, COUNT(*) AS n, SUM(cost) FROM visits WHERE kind = 'b' GROUP BY kind ORDER BY kind")
	if after := spent(); after-before < 0.3-1e-9 || len(res.Notices) > 0 && strings.HasPrefix(res.Notices[0], "answered at no cost") {
		t.Errorf("at another ε: spent %v more, notices %q", after-before, res.Notices)
	}
}
