package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
)

// selectionQueries are GROUP BY queries over keys from the data, whose
// groups pass partition selection: the release probability of a group of
// n people under the rule each uses now (thresholding its released count,
// issue 13) and under the previous rule (a separate optimal selection
// with its own share of ε).
var selectionQueries = []string{
	`SELECT age, COUNT(*) FROM patients GROUP BY age`,
	`SELECT date_trunc('month', visit_date), COUNT(DISTINCT patient_id) FROM visits GROUP BY 1`,
}

// selectionSizes are the group sizes (people) reported.
var selectionSizes = []int64{5, 10, 13, 15, 20, 24, 30, 50, 100, 200}

// selectionRow is one query's release probabilities per selectionSizes.
type selectionRow struct {
	Query, Rule, Before string
	Now, Old            []float64
}

func selectionRows(pol *config.Policy, eps float64) ([]selectionRow, error) {
	var rows []selectionRow
	for _, q := range selectionQueries {
		stmts, err := rewrite.Parse(q, rewrite.PostgresFrontEnd)
		if err != nil {
			return nil, err
		}
		an, err := rewrite.Analyze(stmts[0], pol, rewrite.Options{Dialect: rewrite.SQLite, Epsilon: eps, FrontEnd: rewrite.PostgresFrontEnd})
		if err != nil {
			return nil, err
		}
		p := an.Plan
		s := p.Selection
		parts := float64(len(p.Measurements) + len(p.Quantiles))
		old, err := mechanisms.NewOptimalSelection(eps/(parts+1), s.Delta, s.ChangedGroups)
		if err != nil {
			return nil, err
		}
		opt := old.(*mechanisms.OptimalSelector)
		now := func(n int64) float64 { return opt.Probability(n) } // no thresholding: the same rule
		row := selectionRow{Query: q, Rule: "optimal selection (as before)", Before: fmt.Sprintf("optimal selection at ε = %.3g", eps/(parts+1))}
		if th := s.Threshold; th != nil {
			m := p.Measurements[th.Measurement]
			lap, err := mechanisms.NewLaplace(m.Epsilon, m.Sensitivity)
			if err != nil {
				return nil, err
			}
			row.Rule = fmt.Sprintf("threshold τ = %g on the noisy %s", th.Tau, m.Kind)
			now = func(n int64) float64 {
				// Released when n + k > τ, k the discrete Laplace noise: k ≥ ⌊τ − n⌋ + 1.
				return lap.IntTailProbability(math.Floor(th.Tau-float64(n)) + 1)
			}
		}
		for _, n := range selectionSizes {
			row.Now = append(row.Now, now(n))
			row.Old = append(row.Old, opt.Probability(n))
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func selectionMarkdown(pol *config.Policy, eps float64) (string, error) {
	rows, err := selectionRows(pol, eps)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nPartition selection at ε = %g, δ = %g: probability that a group of n people is released, one row (or one count) per person. "+
		"*Now* thresholds the query's released count (no ε of its own); *before* is the previous rule, a separate optimal selection "+
		"(Desfontaines et al. 2022) with its share of ε, calibrated for the groups one person's change can touch.\n\n", eps, pol.Defaults.Delta)
	sb.WriteString("| query | rule |")
	for _, n := range selectionSizes {
		fmt.Fprintf(&sb, " n=%d |", n)
	}
	sb.WriteString("\n|---|---|" + strings.Repeat("---|", len(selectionSizes)) + "\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| `%s` | now: %s |", r.Query, r.Rule)
		for _, p := range r.Now {
			fmt.Fprintf(&sb, " %.3f |", p)
		}
		fmt.Fprintf(&sb, "\n| | before: %s |", r.Before)
		for _, p := range r.Old {
			fmt.Fprintf(&sb, " %.3f |", p)
		}
		sb.WriteString("\n")
	}
	return sb.String(), nil
}
