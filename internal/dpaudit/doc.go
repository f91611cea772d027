// Package dpaudit bounds a mechanism's privacy loss from below, black-box,
// from how often events occur in its outputs on two neighbouring inputs.
//
// If M is (ε, δ)-DP then for neighbouring D, D′ and every event S,
// P[M(D) ∈ S] ≤ e^ε·P[M(D′) ∈ S] + δ. Having seen S in k of n runs on D
// and in k′ of n′ runs on D′, the one-sided Clopper–Pearson bounds
// LCB(P[M(D) ∈ S]) and UCB(P[M(D′) ∈ S]) give
//
//	ε ≥ ln((LCB − δ) / UCB)
//
// with the confidence of the two bounds. An audit tries several events
// and both directions (D against D′, and D′ against D) and reports the
// largest such lower bound; Bonferroni's correction keeps the confidence
// of the whole set at 1 − α. A correct mechanism then gives a lower bound
// above its ε with probability at most α; a mechanism that spends more
// than it claims is caught once the runs are many enough for its extra
// loss to exceed the bounds' width.
//
// It is test support: production code never imports it.
package dpaudit
