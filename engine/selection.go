package engine

import (
	"fmt"
	"sort"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// selectGroups releases the groups found in the data that pass DP
// partition selection, restricted to the public key lists of the columns
// that have one: either the optimal rule on their number of distinct
// units, or — when the plan thresholds a count (rewrite.CountThreshold) —
// that count's noisy value, drawn here by noisyGroup and kept for the
// release. Released groups are sorted by key, so the backend's row order
// reveals nothing.
func selectGroups(plan *rewrite.Plan, rows *backend.Rows, r *mechanisms.Rand, noisyGroup func(groupResult) ([]float64, error)) ([]groupResult, error) {
	sel := plan.Selection
	if sel.TopK != nil {
		return topKGroups(plan, rows, r)
	}
	var selector mechanisms.PartitionSelector
	if sel.Threshold == nil {
		var err error
		if selector, err = mechanisms.NewOptimalSelection(sel.Epsilon, sel.Delta, sel.ChangedGroups); err != nil {
			return nil, &sqlerr.Error{Code: sqlerr.PrivacyParameterError, Message: fmt.Sprintf("cannot calibrate partition selection: %v", err), Err: err}
		}
	}
	allowed, err := allowedKeys(plan)
	if err != nil {
		return nil, err
	}
	var out []groupResult
	for _, row := range rows.Values {
		g := groupResult{exact: row, canon: rowGroupKey(plan, row)}
		var keep bool
		if th := sel.Threshold; th != nil {
			noisy, err := noisyGroup(g)
			if err != nil {
				return nil, err
			}
			g.noisy, keep = noisy, noisy[th.Measurement] > th.Tau
		} else {
			units := int64(sqltypes.Float(row[plan.UnitsColumn]))
			var err error
			if keep, err = selector.Keep(r, units); err != nil {
				return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: "partition selection failed; no answer was released", Err: err}
			}
		}
		keys := make([]any, len(plan.Groups))
		for i, g := range plan.Groups {
			keys[i] = sqltypes.Convert(row[g.BackendColumn], g.Type)
			if allowed[i] != nil && !allowed[i][canonicalKey(keys[i], g.Column.Type)] {
				keep = false
			}
		}
		if keep {
			g.keys = keys
			out = append(out, g)
		}
	}
	sortByKey(out)
	return out, nil
}

// sortByKey orders released groups by key, so that the backend's row
// order reveals nothing.
func sortByKey(out []groupResult) {
	sort.SliceStable(out, func(i, j int) bool {
		for k := range out[i].keys {
			if c := compareValues(out[i].keys[k], out[j].keys[k]); c != 0 {
				return c < 0
			}
		}
		return false
	})
}

// topKGroups picks the released groups by DP top-k (rewrite.TopK): k
// rounds of the exponential mechanism over the remaining groups' exact
// bounded scores and a stop candidate ⊥. The picked groups are returned in
// key order; the release orders them by their noisy values.
func topKGroups(plan *rewrite.Plan, rows *backend.Rows, r *mechanisms.Rand) ([]groupResult, error) {
	t := plan.Selection.TopK
	m := plan.Measurements[t.Measurement]
	allowed, err := allowedKeys(plan)
	if err != nil {
		return nil, err
	}
	var candidates []groupResult
	var scores []float64
	for _, row := range rows.Values {
		keys := make([]any, len(plan.Groups))
		ok := true
		for i, g := range plan.Groups {
			keys[i] = sqltypes.Convert(row[g.BackendColumn], g.Type)
			if allowed[i] != nil && !allowed[i][canonicalKey(keys[i], g.Column.Type)] {
				ok = false
			}
		}
		if ok {
			candidates = append(candidates, groupResult{keys: keys, exact: row, canon: rowGroupKey(plan, row)})
			scores = append(scores, m.Value(row))
		}
	}
	if len(candidates)+1 > mechanisms.MaxCandidates {
		return nil, &sqlerr.Error{Code: sqlerr.ProgramLimitExceeded, Message: fmt.Sprintf("top-k over more than %d groups is not supported", mechanisms.MaxCandidates),
			Hint: "narrow the query with WHERE, or group by a coarser key"}
	}
	var out []groupResult
	for range t.K {
		// The stop candidate ⊥ is the last one.
		j, err := mechanisms.Exponential(r, t.PickEpsilon, t.EMSensitivity, append(scores, t.Tau))
		if err != nil {
			return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: "top-k selection failed; no answer was released", Err: err}
		}
		if j == len(scores) {
			break // ⊥: no further group stands out
		}
		out = append(out, candidates[j])
		candidates = append(candidates[:j], candidates[j+1:]...)
		scores = append(scores[:j], scores[j+1:]...)
	}
	sortByKey(out)
	return out, nil
}

// allowedKeys indexes, per group column, the canonical keys of its public
// key list (nil for a column without one): groups found in the data with
// other keys are never released.
func allowedKeys(plan *rewrite.Plan) ([]map[string]bool, error) {
	allowed := make([]map[string]bool, len(plan.Groups))
	for i, g := range plan.Groups {
		if len(g.Keys) == 0 {
			continue
		}
		allowed[i] = map[string]bool{}
		for _, k := range g.Keys {
			v, err := typedKey(k, g.Column.Type)
			if err != nil {
				return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: fmt.Sprintf("policy key %q of column %q: %v", k, g.Column.Name, err)}
			}
			allowed[i][canonicalKey(v, g.Column.Type)] = true
		}
	}
	return allowed, nil
}
