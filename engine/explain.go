package engine

import (
	"fmt"
	"strings"

	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// ExplainConfidence is the confidence level of explain's error bounds.
const ExplainConfidence = 0.95

// Explain describes a plan without running it: one row per measurement
// with its mechanism, sensitivity, ε share, noise scale and the half-width
// of a 95% interval around the exact (bounded) value.
func Explain(plan *rewrite.Plan) (*Result, error) {
	res := &Result{Columns: []Column{
		{Name: "aggregate", Type: sqltypes.Text},
		{Name: "measurement", Type: sqltypes.Text},
		{Name: "mechanism", Type: sqltypes.Text},
		{Name: "sensitivity", Type: sqltypes.Float8},
		{Name: "epsilon", Type: sqltypes.Float8},
		{Name: "noise_scale", Type: sqltypes.Float8},
		{Name: "error_bound_95", Type: sqltypes.Float8},
	}}
	for _, o := range plan.Output {
		if o.Source.Aggregate < 0 {
			continue
		}
		a := plan.Aggregates[o.Source.Aggregate]
		label := a.Func.String()
		if a.Column != nil {
			label = fmt.Sprintf("%s(%s)", a.Func, a.Column.Name)
		}
		for _, mi := range a.Measurements {
			m := plan.Measurements[mi]
			l, err := mechanisms.NewLaplace(m.Epsilon, m.Sensitivity)
			if err != nil {
				return nil, err
			}
			mech := "Laplace (granular)"
			if m.Integer {
				mech = "discrete Laplace"
			}
			res.Rows = append(res.Rows, []any{label, m.Kind.String(), mech, m.Sensitivity, m.Epsilon, l.Scale(), l.ErrorBound(ExplainConfidence)})
		}
	}
	res.Tag = fmt.Sprintf("SELECT %d", len(res.Rows))
	return res, nil
}

// ExplainSummary is the prose part of an explanation: cost, bounds and
// the guarantee for groups of people.
func ExplainSummary(plan *rewrite.Plan) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "table %s, privacy unit %s, neighbouring %s\n", plan.Table.Name, plan.Table.PrivacyUnit, plan.Neighbouring)
	l0 := plan.MaxGroupsPerUnit
	if len(plan.Groups) == 0 {
		l0 = 1
	}
	fmt.Fprintf(&sb, "contribution bounds: at most %d group(s) per unit, at most %d row(s) per unit per group\n", l0, plan.MaxRowsPerUnit)
	fmt.Fprintf(&sb, "cost: ε = %g, δ = %g (split equally over %d measurement(s))\n", plan.Epsilon, plan.Delta, len(plan.Measurements))
	for _, g := range plan.Groups {
		fmt.Fprintf(&sb, "group keys of %s: public list of %d key(s) from the policy\n", g.Column.Name, len(g.Keys))
	}
	fmt.Fprintf(&sb, "group privacy: for a group of k units the guarantee is k·ε (k=2: ε=%g, k=5: ε=%g, k=10: ε=%g)\n",
		2*plan.Epsilon, 5*plan.Epsilon, 10*plan.Epsilon)
	return sb.String()
}
