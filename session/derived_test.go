package session

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/sqltypes"
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

// A KPI that sums keys of an earlier GROUP BY — the tile over a bar chart
// with a filter widget — is answered from that release at no cost: the
// sums of its rows, a ratio of those sums, with intervals; a key the
// release lacks, or a release not in the cache, gets a charged answer.
func TestSumOverKeysFromEarlierRelease(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	spent := func() float64 { st, _ := acct.Status("ana"); return st.Spent.Epsilon }
	exec(t, s, "SET dpproxy.intervals = 'columns'")
	base := exec(t, s, "SELECT kind, COUNT(*), SUM(cost) FROM visits GROUP BY kind ORDER BY kind")
	if len(base.Rows) != 3 {
		t.Fatalf("base release %v: want the 3 public keys", base.Rows)
	}
	// columns: kind, count, count_lo95, count_hi95, sum, sum_lo95, sum_hi95
	count := func(i int) int64 { return base.Rows[i][1].(int64) }
	sum := func(i int) float64 { return sqltypes.Float(base.Rows[i][4]) }
	before := spent()
	res := exec(t, s, "SELECT COUNT(*), SUM(cost) FROM visits WHERE kind IN ('a', 'b')")
	if len(res.Rows) != 1 || res.Rows[0][0] != count(0)+count(1) || math.Abs(sqltypes.Float(res.Rows[0][3])-(sum(0)+sum(1))) > 1e-6 {
		t.Errorf("sums %v, want %d and %v", res.Rows, count(0)+count(1), sum(0)+sum(1))
	}
	if len(res.Notices) == 0 || !strings.Contains(res.Notices[0], "the sums of its rows for the 2 keys asked") {
		t.Errorf("notices %q", res.Notices)
	}
	// The sum's interval is wider than either row's, and holds the sum.
	lo, hi := sqltypes.Float(res.Rows[0][1]), sqltypes.Float(res.Rows[0][2])
	rowWidth := sqltypes.Float(base.Rows[0][3]) - sqltypes.Float(base.Rows[0][2])
	if !(lo <= float64(count(0)+count(1)) && float64(count(0)+count(1)) <= hi) || hi-lo <= rowWidth {
		t.Errorf("the sum's interval [%v, %v] (a row's is %v wide)", lo, hi, rowWidth)
	}
	ratio := exec(t, s, "SELECT SUM(cost) / COUNT(*) FROM visits WHERE kind IN ('a', 'b')")
	if n := count(0) + count(1); n == 0 {
		if ratio.Rows[0][0] != nil { // the noisy denominator may be 0: NULL
			t.Errorf("ratio %v over a released count of 0, want NULL", ratio.Rows)
		}
	} else if want := (sum(0) + sum(1)) / float64(n); math.Abs(sqltypes.Float(ratio.Rows[0][0])-want) > 1e-9 {
		t.Errorf("ratio %v, want %v", ratio.Rows, want)
	}
	// The ratio has an interval only when its denominator's excludes 0.
	// The ratio takes the count at 97.5 % (a union bound over its two
	// aggregates), wider than the 95 % shown, so a shown interval just
	// above 0 may still leave the ratio without one.
	if ratio.Rows[0][1] != nil && lo <= 0 {
		t.Errorf("ratio %v has an interval though the count's [%v, %v] holds 0", ratio.Rows, lo, hi)
	}
	if ratio.Rows[0][1] == nil && lo > (hi-lo)/2 {
		t.Errorf("ratio %v lacks an interval though the count's [%v, %v] is far from 0", ratio.Rows, lo, hi)
	}
	if after := spent(); after != before {
		t.Errorf("sums over keys spent ε %v", after-before)
	}
	explained := exec(t, s, "EXPLAIN DP SELECT COUNT(*), SUM(cost) FROM visits WHERE kind = 'b'")
	if !strings.Contains(fmt.Sprint(explained.Rows), "this query sums keys of your earlier release") {
		t.Errorf("EXPLAIN DP does not say the query is summed from the earlier release: %v", explained.Rows)
	}
	// A key the release does not hold: charged, answered from the data.
	res = exec(t, s, "SELECT COUNT(*) FROM visits WHERE kind IN ('a', 'zz')")
	if after := spent(); after-before < 0.1 || len(res.Notices) > 0 && strings.HasPrefix(res.Notices[0], "answered at no cost") {
		t.Errorf("a key not released: spent %v more, notices %q", after-before, res.Notices)
	}
}

// Found in review: two conditional aggregates on one column ("CASE") with
// the same bounds cannot be told apart by function, column and bounds;
// such a KPI is charged, never answered from the wrong column.
func TestSumOverKeysRefusesAmbiguousAggregates(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	spent := func() float64 { st, _ := acct.Status("ana"); return st.Spent.Epsilon }
	exec(t, s, "SELECT kind, SUM(CASE WHEN n > 1 THEN cost ELSE 0 END), SUM(CASE WHEN n <= 1 THEN cost ELSE 0 END) FROM visits GROUP BY kind")
	before := spent()
	res := exec(t, s, "SELECT SUM(CASE WHEN n > 1 THEN cost ELSE 0 END), SUM(CASE WHEN n <= 1 THEN cost ELSE 0 END) FROM visits WHERE kind IN ('a', 'b')")
	if spent() == before || len(res.Notices) > 0 && strings.HasPrefix(res.Notices[0], "answered at no cost") {
		t.Errorf("ambiguous aggregates answered from the earlier release: %v %q", res.Rows, res.Notices)
	}
}

// Found in review: a query whose own release is cached gets it again, not
// a sum from a grouped release made since.
func TestOwnReleaseBeforeSumOverKeys(t *testing.T) {
	_, s, _, _ := sessionFixture(t, nil)
	const kpi = "SELECT COUNT(*), SUM(cost) FROM visits WHERE kind IN ('a', 'b')"
	first := exec(t, s, kpi)
	exec(t, s, "SELECT kind, COUNT(*), SUM(cost) FROM visits GROUP BY kind")
	again := exec(t, s, kpi)
	if !reflect.DeepEqual(first.Rows, again.Rows) {
		t.Errorf("asked again: %v, first %v (notices %q)", again.Rows, first.Rows, again.Notices)
	}
}
