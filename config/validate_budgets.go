package config

import "time"

// Validation of the analysts, their teams and budgets.

func (d *decoder) validateAnalysts(p *Policy) {
	names := map[string]string{} // name → path of first analyst with it
	for i := range p.Analysts {
		a := &p.Analysts[i]
		path := indexPath("analysts", i)
		d.uniqueName(names, path+".name", "analyst", a.Name, "the user name the analyst logs in with")

		pw := path + ".password"
		if d.ok(pw) {
			d.validateVerifiers(pw, &a.Password)
		}

		bp := path + ".budget"
		if !d.has(bp) {
			d.errorf(bp, "required; expected a mapping with epsilon (and optionally delta), the analyst's total privacy budget")
			continue
		}
		if !d.has(bp + ".epsilon") {
			d.errorf(bp+".epsilon", "required; expected the analyst's total epsilon, a finite number greater than 0")
		} else {
			d.checkEpsilon(bp+".epsilon", a.Budget.Epsilon)
		}
		d.checkDelta(bp+".delta", a.Budget.Delta)
		d.checkAccountant(bp, &a.Budget)
		d.checkWindow(bp, &a.Budget)
		// The policy's accountant, for a budget that names none and does
		// not renew (a renewing budget adds up by basic composition).
		if !d.has(bp+".accountant") && a.Budget.Window == "" && p.Defaults.Accountant != "" {
			a.Budget.Accountant, a.Budget.DeltaPrime = p.Defaults.Accountant, p.Defaults.DeltaPrime
		}
	}
}

// checkDefaultAccountant checks the policy's default accountant and δ′.
func (d *decoder) checkDefaultAccountant(df *Defaults) {
	switch df.Accountant {
	case "", AccountantBasic:
		if d.has("defaults.delta_prime") {
			d.errorf("defaults.delta_prime", "only advanced composition and zcdp take a δ′; set defaults.accountant, or leave delta_prime out")
		}
	case AccountantAdvanced, AccountantZCDP:
		if !d.has("defaults.delta_prime") {
			d.errorf("defaults.delta_prime", "required with accountant: %s; expected the δ′ the conversion to (ε, δ) spends, such as 1e-6", df.Accountant)
		} else if !(df.DeltaPrime > 0 && df.DeltaPrime < 1) {
			d.errorf("defaults.delta_prime", "must be greater than 0 and less than 1, got %g", df.DeltaPrime)
		}
	default:
		d.errorf("defaults.accountant", "unknown accountant %q; expected basic, advanced or zcdp", df.Accountant)
	}
}

// checkAccountant checks an analyst budget's accountant and δ′.
func (d *decoder) checkAccountant(path string, b *Budget) {
	switch b.Accountant {
	case "", AccountantBasic:
		if d.has(path + ".delta_prime") {
			d.errorf(path+".delta_prime", "only advanced composition takes a δ′; set accountant: advanced, or leave delta_prime out")
		}
	case AccountantAdvanced, AccountantZCDP:
		switch {
		case !d.has(path + ".delta_prime"):
			d.errorf(path+".delta_prime", "required with accountant: %s; expected the δ′ the conversion to (ε, δ) spends, such as 1e-6, within the budget's delta", b.Accountant)
		case !(b.DeltaPrime > 0 && b.DeltaPrime <= b.Delta):
			d.errorf(path+".delta_prime", "must be greater than 0 and at most the budget's delta (%g), got %g: advanced composition spends δ′ from it", b.Delta, b.DeltaPrime)
		}
	default:
		d.errorf(path+".accountant", "unknown accountant %q; expected basic, advanced or zcdp", b.Accountant)
	}
}

func (d *decoder) validateTeams(p *Policy) {
	names := map[string]string{}
	for i := range p.Teams {
		t := &p.Teams[i]
		path := indexPath("teams", i)
		d.uniqueName(names, path+".name", "team", t.Name, "the team's name")
		if len(t.Analysts) == 0 && d.ok(path+".analysts") {
			d.errorf(path+".analysts", "required; expected the names of the analysts who draw on the team's budget")
		}
		members := map[string]bool{}
		for j, name := range t.Analysts {
			ap := indexPath(path+".analysts", j)
			switch {
			case !isAnalyst(p, name):
				d.errorf(ap, "%q is not an analyst of the policy; expected one of the names under analysts", name)
			case members[name]:
				d.errorf(ap, "analyst %q is listed twice", name)
			}
			members[name] = true
		}
		bp := path + ".budget"
		switch {
		case !d.has(bp):
			d.errorf(bp, "required; expected a mapping with epsilon (and optionally delta), the team's total privacy budget")
		case !d.has(bp + ".epsilon"):
			d.errorf(bp+".epsilon", "required; expected the team's total epsilon, a finite number greater than 0")
		default:
			d.checkEpsilon(bp+".epsilon", t.Budget.Epsilon)
			d.checkDelta(bp+".delta", t.Budget.Delta)
			d.basicOnly(bp)
			d.checkWindow(bp, &t.Budget)
		}
	}
}

// basicOnly refuses an accountant on a team's or table's budget, which add
// up by basic composition.
func (d *decoder) basicOnly(path string) {
	for _, key := range []string{"accountant", "delta_prime"} {
		if d.has(path + "." + key) {
			d.errorf(path+"."+key, "only an analyst's budget takes an accountant; a team's or table's budget adds up by basic composition")
		}
	}
}

func isAnalyst(p *Policy, name string) bool {
	_, ok := p.Analyst(name)
	return ok
}

// checkWindow checks a budget's window and lifetime cap (an analyst's, a
// team's or a table's).
func (d *decoder) checkWindow(path string, b *Budget) {
	wp := path + ".window"
	switch _, rolling := RollingWindow(b.Window); {
	case b.Window == "":
		if b.Lifetime != nil {
			d.errorf(path+".lifetime", "a lifetime cap needs a window; without one the budget is already the lifetime's")
		}
		return
	case b.Window == "day" || b.Window == "week" || b.Window == "month":
	case rolling:
		if dur, _ := RollingWindow(b.Window); dur > 31*24*time.Hour {
			d.errorf(wp, "a rolling window is at most 31 days, got %s", b.Window)
		}
	default:
		d.errorf(wp, "expected day, week, month or a rolling duration such as 7d or 36h; got %q", b.Window)
	}
	if b.Accountant != "" && b.Accountant != AccountantBasic {
		d.errorf(wp, "a budget that renews adds up by basic composition; drop accountant: %s or the window", b.Accountant)
	}
	if lp := path + ".lifetime"; b.Lifetime != nil && d.ok(lp) {
		if !d.has(lp + ".epsilon") {
			d.errorf(lp+".epsilon", "required; expected the epsilon over all windows, a finite number greater than 0")
		} else {
			d.checkEpsilon(lp+".epsilon", b.Lifetime.Epsilon)
		}
		d.checkDelta(lp+".delta", b.Lifetime.Delta)
	}
}

// uniqueName checks a name at path: present, and not the name of an
// earlier one of its kind (names maps names to the path of their first
// use).
func (d *decoder) uniqueName(names map[string]string, path, kind, name, what string) {
	switch first, dup := names[name]; {
	case name == "":
		d.errorf(path, "required; expected %s", what)
	case dup:
		d.errorf(path, "%s %q is already defined at line %d (%s); names must be unique", kind, name, d.line(first), parentPath(first))
	default:
		names[name] = path
	}
}
