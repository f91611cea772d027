package session

import (
	"math"
	"testing"
)

// Expressions over aggregates, HAVING and ORDER BY on them are computed on
// the released rows: the query is charged once, for its aggregates.
func TestPostProcessing(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	res := exec(t, s, `SELECT kind, COUNT(*) * 5 AS five, COUNT(*) AS n, ROUND(AVG(cost), 2) AS avg_cost, 7 AS seven
		FROM visits GROUP BY kind HAVING COUNT(*) >= 0 ORDER BY five DESC`)
	st, _ := acct.Status("ana")
	if st.Spent.Epsilon <= 0 {
		t.Fatal("not charged")
	}
	if len(res.Rows) == 0 {
		t.Fatal("no rows")
	}
	for i, row := range res.Rows {
		five, n := row[1].(int64), row[2].(int64)
		if five != 5*n {
			t.Errorf("row %v: five = %d, want 5 × %d (the same released count)", row, five, n)
		}
		if avg, ok := row[3].(float64); ok && math.Abs(avg*100-math.Round(avg*100)) > 1e-6 {
			t.Errorf("ROUND(AVG(cost), 2) = %v", avg)
		}
		if row[4] != int64(7) && row[4] != 7.0 {
			t.Errorf("constant: %v (%T)", row[4], row[4])
		}
		if i > 0 && res.Rows[i-1][1].(int64) < five {
			t.Errorf("not ordered by five descending: %v", res.Rows)
		}
	}
	// HAVING filters released rows: a condition no count meets.
	if res := exec(t, s, `SELECT kind, COUNT(*) FROM visits GROUP BY kind HAVING COUNT(*) < -1000000`); len(res.Rows) != 0 {
		t.Errorf("HAVING kept %v", res.Rows)
	}
	// On a group key: only that group.
	for _, row := range exec(t, s, `SELECT kind, COUNT(*) AS cnt FROM visits GROUP BY kind HAVING kind = 'a' AND cnt > -1000000`).Rows {
		if row[0] != "a" {
			t.Errorf("HAVING kind = 'a' kept %v", row)
		}
	}
}

// Found in review: post-processing never fails on the noisy values (a
// failure was a free bit about them), a select item named like a column
// does not refer to itself, and decimal and negative constants are
// allowed in conditional sums.
func TestPostProcessingIsTotal(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	before, _ := acct.Status("ana")
	res := exec(t, s, `SELECT (CASE WHEN COUNT(*) > 17 THEN 'above' ELSE 'below' END)::int AS c FROM visits WHERE kind = 'a'`)
	if len(res.Rows) != 1 || res.Rows[0][0] != nil {
		t.Errorf("a cast that does not apply: %v, want NULL", res.Rows)
	}
	after, _ := acct.Status("ana")
	if after.Spent.Epsilon <= before.Spent.Epsilon {
		t.Error("the query was not charged")
	}
	res = exec(t, s, `SELECT CASE WHEN kind = 'a' THEN 'x' ELSE 'y' END AS kind, COUNT(*) FROM visits GROUP BY kind`)
	if len(res.Rows) == 0 {
		t.Errorf("self-named CASE: %v", res.Rows)
	}
	exec(t, s, `SELECT SUM(CASE WHEN kind = 'a' THEN 0.5 ELSE -1 END) FROM visits`)
}
