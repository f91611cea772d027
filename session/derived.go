package session

import (
	"context"
	"fmt"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Answers derived from the analyst's earlier releases, at no cost
// (post-processing), when the result cache holds them:
//   - a DP query that only narrows a GROUP BY to some of its keys gets the
//     rows of the release of the query without those conditions, with
//     that release's error bounds (rewrite.SplitKeyFilter);
//   - a DP query without GROUP BY that picks keys gets the sums of the
//     rows of those keys in the release of its aggregates grouped by the
//     key, with the error of the sum stated (rewrite.KeySumBases,
//     engine.AnswerSumOverKeys).

// derivation is a release a query can be answered from: the plan and
// canonical text of that release's statement, and the key conditions
// that pick its rows.
type derivation struct {
	plan      *rewrite.Plan
	canonical string
	release   *engine.Release // of plan and canonical, for the analyst
	conds     []rewrite.KeyCondition
	// query and sums are set when the query sums the picked rows: its own
	// plan, and the base's output column of each of its aggregates.
	query *rewrite.Plan
	sums  []int
}

// deriveFrom lists the releases the answer to stmt (whose plan is plan)
// could be derived from, if any. A statement's WHERE is swapped for the
// analysis of its base and put back: analysis reads the tree, never
// keeps or changes it.
func (s *Session) deriveFrom(stmt ast.StmtNode, plan *rewrite.Plan, casts rewrite.CastLookup, suffix string) []*derivation {
	sel, ok := stmt.(*ast.SelectStmt)
	// Without a result cache no earlier release exists: the candidates
	// are not analyzed at all.
	if !ok || s.targetError > 0 || !s.engine.CachesReleases() {
		return nil
	}
	if rest, conds, ok := rewrite.SplitKeyFilter(sel); ok {
		where := sel.Where
		sel.Where = rest
		defer func() { sel.Where = where }()
		if d := s.derivation(stmt, casts, suffix, conds); d != nil {
			return []*derivation{d}
		}
		return nil
	}
	var out []*derivation
	for _, b := range rewrite.KeySumBases(sel) {
		d := s.derivation(b.Stmt, casts, suffix, b.Conds)
		if d == nil {
			continue
		}
		if d.sums = sumColumns(plan, d.plan, b.Aggregates); d.sums != nil {
			d.query = plan
			out = append(out, d)
		}
	}
	return out
}

// derivation analyzes a base statement; nil when it is not a DP query.
func (s *Session) derivation(base ast.StmtNode, casts rewrite.CastLookup, suffix string, conds []rewrite.KeyCondition) *derivation {
	q, err := rewrite.Analyze(base, s.engine.Policy(), s.analyzeOptions(s.epsilon, casts))
	if err != nil || q.Plan == nil {
		return nil
	}
	canonical, err := rewrite.Canonical(base)
	if err != nil {
		return nil
	}
	return &derivation{plan: q.Plan, canonical: canonical + suffix, conds: conds,
		release: s.engine.Release(s.analyst, q.Plan, canonical+suffix)}
}

// sumColumns maps each aggregate of the query's plan to the base's output
// column of the same aggregate (function, column and bounds), among the
// columns from first on; nil when one has none, or several (two
// conditional aggregates, both on the column "CASE", cannot be told
// apart this way: found in review).
func sumColumns(query, base *rewrite.Plan, first int) []int {
	out := make([]int, len(query.Aggregates))
	for i, a := range query.Aggregates {
		out[i] = -1
		for j := first; j < len(base.Output); j++ {
			bi := base.Output[j].Source.Aggregate
			if bi < 0 {
				continue
			}
			b := base.Aggregates[bi]
			if b.Func == a.Func && b.Bounds == a.Bounds && sameColumn(a.Column, b.Column) {
				if out[i] >= 0 {
					return nil
				}
				out[i] = j
			}
		}
		if out[i] < 0 {
			return nil
		}
	}
	return out
}

func sameColumn(a, b *config.Column) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Name == b.Name
}

// answerDerived answers from the first of the releases that the cache
// holds; ok is false when none answers (the query is then answered, and
// charged, as any other).
func (s *Session) answerDerived(ctx context.Context, ds []*derivation) (res *sqltypes.Result, from *derivation, ok bool) {
	for _, d := range ds {
		if res, ok = s.answerFrom(ctx, d); ok {
			return res, d, true
		}
	}
	return nil, nil, false
}

// answerFrom answers from d's release when the cache holds it and every
// key it compares can be compared exactly.
func (s *Session) answerFrom(ctx context.Context, d *derivation) (*sqltypes.Result, bool) {
	base, ok := s.engine.Released(ctx, d.release)
	if !ok {
		return nil, false
	}
	// MySQL's default collations compare text case- and pad-insensitively:
	// only integer keys are compared there.
	textOK := s.engine.Policy().Backend.Kind != config.BackendMySQL
	var picked []int
	for i, row := range base.Rows {
		keep := true
		for _, c := range d.conds {
			match, comparable := keyMatches(row[c.Output], c.Values, textOK)
			if !comparable {
				return nil, false
			}
			keep = keep && match
		}
		if keep {
			picked = append(picked, i)
		}
	}
	if d.sums != nil {
		return sumOfPicked(base, d, picked)
	}
	out := &sqltypes.Result{Columns: base.Columns}
	for _, i := range picked {
		row := base.Rows[i]
		out.Rows = append(out.Rows, row)
		if i < len(base.Intervals) {
			out.Intervals = append(out.Intervals, base.Intervals[i])
		} else if len(base.Intervals) > 0 {
			out.Intervals = append(out.Intervals, nil)
		}
	}
	out.Tag = sqltypes.SelectTag(len(out.Rows))
	out.Notices = append([]string{fmt.Sprintf("answered at no cost from your earlier release of %s: its rows for the keys asked, with its error bounds", d.canonical)}, base.Notices...)
	return out, true
}

// sumOfPicked answers a sum over keys when the release has a row for
// every key asked (a key it did not release, as partition selection may
// leave out, has no value to add: the query is then answered as any
// other).
func sumOfPicked(base *sqltypes.Result, d *derivation, picked []int) (*sqltypes.Result, bool) {
	want := 1
	for _, c := range d.conds {
		distinct := map[any]bool{}
		for _, v := range c.Values {
			distinct[v] = true
		}
		want *= len(distinct)
	}
	if len(picked) != want {
		return nil, false
	}
	out, ok := engine.AnswerSumOverKeys(d.query, base, picked, d.sums)
	if !ok {
		return nil, false
	}
	out.Notices = append([]string{fmt.Sprintf("answered at no cost from your earlier release of %s: the sums of its rows for the %d keys asked; 95 %% intervals state the error of the sums", d.canonical, want)}, base.Notices...)
	return out, true
}

// keyMatches reports whether a released key equals one of the values
// (SQL =: NULL matches nothing); comparable is false when the types do
// not allow an exact comparison.
func keyMatches(v any, values []any, textOK bool) (match, comparable bool) {
	if v == nil {
		return false, true
	}
	for _, want := range values {
		switch x := v.(type) {
		case int64:
			w, isInt := want.(int64)
			if !isInt {
				return false, false
			}
			match = match || x == w
		case string:
			w, isText := want.(string)
			if !isText || !textOK {
				return false, false
			}
			match = match || x == w
		default:
			return false, false
		}
	}
	return match, true
}
