package mechanisms

import (
	"errors"
	"fmt"
	"math"
)

// Sentinel errors. Every error returned by this package wraps exactly one of
// them, so callers can classify failures with errors.Is.
var (
	// ErrInvalidParameter: a privacy or mechanism parameter (epsilon, delta,
	// a sensitivity, a score, ...) is out of range. The message names the
	// parameter.
	ErrInvalidParameter = errors.New("mechanisms: invalid parameter")

	// ErrRandomness: the randomness source failed. Nothing was released;
	// the caller must not retry with a different source of randomness.
	ErrRandomness = errors.New("mechanisms: randomness source failed")

	// ErrSampler: a sampler gave up. Loops in this package are bounded; the
	// bounds are chosen so that hitting one has probability below 2^-64 for
	// valid parameters (or a result would overflow). Nothing was released.
	ErrSampler = errors.New("mechanisms: sampler failed")
)

// Parameter bounds shared by the mechanisms.
const (
	// MinEpsilon is the smallest accepted epsilon. Smaller values make the
	// noise meaningless (the answer is pure noise) and push samplers towards
	// their numeric limits.
	MinEpsilon = 1e-6
	// MaxEpsilon is the largest accepted epsilon. Larger values give no
	// meaningful protection.
	MaxEpsilon = 1e3
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidParameter, fmt.Sprintf(format, args...))
}

func samplerErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSampler, fmt.Sprintf(format, args...))
}

// checkEpsilon validates an epsilon named name.
func checkEpsilon(name string, eps float64) error {
	if math.IsNaN(eps) || math.IsInf(eps, 0) {
		return invalid("%s must be a finite number, got %v", name, eps)
	}
	if eps <= 0 {
		return invalid("%s must be > 0, got %v", name, eps)
	}
	if eps < MinEpsilon {
		return invalid("%s = %v is below the minimum %v (noise would be meaningless)", name, eps, MinEpsilon)
	}
	if eps > MaxEpsilon {
		return invalid("%s = %v is above the maximum %v", name, eps, MaxEpsilon)
	}
	return nil
}

// checkDelta validates a delta that must lie strictly inside (0, 1).
func checkDelta(name string, delta float64) error {
	if math.IsNaN(delta) || math.IsInf(delta, 0) {
		return invalid("%s must be a finite number, got %v", name, delta)
	}
	if delta <= 0 || delta >= 1 {
		return invalid("%s must be in the open interval (0, 1), got %v", name, delta)
	}
	return nil
}

// checkPositive validates a strictly positive finite quantity (sensitivities).
func checkPositive(name string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return invalid("%s must be a finite number, got %v", name, x)
	}
	if x <= 0 {
		return invalid("%s must be > 0, got %v", name, x)
	}
	return nil
}

// nextDown returns the largest float64 strictly below x, applied n times.
// It is used to round computed noise parameters towards the private side.
func nextDown(x float64, n int) float64 {
	for i := 0; i < n; i++ {
		x = math.Nextafter(x, math.Inf(-1))
	}
	return x
}
