package session

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// notes returns the label → texts of EXPLAIN DP's note rows, and the
// measurement rows.
func explainParts(t *testing.T, res *sqltypes.Result) (notes map[string][]string, measurements [][]any) {
	t.Helper()
	notes = map[string][]string{}
	for _, row := range res.Rows {
		if len(row) != len(res.Columns) {
			t.Fatalf("row %v has %d values for %d columns", row, len(row), len(res.Columns))
		}
		if row[2] == nil { // a note: label and text only
			notes[row[0].(string)] = append(notes[row[0].(string)], row[1].(string))
			for _, v := range row[2:] {
				if v != nil {
					t.Errorf("note row %v has values beyond its text", row)
				}
			}
			continue
		}
		measurements = append(measurements, row)
	}
	return notes, measurements
}

func TestExplainDP(t *testing.T) {
	_, s, acct, be := sessionFixture(t, nil)
	// Nothing runs on the backend: explain with it closed.
	be.Close()

	res := exec(t, s, "EXPLAIN DP SELECT kind, COUNT(*), AVG(cost) FROM visits GROUP BY kind")
	if res.Tag != "EXPLAIN" {
		t.Errorf("tag %q", res.Tag)
	}
	wantCols := []string{"aggregate", "measurement", "mechanism", "sensitivity", "epsilon", "noise_scale", "error_bound_95"}
	if got := columnNames(res); !reflect.DeepEqual(got, wantCols) {
		t.Fatalf("columns %v, want Explain's %v", got, wantCols)
	}
	notes, ms := explainParts(t, res)
	// COUNT(*), and AVG's count and centred sum: ε 0.5 split three ways.
	// L0 = 2 groups, Linf = 3 rows per unit.
	if len(ms) != 3 {
		t.Fatalf("measurement rows %v, want 3", ms)
	}
	wantSens := []float64{6, 6, 6 * 5} // count, count, centred sum (hi−lo)/2 = 5
	for i, m := range ms {
		if m[3] != wantSens[i] || m[4] != 0.5/3 {
			t.Errorf("measurement %v: sensitivity %v ε %v, want %v and %v", m, m[3], m[4], wantSens[i], 0.5/3)
		}
	}
	if len(notes["summary"]) < 3 || !strings.Contains(strings.Join(notes["summary"], "\n"), "cost: ε = 0.5") {
		t.Errorf("summary %q", notes["summary"])
	}
	if b := notes["budget"]; len(b) != 1 || !strings.HasPrefix(b[0], "your budget (basic composition): ε 0 spent of ") {
		t.Errorf("budget note %q", b)
	}
	// What bounding can drop is stated, with the clamp of AVG's column.
	if summary := strings.Join(notes["summary"], "\n"); !strings.Contains(summary, "bias: the error bounds cover the noise only; bounding drops what people contribute beyond 2 group(s) and 3 row(s) per group and clamps cost to [10, 20]") {
		t.Errorf("summary lacks the bias statement: %q", summary)
	}
	// The relational plan, one row per operator, in pipeline order.
	var ops []string
	for _, kind := range []string{"scan", "bound", "group", "measure"} {
		rows := notes["plan: "+kind]
		if len(rows) == 0 {
			t.Errorf("no %s operator in %v", kind, notes)
		}
		ops = append(ops, rows...)
	}
	if want := "at most 2 group(s) per person, 3 row(s) per group, cost clamped to [10, 20]"; !strings.Contains(strings.Join(ops, "\n"), want) {
		t.Errorf("plan operators %q lack %q", ops, want)
	}
	if sql := notes["backend SQL (sqlite)"]; len(sql) != 1 || !strings.Contains(sql[0], "COUNT(*) OVER (PARTITION BY") {
		t.Errorf("backend SQL %q", sql)
	}
	if _, ok := notes["cache"]; ok {
		t.Error("a cache note before the query ran")
	}

	// The session's ε is what is explained.
	exec(t, s, "SET dpproxy.epsilon = 0.25")
	_, ms = explainParts(t, exec(t, s, "explain dp select count(*) from visits"))
	if len(ms) != 1 || ms[0][3] != 3.0 || ms[0][4] != 0.25 {
		t.Errorf("at ε=0.25: %v", ms)
	}
	if got := spent(t, acct, "ana"); got != 0 || charges(t, acct, "ana") != 0 {
		t.Errorf("EXPLAIN DP spent ε=%v", got)
	}

	// Public tables and views: a summary, no measurements.
	notes, ms = explainParts(t, exec(t, s, "EXPLAIN DP SELECT body FROM notes"))
	if len(ms) != 0 || len(notes["summary"]) != 1 || !strings.Contains(notes["summary"][0], "no budget") ||
		len(notes["backend SQL (sqlite)"]) != 1 || !strings.Contains(notes["backend SQL (sqlite)"][0], `"notes"`) {
		t.Errorf("public table: notes %v, measurements %v", notes, ms)
	}
	notes, ms = explainParts(t, exec(t, s, "EXPLAIN DP SELECT * FROM dpproxy.budget"))
	if len(ms) != 0 || len(notes["summary"]) != 1 || !strings.Contains(notes["summary"][0], "nothing runs on the backend") {
		t.Errorf("view: notes %v, measurements %v", notes, ms)
	}
}

// After a query ran, EXPLAIN DP says that repeating it is free.
func TestExplainDPCacheNote(t *testing.T) {
	_, s, _, _ := sessionFixture(t, nil)
	const q = "SELECT SUM(n) FROM visits"
	exec(t, s, q)
	notes, _ := explainParts(t, exec(t, s, "EXPLAIN DP "+q))
	if len(notes["cache"]) != 1 || !strings.Contains(notes["cache"][0], "costs nothing") {
		t.Errorf("cache note %v", notes["cache"])
	}
	exec(t, s, "SET dpproxy.epsilon = 0.25")
	notes, _ = explainParts(t, exec(t, s, "EXPLAIN DP "+q))
	if _, ok := notes["cache"]; ok {
		t.Error("a cache note at another ε")
	}
}

// A query that would be refused is refused by EXPLAIN DP with the same
// error, and nothing is charged.
func TestExplainDPRejectsLikeTheQuery(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	for _, q := range []string{
		"SELECT * FROM visits",
		"SELECT nosuch FROM visits",
		"SELECT COUNT(*) FROM nosuch",
		"SELECT SUM(kind) FROM visits",
		"SELECT COUNT(*) FROM visits GROUP BY patient_id",
		"SELECT COUNT(*) FROM visits WHERE n + 1 > 2",
		"DELETE FROM visits",
		"SELECT * FROM dpproxy.budget WHERE 1=1",
		"SELECT 1 +",
		"SELECT 1; SELECT 2",
	} {
		t.Run(q, func(t *testing.T) {
			direct := execErr(t, s, q)
			explained := execErr(t, s, "EXPLAIN DP "+q)
			if explained.Code != direct.Code || explained.Message != direct.Message || explained.Hint != direct.Hint {
				t.Errorf("EXPLAIN DP: %s %q; the query itself: %s %q", explained.Code, explained.Message, direct.Code, direct.Message)
			}
			if direct.Position > 0 && explained.Position != direct.Position+len("EXPLAIN DP ") {
				t.Errorf("position %d, want %d (the query's %d after the prefix)", explained.Position, direct.Position+len("EXPLAIN DP "), direct.Position)
			}
		})
	}
	for _, tc := range []struct {
		sql  string
		code sqlerr.Code
	}{
		{"EXPLAIN DP", sqlerr.SyntaxError},
		{"EXPLAIN DP ;", sqlerr.SyntaxError},
		{"EXPLAIN DP SET dpproxy.epsilon = 1", sqlerr.FeatureNotSupported},
		{"EXPLAIN DP BEGIN", sqlerr.FeatureNotSupported},
		{"EXPLAIN DP EXPLAIN DP SELECT COUNT(*) FROM visits", sqlerr.SyntaxError},
		{"EXPLAIN SELECT COUNT(*) FROM visits", sqlerr.FeatureNotSupported},
	} {
		if e := execErr(t, s, tc.sql); e.Code != tc.code {
			t.Errorf("%s: %s %q, want %s", tc.sql, e.Code, e.Message, tc.code)
		}
	}
	if got := spent(t, acct, "ana"); got != 0 {
		t.Errorf("spent ε=%v", got)
	}
}

// Partition selection is calibrated for the groups one unit's change can
// touch: its L0 groups under add/remove neighbours, and under replace the
// L0 it leaves plus the L0 it joins. EXPLAIN DP shows that number in the
// selection row's sensitivity column and says it in the summary.
func TestExplainDPPartitionSelectionPerNeighbouring(t *testing.T) {
	for _, tc := range []struct {
		neighbouring config.Neighbouring
		changed      float64
	}{{config.AddRemove, 2}, {config.Replace, 4}} {
		t.Run(string(tc.neighbouring), func(t *testing.T) {
			_, s, _, _ := sessionFixture(t, func(p *config.Policy) {
				p.Defaults.Neighbouring = tc.neighbouring
				p.Defaults.Delta = 1e-6
				cols := p.ProtectedTables[0].Columns
				for i := range cols {
					cols[i].Keys = nil // kind's keys come from the data: partition selection
				}
			})
			notes, ms := explainParts(t, exec(t, s, "EXPLAIN DP SELECT kind, COUNT(*) FROM visits GROUP BY kind"))
			var sel []any
			for _, m := range ms {
				if m[0] == "GROUP BY keys" {
					sel = m
				}
			}
			if sel == nil {
				t.Fatalf("no partition selection row in %v", ms)
			}
			// ε 0.5 split between the count and the selection.
			if sel[3] != tc.changed || sel[4] != 0.25 {
				t.Errorf("selection row %v: changed groups %v ε %v, want %v and 0.25", sel, sel[3], sel[4], tc.changed)
			}
			want := fmt.Sprintf("each group's test runs at (ε/%g, δ/%g)", tc.changed, tc.changed)
			if summary := strings.Join(notes["summary"], "\n"); !strings.Contains(summary, want) {
				t.Errorf("summary %q does not say %q", summary, want)
			}
		})
	}
}
