// Package mechanisms implements the differential-privacy noise and selection
// mechanisms of dpproxy, with sampling that is exact and secure.
//
// # Mechanisms
//
//   - Laplace: pure ε-DP for a query with L1 sensitivity Δ1. AddNoiseInt adds
//     discrete Laplace (two-sided geometric) noise with parameter e^(-ε/Δ1);
//     AddNoiseFloat snaps the value to a power-of-two grid g ≈ (Δ1/ε)/2^40
//     and adds grid-valued discrete Laplace noise, covering the rounding by
//     using sensitivity Δ1+g.
//   - Gaussian: (ε, δ)-DP and ρ-zCDP (ρ = Δ2²/(2σ²)) for a scalar query with
//     L2 sensitivity Δ2. σ is the analytic calibration of Balle & Wang 2018
//     (AnalyticGaussianSigma, GaussianDelta); the classic formula is
//     available as ClassicGaussianSigma (ε < 1 only). Noise is the exact
//     discrete Gaussian of Canonne, Kamath & Steinke 2020, on the integers
//     (AddNoiseInt) or on a grid g ≈ 2σ/2^57 (AddNoiseFloat).
//   - Exponential: ε-DP selection of an index with probability
//     ∝ exp(ε·score/(2Δu)), sampled exactly from integer-rounded scores.
//   - Partition selection (which GROUP BY keys to release): Laplace
//     thresholding (NewLaplaceThreshold) and the optimal rule of
//     Desfontaines et al. 2022 (NewOptimalSelection), both (ε, δ)-DP.
//
// Each type's documentation states its exact guarantee and the (small,
// private-side) adjustments made to make it hold for the distributions
// actually sampled.
//
// # Secure sampling
//
// Randomness comes only from a *Rand. Production code uses Secure
// (crypto/rand); Seeded is deterministic and for tests only. Any read error
// makes the operation fail with ErrRandomness: nothing is released and there
// is no fallback source.
//
// Textbook floating-point samplers (b·ln U for Laplace, Box–Muller for
// Gaussians) leak the true value through the set of representable outputs
// (Mironov 2012) and are never used. Instead every distribution is sampled
// exactly from random bits:
//
//   - Bernoulli(p) for a rational or float p compares a lazily generated
//     uniform U with p digit by digit;
//   - Bernoulli(exp(-γ)) for rational γ uses the alternating-series method of
//     Canonne, Kamath & Steinke (Algorithm 1);
//   - geometric and two-sided geometric variables are built from independent
//     pieces (a rejection-sampled remainder below the scale, and the binary
//     digits of the quotient, which are independent Bernoulli variables), so
//     the work per sample is nearly constant rather than proportional to the
//     noise magnitude;
//   - the discrete Gaussian is rejection-sampled from a discrete Laplace
//     proposal with an exact acceptance probability computed in 128-bit
//     integer arithmetic (math/big in astronomically rare cases).
//
// Floating-point outputs are a fixed function (one correct rounding) of the
// exact integer-valued result, so they are post-processing of an exactly DP
// value, and they are always multiples of the mechanism's Granularity.
//
// Every loop is bounded. A bound is reached only with negligible probability
// (< 2^-64) or on overflow; the result is then an ErrSampler error, never a
// biased or truncated sample. Parameters that would make the noise
// meaningless or overflow (ε outside [MinEpsilon, MaxEpsilon], non-finite
// values, δ outside (0, 1), scales beyond the supported ranges) are rejected
// with ErrInvalidParameter and a message naming the parameter.
//
// # Performance
//
// A Rand reads crypto/rand in 4 KiB blocks and hands out individual bits, so
// one sample typically costs a few hundred nanoseconds (see the benchmarks in
// mechanisms_bench_test.go). A Rand is safe for concurrent use; each sample
// holds its mutex briefly.
package mechanisms
