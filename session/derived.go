package session

import (
	"context"
	"fmt"
	"strconv"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// A DP query that only narrows a GROUP BY to some of its keys is answered
// from the analyst's release of the query without those conditions, when
// the result cache holds it: the rows of that release whose keys match,
// at no cost, with that release's error bounds (rewrite.SplitKeyFilter).

// derivation is the release a query can be answered from: the plan and
// canonical text of its statement without the key conditions.
type derivation struct {
	plan      *rewrite.Plan
	canonical string
	conds     []rewrite.KeyCondition
}

// deriveFrom finds the statement stmt's answer could be derived from, if
// any. The statement's WHERE is swapped for the analysis of its base and
// put back: analysis reads the tree, never keeps or changes it.
func (s *Session) deriveFrom(stmt ast.StmtNode, casts rewrite.CastLookup, suffix string) *derivation {
	sel, ok := stmt.(*ast.SelectStmt)
	if !ok || s.targetError > 0 {
		return nil
	}
	rest, conds, ok := rewrite.SplitKeyFilter(sel)
	if !ok {
		return nil
	}
	where := sel.Where
	sel.Where = rest
	defer func() { sel.Where = where }()
	q, err := rewrite.Analyze(stmt, s.engine.Policy(), s.analyzeOptions(s.epsilon, casts))
	if err != nil || q.Plan == nil {
		return nil
	}
	canonical, err := rewrite.Canonical(stmt)
	if err != nil {
		return nil
	}
	return &derivation{plan: q.Plan, canonical: canonical + suffix, conds: conds}
}

// answerDerived answers from the base release when the cache holds it and
// every key it compares can be compared exactly; ok is false otherwise
// (the query is then answered, and charged, as any other).
func (s *Session) answerDerived(ctx context.Context, d *derivation) (*sqltypes.Result, bool) {
	base, ok := s.engine.Released(ctx, s.analyst, d.plan, d.canonical)
	if !ok {
		return nil, false
	}
	// MySQL's default collations compare text case- and pad-insensitively:
	// only integer keys are compared there.
	textOK := s.engine.Policy().Backend.Kind != config.BackendMySQL
	out := &sqltypes.Result{Columns: base.Columns}
	for i, row := range base.Rows {
		keep := true
		for _, c := range d.conds {
			match, comparable := keyMatches(row[c.Output], c.Values, textOK)
			if !comparable {
				return nil, false
			}
			keep = keep && match
		}
		if !keep {
			continue
		}
		out.Rows = append(out.Rows, row)
		if i < len(base.Intervals) {
			out.Intervals = append(out.Intervals, base.Intervals[i])
		} else if len(base.Intervals) > 0 {
			out.Intervals = append(out.Intervals, nil)
		}
	}
	out.Tag = "SELECT " + strconv.Itoa(len(out.Rows))
	out.Notices = append([]string{fmt.Sprintf("answered at no cost from your earlier release of %s: its rows for the keys asked, with its error bounds", d.canonical)}, base.Notices...)
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
