package rewrite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dpproxy/dpproxy/config"
)

// The relational model of a plan. Every query dpproxy answers on protected
// data, whatever shape it was written in (CTEs and derived tables are
// folded first, inline.go and outer.go), is one pipeline of these
// operators, in this order:
//
//	scan → unit joins → joins → filter → bound → group → measure → noise → post-process
//
// Each operator says what it does to one person's contribution; the
// sensitivities come out of the bound and group steps (the derivation is
// in doc.go, steps 1–6), and nothing after the noise reads protected data.
// Relational lists them for a plan: golden files and EXPLAIN DP print it.

// OperatorKind names a relational operator.
type OperatorKind string

const (
	OpScan        OperatorKind = "scan"
	OpUnitJoin    OperatorKind = "unit join"
	OpJoin        OperatorKind = "join"
	OpFilter      OperatorKind = "filter"
	OpBound       OperatorKind = "bound"
	OpGroup       OperatorKind = "group"
	OpMeasure     OperatorKind = "measure"
	OpPostProcess OperatorKind = "post-process"
)

// Operator is one step of a plan's relational model.
type Operator struct {
	Kind OperatorKind
	// What the step does, and Effect what it does to one person's
	// contribution (where sensitivity comes from).
	What, Effect string
}

func (o Operator) String() string { return fmt.Sprintf("%s: %s — %s", o.Kind, o.What, o.Effect) }

// Relational lists the plan's operators (see the file comment).
func (p *Plan) Relational() []Operator {
	var ops []Operator
	add := func(kind OperatorKind, what, effect string, args ...any) {
		ops = append(ops, Operator{Kind: kind, What: what, Effect: fmt.Sprintf(effect, args...)})
	}
	t := p.Table
	switch {
	case t.IsRowPrivacy():
		add(OpScan, t.Name, "each row is one person: under %s neighbours a row %s", p.Neighbouring, rowChange(p.Neighbouring))
	case p.OneRowPerUnit:
		add(OpScan, t.Name, "one row per person (privacy unit %s, the table's primary key): under %s neighbours a row %s", t.PrivacyUnit, p.Neighbouring, rowChange(p.Neighbouring))
	case len(p.UnitJoins) > 0:
		add(OpScan, t.Name, "rows whose person the unit joins find (through %s): under %s neighbours they %s", t.PrivacyUnit, p.Neighbouring, neighbourChange(p.Neighbouring))
	default:
		add(OpScan, t.Name, "a person's rows (privacy unit %s): under %s neighbours they %s", t.PrivacyUnit, p.Neighbouring, neighbourChange(p.Neighbouring))
	}
	unitJoin := map[string]bool{}
	for _, u := range p.UnitJoins {
		by := "added by dpproxy"
		if u.ByQuery {
			by = "the query's own"
			unitJoin[u.Alias] = true
		}
		add(OpUnitJoin, fmt.Sprintf("%s AS %s on its primary key %s (%s), unit %s", u.Table, u.Alias, u.Key, by, u.Unit),
			"each row meets at most one row of %s, whose person it belongs to; rows without one are left out", u.Table)
	}
	for _, j := range p.Joins {
		if unitJoin[j.Alias] {
			continue // listed as the unit join it is
		}
		kind := "inner"
		if j.Left {
			kind = "left"
		}
		if j.Protected {
			add(OpJoin, fmt.Sprintf("%s AS %s (protected, %s, on the unit or a path key)", j.Table, j.Alias, kind),
				"every joined row belongs to one person: the person's rows in both tables together")
			continue
		}
		add(OpJoin, fmt.Sprintf("%s AS %s (public, %s)", j.Table, j.Alias, kind),
			"the same on neighbours; a row matching k public rows becomes k rows of the same person")
	}
	if p.Filter != "" {
		add(OpFilter, p.Filter, "removes rows only, the same condition on neighbours")
	}
	if r := p.R2T; r != nil {
		add(OpBound, fmt.Sprintf("each person's contribution truncated at every threshold %g·2^j, j < %d (R2T)", r.Step, r.Thresholds),
			"at threshold τ a person moves the truncated sum by at most τ")
		add(OpMeasure, fmt.Sprintf("R2T over %d truncated sums", r.Thresholds),
			"each at ε/%d with Laplace noise of scale %d·τ/ε, lowered by %d·ln(%d/β)·τ/ε (β = %g); the largest is released", r.Thresholds, r.Thresholds, r.Thresholds, r.Thresholds, r.Beta)
		return ops
	}
	add(OpBound, p.boundText(), "%s", p.boundEffect())
	switch {
	case len(p.Groups) == 0:
		add(OpGroup, "one group", "the person's bounded rows meet in one cell")
	case p.Selection != nil:
		add(OpGroup, "by "+groupNames(p)+", keys from the data", "a key is released only if DP partition selection passes it (ε = %.3g, δ = %g over the %d groups one person's change touches)",
			p.Selection.Epsilon, p.Selection.Delta, p.Selection.ChangedGroups)
	default:
		var lists []string
		for _, g := range p.Groups {
			lists = append(lists, fmt.Sprintf("%s (%d keys)", g.Name(), len(g.Keys)))
		}
		effect := fmt.Sprintf("every listed key is released, with or without rows; a person keeps %d group(s), chosen at random", p.MaxGroupsPerUnit)
		if p.WeightsGroups() {
			effect = fmt.Sprintf("every listed key is released, with or without rows; a person in k > %d groups counts %d/k in each", p.MaxGroupsPerUnit, p.MaxGroupsPerUnit)
		}
		add(OpGroup, "by "+strings.Join(lists, ", ")+", public key lists", "%s", effect)
	}
	uses := make([][]string, len(p.Measurements))
	for _, a := range p.Aggregates {
		label := a.Func.String()
		if a.Column != nil {
			label += "(" + a.Column.Name + ")"
		}
		for _, mi := range a.Measurements {
			if !slices.Contains(uses[mi], label) {
				uses[mi] = append(uses[mi], label)
			}
		}
	}
	for i, m := range p.Measurements {
		noise := "Laplace"
		switch {
		case m.Gaussian:
			noise = fmt.Sprintf("Gaussian at L2 %g, δ = %g", m.L2, m.Delta)
		case m.Integer:
			noise = "discrete Laplace"
		}
		what := fmt.Sprintf("%d: %s", i, m.Kind)
		if len(uses[i]) > 0 {
			what += " for " + strings.Join(uses[i], ", ")
		}
		add(OpMeasure, what, "sensitivity %g at ε = %.3g, %s noise", m.Sensitivity, m.Epsilon, noise)
	}
	for _, q := range p.Quantiles {
		h := p.Histograms[q.Histogram]
		add(OpMeasure, fmt.Sprintf("quantile %g of %s", q.Level, h.Column.Name), "one person's mass at most %g per group, exponential mechanism at ε = %.3g", q.MassSensitivity, q.Epsilon)
	}
	var post []string
	for _, o := range p.Output {
		if o.Source.Derived != nil {
			post = append(post, o.Name+" = "+o.Source.Derived.Text)
		}
	}
	if p.Having != nil {
		post = append(post, "HAVING "+p.Having.Text)
	}
	if len(p.OrderBy) > 0 || p.Limit >= 0 {
		post = append(post, "ORDER BY/LIMIT")
	}
	if p.Outer != nil {
		post = append(post, "outer query")
	}
	if len(post) > 0 {
		add(OpPostProcess, strings.Join(post, "; "), "reads released values only: free")
	}
	return ops
}

// neighbourChange says how a person's rows differ between neighbours.
func neighbourChange(n config.Neighbouring) string {
	if n == config.Replace {
		return "change"
	}
	return "appear or vanish"
}

// rowChange is neighbourChange for one row.
func rowChange(n config.Neighbouring) string {
	if n == config.Replace {
		return "changes"
	}
	return "appears or vanishes"
}

// boundText describes the contribution bounds as applied.
func (p *Plan) boundText() string {
	if p.OneRowPerUnit {
		return "one row per person"
	}
	l0 := p.MaxGroupsPerUnit
	if len(p.Groups) == 0 {
		l0 = 1
	}
	parts := []string{fmt.Sprintf("at most %d group(s) per person", l0)}
	if p.Auto != nil {
		parts = append(parts, "rows per group chosen from the data (auto)")
	} else {
		parts = append(parts, fmt.Sprintf("%d row(s) per group", p.MaxRowsPerUnit))
	}
	if p.TotalCapped() {
		parts = append(parts, fmt.Sprintf("%d row(s) in all", p.MaxTotalRowsPerUnit))
	}
	seen := map[*config.Column]bool{}
	for _, a := range p.Aggregates {
		if c := a.Column; c != nil && c.Bounds != nil && !seen[c] {
			seen[c] = true
			parts = append(parts, fmt.Sprintf("%s clamped to [%g, %g]", c.Name, c.Bounds.Lo, c.Bounds.Hi))
		}
	}
	return strings.Join(parts, ", ")
}

// boundEffect says what the bounds make of one person's contribution to a
// group (doc.go, step 2).
func (p *Plan) boundEffect() string {
	if p.OneRowPerUnit {
		return "a count moves by at most 1, a sum by the clamped value"
	}
	rows := "Linf"
	if p.Auto == nil {
		rows = fmt.Sprint(p.MaxRowsPerUnit)
	}
	return fmt.Sprintf("per group, a count in [0, %s], a sum in [%s·min(0, lo), %s·max(0, hi)], a person counted once", rows, rows, rows)
}
