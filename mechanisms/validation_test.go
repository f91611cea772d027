package mechanisms

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParameterValidation(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	r := Seeded(1)
	cases := []struct {
		name  string
		param string // must appear in the error text
		call  func() error
	}{}
	add := func(name, param string, call func() error) {
		cases = append(cases, struct {
			name  string
			param string
			call  func() error
		}{name, param, call})
	}
	for _, eps := range []float64{nan, inf, -inf, 0, -1, 1e-7, 1001} {
		eps := eps
		add("Laplace eps", "epsilon", func() error { _, err := NewLaplace(eps, 1); return err })
		add("Gaussian eps", "epsilon", func() error { _, err := NewGaussian(eps, 1e-5, 1); return err })
		add("Analytic eps", "epsilon", func() error { _, err := AnalyticGaussianSigma(eps, 1e-5, 1); return err })
		add("Classic eps", "epsilon", func() error { _, err := ClassicGaussianSigma(eps, 1e-5, 1); return err })
		add("Exponential eps", "epsilon", func() error { _, err := Exponential(r, eps, 1, []float64{1, 2}); return err })
		add("LaplaceThreshold eps", "epsilon", func() error { _, err := NewLaplaceThreshold(eps, 1e-5, 1); return err })
		add("Optimal eps", "epsilon", func() error { _, err := NewOptimalSelection(eps, 1e-5, 1); return err })
	}
	add("Classic eps ≥ 1", "epsilon", func() error { _, err := ClassicGaussianSigma(1, 1e-5, 1); return err })
	for _, d := range []float64{nan, inf, 0, -0.1, 1, 1.5} {
		d := d
		add("Gaussian delta", "delta", func() error { _, err := NewGaussian(1, d, 1); return err })
		add("Analytic delta", "delta", func() error { _, err := AnalyticGaussianSigma(1, d, 1); return err })
		add("Classic delta", "delta", func() error { _, err := ClassicGaussianSigma(0.5, d, 1); return err })
		add("LaplaceThreshold delta", "delta", func() error { _, err := NewLaplaceThreshold(1, d, 1); return err })
		add("Optimal delta", "delta", func() error { _, err := NewOptimalSelection(1, d, 1); return err })
	}
	for _, s := range []float64{nan, inf, 0, -1} {
		s := s
		add("Laplace sensitivity", "l1Sensitivity", func() error { _, err := NewLaplace(1, s); return err })
		add("Gaussian sensitivity", "l2Sensitivity", func() error { _, err := NewGaussian(1, 1e-5, s); return err })
		add("Analytic sensitivity", "l2Sensitivity", func() error { _, err := AnalyticGaussianSigma(1, 1e-5, s); return err })
		add("Exponential sensitivity", "scoreSensitivity", func() error { _, err := Exponential(r, 1, s, []float64{1, 2}); return err })
	}
	add("Laplace scale too large", "l1Sensitivity/epsilon", func() error { _, err := NewLaplace(1e-6, 1e300); return err })
	add("Laplace scale too small", "l1Sensitivity/epsilon", func() error { _, err := NewLaplace(1000, 1e-300); return err })
	for _, l0 := range []int{0, -1, MaxGroupsPerUnit + 1} {
		l0 := l0
		add("LaplaceThreshold L0", "maxGroupsPerUnit", func() error { _, err := NewLaplaceThreshold(1, 1e-5, l0); return err })
		add("Optimal L0", "maxGroupsPerUnit", func() error { _, err := NewOptimalSelection(1, 1e-5, l0); return err })
	}
	add("Exponential empty", "scores", func() error { _, err := Exponential(r, 1, 1, nil); return err })
	add("Exponential NaN score", "scores[2]", func() error { _, err := Exponential(r, 1, 1, []float64{1, 2, nan}); return err })
	add("Exponential Inf score", "scores[0]", func() error { _, err := Exponential(r, 1, 1, []float64{-inf, 2}); return err })
	add("Exponential huge score", "scores[1]", func() error { _, err := Exponential(r, 1, 1, []float64{0, 1e30}); return err })
	lap, _ := NewLaplace(1, 1)
	gau, _ := NewGaussian(1, 1e-5, 1)
	for _, x := range []float64{nan, inf, -inf} {
		x := x
		add("Laplace x", "x", func() error { _, err := lap.AddNoiseFloat(r, x); return err })
		add("Gaussian x", "x", func() error { _, err := gau.AddNoiseFloat(r, x); return err })
	}
	lt, _ := NewLaplaceThreshold(1, 1e-5, 1)
	add("Keep negative units", "units", func() error { _, err := lt.Keep(r, -3); return err })

	for _, c := range cases {
		err := c.call()
		if err == nil {
			t.Errorf("%s: accepted invalid %s", c.name, c.param)
			continue
		}
		if !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%s: error %q does not wrap ErrInvalidParameter", c.name, err)
		}
		if !strings.Contains(err.Error(), c.param) {
			t.Errorf("%s: error %q does not name %q", c.name, err, c.param)
		}
	}
}

func TestValidParametersAccepted(t *testing.T) {
	for _, c := range []struct{ eps, s float64 }{{MinEpsilon, 1}, {MaxEpsilon, 1}, {1, 1e-9}, {1, 1e12}} {
		if _, err := NewLaplace(c.eps, c.s); err != nil {
			t.Errorf("NewLaplace(%v, %v): %v", c.eps, c.s, err)
		}
		if _, err := NewGaussian(c.eps, 1e-9, c.s); err != nil {
			t.Errorf("NewGaussian(%v, 1e-9, %v): %v", c.eps, c.s, err)
		}
	}
}
