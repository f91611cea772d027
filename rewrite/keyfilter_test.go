package rewrite

import (
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
