package budget

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ErrLedgerUnavailable wraps the errors of a shared ledger that could not
// be reached or failed: the query is refused (or its answer withheld)
// rather than answered uncharged.
var ErrLedgerUnavailable = errors.New("budget: the shared ledger is unavailable")

// ErrHoldLost is returned by Commit on a shared ledger when the
// reservation expired before the charge was recorded (the process could
// not renew it in time): its budget may have gone to other queries, so
// the answer must not be released.
var ErrHoldLost = errors.New("budget: the reservation expired before it was charged")

// sharedStore is a ledger several accountants, in several processes, draw
// on at once (PostgresStore). Reservations live in it as holds, and every
// decision is taken on its totals under its locks: an accountant's own
// totals are then only a cache of the ledger's.
type sharedStore interface {
	Store
	// Spent returns the total cost recorded per analyst. Analysts without
	// charges are absent.
	Spent(ctx context.Context) (map[string]Cost, error)
	// TableSpent returns the total cost recorded per protected table (the
	// charges whose Tables name it). Tables without charges are absent.
	TableSpent(ctx context.Context) (map[string]Cost, error)
	// hold takes the locks of req's scopes, reads their totals (every
	// process's charges and live holds), calls req.decide on them and, if
	// it accepts, records a hold of req.cost on every scope; it returns
	// the hold's id.
	hold(ctx context.Context, req *holdRequest) (int64, error)
	// settle turns hold into the charge c in one transaction, or fails
	// with ErrHoldLost if the hold expired; settling a hold again returns
	// the same charge.
	settle(ctx context.Context, hold int64, c Charge) (Charge, error)
	// drop gives a hold back, without waiting (holds expire anyway).
	drop(hold int64)
	// view reads the totals of scopes without locking them.
	view(ctx context.Context, scopes []string, windows []scopeWindow) (time.Time, map[string]*scopeTotals, error)
}

// holdRequest is a reservation asked of a shared ledger.
type holdRequest struct {
	// scopes are locked and read (sorted, unique): the analyst, the
	// members of the analyst's teams, the tables read.
	scopes []string
	// charged are the scopes the hold counts in: the analyst and the
	// tables read (sorted, unique; chargeScopes of the charge it becomes).
	charged []string
	// windows are the windows whose spending the decision needs: of the
	// analyst, of the teams' members, of the tables, whose budgets renew.
	windows []scopeWindow
	cost    Cost
	// decide says whether cost fits, given the ledger's clock and totals.
	decide func(now time.Time, view map[string]*scopeTotals) error
}

// scopeTotals are what a scope has spent and holds on a shared ledger.
type scopeTotals struct {
	spent, reserved               Cost
	spentMoments, reservedMoments moments
	// windowSpent is the spending of the scope's current window, per
	// window asked for.
	windowSpent map[Window]Cost
}

// scopeWindow is a window whose current spending a scope's totals carry.
type scopeWindow struct {
	scope string
	w     Window
}

// compareScopeWindows orders scope windows (for comparing lists).
func compareScopeWindows(x, y scopeWindow) int {
	if c := strings.Compare(x.scope, y.scope); c != 0 {
		return c
	}
	if c := strings.Compare(x.w.Period, y.w.Period); c != 0 {
		return c
	}
	return int(x.w.Rolling - y.w.Rolling)
}

// Scope names on a shared ledger.
func analystScope(name string) string { return "analyst:" + name }
func tableScope(name string) string   { return "table:" + name }

// reserveShared is ReserveFor on a shared ledger: the scopes' totals come
// from the ledger under its locks, and the same checks as on a local
// ledger decide.
func (a *Accountant) reserveShared(ctx context.Context, s sharedStore, analyst string, tables []string, c Cost) (*Reservation, error) {
	a.mu.Lock()
	acct := a.accounts[analyst]
	if acct == nil || !acct.hasLimit {
		a.mu.Unlock()
		return nil, fmt.Errorf("%w %q", ErrUnknownAnalyst, analyst)
	}
	a.mu.Unlock()
	charged := chargeScopes(Charge{Analyst: analyst, Tables: tables})
	// A policy reload between listing the scopes and deciding (a new team
	// member, a new window) would leave a scope unlocked and unread: the
	// decision then refuses, and the reservation is asked again.
	for attempt := 0; ; attempt++ {
		a.mu.Lock()
		scopes, windows := a.scopesLocked(analyst, tables)
		a.mu.Unlock()
		id, err := s.hold(ctx, &holdRequest{scopes: scopes, charged: charged, windows: windows, cost: c, decide: func(now time.Time, view map[string]*scopeTotals) error {
			a.mu.Lock()
			defer a.mu.Unlock()
			if cur, w := a.scopesLocked(analyst, tables); !slices.Equal(cur, scopes) || !slices.Equal(w, windows) {
				return errScopesChanged
			}
			a.installLocked(now, view)
			_, _, err := a.checkLocked(analyst, tables, c, now)
			return err
		}})
		if errors.Is(err, errScopesChanged) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &Reservation{a: a, acct: acct, tables: tables, analyst: analyst, cost: c, hold: id}, nil
	}
}

// errScopesChanged refuses a shared reservation whose scopes changed (a
// policy reload) after they were locked.
var errScopesChanged = errors.New("budget: the budgets a query falls in changed while it was reserved; try again")

// scopesLocked lists the ledger scopes a query of analyst reading tables
// touches — the analyst, the members of the analyst's teams, every table
// read — and the windows whose spending the decision needs. a.mu must be
// held.
func (a *Accountant) scopesLocked(analyst string, tables []string) ([]string, []scopeWindow) {
	scopes := []string{analystScope(analyst)}
	var windows []scopeWindow
	if acct := a.accounts[analyst]; acct != nil && !acct.window.IsZero() {
		windows = append(windows, scopeWindow{analystScope(analyst), acct.window})
	}
	for _, name := range a.teamsOf[analyst] {
		t := a.teams[name]
		for _, m := range t.members {
			scopes = append(scopes, analystScope(m))
			if !t.window.IsZero() {
				windows = append(windows, scopeWindow{analystScope(m), t.window})
			}
		}
	}
	for _, table := range tables {
		scopes = append(scopes, tableScope(table))
		if t := a.tables[table]; t != nil && t.hasLimit && !t.window.IsZero() {
			windows = append(windows, scopeWindow{tableScope(table), t.window})
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(scopes))), slices.CompactFunc(slices.SortedFunc(slices.Values(windows), compareScopeWindows), func(x, y scopeWindow) bool { return x == y })
}

// installLocked copies a shared ledger's totals into the accounts they
// belong to, so that the local checks decide on them. a.mu must be held.
func (a *Accountant) installLocked(now time.Time, view map[string]*scopeTotals) {
	if now.After(a.latest) {
		a.latest = now
	}
	for scope, v := range view {
		var acct *account
		if name, ok := strings.CutPrefix(scope, "analyst:"); ok {
			acct = a.accountLocked(name)
		} else if name, ok := strings.CutPrefix(scope, "table:"); ok {
			if acct = a.tables[name]; acct == nil {
				acct = &account{}
				a.tables[name] = acct
			}
		} else {
			continue
		}
		acct.spent, acct.spentMoments = v.spent, v.spentMoments
		acct.reserved, acct.reservedMoments = v.reserved, v.reservedMoments
		acct.windowSums = maps.Clone(v.windowSpent)
		if acct.windowSums == nil {
			acct.windowSums = map[Window]Cost{}
		}
	}
}

// Refresh reloads every known scope's totals from a shared ledger, so
// that Status, TeamStatus and TableStatus show what all processes have
// spent and hold; on a local ledger it does nothing (the accountant is
// the only writer).
func (a *Accountant) Refresh(ctx context.Context) error {
	s, ok := a.store.(sharedStore)
	if !ok {
		return nil
	}
	// Every scope a query of any analyst reading any table could touch.
	a.mu.Lock()
	tables := slices.Sorted(maps.Keys(a.tables))
	var scopes []string
	var windows []scopeWindow
	for name := range a.accounts {
		sc, w := a.scopesLocked(name, tables)
		scopes, windows = append(scopes, sc...), append(windows, w...)
	}
	a.mu.Unlock()
	scopes = slices.Compact(slices.Sorted(slices.Values(scopes)))
	slices.SortFunc(windows, compareScopeWindows)
	windows = slices.Compact(windows)
	now, view, err := s.view(ctx, scopes, windows)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.installLocked(now, view)
	return nil
}
