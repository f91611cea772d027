package session

import (
	"context"
	"errors"
	"time"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// What each statement did, for the operator: the metrics and the audit
// log read a Statement per statement a session ran (Server.Observe).

// Statement kinds.
const (
	// KindDP is a query on the data that is not public: a release on
	// protected data (charged), or a query analysis refused.
	KindDP = "dp"
	// KindCached is an answer from an earlier release: the result cache,
	// or derived from one (derived.go); free.
	KindCached = "cached"
	// KindPublic is a query on public tables, passed through.
	KindPublic = "public"
	// KindCatalog is a catalog query (pg_catalog, information_schema,
	// SHOW TABLES ...), answered by the virtual catalog.
	KindCatalog = "catalog"
	// KindSession is everything else: settings, transactions, EXPLAIN
	// DP, dpproxy.* views, empty statements.
	KindSession = "session"
)

// Statement is one statement as the operator sees it: who, from where,
// what, what it cost and how it ended — never a value it released (only
// how many rows).
type Statement struct {
	Time     time.Time
	Analyst  string
	Client   string // the client's address
	Protocol string // "postgres" or "mysql"
	Text     string
	Kind     string
	// Charged is the privacy cost recorded in the ledger (zero when
	// nothing was charged).
	Charged  budget.Cost
	Rows     int
	CacheHit bool
	Duration time.Duration
	// SQLState is the error's SQLSTATE ("" when answered), and Error its
	// message as the client received it.
	SQLState sqlerr.Code
	Error    string
}

// statementNote gathers, while a statement runs, what its record needs.
type statementNote struct {
	kind     string
	charged  budget.Cost
	cacheHit bool
}

// SetClient records the client's address, for the statements' records.
func (s *Session) SetClient(addr string) { s.client = addr }

// observed runs one statement for its record: the statement's kind and
// cost are noted while it runs, and the record goes to the server's
// observer when it ends. A statement run inside another (a prepared
// command) is part of the outer one's record.
func (s *Session) observed(text string, run func() (rows int, err error)) error {
	if !s.recording() {
		_, err := run()
		return err
	}
	s.observing = true
	s.server.active.Add(1)
	defer func() { // also when run panics (the connection then ends)
		s.server.active.Add(-1)
		s.observing = false
	}()
	start := time.Now()
	s.note = statementNote{kind: KindSession}
	rows, err := run()
	st := Statement{
		Time: start, Analyst: s.analyst, Client: s.client, Protocol: protocolName(s.frontEnd), Text: text,
		Kind: s.note.kind, Charged: s.note.charged, Rows: rows, CacheHit: s.note.cacheHit, Duration: time.Since(start),
	}
	if err != nil {
		st.SQLState, st.Error = sqlerr.InternalError, "internal error"
		var e *sqlerr.Error
		if errors.As(err, &e) {
			st.SQLState, st.Error = e.Code, e.Message
		}
		if errors.Is(err, context.Canceled) {
			st.SQLState, st.Error = sqlerr.QueryCanceled, "canceled"
		}
	}
	s.server.observe(st)
	return err
}

// recording reports whether observed records the next statement: an
// observer is set and no statement is being recorded already (a
// statement run by another one is not recorded apart).
func (s *Session) recording() bool { return s.server.observe != nil && !s.observing }

func protocolName(fe rewrite.FrontEnd) string {
	if fe == rewrite.MySQLFrontEnd {
		return "mysql"
	}
	return "postgres"
}

// rowCount is the number of rows of results.
func rowCount(results ...*sqltypes.Result) int {
	n := 0
	for _, r := range results {
		if r != nil {
			n += r.NumRows()
		}
	}
	return n
}

// Outcomes of a statement (Statement.Outcome).
const (
	OutcomeAnswered        = "answered"
	OutcomeBudgetExhausted = "budget_exhausted"
	OutcomeRefused         = "refused"
	OutcomeFailed          = "failed"
)

// Outcome is how the statement ended: answered; refused for exhausted
// budget; refused for another reason the client can act on (its SQL, its
// rights, a limit, a timeout); or failed (dpproxy, the backend or the
// ledger could not answer: SQLSTATE classes XX, 58 and 08).
func (st Statement) Outcome() string {
	switch {
	case st.SQLState == "":
		return OutcomeAnswered
	case st.SQLState == sqlerr.BudgetExhausted:
		return OutcomeBudgetExhausted
	}
	switch st.SQLState.Class() {
	case "XX", "58", "08":
		return OutcomeFailed
	}
	return OutcomeRefused
}
