package rewrite

import (
	"fmt"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Interval arithmetic over the aggregates' intervals: COUNT(*) in [90,
// 110] and SUM(x) in [-20, 400].
func TestDerivedInterval(t *testing.T) {
	pol, err := config.Parse([]byte(fmt.Sprintf(sensitivityPolicy, config.AddRemove)), "sensitivity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	intervals := func(p *Plan) []*sqltypes.Interval {
		out := make([]*sqltypes.Interval, len(p.Aggregates))
		for i, a := range p.Aggregates {
			switch a.Func {
			case CountStar:
				out[i] = &sqltypes.Interval{Lo: 90, Hi: 110}
			case Sum:
				out[i] = &sqltypes.Interval{Lo: -20, Hi: 400}
			}
		}
		return out
	}
	for _, tc := range []struct {
		expr   string
		lo, hi float64
		none   bool // no interval
	}{
		{expr: "SUM(x) / COUNT(*)", lo: -20.0 / 90, hi: 400.0 / 90},
		{expr: "COUNT(*) * 2 - 10", lo: 170, hi: 210},
		{expr: "-(COUNT(*) + 1)", lo: -111, hi: -91},
		{expr: "SUM(x) - COUNT(*)", lo: -130, hi: 310},
		{expr: "COUNT(*) * SUM(x)", lo: -2200, hi: 44000},
		{expr: "ROUND(COUNT(*) / 7, 1)", lo: 12.9, hi: 15.7},
		{expr: "ABS(SUM(x))", lo: 0, hi: 400},
		{expr: "FLOOR(COUNT(*) / 100)", lo: 0, hi: 1},
		{expr: "GREATEST(COUNT(*), SUM(x))", lo: 90, hi: 400},
		{expr: "CAST(COUNT(*) / 3 AS INTEGER)", lo: 30, hi: 37},
		{expr: "SQRT(COUNT(*))", lo: 9.486832980505138, hi: 10.488088481701515},
		{expr: "COUNT(*) DIV 7", lo: 12, hi: 15},
		{expr: "COUNT(*) / SUM(x)", none: true}, // the denominator's interval holds 0
		{expr: "SQRT(SUM(x))", none: true},      // not defined on all of it
		{expr: "COUNT(*) % 7", none: true},      // not monotone
		{expr: "ROUND(COUNT(*), SUM(x))", none: true},
		{expr: "CASE WHEN COUNT(*) > 100 THEN 1 ELSE 0 END", none: true},
		{expr: "COALESCE(SUM(x), 0)", none: true},
	} {
		p := planFor(t, pol, "SELECT COUNT(*), SUM(x), "+tc.expr+" FROM t")
		d := p.Output[2].Source.Derived
		if d == nil {
			t.Fatalf("%s: not an expression", tc.expr)
		}
		if ids := d.Aggregates(); len(ids) == 0 || len(ids) > 2 || ids[0] < 2 {
			t.Errorf("%s: aggregates %v, want one or two of its own", tc.expr, ids)
		}
		iv := d.Interval(nil, intervals(p))
		if tc.none {
			if iv != nil {
				t.Errorf("%s: interval %v, want none", tc.expr, *iv)
			}
			continue
		}
		if iv == nil {
			t.Errorf("%s: no interval, want [%v, %v]", tc.expr, tc.lo, tc.hi)
			continue
		}
		if !close(iv.Lo, tc.lo) || !close(iv.Hi, tc.hi) {
			t.Errorf("%s: interval [%v, %v], want [%v, %v]", tc.expr, iv.Lo, iv.Hi, tc.lo, tc.hi)
		}
		if !d.HasInterval() {
			t.Errorf("%s: HasInterval false for a form that has one", tc.expr)
		}
	}
	// An aggregate without an interval (a quantile) leaves the expression
	// without one.
	p := planFor(t, pol, "SELECT COUNT(*), SUM(x), SUM(x) / COUNT(*) FROM t")
	aggs := intervals(p)
	aggs[p.Output[2].Source.Derived.Aggregates()[1]] = nil
	if iv := p.Output[2].Source.Derived.Interval(nil, aggs); iv != nil {
		t.Errorf("interval %v from an aggregate without one", *iv)
	}
	// A text group key has no numeric interval.
	p = planFor(t, pol, "SELECT kg, COUNT(*) + kg FROM t GROUP BY kg")
	if iv := p.Output[1].Source.Derived.Interval([]any{"h1"}, intervals(p)); iv != nil {
		t.Errorf("COUNT(*) + a text key: %v, want none", *iv)
	}
}

func close(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
