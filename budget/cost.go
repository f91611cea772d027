package budget

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Tolerance is the relative slack allowed when comparing spending with a
// limit, so that rounding in sums such as 100 × 0.1 does not refuse the last
// query that fits exactly. The most an analyst can overspend because of it
// is Tolerance × limit in total.
const Tolerance = 1e-9

// Cost is a privacy cost or budget under basic composition: ε and δ add up
// separately.
type Cost struct {
	Epsilon float64
	Delta   float64
}

// Add returns c + d.
func (c Cost) Add(d Cost) Cost {
	return Cost{Epsilon: c.Epsilon + d.Epsilon, Delta: c.Delta + d.Delta}
}

// IsZero reports whether both ε and δ are zero.
func (c Cost) IsZero() bool { return c.Epsilon == 0 && c.Delta == 0 }

// String formats c as "ε=1.5" or "ε=1.5, δ=1e-06" (δ only when nonzero).
func (c Cost) String() string {
	s := "ε=" + formatFloat(c.Epsilon)
	if c.Delta != 0 {
		s += ", δ=" + formatFloat(c.Delta)
	}
	return s
}

// Validate reports an error wrapping ErrInvalidCost unless ε and δ are both
// finite and non-negative. A negative cost would give budget back.
func (c Cost) Validate() error {
	if !validComponent(c.Epsilon) || !validComponent(c.Delta) {
		return fmt.Errorf("%w: ε=%v, δ=%v (both must be finite and ≥ 0)", ErrInvalidCost, c.Epsilon, c.Delta)
	}
	return nil
}

func validComponent(x float64) bool {
	return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0
}

// within reports whether used ≤ limit up to the relative Tolerance.
func within(used, limit float64) bool {
	return used <= limit+limit*Tolerance
}

// Composition is how an account adds up its charges' (ε, δ). The zero
// value is basic composition: ε and δ add up. With DeltaPrime > 0 it is
// also advanced composition (Dwork, Rothblum and Vadhan 2010, for
// charges of different ε): k charges (ε_i, δ_i) are together
// (Σ ε_i·(e^ε_i − 1) + √(2·ln(1/δ′)·Σ ε_i²), Σ δ_i + δ′)-DP, far less than
// Σ ε_i for many small charges. Both bounds hold, so the account spends
// whichever is smaller and fits.
type Composition struct {
	DeltaPrime float64
	// ZCDP, with DeltaPrime > 0, accounts in zero-concentrated DP instead
	// of advanced composition (Bun and Steinke 2016): an (ε_i, δ_i)-DP
	// charge is δ_i-approximately ε_i²/2-zCDP, these compose by adding up,
	// and ρ-zCDP with δ is (ρ + 2√(ρ·ln(1/δ′)), δ + δ′)-DP. For small ε it
	// is tighter than advanced composition.
	ZCDP bool
}

// name is the accountant's name in the policy: basic, advanced or zcdp.
func (comp Composition) name() string {
	switch {
	case comp.DeltaPrime <= 0:
		return "basic"
	case comp.ZCDP:
		return "zcdp"
	}
	return "advanced"
}

// moments are the sums advanced composition needs besides Σ ε and Σ δ.
type moments struct {
	squares float64 // Σ ε_i²
	excess  float64 // Σ ε_i·(e^ε_i − 1)
}

func momentsOf(c Cost) moments {
	return moments{squares: c.Epsilon * c.Epsilon, excess: c.Epsilon * math.Expm1(c.Epsilon)}
}

// times is the moments of n charges with m's.
func (m moments) times(n int64) moments {
	return moments{squares: float64(n) * m.squares, excess: float64(n) * m.excess}
}

func (m moments) add(n moments) moments {
	return moments{squares: m.squares + n.squares, excess: m.excess + n.excess}
}

func (m moments) sub(n moments) moments {
	return moments{squares: math.Max(m.squares-n.squares, 0), excess: math.Max(m.excess-n.excess, 0)}
}

// effective is the (ε, δ) a sum of charges spends under comp against
// limit: basic composition's, or advanced composition's (or zCDP's) when
// that is smaller in ε and its δ + δ′ fits.
func (comp Composition) effective(used Cost, m moments, limit Cost) Cost {
	if comp.DeltaPrime <= 0 {
		return used
	}
	adv := Cost{Epsilon: m.excess + math.Sqrt(2*math.Log(1/comp.DeltaPrime)*m.squares), Delta: used.Delta + comp.DeltaPrime}
	if comp.ZCDP {
		rho := m.squares / 2
		adv.Epsilon = rho + 2*math.Sqrt(rho*math.Log(1/comp.DeltaPrime))
	}
	if adv.Epsilon < used.Epsilon && within(adv.Delta, limit.Delta) {
		return adv
	}
	return used
}

// fits reports whether used fits in limit, ε and δ separately.
func fits(used, limit Cost) bool {
	return within(used.Epsilon, limit.Epsilon) && within(used.Delta, limit.Delta)
}

// remaining returns limit − used, clamped at zero and snapped to zero when
// it is within the tolerance (so an exactly-spent budget shows 0, not 2e-15).
func remaining(limit, used float64) float64 {
	r := limit - used
	if r <= limit*Tolerance {
		return 0
	}
	return r
}

// nonNegative clamps tiny negative rounding residues to zero.
func nonNegative(c Cost) Cost {
	return Cost{Epsilon: math.Max(c.Epsilon, 0), Delta: math.Max(c.Delta, 0)}
}

func formatFloat(x float64) string {
	return strconv.FormatFloat(x, 'g', 10, 64)
}

// Errors returned by this package. Test for them with errors.Is; the
// returned errors wrap them with details.
var (
	// ErrUnknownAnalyst: the analyst has no budget limit configured.
	ErrUnknownAnalyst = errors.New("budget: unknown analyst")
	// ErrInvalidCost: a cost or limit is negative, NaN or infinite.
	ErrInvalidCost = errors.New("budget: invalid privacy cost")
	// ErrReleased: Commit was called on a released reservation.
	ErrReleased = errors.New("budget: reservation already released")
	// ErrAlreadyCommitted: Commit was called again with a different query
	// text. One reservation pays for exactly one answer.
	ErrAlreadyCommitted = errors.New("budget: reservation already committed for a different query")
	// ErrCommitInProgress: Commit was called while another Commit of the
	// same reservation was still running.
	ErrCommitInProgress = errors.New("budget: commit of this reservation already in progress")
	// ErrNoReservation: a method was called on a nil or zero Reservation.
	ErrNoReservation = errors.New("budget: no reservation")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("budget: ledger closed")
	// ErrReadOnly: Append on a store opened with OpenSQLiteReadOnly.
	ErrReadOnly = errors.New("budget: ledger opened read-only")
	// ErrLedgerLocked: another store holds the ledger file.
	ErrLedgerLocked = errors.New("budget: ledger is in use by another store")
)

// ExhaustedError is returned by Reserve when a query's cost does not fit in
// what remains of the analyst's budget.
type ExhaustedError struct {
	Analyst string
	// Team, when set, is the analyst's team whose budget is exhausted, and
	// Table a protected table's own budget (the costs below are then the
	// team's or the table's); otherwise the analyst's own is. Window says
	// which period of a budget that renews ("this month", or "lifetime"
	// for its lifetime cap).
	Team, Table, Window string
	// Spent is what committed charges have used.
	Spent Cost
	// Reserved is what queries still in progress hold.
	Reserved Cost
	Limit    Cost
	// Requested is the cost of the refused query.
	Requested Cost
}

// Error describes the refusal, for example
//
//	privacy budget exhausted for analyst "bob": spent ε=9.9 of 10, this query costs ε=0.5
//
// or, when a team's budget is the one exhausted, "... for team "growth"
// of analyst "bob": ..." with the team's figures.
//
// δ is included when any of spent, limit or cost has a nonzero δ, and the
// budget held by queries in progress when there is any.
func (e *ExhaustedError) Error() string {
	var b strings.Builder
	period := ""
	if e.Window != "" {
		period = " (" + e.Window + ")"
	}
	switch {
	case e.Team != "":
		fmt.Fprintf(&b, "privacy budget exhausted for team %q%s of analyst %q: ", e.Team, period, e.Analyst)
	case e.Table != "":
		fmt.Fprintf(&b, "privacy budget exhausted for table %q%s, which every analyst's queries on it draw on: ", e.Table, period)
	case e.Window != "":
		fmt.Fprintf(&b, "privacy budget exhausted for analyst %q (%s): ", e.Analyst, e.Window)
	default:
		fmt.Fprintf(&b, "privacy budget exhausted for analyst %q: ", e.Analyst)
	}
	withDelta := e.Spent.Delta != 0 || e.Limit.Delta != 0 || e.Requested.Delta != 0 || e.Reserved.Delta != 0
	if withDelta {
		fmt.Fprintf(&b, "spent ε=%s, δ=%s of ε=%s, δ=%s",
			formatFloat(e.Spent.Epsilon), formatFloat(e.Spent.Delta),
			formatFloat(e.Limit.Epsilon), formatFloat(e.Limit.Delta))
	} else {
		fmt.Fprintf(&b, "spent ε=%s of %s", formatFloat(e.Spent.Epsilon), formatFloat(e.Limit.Epsilon))
	}
	if !e.Reserved.IsZero() {
		r := "ε=" + formatFloat(e.Reserved.Epsilon)
		if withDelta {
			r += ", δ=" + formatFloat(e.Reserved.Delta)
		}
		fmt.Fprintf(&b, " (%s held by queries in progress)", r)
	}
	c := "ε=" + formatFloat(e.Requested.Epsilon)
	if withDelta {
		c += ", δ=" + formatFloat(e.Requested.Delta)
	}
	fmt.Fprintf(&b, ", this query costs %s", c)
	return b.String()
}
