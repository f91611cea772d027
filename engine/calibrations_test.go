package engine

import (
	"math"
	"testing"

	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
)

// A mechanism is calibrated once per analyst and parameters; the
// parameters its kind does not read do not split the memo; another
// analyst gets a mechanism of their own; a calibration that fails is not
// kept.
func TestCalibrationsMemo(t *testing.T) {
	c, err := newCalibrations()
	if err != nil {
		t.Fatal(err)
	}
	ana, bob := c.forAnalyst("ana"), c.forAnalyst("bob")
	lap := rewrite.Measurement{Epsilon: 0.5, Sensitivity: 2, Integer: true}
	gauss := rewrite.Measurement{Gaussian: true, Epsilon: 0.5, Delta: 1e-6, L2: 3}
	for _, m := range []rewrite.Measurement{lap, gauss} {
		first, err := ana(m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ana(m)
		if err != nil || again != first {
			t.Errorf("%+v: calibrated again for the same analyst (%p, %p, %v)", m, first, again, err)
		}
		other, err := bob(m)
		if err != nil || other == first {
			t.Errorf("%+v: another analyst shares the mechanism (%v)", m, err)
		}
	}
	// Laplace reads ε and the L1 sensitivity; the Gaussian ε, δ and L2.
	lapOther := lap
	lapOther.Delta, lapOther.L2, lapOther.CountColumn = 1e-3, 9, 4
	gaussOther := gauss
	gaussOther.Sensitivity = 7
	for _, pair := range [][2]rewrite.Measurement{{lap, lapOther}, {gauss, gaussOther}} {
		a, _ := ana(pair[0])
		b, _ := ana(pair[1])
		if a != b {
			t.Errorf("%+v and %+v: calibrated apart, though the mechanism reads neither difference", pair[0], pair[1])
		}
	}
	for _, changed := range []rewrite.Measurement{
		{Epsilon: 0.25, Sensitivity: 2},
		{Epsilon: 0.5, Sensitivity: 1},
		{Gaussian: true, Epsilon: 0.5, Delta: 1e-5, L2: 3},
		{Gaussian: true, Epsilon: 0.5, Delta: 1e-6, L2: 2},
	} {
		a, _ := ana(changed)
		if b, _ := ana(lap); a == b {
			t.Errorf("%+v: shares the mechanism of %+v", changed, lap)
		}
		if b, _ := ana(gauss); a == b {
			t.Errorf("%+v: shares the mechanism of %+v", changed, gauss)
		}
	}
	before := c.cache.Len()
	for _, bad := range []rewrite.Measurement{{Epsilon: 0, Sensitivity: 1}, {Epsilon: math.NaN(), Sensitivity: 1}, {Gaussian: true, Epsilon: 1, Delta: 0, L2: 1}} {
		if _, err := ana(bad); err == nil {
			t.Errorf("%+v: calibrated", bad)
		}
	}
	if c.cache.Len() != before {
		t.Errorf("failed calibrations kept: %d entries, were %d", c.cache.Len(), before)
	}
}

// A memoized mechanism draws the same noise as a fresh one from the same
// randomness: the memo changes when a mechanism is built, nothing else.
func TestCalibrationsSameNoise(t *testing.T) {
	c, err := newCalibrations()
	if err != nil {
		t.Fatal(err)
	}
	memo := c.forAnalyst("ana")
	for _, m := range []rewrite.Measurement{
		{Epsilon: 0.5, Sensitivity: 2, Integer: true},
		{Epsilon: 0.7, Sensitivity: 10},
		{Gaussian: true, Epsilon: 0.5, Delta: 1e-6, L2: 3, Integer: true},
	} {
		if _, err := memo(m); err != nil { // calibrated and kept
			t.Fatal(err)
		}
		kept, err := memo(m)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := measurementMechanism(m)
		if err != nil {
			t.Fatal(err)
		}
		r1, r2 := mechanisms.Seeded(7), mechanisms.Seeded(7)
		for i := range 200 {
			a, err1 := noisyMeasurement(m, kept, float64(i), r1)
			b, err2 := noisyMeasurement(m, fresh, float64(i), r2)
			if err1 != nil || err2 != nil || a != b {
				t.Fatalf("%+v draw %d: memoized %v (%v), fresh %v (%v)", m, i, a, err1, b, err2)
			}
		}
	}
}

// A release's calibration and first integer draw: a count's Laplace
// mechanism, a Gaussian's (whose integer σ is calibrated at the first
// draw), fresh and memoized.
func BenchmarkCalibrate(b *testing.B) {
	lap := rewrite.Measurement{Epsilon: 0.5, Sensitivity: 1, Integer: true}
	gauss := rewrite.Measurement{Gaussian: true, Epsilon: 0.5, Delta: 1e-6, L2: 3, Integer: true}
	r := mechanisms.Seeded(1)
	c, err := newCalibrations()
	if err != nil {
		b.Fatal(err)
	}
	memo := c.forAnalyst("ana")
	for _, bc := range []struct {
		name string
		m    rewrite.Measurement
		cal  calibrate
	}{{"laplace/fresh", lap, measurementMechanism}, {"laplace/memoized", lap, memo}, {"gaussian/fresh", gauss, measurementMechanism}, {"gaussian/memoized", gauss, memo}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mech, err := bc.cal(bc.m)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := noisyMeasurement(bc.m, mech, 100, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
