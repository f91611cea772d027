package rewrite

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// The clip is written rounded down, never above the noise's sensitivity.
func TestClipTextRoundsDown(t *testing.T) {
	for clip, want := range map[float64]string{3: "3.000000000", 3.0000000009: "3.000000000", 7e-10: "0.000000000", 1e-9: "0.000000001"} {
		if got := clipText(clip); got != want {
			t.Errorf("clipText(%v) = %s, want %s", clip, got, want)
		}
	}
}

// One person's huge values cannot make the excess sums overflow, which
// would fail the query only when they are present: the raw values are
// limited to [lo − M, hi + M] before they are summed (found in review:
// two values of 5·10¹⁸ overflowed SQLite's integer sum).
func TestExcessRawSumsCannotOverflow(t *testing.T) {
	pol, err := config.Parse([]byte(fmt.Sprintf(sensitivityPolicy, config.AddRemove)), "sensitivity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := planForOptions(t, pol, "SELECT COUNT(*), SUM(x), AVG(x) FROM t WHERE f = 1", Options{BiasBounds: true})
	db := sensitivityDB(t, rowsOf{groups: []string{"h1"}, n: 2, x: 5e18, f: 1})
	mustExec(t, db, `UPDATE t SET x = 5000000000000000000 WHERE uid = 0`)
	rows := groupRows(t, p, db)
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
}

// Under the total bound, a count of units is not weighted by C/T: a
// person kept in both their groups has no unit removed, whatever rows
// the total bound down-weights (found in review: the excess of the unit
// count took the row weights).
func TestExcessOfUnitsIgnoresRowWeights(t *testing.T) {
	pol, err := config.Parse([]byte(fmt.Sprintf(sensitivityPolicy, config.AddRemove)), "sensitivity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol.ProtectedTables[0].MaxTotalRowsPerUnit = 3
	p := planForOptions(t, pol, "SELECT g, COUNT(*), COUNT(DISTINCT uid) FROM t WHERE f = 1 GROUP BY g", Options{BiasBounds: true})
	if !p.TotalCapped() || p.Selection == nil {
		t.Fatalf("plan: total capped %v, selection %v", p.TotalCapped(), p.Selection)
	}
	// Unit 0: 2 rows in each of h1 and h2 (L0 = 2 keeps both; T = 4 > C
	// = 3, so its rows weigh 3/4): one row's worth removed, no unit.
	rows := groupRows(t, p, sensitivityDB(t, rowsOf{groups: []string{"h1", "h2"}, n: 2, x: 1, f: 1}))
	rowsOut, unitsOut := 0.0, 0.0
	for _, row := range rows {
		for _, m := range p.Measurements {
			if m.Kind != MeasureExcess {
				continue
			}
			switch p.Measurements[m.Of].Kind {
			case MeasureCount:
				rowsOut += sqltypes.Float(row[m.CountColumn])
			case MeasureUnits:
				unitsOut += sqltypes.Float(row[m.CountColumn])
			}
		}
	}
	if math.Abs(rowsOut-1) > 1e-9 || math.Abs(unitsOut) > 1e-9 {
		t.Errorf("excess: %v rows (want 1), %v units (want 0)", rowsOut, unitsOut)
	}
}
