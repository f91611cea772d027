package session

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// Accuracy first: SET dpproxy.target_error = 50 asks that every COUNT and
// SUM of the session's queries have a 95 % error bound of at most ±50; the
// session then plans each query at the smallest ε (to three significant
// digits) that meets it, instead of dpproxy.epsilon, and says which ε it
// chose. A target the policy's max_epsilon_per_query cannot meet is
// refused with the ε it would take. The error bound depends only on the
// plan (sensitivities and ε split), never on the data, so choosing ε this
// way reveals nothing.

// SettingTargetError is the name of the session setting holding the
// target 95 % error bound (0: off, queries cost dpproxy.epsilon).
const SettingTargetError = "dpproxy.target_error"

// parseTargetError checks a SET dpproxy.target_error value: a finite
// number > 0, or 0 / off for none.
func parseTargetError(text string) (float64, error) {
	if strings.EqualFold(text, "off") {
		return 0, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || !plainNumber.MatchString(text) || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter %q: %q", SettingTargetError, text).
			WithHint("expected the ±error you need on COUNT and SUM at 95 %% confidence, such as 50, or off")
	}
	return f, nil
}

// targetEpsilonIterations bounds the bisection on ε.
const targetEpsilonIterations = 60

// planForTarget replans a query at the smallest ε whose COUNT and SUM
// error bounds are at most the session's target, and returns a notice
// saying so.
func (s *Session) planForTarget(stmt ast.StmtNode, casts rewrite.CastLookup) (*rewrite.Query, string, error) {
	analyze := func(eps float64) (*rewrite.Query, float64, error) {
		q, err := rewrite.Analyze(stmt, s.engine.Policy(), s.analyzeOptions(eps, casts))
		if err != nil {
			return nil, 0, err
		}
		b, err := countSumBound(q.Plan)
		return q, b, err
	}
	maxEps := s.engine.Policy().Defaults.MaxEpsilonPerQuery
	q, atMax, err := analyze(maxEps)
	if err != nil {
		return nil, "", err
	}
	if q.Plan != nil && (q.Plan.Auto != nil || q.Plan.R2T != nil) {
		return nil, "", sqlerr.New(sqlerr.FeatureNotSupported, "%s needs fixed contribution bounds, and table %q chooses its rows per person from the data (max_rows_per_unit: auto)", SettingTargetError, q.Plan.Table.Name).
			WithHint("SET %s = off and choose the cost with %s", SettingTargetError, SettingEpsilon)
	}
	if atMax < 0 {
		return nil, "", sqlerr.New(sqlerr.FeatureNotSupported, "%s applies to COUNT and SUM, and this query has neither", SettingTargetError).
			WithHint("SET %s = off and choose the cost with %s", SettingTargetError, SettingEpsilon)
	}
	if atMax > s.targetError {
		// Bounds scale as 1/ε (Laplace; Gaussian about so): what it would take.
		need := maxEps * atMax / s.targetError
		return nil, "", sqlerr.New(sqlerr.PrivacyParameterError, "a ±%g error bound (%s) needs ε ≈ %.3g for this query, above the policy's max_epsilon_per_query of %g; at ε = %g its bound is ±%.4g",
			s.targetError, SettingTargetError, need, maxEps, maxEps, atMax).
			WithHint("ask for a larger error (SET %s = %.4g), or a coarser query", SettingTargetError, atMax)
	}
	lo, hi := mechanisms.MinEpsilon, maxEps
	for range targetEpsilonIterations {
		mid := math.Sqrt(lo * hi)
		if _, b, err := analyze(mid); err == nil && b <= s.targetError {
			hi = mid
		} else {
			lo = mid
		}
	}
	// Three significant digits, rounded up (and checked: the bound must hold
	// at the ε charged).
	eps := roundUp3(hi)
	if q, b, err := analyze(eps); err == nil && b <= s.targetError {
		return q, fmt.Sprintf("dpproxy: ε = %g chosen for a 95 %% error bound of ±%g on COUNT and SUM (%s); the bound is ±%.4g", eps, s.targetError, SettingTargetError, b), nil
	}
	return q, fmt.Sprintf("dpproxy: ε = %g (max_epsilon_per_query) for a 95 %% error bound of ±%g on COUNT and SUM (%s)", maxEps, s.targetError, SettingTargetError), nil
}

// roundUp3 rounds a positive number up to three significant digits.
func roundUp3(f float64) float64 {
	scale := math.Pow(10, math.Floor(math.Log10(f))-2)
	return math.Ceil(f/scale-1e-9) * scale
}

// countSumBound is the largest 95 % error bound of a plan's COUNT and SUM
// aggregates (-1 when it has none), from explain's calibration.
func countSumBound(p *rewrite.Plan) (float64, error) {
	if p == nil || p.Auto != nil || p.R2T != nil {
		return -1, nil // no bound fixed by the plan (refused by planForTarget)
	}
	table, err := engine.Explain(p)
	if err != nil {
		return 0, err
	}
	bound := -1.0
	for _, row := range table.Rows {
		label, _ := row[0].(string)
		measured, _ := row[1].(string)
		if strings.HasPrefix(measured, "excess") {
			continue // what bounding removed: part of the interval, not of the noise's bound
		}
		if b, ok := row[6].(float64); ok && (strings.HasPrefix(label, "COUNT") || strings.HasPrefix(label, "SUM")) {
			bound = math.Max(bound, b)
		}
	}
	return bound, nil
}
