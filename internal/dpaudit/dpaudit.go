package dpaudit

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// LowerConfidence returns the one-sided Clopper–Pearson lower bound of a
// proportion seen k times in n trials: P[p < bound] ≤ alpha.
func LowerConfidence(k, n int, alpha float64) float64 {
	if k <= 0 {
		return 0
	}
	return distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(alpha)
}

// UpperConfidence returns the one-sided Clopper–Pearson upper bound of a
// proportion seen k times in n trials: P[p > bound] ≤ alpha.
func UpperConfidence(k, n int, alpha float64) float64 {
	if k >= n {
		return 1
	}
	return distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - alpha)
}

// Tally counts, for each event, the runs on D and on D′ in which it
// occurred.
type Tally struct {
	// Events names the events; each is bounded in both directions.
	Events []string
	// InD[i] and InDPrime[i] count the runs in which event i occurred.
	InD, InDPrime []int
	// RunsD and RunsDPrime are the numbers of runs on each side.
	RunsD, RunsDPrime int
}

// NewTally returns a Tally for the named events.
func NewTally(events ...string) *Tally {
	return &Tally{Events: events, InD: make([]int, len(events)), InDPrime: make([]int, len(events))}
}

// Add records one run on D (onDPrime false) or D′ (true) in which the
// events marked true occurred.
func (t *Tally) Add(onDPrime bool, occurred []bool) {
	if len(occurred) != len(t.Events) {
		panic(fmt.Sprintf("dpaudit: %d outcomes for %d events", len(occurred), len(t.Events)))
	}
	counts := t.InD
	if onDPrime {
		counts, t.RunsDPrime = t.InDPrime, t.RunsDPrime+1
	} else {
		t.RunsD++
	}
	for i, ok := range occurred {
		if ok {
			counts[i]++
		}
	}
}

// Bound is the largest privacy-loss lower bound a Tally supports, and
// where it comes from.
type Bound struct {
	// Epsilon is the lower bound (−Inf when no event supports any).
	Epsilon float64
	// Event names the event that gives it; Reversed is true when it
	// compares D′ against D.
	Event    string
	Reversed bool
	// P and PNeighbour are the event's observed frequencies on the side
	// it favours and on the other.
	P, PNeighbour float64
}

func (b Bound) String() string {
	dir := "D vs D′"
	if b.Reversed {
		dir = "D′ vs D"
	}
	return fmt.Sprintf("ε ≥ %.3f from %q (%s: %.4f vs %.4f)", b.Epsilon, b.Event, dir, b.P, b.PNeighbour)
}

// EpsilonLowerBound returns max over events and both directions of
// ln((LCB(p) − δ) / UCB(p′)), each of the 4·len(Events) one-sided bounds at
// level alpha/(4·len(Events)), so that with probability at least 1 − alpha
// every bound holds and the result does not exceed the true ε of an
// (ε, δ)-DP mechanism.
func (t *Tally) EpsilonLowerBound(delta, alpha float64) Bound {
	best := Bound{Epsilon: math.Inf(-1)}
	level := alpha / float64(4*len(t.Events))
	consider := func(name string, k, n, kn, nn int, reversed bool) {
		lcb := LowerConfidence(k, n, level)
		ucb := UpperConfidence(kn, nn, level)
		if lcb <= delta || ucb <= 0 {
			return
		}
		if e := math.Log((lcb - delta) / ucb); e > best.Epsilon {
			best = Bound{Epsilon: e, Event: name, Reversed: reversed,
				P: float64(k) / float64(n), PNeighbour: float64(kn) / float64(nn)}
		}
	}
	for i, name := range t.Events {
		consider(name, t.InD[i], t.RunsD, t.InDPrime[i], t.RunsDPrime, false)
		consider(name, t.InDPrime[i], t.RunsDPrime, t.InD[i], t.RunsD, true)
	}
	return best
}
