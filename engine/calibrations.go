package engine

import (
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/dpproxy/dpproxy/rewrite"
)

// calibrate gives the mechanism that perturbs a measurement.
type calibrate func(rewrite.Measurement) (noiser, error)

// calibrations memoizes calibrated mechanisms. Building one costs more
// than the noise it then draws (a Laplace mechanism's two exact geometric
// plans; a Gaussian's integer σ, found by bisection over sums of up to
// 2^19 terms), while a workload repeats the same few parameters. Mechanisms
// hold only their parameters (the randomness is the engine's Rand), so
// one serves any number of releases at once. Entries are kept per analyst,
// as templates are: how fast a release is calibrated must not tell one
// analyst what another asked.
type calibrations struct {
	cache *lru.Cache[calibrationKey, noiser]
}

// calibrationKey is what a mechanism is calibrated from: the parameters
// its kind reads, the others zero.
type calibrationKey struct {
	analyst                         string
	gaussian                        bool
	epsilon, delta, sensitivity, l2 float64
}

// calibrationsSize bounds the memo: every analyst's distinct parameters.
const calibrationsSize = 4096

func newCalibrations() (*calibrations, error) {
	cache, err := lru.New[calibrationKey, noiser](calibrationsSize)
	if err != nil {
		return nil, err
	}
	return &calibrations{cache: cache}, nil
}

// forAnalyst is analyst's calibrate: memoized mechanisms, a failed
// calibration tried again each time.
func (c *calibrations) forAnalyst(analyst string) calibrate {
	return func(m rewrite.Measurement) (noiser, error) {
		key := calibrationKey{analyst: analyst, gaussian: m.Gaussian, epsilon: m.Epsilon}
		if m.Gaussian {
			key.delta, key.l2 = m.Delta, m.L2
		} else {
			key.sensitivity = m.Sensitivity
		}
		if mech, ok := c.cache.Get(key); ok {
			return mech, nil
		}
		mech, err := measurementMechanism(m)
		if err != nil {
			return nil, err
		}
		c.cache.Add(key, mech)
		return mech, nil
	}
}
