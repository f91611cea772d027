package rewrite

import (
	"math"

	"github.com/dpproxy/dpproxy/config"
)

// DP top-k: SELECT g, COUNT(*) ... GROUP BY g ORDER BY COUNT(*) DESC
// LIMIT k, over keys from the data, picks its k groups with the
// exponential mechanism instead of releasing every group that passes
// partition selection: k rounds, each choosing one of the remaining
// groups with probability ∝ exp(ε_pick·score/(2·EMSensitivity)) — the
// score being the group's bounded count (or distinct units, or a sum of
// non-negative values) — or a stop candidate ⊥ of fixed score Tau, which
// ends the list.
//
// Privacy ((ε_topk, δ)-DP). Let Δ be the most one unit moves one group's
// score. Under add/remove neighbours every score moves the same way
// (adding a unit only adds), so the monotone exponential mechanism
// applies: EMSensitivity = Δ/2, weights exp(ε_pick·s/Δ), and each round's
// probability of any of the groups both databases have changes by at most
// e^ε_pick. Under replace scores move both ways: EMSensitivity = Δ (the
// general mechanism), with the same per-round bound. The unit alone can
// create at most L0 groups (the groups it keeps), of score ≤ Δ and weight
// ≤ w₁ = exp(ε_pick·Δ/(2·EMSensitivity)); ⊥'s weight is w⊥ =
// k·L0·w₁/δ. In each round a lone group is picked with probability ≤
// L0·w₁/w⊥ = δ/k, so over k rounds with probability ≤ δ (into δ), and
// lone groups' weights in the normalizer scale the other probabilities by
// at most 1 + δ/k per round, e^δ in all, which ε_pick leaves room for:
// ε_pick = (ε_topk − δ)/k. Scores are exact bounded values; the k groups'
// released values are then measured as usual, each measurement's vector
// restricted to the k groups (at most k of which move).
//
// Against partition selection over all groups (each group's test at
// ε_s/changedGroups, then every released group's noisy values), top-k
// spends ε_s/k per pick whatever L0, returns the groups most likely the
// true top k, and measures k groups only.

// maxTopK is the largest LIMIT answered by DP top-k.
const maxTopK = 100

// TopK is the DP top-k selection of a plan (see the file comment).
type TopK struct {
	Measurement int // the ordering measurement: each group's score
	K           int
	// Epsilon is top-k's share of the query's ε; each pick runs the
	// exponential mechanism at PickEpsilon with EMSensitivity (Delta, the
	// most one unit moves a score, or Delta/2 for monotone scores); Tau
	// is ⊥'s score.
	Epsilon, PickEpsilon, Delta, EMSensitivity, Tau float64
}

// planTopK turns partition selection into DP top-k when the query orders
// its groups by a count (or a sum of non-negative values) descending
// and keeps at most maxTopK of them.
func (p *Plan) planTopK() {
	if p.Selection == nil || p.Limit < 1 || p.Limit > maxTopK || len(p.OrderBy) == 0 || !p.OrderBy[0].Desc {
		return
	}
	src := p.Output[p.OrderBy[0].Output].Source
	if src.Aggregate < 0 {
		return
	}
	a := p.Aggregates[src.Aggregate]
	switch {
	case a.Func == CountStar || a.Func == CountCol || a.Func == CountDistinctUnit:
	case a.Func == Sum && a.Bounds.Lo >= 0 && a.Bounds.Hi > 0:
	default:
		return
	}
	if m := p.Measurements[a.Measurements[0]]; m.SideQuery != 0 {
		return
	}
	p.Selection.TopK = &TopK{Measurement: a.Measurements[0], K: int(p.Limit)}
}

// assignTopK calibrates the top-k selection at its share of ε.
func (p *Plan) assignTopK(share, delta float64) {
	t := p.Selection.TopK
	m := p.Measurements[t.Measurement]
	var b config.Bounds
	for _, a := range p.Aggregates {
		if len(a.Measurements) > 0 && a.Measurements[0] == t.Measurement {
			b = a.Bounds
		}
	}
	magnitude, _ := p.contribution(m.Kind, b)
	k := float64(t.K)
	// Δ with room for the exponential mechanism's score grid (2^-20·Δ).
	t.Delta = magnitude * (1 + 1.0/(1<<16))
	t.EMSensitivity = t.Delta
	if p.Neighbouring == config.AddRemove {
		t.EMSensitivity = t.Delta / 2 // monotone scores
	}
	t.Epsilon = share
	t.PickEpsilon = (share - delta) / k
	// w⊥ = k·L0·w₁/δ: Tau = Δ + (2·EMSensitivity/ε_pick)·ln(k·L0/δ), with
	// room for the sampler's score grid h ≤ 2^-20·EMSensitivity, which
	// rounds scores by h/2 and calibrates to EMSensitivity + h (found in
	// review).
	h := t.EMSensitivity / (1 << 20)
	t.Tau = t.Delta + h + 2*(t.EMSensitivity+h)/t.PickEpsilon*math.Log(k*float64(p.MaxGroupsPerUnit)/delta)
}
