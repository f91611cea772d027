package session

import (
	"fmt"
	"strings"

	"github.com/dpproxy/dpproxy/config"
)

// A dashboard sends the same DP query again and again on one connection;
// the repeats are answered from the result cache, and parsing and
// analyzing the text again would be most of their cost. The plan memo
// keeps the session's analyzed DP statements, keyed by their text (and a
// prepared statement's parameter values) and by every session setting
// analysis reads, so that a repeat goes straight to the cache.
//
// Entries are dropped when the policy changes (a reload) and whenever the
// session runs a statement that can change what a text means: a SET, a
// session command, USE, a MySQL session statement (user variables), a
// transaction statement. A memoized plan is read, never changed, by
// running it (as plans of prepared statements always were).

// planMemoSize caps the memo per session: dashboards repeat a handful of
// queries, and 10,000 idle connections must stay small.
const planMemoSize = 32

// planKey is a statement and the session settings its analysis depends on.
type planKey struct {
	sql        string
	params     string
	epsilon    float64
	intervals  string
	reportBias bool
	autoBound  string
	database   string
}

// planMemo holds one policy's analyzed DP statements.
type planMemo struct {
	policy  *config.Policy
	entries map[planKey]*prepared
}

func (s *Session) planKey(sql string, params []any) planKey {
	return planKey{sql: sql, params: paramsKey(params), epsilon: s.epsilon, intervals: s.intervals,
		reportBias: s.reportBias, autoBound: s.autoBound, database: s.database}
}

// paramsKey renders a prepared statement's parameter values, each with its
// Go type, so that 1 and '1' are different keys; each value quoted, so
// that no value's text passes for the next one's (found in review: a text
// holding the separators could make two parameter lists one key).
func paramsKey(params []any) string {
	if len(params) == 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range params {
		fmt.Fprintf(&b, "%T:%q;", p, fmt.Sprint(p))
	}
	return b.String()
}

// memoizedPlan returns the analyzed DP statement for sql (and params)
// under the session's current settings and policy, or nil.
func (s *Session) memoizedPlan(sql string, params []any) *prepared {
	m := s.plans
	if m == nil || m.policy != s.engine.Policy() || s.targetError > 0 {
		return nil
	}
	return m.entries[s.planKey(sql, params)]
}

// memoizePlan keeps p, a DP plan just analyzed for sql (and params). Plans
// chosen for a target error are not kept: their ε is chosen per query.
func (s *Session) memoizePlan(sql string, params []any, p *prepared) {
	if p == nil || p.query == nil || p.query.Plan == nil || s.targetError > 0 {
		return
	}
	pol := s.engine.Policy()
	if s.plans == nil || s.plans.policy != pol {
		s.plans = &planMemo{policy: pol, entries: map[planKey]*prepared{}}
	}
	if len(s.plans.entries) >= planMemoSize {
		clear(s.plans.entries) // a session past the cap starts over
	}
	s.plans.entries[s.planKey(sql, params)] = p
}

// forgetPlans drops the memo: the session ran a statement that may change
// what a text means.
func (s *Session) forgetPlans() { s.plans = nil }
