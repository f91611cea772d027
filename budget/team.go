package budget

import (
	"fmt"
	"slices"
	"time"
)

// Teams: budgets several analysts draw on together.

// team is a Team with its members' accounts, guarded by Accountant.mu.
type team struct {
	limit       Cost
	members     []string
	window      Window
	lifetime    Cost
	hasLifetime bool
}

// Team is a budget several analysts draw on together: every charge of a
// member counts against the team's limit as well as the member's own.
// What the team has spent is its members' spending together, so it is
// never recorded apart: it follows from the ledger's charges per analyst.
type Team struct {
	Limit   Cost
	Members []string
	// Window, when set, makes Limit apply to the current period's charges
	// under an optional Lifetime cap (as SetWindow for an analyst).
	Window   Window
	Lifetime *Cost
}

// SetTeams replaces the teams (by name), at start or on a policy reload.
// Nothing changes if a limit is invalid.
func (a *Accountant) SetTeams(teams map[string]Team) error {
	for name, t := range teams {
		if err := t.Limit.Validate(); err != nil {
			return fmt.Errorf("budget: limit of team %q: %w", name, err)
		}
		if err := t.Window.Validate(); err != nil {
			return fmt.Errorf("budget: window of team %q: %w", name, err)
		}
		if t.Lifetime != nil {
			if err := t.Lifetime.Validate(); err != nil {
				return fmt.Errorf("budget: lifetime of team %q: %w", name, err)
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.teams, a.teamsOf = map[string]*team{}, map[string][]string{}
	for name, t := range teams {
		tm := &team{limit: t.Limit, members: slices.Clone(t.Members), window: t.Window, hasLifetime: t.Lifetime != nil}
		if t.Lifetime != nil {
			tm.lifetime = *t.Lifetime
		}
		a.teams[name] = tm
		for _, m := range t.Members {
			a.teamsOf[m] = append(a.teamsOf[m], name)
			a.accountLocked(m)
		}
	}
	for _, names := range a.teamsOf {
		slices.Sort(names)
	}
	return nil
}

// teamUseLocked is what a team's members have spent — in the team's
// current window, if it renews — and hold. a.mu must be held.
func (a *Accountant) teamUseLocked(t *team, now time.Time) (spent, reserved Cost) {
	for _, m := range t.members {
		if acct := a.accounts[m]; acct != nil {
			if t.window.IsZero() {
				spent = spent.Add(acct.spent)
			} else {
				spent = spent.Add(acct.windowSpent(t.window, now))
			}
			reserved = reserved.Add(acct.reserved)
		}
	}
	return spent, reserved
}

// teamLifetimeLocked is what a team's members have spent in all.
func (a *Accountant) teamLifetimeLocked(t *team) Cost {
	var spent Cost
	for _, m := range t.members {
		if acct := a.accounts[m]; acct != nil {
			spent = spent.Add(acct.spent)
		}
	}
	return spent
}

// TeamStatus returns a snapshot of a team's budget; ok is false if there
// is no such team.
func (a *Accountant) TeamStatus(name string) (st Status, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.teams[name]
	if t == nil {
		return Status{}, false
	}
	now := a.clockLocked()
	spent, reserved := a.teamUseLocked(t, now)
	st = statusOf(t.limit, spent, reserved)
	st.Accountant = "basic"
	if !t.window.IsZero() {
		st.Window, st.WindowStart = t.window.String(), t.window.Start(now)
	}
	if t.hasLifetime { // what the lifetime cap leaves, if less
		st.Remaining = minRemaining(st.Remaining, t.lifetime, a.teamLifetimeLocked(t).Add(reserved))
	}
	return st, true
}

// TeamsOf lists the teams analyst belongs to, sorted.
func (a *Accountant) TeamsOf(analyst string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.teamsOf[analyst])
}
