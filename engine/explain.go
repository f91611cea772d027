package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// ExplainConfidence is the confidence level of explain's error bounds.
const ExplainConfidence = 0.95

// Explain describes a plan without running it: one row per measurement
// with its mechanism, sensitivity, ε share, noise scale and the half-width
// of a 95% interval around the exact (bounded) value.
func Explain(plan *rewrite.Plan) (*sqltypes.Result, error) {
	res := &sqltypes.Result{Columns: []sqltypes.Column{
		{Name: "aggregate", Type: sqltypes.Text},
		{Name: "measurement", Type: sqltypes.Text},
		{Name: "mechanism", Type: sqltypes.Text},
		{Name: "sensitivity", Type: sqltypes.Float8},
		{Name: "epsilon", Type: sqltypes.Float8},
		{Name: "noise_scale", Type: sqltypes.Float8},
		{Name: "error_bound_95", Type: sqltypes.Float8},
	}}
	if plan.RR != nil {
		explainRR(plan, res)
		return res, nil
	}
	seen := map[string]bool{}
	for _, a := range plan.Aggregates {
		label := a.Func.String()
		if a.Column != nil {
			label = fmt.Sprintf("%s(%s)", a.Func, a.Column.Name)
		}
		if a.Func == rewrite.QuantileAgg {
			label = fmt.Sprintf("quantile %g of %s", plan.Quantiles[a.Quantile].Level, a.Column.Name)
		}
		// Each aggregate once, selected or used only in an expression
		// or HAVING (a repeated one shares its measurements).
		if seen[label] {
			continue
		}
		seen[label] = true
		if a.Func == rewrite.QuantileAgg {
			// For a quantile, the sensitivity is one unit's mass (Linf),
			// noise_scale the exponential mechanism's 2·Linf/ε per group,
			// and the error bound is in rank: values between the released
			// one and the true quantile.
			q := plan.Quantiles[a.Quantile]
			h := plan.Histograms[q.Histogram]
			perGroup := q.MechanismEpsilon / float64(q.ChangedGroups)
			mech := fmt.Sprintf("exponential mechanism over %d values of [%g, %g]", h.Grid.Buckets, h.Grid.Lo, h.Grid.Hi)
			res.Rows = append(res.Rows, []any{label, "rank", mech, q.MassSensitivity, q.Epsilon, 2 * q.MassSensitivity / perGroup,
				mechanisms.QuantileRankError(perGroup, q.MassSensitivity, h.Grid.Buckets, 1-ExplainConfidence)})
			continue
		}
		for _, mi := range a.Measurements {
			m := plan.Measurements[mi]
			row, err := measurementRow(label, m)
			if err != nil {
				return nil, err
			}
			res.Rows = append(res.Rows, row)
			if m.Excess > 0 {
				// What bounding removed (rewrite excess measurements), for
				// intervals that cover the bias.
				x := plan.Measurements[m.Excess-1]
				if row, err = measurementRow(label, x); err != nil {
					return nil, err
				}
				row[1] = fmt.Sprintf("excess of the %s (what bounding removed, up to %g per person: interval only)", m.Kind, x.Clip)
				res.Rows = append(res.Rows, row)
			}
		}
	}
	if r := plan.R2T; r != nil {
		// R2T: "sensitivity" and "noise_scale" at the first threshold (they
		// double at each); the error bound depends on the data (summary).
		res.Rows = append(res.Rows, []any{plan.Aggregates[0].Func.String(), fmt.Sprintf("sum truncated at %d thresholds", r.Thresholds),
			"R2T (Laplace per threshold)", r.Step, plan.Epsilon / float64(r.Thresholds), float64(r.Thresholds) * r.Step / plan.Epsilon, nil})
	}
	if s := plan.Selection; s != nil && s.TopK != nil {
		// Top-k: "noise_scale" is the exponential mechanism's scale
		// 2·EMSensitivity/ε_pick, the bound the stop score τ.
		t := s.TopK
		res.Rows = append(res.Rows, []any{"GROUP BY keys", fmt.Sprintf("top %d by %s", t.K, plan.Measurements[t.Measurement].Kind),
			fmt.Sprintf("exponential mechanism, %d picks (δ=%g)", t.K, s.Delta), t.Delta, t.Epsilon, 2 * t.EMSensitivity / t.PickEpsilon, t.Tau})
	} else if s := plan.Selection; s != nil && s.Threshold != nil {
		// Thresholding a released count: no ε of its own; "noise_scale"
		// and the bound are the threshold τ on the noisy count.
		m := plan.Measurements[s.Threshold.Measurement]
		res.Rows = append(res.Rows, []any{"GROUP BY keys", "noisy " + m.Kind.String(), fmt.Sprintf("partition selection: threshold on the released %s (δ=%g)", m.Kind, s.Delta), float64(s.ChangedGroups), 0.0, s.Threshold.Tau, s.Threshold.Tau})
	} else if s != nil {
		sel, err := mechanisms.NewOptimalSelection(s.Epsilon, s.Delta, s.ChangedGroups)
		if err != nil {
			return nil, err
		}
		// For selection, "noise_scale" is the number of units at which a
		// group is released with probability ½.
		res.Rows = append(res.Rows, []any{"GROUP BY keys", "distinct units", fmt.Sprintf("partition selection (δ=%g)", s.Delta), float64(s.ChangedGroups), s.Epsilon, sel.Threshold(), sel.Threshold()})
	}
	res.Tag = fmt.Sprintf("SELECT %d", len(res.Rows))
	return res, nil
}

// ExplainSummary is the prose part of an explanation: cost, bounds and
// the guarantee for groups of people.
func ExplainSummary(plan *rewrite.Plan) string {
	var sb strings.Builder
	if rr := plan.RR; rr != nil {
		fmt.Fprintf(&sb, "table %s, privacy unit %s, neighbouring %s\n", plan.Table.Name, plan.Table.PrivacyUnit, plan.Neighbouring)
		fmt.Fprintf(&sb, "randomized response: at most %d record(s) per person, chosen at random; each column's value randomized at ε = %.4g per record; dummy records at ε = %.4g hide how many records there are (δ = %g)\n",
			rr.RowsPerUnit, rr.ColumnEpsilon, rr.CountEpsilon, plan.Delta)
		fmt.Fprintf(&sb, "cost: ε = %g, δ = %g for the whole release (the ε a person's records and presence are protected with)\n", plan.Epsilon, plan.Delta)
		return sb.String()
	}
	unit := plan.Table.PrivacyUnit
	switch path := plan.Table.UnitPath; {
	case len(plan.UnitJoins) > 0:
		steps := plan.Table.Name + "." + plan.Table.PrivacyUnit
		for _, u := range plan.UnitJoins {
			steps += " → " + u.Table + "." + u.Key + ", " + u.Table + "." + u.Unit
		}
		last := plan.UnitJoins[len(plan.UnitJoins)-1]
		unit = last.Unit + " of " + last.Table + ", reached through " + steps + " (each row belongs to the person its referenced row belongs to)"
	case path != nil:
		unit += " (a foreign key to " + path.String() + ": each row belongs to the person it references)"
	}
	fmt.Fprintf(&sb, "table %s, privacy unit %s, neighbouring %s\n", plan.Table.Name, unit, plan.Neighbouring)
	l0 := plan.MaxGroupsPerUnit
	if len(plan.Groups) == 0 {
		l0 = 1
	}
	switch {
	case plan.R2T != nil:
		r := plan.R2T
		fmt.Fprintf(&sb, "contribution bounds: none fixed (max_rows_per_unit: auto, dpproxy.auto_bound = r2t): R2T (Dong et al., SIGMOD 2022) truncates each person's contribution at every threshold %g·2^j, j < %d, "+
			"adds Laplace noise of scale %d·τ/ε to each truncated sum (ε/%d each), lowers it by %d·ln(%d/β)·τ/ε and releases the largest (or 0)\n", r.Step, r.Thresholds, r.Thresholds, r.Thresholds, r.Thresholds, r.Thresholds)
		fmt.Fprintf(&sb, "guarantee: with probability %g the answer is at most the truth and at most 4·%d·ln(%d/β)·τ*/ε below it, τ* the largest contribution of one person (β = %g): it is low by design, never high\n",
			1-r.Beta, r.Thresholds, r.Thresholds, r.Beta)
	case plan.Auto != nil:
		fmt.Fprintf(&sb, "contribution bounds: at most %d group(s) per unit; rows per unit per group are chosen when the query runs (max_rows_per_unit: auto) "+
			"as the DP %g quantile of each person's largest group, at ε = %.3g of the query's; the sensitivities and bounds below are for one row per group "+
			"and grow in proportion to the bound chosen\n", l0, plan.Auto.Level, plan.Auto.Epsilon)
	case plan.Table.IsRowPrivacy():
		fmt.Fprintf(&sb, "contribution bounds: one row per unit\n")
	case plan.OneRowPerUnit:
		fmt.Fprintf(&sb, "contribution bounds: one row per unit: %s is the primary key of %s in the database, so no bounding step is needed\n", plan.Table.PrivacyUnit, plan.Table.Name)
	case plan.TotalCapped():
		where := "in all its groups"
		if plan.Selection != nil {
			where = fmt.Sprintf("in at most %d group(s) chosen at random", l0)
		}
		fmt.Fprintf(&sb, "contribution bounds: at most %d row(s) per unit per group and %d row(s) per unit %s "+
			"(a unit with more has each row weighted by %d/its rows; a larger sum in a group is scaled down to %d values)\n",
			plan.MaxRowsPerUnit, plan.MaxTotalRowsPerUnit, where, plan.MaxTotalRowsPerUnit, plan.MaxRowsPerUnit)
	case plan.WeightsGroups():
		fmt.Fprintf(&sb, "contribution bounds: at most %d groups' worth per unit (a unit in k > %d groups counts %d/k in each), "+
			"at most %d row(s) per unit per group (a unit's larger sum is scaled down to %d values)\n", l0, l0, l0, plan.MaxRowsPerUnit, plan.MaxRowsPerUnit)
	default:
		fmt.Fprintf(&sb, "contribution bounds: at most %d group(s) per unit (chosen at random), "+
			"at most %d row(s) per unit per group (a unit's larger sum is scaled down to %d values)\n", l0, plan.MaxRowsPerUnit, plan.MaxRowsPerUnit)
	}
	// What bounding can drop: the error bounds below cover the noise only.
	if !plan.OneRowPerUnit && plan.R2T == nil {
		if plan.TotalCapped() {
			fmt.Fprintf(&sb, "bias: the error bounds cover the noise only; bounding drops what people contribute beyond %d row(s) per group and %d row(s) in all", plan.MaxRowsPerUnit, plan.MaxTotalRowsPerUnit)
		} else {
			fmt.Fprintf(&sb, "bias: the error bounds cover the noise only; bounding drops what people contribute beyond %d group(s) and %d row(s) per group", l0, plan.MaxRowsPerUnit)
		}
		if clamped := ClampedColumns(plan); len(clamped) > 0 {
			fmt.Fprintf(&sb, " and clamps %s", strings.Join(clamped, ", "))
		}
		sb.WriteString(", so counts and sums can be lower than the truth by more than the bound when people exceed these limits\n")
	} else if clamped := ClampedColumns(plan); plan.OneRowPerUnit && len(clamped) > 0 {
		verb := "are"
		if len(clamped) == 1 {
			verb = "is"
		}
		fmt.Fprintf(&sb, "bias: the error bounds cover the noise only; each person is one row, so no row is dropped, but %s %s clamped: sums and means can differ from the truth by more than the bound when values lie outside\n",
			strings.Join(clamped, ", "), verb)
	}
	excessEpsilon, main := 0.0, 0
	for _, m := range plan.Measurements {
		if m.Kind == rewrite.MeasureExcess {
			excessEpsilon += m.Epsilon
		} else {
			main++
		}
	}
	if excessEpsilon > 0 {
		fmt.Fprintf(&sb, "intervals (dpproxy.intervals): ε = %.3g of the query's ε measures what bounding removed (the excess rows), so that each answer's interval covers its bias as well as its noise, "+
			"as long as no person has more removed than one more helping of the bounds (the excess rows' clip)\n", excessEpsilon)
	}
	parts := fmt.Sprintf("%d measurement(s)", main)
	if plan.R2T != nil {
		parts = fmt.Sprintf("the %d truncated sums of R2T", plan.R2T.Thresholds)
	}
	if len(plan.Quantiles) > 0 {
		parts += fmt.Sprintf(", %d quantile(s)", len(plan.Quantiles))
	}
	switch {
	case plan.Selection != nil && plan.Selection.TopK != nil:
		parts += " and top-k selection"
	case plan.Selection != nil && plan.Selection.Threshold == nil:
		parts += " and partition selection"
	}
	if excessEpsilon > 0 {
		fmt.Fprintf(&sb, "cost: ε = %g, δ = %g (%.3g split equally over %s; %.3g over the excess rows)\n", plan.Epsilon, plan.Delta, plan.Epsilon-excessEpsilon, parts, excessEpsilon)
	} else {
		fmt.Fprintf(&sb, "cost: ε = %g, δ = %g (split equally over %s)\n", plan.Epsilon, plan.Delta, parts)
	}
	for _, g := range plan.Groups {
		if g.Source != nil && len(g.Keys) > 0 && g.Source.Bounds != nil && !strings.HasPrefix(g.Name(), "width_bucket") {
			fmt.Fprintf(&sb, "group keys of %s: the %d bins that meet %s's bounds [%g, %g], public; rows whose %s lies outside them fall in bins that are not released\n",
				g.Name(), len(g.Keys), g.Source.Name, g.Source.Bounds.Lo, g.Source.Bounds.Hi, g.Source.Name)
			continue
		}
		if len(g.Keys) > 0 && g.Column != nil && g.Column.KeysAuto {
			fmt.Fprintf(&sb, "group keys of %s: public list of %d key(s), the public table's values read at start\n", g.Name(), len(g.Keys))
		} else if len(g.Keys) > 0 {
			fmt.Fprintf(&sb, "group keys of %s: public list of %d key(s) from the policy\n", g.Name(), len(g.Keys))
		} else {
			fmt.Fprintf(&sb, "group keys of %s: from the data, released only if they pass DP partition selection\n", g.Name())
		}
	}
	for _, j := range plan.Joins {
		kind := "joined"
		if j.Left {
			kind = "left-joined"
		}
		if j.Protected {
			fmt.Fprintf(&sb, "join: protected table %s (as %s) %s to %s on the privacy unit or a key of its path, before bounding: every joined row belongs to one person, and %s's bounds apply to each person's joined rows, so the sensitivities above hold for a person's rows in both tables\n",
				j.Table, j.Alias, kind, plan.Table.Name, plan.Table.Name)
			continue
		}
		fmt.Fprintf(&sb, "join: public table %s (as %s) %s to %s before bounding: each person's rows are the joined rows their own rows make, so the bounds and sensitivities above hold unchanged; rows matching several public rows count as several\n",
			j.Table, j.Alias, kind, plan.Table.Name)
	}
	for _, u := range plan.UnitJoins {
		how := fmt.Sprintf("dpproxy joins %s (as %s)", u.Table, u.Alias)
		if u.ByQuery {
			how = fmt.Sprintf("the query's join of %s (as %s)", u.Table, u.Alias)
		}
		fmt.Fprintf(&sb, "join: %s on its primary key %s to reach the privacy unit, before bounding: each row meets at most one row of it, so the bounds and sensitivities above hold for each person's rows; rows that reference no row of %s belong to no one and are left out\n",
			how, u.Key, u.Table)
	}
	if b := plan.Bias; b != nil {
		fmt.Fprintf(&sb, "bias report: ε = %.3g of the query's ε estimates the share of people with %s (dpproxy.report_bias)\n", b.Epsilon, strings.Join(b.Labels, ", "))
	}
	for _, h := range plan.Histograms {
		fmt.Fprintf(&sb, "quantiles of %s: the exponential mechanism over %d values of [%g, %g]", h.Column.Name, h.Grid.Buckets, h.Grid.Lo, h.Grid.Hi)
		if w := h.Grid.Width(); w > 0 {
			fmt.Fprintf(&sb, " (bucket midpoints, %g apart)", w)
		}
		sb.WriteString(", from at most " + fmt.Sprint(plan.MaxRowsPerUnit) + " value(s)' weight per unit per group")
		if k := quantilesOf(plan, h); k > 1 {
			fmt.Fprintf(&sb, "; its %d quantiles together by the recursive method, in %d rounds", k, mechanisms.QuantilesDepth(k))
		}
		if len(plan.Groups) > 0 {
			fmt.Fprintf(&sb, "; each group's runs at ε/%d", plan.Quantiles[0].ChangedGroups)
		}
		sb.WriteString("; its error bound counts values (rank) between the released value and the true quantile\n")
	}
	if s := plan.Selection; s != nil && s.TopK != nil {
		t := s.TopK
		fmt.Fprintf(&sb, "top-k: the %d groups with the largest %s are picked one at a time by the exponential mechanism at ε = %.4g each (ε = %g in all; a score moves by at most %g per person), "+
			"stopping early when no group stands out above %.4g, which a group one person alone could create passes with probability at most δ = %g; only the picked groups are measured\n",
			t.K, plan.Measurements[t.Measurement].Kind, t.PickEpsilon, t.Epsilon, t.Delta, t.Tau, s.Delta)
	} else if s := plan.Selection; s != nil && s.Threshold != nil {
		m := plan.Measurements[s.Threshold.Measurement]
		fmt.Fprintf(&sb, "partition selection: a group is released when its noisy %s exceeds τ = %g; it spends no ε of its own, and δ = %g covers the groups one person alone could create (%s at most %d)\n",
			m.Kind, s.Threshold.Tau, s.Delta, m.Kind, s.Threshold.MaxAlone)
	} else if s != nil {
		why := "the unit's groups"
		if plan.Neighbouring == config.Replace {
			why = "the groups the unit leaves and those it joins"
		}
		fmt.Fprintf(&sb, "partition selection: ε = %g, δ = %g over the %d groups one unit's change can touch (%s); each group's test runs at (ε/%d, δ/%d)\n",
			s.Epsilon, s.Delta, s.ChangedGroups, why, s.ChangedGroups, s.ChangedGroups)
	}
	if plan.Delta > 0 {
		// (kε, k·e^{(k−1)ε}·δ) for groups of k units.
		gd := func(k float64) float64 { return k * math.Exp((k-1)*plan.Epsilon) * plan.Delta }
		fmt.Fprintf(&sb, "group privacy: for a group of k units the guarantee is (k·ε, k·e^((k−1)ε)·δ): k=2: (%g, %.3g), k=5: (%g, %.3g), k=10: (%g, %.3g)\n",
			2*plan.Epsilon, gd(2), 5*plan.Epsilon, gd(5), 10*plan.Epsilon, gd(10))
	} else {
		fmt.Fprintf(&sb, "group privacy: for a group of k units the guarantee is k·ε (k=2: ε=%g, k=5: ε=%g, k=10: ε=%g)\n",
			2*plan.Epsilon, 5*plan.Epsilon, 10*plan.Epsilon)
	}
	return sb.String()
}

// measurementRow is the explain row of one measurement: label, what it
// measures, mechanism, sensitivity, ε, noise scale and 95 % error bound.
func measurementRow(label string, m rewrite.Measurement) ([]any, error) {
	if m.Sensitivity == 0 {
		return []any{label, m.Kind.String(), "none (constant)", 0.0, m.Epsilon, 0.0, 0.0}, nil
	}
	if m.Gaussian {
		g, err := mechanisms.NewGaussian(m.Epsilon, m.Delta, m.L2)
		if err != nil {
			return nil, err
		}
		mech := fmt.Sprintf("Gaussian, L2 sensitivity (δ=%g)", m.Delta)
		if m.Integer {
			mech = fmt.Sprintf("discrete Gaussian, L2 sensitivity (δ=%g)", m.Delta)
		}
		// noise_scale is σ; the sensitivity column shows L2.
		return []any{label, m.Kind.String(), mech, m.L2, m.Epsilon, g.Sigma(), g.ErrorBound(ExplainConfidence)}, nil
	}
	l, err := mechanisms.NewLaplace(m.Epsilon, m.Sensitivity)
	if err != nil {
		return nil, err
	}
	mech := "Laplace (granular)"
	if m.Integer {
		mech = "discrete Laplace"
	}
	return []any{label, m.Kind.String(), mech, m.Sensitivity, m.Epsilon, l.Scale(), l.ErrorBound(ExplainConfidence)}, nil
}

// quantilesOf counts the plan's quantiles of histogram h's column.
func quantilesOf(plan *rewrite.Plan, h rewrite.Histogram) int {
	k := 0
	for _, q := range plan.Quantiles {
		if plan.Histograms[q.Histogram].Column == h.Column {
			k++
		}
	}
	return k
}

// ClampedColumns lists the aggregated columns clamped to their bounds, as
// "cost to [0, 1000]".
func ClampedColumns(plan *rewrite.Plan) []string {
	var clamped []string
	for _, a := range plan.Aggregates {
		if a.Column != nil && a.Column.Bounds != nil {
			clamped = append(clamped, fmt.Sprintf("%s to [%g, %g]", a.Column.Name, a.Bounds.Lo, a.Bounds.Hi))
		}
	}
	return slices.Compact(clamped)
}
