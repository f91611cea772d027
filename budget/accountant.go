package budget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"
)

// Accountant tracks every analyst's privacy budget: the limit, what
// committed charges have spent and what reservations of queries in progress
// hold. It is safe for concurrent use.
//
// The Accountant does not own its Store; close the store after the last
// Commit.
type Accountant struct {
	store Store

	mu       sync.Mutex
	accounts map[string]*account
	// teams are budgets several analysts draw on together, and teamsOf
	// each analyst's teams (SetTeams).
	teams   map[string]*team
	teamsOf map[string][]string
	// now is the clock (time.Now; tests set it), and latest the latest
	// charge's time: the current time is never taken earlier (Window).
	now    func() time.Time
	latest time.Time
	// tables are the protected tables with a budget of their own (a
	// privacy domain: every query that reads the table, whoever asks,
	// draws on it), by name; Reserve is told which tables a query reads.
	tables map[string]*account
}

// account is one analyst's state, guarded by Accountant.mu. Accounts are
// never removed from the map, so reservations may keep pointers to them.
type account struct {
	limit    Cost
	hasLimit bool
	spent    Cost
	reserved Cost
	// comp is how the account adds up charges, and spentMoments and
	// reservedMoments the sums advanced composition needs.
	comp                          Composition
	spentMoments, reservedMoments moments
	// window, when set, makes limit apply to the current period's charges
	// (recent, those of the last MaxWindow) and lifetime, when
	// hasLifetime, cap all of them.
	window      Window
	lifetime    Cost
	hasLifetime bool
	recent      []timedCost
	// blocks are the sums of recent's spans in blocks of spanBlockLen,
	// for each block none of whose spans can still grow (window.go).
	blocks []spanBlock
	// pruneAt is the length of recent at which remember drops what no
	// window can reach.
	pruneAt int
	// memos are windowSpent's partial sums, one per window asked for
	// (the account's own, its teams'); remember's pruning drops them.
	memos []windowMemo
	// windowSums, on a shared ledger, are the spending of the current
	// period of each window the ledger was asked for (recent is then
	// unused).
	windowSums map[Window]Cost
	// held counts reservations whose cost is in reserved: held, being
	// committed, or failed to commit. When it drops to zero reserved is
	// reset to exactly zero, so rounding residues cannot build up.
	held int
}

// Status is a snapshot of an analyst's budget.
type Status struct {
	Limit    Cost
	Spent    Cost
	Reserved Cost
	// Remaining is Limit − Spent − Reserved, never negative.
	Remaining Cost
	// Rho is what the committed charges spend in zCDP terms (Σ ε²/2),
	// which a zCDP account converts to Spent.
	Rho float64
	// WindowStart, for a budget that renews, is when the current window
	// began (Spent is then the window's), and Window says what it is.
	WindowStart time.Time
	Window      string
	// Accountant is how the charges add up: "basic", "advanced" or "zcdp".
	Accountant string
}

// NewAccountant returns an accountant over store with the given limits per
// analyst, starting from the totals already recorded in store. Analysts
// absent from limits cannot reserve budget until SetLimit adds them; their
// recorded spending is kept.
func NewAccountant(ctx context.Context, store Store, limits map[string]Cost) (*Accountant, error) {
	if store == nil {
		return nil, errors.New("budget: NewAccountant: nil store")
	}
	for analyst, l := range limits {
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("budget: limit of analyst %q: %w", analyst, err)
		}
	}
	// An embedded ledger is read in one pass (History): its totals, and
	// what advanced composition and windows need besides. A shared ledger
	// gives its totals, and hands the rest over at each decision.
	var h History
	var spent, tableSpent map[string]Cost
	ss, shared := store.(sharedStore)
	if shared {
		var err error
		if spent, err = ss.Spent(ctx); err != nil {
			return nil, fmt.Errorf("budget: loading spent budgets: %w", err)
		}
		if tableSpent, err = ss.TableSpent(ctx); err != nil {
			return nil, fmt.Errorf("budget: loading spent table budgets: %w", err)
		}
	} else {
		var err error
		if h, err = readHistory(ctx, store); err != nil {
			return nil, fmt.Errorf("budget: loading the ledger's history: %w", err)
		}
		spent, tableSpent = h.Spent, h.TableSpent
	}
	a := &Accountant{store: store, accounts: make(map[string]*account, len(limits)+len(spent)), tables: map[string]*account{}, now: time.Now}
	for table, s := range tableSpent {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("budget: ledger total of table %q: %w", table, err)
		}
		a.tables[table] = &account{spent: s}
	}
	for analyst, s := range spent {
		// A corrupt ledger must not hand out budget: refuse to start.
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("budget: ledger total of analyst %q: %w", analyst, err)
		}
		a.accounts[analyst] = &account{spent: s}
	}
	// Advanced composition needs every charge's ε, not only the totals (a
	// shared ledger keeps their sums and hands them over at each decision).
	// Windows need the charges' times: those any window can still reach,
	// which ends no earlier than the latest charge (the clock never goes
	// back before it), so the horizon is taken from it, not from a clock
	// that may be wrong.
	if !shared {
		a.loadHistory(h)
	}
	for analyst, l := range limits {
		acct := a.accountLocked(analyst)
		acct.limit, acct.hasLimit = l, true
	}
	return a, nil
}

// accountLocked returns analyst's account, creating it. a.mu must be held
// (or a not yet shared).
func (a *Accountant) accountLocked(analyst string) *account {
	acct := a.accounts[analyst]
	if acct == nil {
		acct = &account{}
		a.accounts[analyst] = acct
	}
	return acct
}

// SetLimit sets or replaces analyst's limit, for a policy reload or an
// admin command. Lowering a limit below what is spent is allowed: further
// reservations then fail. Outstanding reservations stay valid. An invalid
// limit (negative, NaN, infinite) is treated as zero, so the analyst can
// spend nothing, and logged.
func (a *Accountant) SetLimit(analyst string, limit Cost) {
	if err := limit.Validate(); err != nil {
		slog.Warn("budget: invalid limit treated as zero", "analyst", analyst, "err", err)
		limit = Cost{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	acct := a.accountLocked(analyst)
	acct.limit, acct.hasLimit = limit, true
}

// SetLimits replaces all limits at once, for a policy reload: analysts in
// limits get their new limit, analysts not in limits can no longer reserve
// budget (their spending and outstanding reservations are kept). Nothing
// changes if a limit is invalid.
func (a *Accountant) SetLimits(limits map[string]Cost) error {
	for analyst, l := range limits {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("budget: limit of analyst %q: %w", analyst, err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for analyst, acct := range a.accounts {
		if _, ok := limits[analyst]; !ok {
			acct.limit, acct.hasLimit = Cost{}, false
		}
	}
	for analyst, l := range limits {
		acct := a.accountLocked(analyst)
		acct.limit, acct.hasLimit = l, true
	}
	return nil
}

// SetComposition sets how analyst's charges add up (basic composition by
// default), at start or on a policy reload.
func (a *Accountant) SetComposition(analyst string, comp Composition) error {
	if !(comp.DeltaPrime >= 0 && comp.DeltaPrime < 1) {
		return fmt.Errorf("budget: δ′ of analyst %q must be in [0, 1), got %v", analyst, comp.DeltaPrime)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.accountLocked(analyst).comp = comp
	return nil
}

// SetWindow makes analyst's limit renew with w, under an optional
// lifetime cap (nil: none), at start or on a policy reload. A windowed
// budget adds up by basic composition.
func (a *Accountant) SetWindow(analyst string, w Window, lifetime *Cost) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if lifetime != nil {
		if err := lifetime.Validate(); err != nil {
			return fmt.Errorf("budget: lifetime of analyst %q: %w", analyst, err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	acct := a.accountLocked(analyst)
	acct.window, acct.hasLifetime = w, lifetime != nil
	if lifetime != nil {
		acct.lifetime = *lifetime
	}
	return nil
}

// clockLocked is the current time, never before a time read earlier.
func (a *Accountant) clockLocked() time.Time {
	// Every time read is a floor for the next: a clock set back (even
	// while a query runs, or after jumping ahead) cannot reopen a period.
	if now := a.now(); now.After(a.latest) {
		a.latest = now
	}
	return a.latest
}

// SetTableLimits replaces the protected tables' own budgets, at start or
// on a policy reload: tables absent from limits have none (their
// spending is kept). Nothing changes if a limit is invalid.
func (a *Accountant) SetTableLimits(limits map[string]Cost) error {
	for table, l := range limits {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("budget: limit of table %q: %w", table, err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, acct := range a.tables {
		acct.limit, acct.hasLimit = Cost{}, false
	}
	for table, l := range limits {
		acct := a.tables[table]
		if acct == nil {
			acct = &account{}
			a.tables[table] = acct
		}
		acct.limit, acct.hasLimit = l, true
	}
	return nil
}

// TableStatus returns a snapshot of a protected table's own budget; ok is
// false if it has none.
func (a *Accountant) TableStatus(table string) (st Status, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acct := a.tables[table]
	if acct == nil || !acct.hasLimit {
		return Status{}, false
	}
	now := a.clockLocked()
	st = statusOf(acct.limit, acct.effectiveSpent(now), acct.reserved)
	st.Accountant = "basic"
	if !acct.window.IsZero() {
		st.Window, st.WindowStart = acct.window.String(), acct.window.Start(now)
	}
	if acct.hasLifetime {
		st.Remaining = minRemaining(st.Remaining, acct.lifetime, acct.spent.Add(acct.reserved))
	}
	return st, true
}

// Reserve sets aside cost c of analyst's budget for a query about to run.
// It fails with an *ExhaustedError unless spent + reserved + c ≤ limit for
// ε and δ separately (up to Tolerance), with an error wrapping
// ErrUnknownAnalyst if analyst has no limit, and with one wrapping
// ErrInvalidCost if c is negative or not finite.
func (a *Accountant) Reserve(ctx context.Context, analyst string, c Cost) (*Reservation, error) {
	return a.ReserveFor(ctx, analyst, nil, c)
}

// ReserveFor is Reserve for a query that reads the given protected
// tables: every scope the query falls in — the analyst, the analyst's
// teams and the tables with a budget of their own — must have room, and
// the charge is recorded with the tables. On a shared ledger
// (SharedStore) the decision is taken on the ledger's totals under its
// locks, so accountants in several processes never spend the same budget;
// ctx bounds that round trip.
func (a *Accountant) ReserveFor(ctx context.Context, analyst string, tables []string, c Cost) (*Reservation, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	tables = slices.Clone(tables) // the reservation keeps its own copy, sorted
	slices.Sort(tables)
	tables = slices.Compact(tables)
	if shared, ok := a.store.(sharedStore); ok {
		return a.reserveShared(ctx, shared, analyst, tables, c)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	acct, held, err := a.checkLocked(analyst, tables, c, a.clockLocked())
	if err != nil {
		return nil, err
	}
	for _, t := range append(held, acct) {
		t.reserved = t.reserved.Add(c)
		t.reservedMoments = t.reservedMoments.add(momentsOf(c))
		t.held++
	}
	return &Reservation{a: a, acct: acct, tables: tables, tableAccts: held, analyst: analyst, cost: c}, nil
}

// checkLocked decides whether c fits in every scope of a query of
// analyst reading tables (sorted, unique) at time now, and returns the
// analyst's account and those of the tables with a budget of their own.
// a.mu must be held.
func (a *Accountant) checkLocked(analyst string, tables []string, c Cost, now time.Time) (*account, []*account, error) {
	acct := a.accounts[analyst]
	if acct == nil || !acct.hasLimit {
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownAnalyst, analyst)
	}
	if !acct.fits(c, now) {
		ex := &ExhaustedError{Analyst: analyst, Spent: acct.effectiveSpent(now), Reserved: acct.reserved, Limit: acct.limit, Requested: c}
		if !acct.window.IsZero() {
			ex.Window = acct.window.String()
			if acct.hasLifetime && fits(ex.Spent.Add(acct.reserved).Add(c), acct.limit) {
				ex.Window, ex.Spent, ex.Limit = "lifetime", acct.spent, acct.lifetime
			}
		}
		return nil, nil, ex
	}
	// Every team of the analyst must have room too.
	for _, name := range a.teamsOf[analyst] {
		t := a.teams[name]
		spent, reserved := a.teamUseLocked(t, now)
		if !fits(spent.Add(reserved).Add(c), t.limit) {
			ex := &ExhaustedError{Analyst: analyst, Team: name, Spent: spent, Reserved: reserved, Limit: t.limit, Requested: c}
			if !t.window.IsZero() {
				ex.Window = t.window.String()
			}
			return nil, nil, ex
		}
		if lifetime := a.teamLifetimeLocked(t); t.hasLifetime && !fits(lifetime.Add(reserved).Add(c), t.lifetime) {
			return nil, nil, &ExhaustedError{Analyst: analyst, Team: name, Window: "lifetime", Spent: lifetime, Reserved: reserved, Limit: t.lifetime, Requested: c}
		}
	}
	// And every table read that has a budget of its own.
	var held []*account
	for _, table := range tables {
		if t := a.tables[table]; t != nil && t.hasLimit {
			if !t.fits(c, now) {
				ex := &ExhaustedError{Analyst: analyst, Table: table, Spent: t.effectiveSpent(now), Reserved: t.reserved, Limit: t.limit, Requested: c}
				if !t.window.IsZero() {
					ex.Window = t.window.String()
					if t.hasLifetime && fits(ex.Spent.Add(t.reserved).Add(c), t.limit) {
						ex.Window, ex.Spent, ex.Limit = "lifetime", t.spent, t.lifetime
					}
				}
				return nil, nil, ex
			}
			held = append(held, t)
		}
	}
	return acct, held, nil
}

// Status returns a snapshot of analyst's budget; ok is false if the analyst
// has no limit. On a shared ledger it is as of the last decision or
// Refresh.
func (a *Accountant) Status(analyst string) (st Status, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acct := a.accounts[analyst]
	if acct == nil || !acct.hasLimit {
		return Status{}, false
	}
	// Under advanced composition what is spent and held together may be
	// less than their sum: Remaining is what is left of that.
	now := a.clockLocked()
	st = statusOf(acct.limit, acct.effectiveSpent(now), acct.reserved)
	if acct.window.IsZero() {
		used := acct.comp.effective(acct.spent.Add(acct.reserved), acct.spentMoments.add(acct.reservedMoments), acct.limit)
		st.Remaining = Cost{Epsilon: remaining(acct.limit.Epsilon, used.Epsilon), Delta: remaining(acct.limit.Delta, used.Delta)}
	} else {
		st.WindowStart = acct.window.Start(now)
		if acct.hasLifetime { // what the lifetime cap leaves, if less
			st.Remaining = minRemaining(st.Remaining, acct.lifetime, acct.spent.Add(acct.reserved))
		}
	}
	st.Rho = acct.spentMoments.squares / 2
	st.Accountant = acct.comp.name()
	if !acct.window.IsZero() {
		st.Window, st.Accountant = acct.window.String(), "basic"
	}
	return st, true
}

// fits reports whether charge c fits in the account at time now with what
// it has spent and holds: under its composition, or in its window and
// lifetime cap.
func (acct *account) fits(c Cost, now time.Time) bool {
	if !acct.window.IsZero() {
		if !fits(acct.windowSpent(acct.window, now).Add(acct.reserved).Add(c), acct.limit) {
			return false
		}
		return !acct.hasLifetime || fits(acct.spent.Add(acct.reserved).Add(c), acct.lifetime)
	}
	used := acct.spent.Add(acct.reserved).Add(c)
	m := acct.spentMoments.add(acct.reservedMoments).add(momentsOf(c))
	return fits(acct.comp.effective(used, m, acct.limit), acct.limit)
}

// effectiveSpent is what the account's committed charges spend at time
// now: under its composition, or in its current window.
func (acct *account) effectiveSpent(now time.Time) Cost {
	if !acct.window.IsZero() {
		return acct.windowSpent(acct.window, now)
	}
	return acct.comp.effective(acct.spent, acct.spentMoments, acct.limit)
}

// minRemaining is r, or what a lifetime cap leaves after used if less.
func minRemaining(r, lifetime, used Cost) Cost {
	return Cost{Epsilon: math.Min(r.Epsilon, remaining(lifetime.Epsilon, used.Epsilon)), Delta: math.Min(r.Delta, remaining(lifetime.Delta, used.Delta))}
}

// statusOf is the status of a budget of limit with spent and reserved.
func statusOf(limit, spent, reserved Cost) Status {
	used := spent.Add(reserved)
	return Status{
		Limit:    limit,
		Spent:    spent,
		Reserved: reserved,
		Remaining: Cost{
			Epsilon: remaining(limit.Epsilon, used.Epsilon),
			Delta:   remaining(limit.Delta, used.Delta),
		},
	}
}

// Charges returns up to limit of analyst's recorded charges, newest first
// (limit ≤ 0: all), for the analyst's own query log.
func (a *Accountant) Charges(ctx context.Context, analyst string, limit int) ([]Charge, error) {
	cs, err := a.store.Charges(ctx, analyst, limit)
	if err != nil {
		return nil, fmt.Errorf("budget: charges of analyst %q: %w", analyst, err)
	}
	return cs, nil
}

// Reservation is budget set aside by Reserve for one query. Exactly one of
// Commit (the answer is about to be released) or Release (nothing
// data-dependent was released) should follow. Its methods are safe for
// concurrent use.
type Reservation struct {
	a       *Accountant
	acct    *account
	analyst string
	cost    Cost
	// tables are the protected tables the query reads, and tableAccts the
	// accounts of those with a budget of their own.
	tables     []string
	tableAccts []*account
	// hold is the reservation's id on a shared ledger (0: local).
	hold int64

	// Guarded by a.mu.
	state  resState
	charge Charge
}

type resState int

const (
	resHeld       resState = iota // reserved, neither committed nor released
	resCommitting                 // Commit is writing the charge
	resFailed                     // a Commit failed: held for good unless a retry succeeds
	resCommitted
	resReleased
)

// Analyst returns the analyst the reservation belongs to.
func (r *Reservation) Analyst() string { return r.analyst }

// Cost returns the reserved cost.
func (r *Reservation) Cost() Cost { return r.cost }

// Commit records the charge durably in the store with the normalized query
// text, then moves the cost from reserved to spent. The answer may be
// released only after Commit returns nil.
//
// If the store fails (or ctx ends while the charge is being written) the
// error is returned and the reservation stays held: its budget is not given
// back, and Release no longer gives it back. Commit may be called again to
// retry. Calling Commit again after it succeeded returns the same Charge if
// query is the same, and an error wrapping ErrAlreadyCommitted otherwise.
// Commit after Release fails with ErrReleased.
func (r *Reservation) Commit(ctx context.Context, query string) (Charge, error) {
	if r == nil || r.a == nil {
		return Charge{}, ErrNoReservation
	}
	a := r.a
	a.mu.Lock()
	switch r.state {
	case resCommitted:
		ch := r.charge
		a.mu.Unlock()
		if ch.Query != query {
			return Charge{}, fmt.Errorf("%w (charge %d)", ErrAlreadyCommitted, ch.ID)
		}
		return ch, nil
	case resReleased:
		a.mu.Unlock()
		return Charge{}, ErrReleased
	case resCommitting:
		a.mu.Unlock()
		return Charge{}, ErrCommitInProgress
	}
	r.state = resCommitting
	a.mu.Unlock()

	var ch Charge
	var err error
	if r.hold != 0 {
		// The shared ledger times the charge by its own clock.
		ch, err = a.store.(sharedStore).settle(ctx, r.hold, Charge{Analyst: r.analyst, Cost: r.cost, Query: query, Tables: r.tables})
	} else {
		a.mu.Lock()
		at := a.clockLocked()
		a.mu.Unlock()
		ch, err = a.store.Append(ctx, Charge{Analyst: r.analyst, Cost: r.cost, Query: query, Tables: r.tables, At: at})
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		r.state = resFailed
		return Charge{}, fmt.Errorf("budget: recording charge of analyst %q: %w", r.analyst, err)
	}
	if r.hold != 0 {
		// A shared ledger's totals reach the accounts with the next
		// decision or Refresh, which would count this charge again.
		r.state, r.charge = resCommitted, ch
		return ch, nil
	}
	// Every table read is charged, with a budget of its own or not, so
	// that a budget given later starts from what was spent.
	for _, table := range r.tables {
		t := a.tables[table]
		if t == nil {
			t = &account{}
			a.tables[table] = t
		}
		t.spent = t.spent.Add(r.cost)
		t.remember(chargeAt(ch.At, r.cost), a.latest)
	}
	acct := r.acct
	acct.spent = acct.spent.Add(r.cost)
	acct.spentMoments = acct.spentMoments.add(momentsOf(r.cost))
	acct.remember(chargeAt(ch.At, r.cost), a.latest)
	if ch.At.After(a.latest) {
		a.latest = ch.At
	}
	r.unholdLocked()
	r.state, r.charge = resCommitted, ch
	return ch, nil
}

// Release gives the reserved budget back. Call it only when no
// data-dependent output left the proxy for this query. It is idempotent,
// and does nothing after Commit, during Commit, or after a failed Commit
// (fail closed).
func (r *Reservation) Release() {
	if r == nil || r.a == nil {
		return
	}
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	if r.state != resHeld {
		return
	}
	if r.hold != 0 {
		r.a.store.(sharedStore).drop(r.hold)
	} else {
		r.unholdLocked()
	}
	r.state = resReleased
}

// unholdLocked removes r's cost from its accounts' reserved totals.
func (r *Reservation) unholdLocked() {
	for _, acct := range append([]*account{r.acct}, r.tableAccts...) {
		acct.held--
		if acct.held == 0 {
			acct.reserved, acct.reservedMoments = Cost{}, moments{}
			continue
		}
		acct.reserved = nonNegative(Cost{
			Epsilon: acct.reserved.Epsilon - r.cost.Epsilon,
			Delta:   acct.reserved.Delta - r.cost.Delta,
		})
		acct.reservedMoments = acct.reservedMoments.sub(momentsOf(r.cost))
	}
}
