package rewrite

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
)

func TestSplitKeyFilter(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		rest  string // the WHERE left, canonical; "-" when nothing splits
		conds []KeyCondition
	}{
		{"SELECT kind, COUNT(*) FROM visits WHERE kind = 'a' GROUP BY kind", "", []KeyCondition{{0, []any{"a"}}}},
		{"SELECT COUNT(*), kind FROM visits WHERE 'a' = kind AND cost > 3 GROUP BY kind", `"cost">3`, []KeyCondition{{1, []any{"a"}}}},
		{"SELECT kind, clinic, SUM(cost) FROM visits WHERE (clinic IN (1, 2) AND kind IN ('a', 'b')) GROUP BY kind, clinic", "", []KeyCondition{{1, []any{int64(1), int64(2)}}, {0, []any{"a", "b"}}}},
		// Not only picking released keys: nothing splits.
		{"SELECT kind, COUNT(*) FROM visits WHERE kind = 'a' GROUP BY kind LIMIT 3", "-", nil},
		{"SELECT COUNT(*) FROM visits WHERE kind = 'a' GROUP BY kind", "-", nil},            // key not selected
		{"SELECT kind AS k, COUNT(*) FROM visits WHERE kind = 'a' GROUP BY kind", "-", nil}, // renamed
		{"SELECT kind, COUNT(*) FROM visits WHERE kind <> 'a' GROUP BY kind", "-", nil},
		{"SELECT kind, COUNT(*) FROM visits WHERE kind = 'a' OR kind = 'b' GROUP BY kind", "-", nil},
		{"SELECT kind, COUNT(*) FROM visits WHERE kind NOT IN ('a') GROUP BY kind", "-", nil},
		{"SELECT kind, COUNT(*) FROM visits WHERE kind = 1.5 GROUP BY kind", "-", nil},
		{"SELECT kind, COUNT(*) FROM visits WHERE cost = 3 GROUP BY kind", "-", nil}, // not a key
		{"SELECT COUNT(*) FROM visits WHERE kind = 'a'", "-", nil},                   // no GROUP BY
		{"SELECT *, COUNT(*) FROM visits WHERE kind = 'a' GROUP BY kind", "-", nil},
		{"SELECT v.kind, COUNT(*) FROM visits v WHERE V.KIND = 'a' GROUP BY v.kind", "", []KeyCondition{{0, []any{"a"}}}},
		{"SELECT kind, COUNT(*) FROM visits WHERE (cost < 1 OR cost > 9) AND kind = 'a' GROUP BY kind", "(\"cost\"<1 OR \"cost\">9)", []KeyCondition{{0, []any{"a"}}}},
		{"SELECT c.city, COUNT(*) FROM visits v JOIN clinics c ON v.clinic = c.id WHERE v.city = 'a' GROUP BY c.city", "-", nil}, // another table's column
		{"SELECT city, COUNT(*) FROM visits v JOIN clinics c ON v.clinic = c.id WHERE c.city = 'a' GROUP BY city", "-", nil},     // written two ways
	} {
		stmts, err := Parse(tc.sql, PostgresFrontEnd)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		sel := stmts[0].(*ast.SelectStmt)
		before, _ := Canonical(sel)
		rest, conds, ok := SplitKeyFilter(sel)
		if after, _ := Canonical(sel); after != before {
			t.Errorf("%s: the statement changed to %s", tc.sql, after)
		}
		if tc.rest == "-" {
			if ok {
				t.Errorf("%s: split %v", tc.sql, conds)
			}
			continue
		}
		if !ok || !reflect.DeepEqual(conds, tc.conds) {
			t.Errorf("%s: conditions %v (%v), want %v", tc.sql, conds, ok, tc.conds)
		}
		got := ""
		if rest != nil {
			got = restoreExpr(t, rest)
		}
		if got != tc.rest {
			t.Errorf("%s: rest %q, want %q", tc.sql, got, tc.rest)
		}
	}
}

// restoreExpr is an expression's text as Canonical writes it.
func restoreExpr(t *testing.T, e ast.ExprNode) string {
	t.Helper()
	var sb strings.Builder
	if err := e.Restore(format.NewRestoreCtx(canonicalFlags, &sb)); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// The statements a query without GROUP BY can be summed from read as the
// grouped queries an analyst would write (same canonical text).
func TestKeySumBases(t *testing.T) {
	canonical := func(sql string) string {
		t.Helper()
		stmts, err := Parse(sql, PostgresFrontEnd)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		c, err := Canonical(stmts[0])
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		sql   string
		bases []string // "grouped query, aggregates' first column, conds"
	}{
		{"SELECT COUNT(*), SUM(cost) FROM visits WHERE kind IN ('a', 'b') AND cost > 3", []string{
			"SELECT kind, COUNT(*), SUM(cost) FROM visits WHERE cost > 3 GROUP BY kind|1|[{0 [a b]}]",
			"SELECT kind, COUNT(*), SUM(cost) FROM visits WHERE cost > 3 GROUP BY kind ORDER BY kind|1|[{0 [a b]}]",
			"SELECT COUNT(*), SUM(cost), kind FROM visits WHERE cost > 3 GROUP BY kind|0|[{2 [a b]}]",
			"SELECT COUNT(*), SUM(cost), kind FROM visits WHERE cost > 3 GROUP BY kind ORDER BY kind|0|[{2 [a b]}]",
			// the two aggregates swapped
			"SELECT kind, SUM(cost), COUNT(*) FROM visits WHERE cost > 3 GROUP BY kind|1|[{0 [a b]}]",
			"SELECT kind, SUM(cost), COUNT(*) FROM visits WHERE cost > 3 GROUP BY kind ORDER BY kind|1|[{0 [a b]}]",
			"SELECT SUM(cost), COUNT(*), kind FROM visits WHERE cost > 3 GROUP BY kind|0|[{2 [a b]}]",
			"SELECT SUM(cost), COUNT(*), kind FROM visits WHERE cost > 3 GROUP BY kind ORDER BY kind|0|[{2 [a b]}]",
		}},
		// Aliases are kept when the query selects only aggregates.
		{"SELECT COUNT(*) AS n FROM visits WHERE kind = 'a'", []string{
			"SELECT kind, COUNT(*) AS n FROM visits GROUP BY kind|1|[{0 [a]}]",
			"SELECT kind, COUNT(*) AS n FROM visits GROUP BY kind ORDER BY kind|1|[{0 [a]}]",
			"SELECT COUNT(*) AS n, kind FROM visits GROUP BY kind|0|[{1 [a]}]",
			"SELECT COUNT(*) AS n, kind FROM visits GROUP BY kind ORDER BY kind|0|[{1 [a]}]",
		}},
		{"SELECT SUM(cost) / COUNT(*), COUNT(*) FROM visits v WHERE v.kind = 'a'", []string{
			"SELECT v.kind, SUM(cost), COUNT(*) FROM visits v GROUP BY v.kind|1|[{0 [a]}]",
			"SELECT v.kind, SUM(cost), COUNT(*) FROM visits v GROUP BY v.kind ORDER BY v.kind|1|[{0 [a]}]",
			"SELECT SUM(cost), COUNT(*), v.kind FROM visits v GROUP BY v.kind|0|[{2 [a]}]",
			"SELECT SUM(cost), COUNT(*), v.kind FROM visits v GROUP BY v.kind ORDER BY v.kind|0|[{2 [a]}]",
			"SELECT v.kind, COUNT(*), SUM(cost) FROM visits v GROUP BY v.kind|1|[{0 [a]}]",
			"SELECT v.kind, COUNT(*), SUM(cost) FROM visits v GROUP BY v.kind ORDER BY v.kind|1|[{0 [a]}]",
			"SELECT COUNT(*), SUM(cost), v.kind FROM visits v GROUP BY v.kind|0|[{2 [a]}]",
			"SELECT COUNT(*), SUM(cost), v.kind FROM visits v GROUP BY v.kind ORDER BY v.kind|0|[{2 [a]}]",
		}},
		{"SELECT COUNT(*) FROM visits WHERE kind = 'a' AND clinic IN (1, 2)", []string{
			"SELECT kind, clinic, COUNT(*) FROM visits GROUP BY kind, clinic|2|[{0 [a]} {1 [1 2]}]",
			"SELECT kind, clinic, COUNT(*) FROM visits GROUP BY kind, clinic ORDER BY kind, clinic|2|[{0 [a]} {1 [1 2]}]",
			"SELECT COUNT(*), kind, clinic FROM visits GROUP BY kind, clinic|0|[{1 [a]} {2 [1 2]}]",
			"SELECT COUNT(*), kind, clinic FROM visits GROUP BY kind, clinic ORDER BY kind, clinic|0|[{1 [a]} {2 [1 2]}]",
			"SELECT kind, COUNT(*) FROM visits WHERE clinic IN (1, 2) GROUP BY kind|1|[{0 [a]}]",
			"SELECT kind, COUNT(*) FROM visits WHERE clinic IN (1, 2) GROUP BY kind ORDER BY kind|1|[{0 [a]}]",
			"SELECT clinic, COUNT(*) FROM visits WHERE kind = 'a' GROUP BY clinic|1|[{0 [1 2]}]",
			"SELECT clinic, COUNT(*) FROM visits WHERE kind = 'a' GROUP BY clinic ORDER BY clinic|1|[{0 [1 2]}]",
		}},
		// Found in review: an OR among the conditions keeps its parentheses.
		{"SELECT COUNT(*) FROM visits WHERE (clinic = 1 OR clinic = 2) AND (kind = 'a')", []string{
			"SELECT kind, COUNT(*) FROM visits WHERE (clinic = 1 OR clinic = 2) GROUP BY kind|1|[{0 [a]}]",
			"SELECT kind, COUNT(*) FROM visits WHERE (clinic = 1 OR clinic = 2) GROUP BY kind ORDER BY kind|1|[{0 [a]}]",
			"SELECT COUNT(*), kind FROM visits WHERE (clinic = 1 OR clinic = 2) GROUP BY kind|0|[{1 [a]}]",
			"SELECT COUNT(*), kind FROM visits WHERE (clinic = 1 OR clinic = 2) GROUP BY kind ORDER BY kind|0|[{1 [a]}]",
		}},
		// Nothing to sum from.
		{"SELECT COUNT(*) FROM visits WHERE cost > 3", nil},
		{"SELECT COUNT(*) FROM visits", nil},
		{"SELECT kind, COUNT(*) FROM visits WHERE kind = 'a' GROUP BY kind", nil},
		{"SELECT COUNT(*) FROM visits WHERE kind = 'a' LIMIT 1", nil},
		{"SELECT COUNT(*) FROM visits WHERE kind = 'a' ORDER BY 1", nil},
		{"SELECT cost, COUNT(*) FROM visits WHERE kind = 'a'", nil},
		{"SELECT COUNT(*) + cost FROM visits WHERE kind = 'a'", nil},
		{"SELECT 1 FROM visits WHERE kind = 'a'", nil},
		{"SELECT * FROM visits WHERE kind = 'a'", nil},
		{"SELECT COUNT(*) FROM visits WHERE kind <> 'a'", nil},
	} {
		stmts, err := Parse(tc.sql, PostgresFrontEnd)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		sel := stmts[0].(*ast.SelectStmt)
		before, _ := Canonical(sel)
		bases := KeySumBases(sel)
		if after, _ := Canonical(sel); after != before {
			t.Errorf("%s: the statement changed to %s", tc.sql, after)
		}
		var got []string
		for _, b := range bases {
			c, err := Canonical(b.Stmt)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s|%d|%v", c, b.Aggregates, b.Conds))
		}
		var want []string
		for _, w := range tc.bases {
			parts := strings.SplitN(w, "|", 2)
			want = append(want, canonical(parts[0])+"|"+parts[1])
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.sql, got, want)
		}
	}
}
