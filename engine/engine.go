package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Engine is the budgeted release of DP answers, and what it shares with
// every session: the policy, the backend, the accountant, the result cache
// and the sessions' memos. One Engine serves every front end and every
// connection; it is safe for concurrent use.
type Engine struct {
	// policy is the policy in force (SetPolicy replaces it on reload).
	policy     atomic.Pointer[config.Policy]
	backend    backend.Backend
	dialect    rewrite.Dialect
	accountant *budget.Accountant
	rand       *mechanisms.Rand
	log        *slog.Logger
	// cache holds released answers for repetition at no cost (see
	// Answer).
	cache *resultCache
	// passthroughs and prepared are the sessions' memos (see Passthroughs
	// and PreparedStatements).
	passthroughs *lru.Cache[MemoKey, *rewrite.Passthrough]
	prepared     *lru.Cache[MemoKey, *sqltypes.Prepared]
	// templates is the sessions' memo of DP plans by shape (Templates);
	// templateHits counts the plans it gave.
	templates    *lru.Cache[TemplateKey, *rewrite.Template]
	templateHits atomic.Uint64
	// calibrations memoizes the mechanisms releases perturb with.
	calibrations *calibrations
	// shapesSeen holds hashes of shapes seen once (SeenBefore).
	shapesSeen *lru.Cache[uint64, struct{}]
	shapeSeed  maphash.Seed

	// sessionsMu guards sessions, each analyst's open sessions, held to
	// listen.max_connections_per_analyst.
	sessionsMu sync.Mutex
	sessions   map[string]int
}

// passthroughMemoSize bounds each of the sessions' memos.
const passthroughMemoSize = 4096

// Options configure an Engine.
type Options struct {
	Policy     *config.Policy
	Backend    backend.Backend
	Dialect    rewrite.Dialect
	Accountant *budget.Accountant
	// Rand is the noise source; nil means crypto/rand (production). Tests
	// may pass a seeded source.
	Rand   *mechanisms.Rand
	Logger *slog.Logger
	// SharedReleases, when set (a shared ledger), extends the result cache
	// across instances.
	SharedReleases SharedReleases
}

// New returns an Engine.
func New(opts Options) (*Engine, error) {
	if opts.Policy == nil || opts.Backend == nil || opts.Dialect == nil || opts.Accountant == nil {
		return nil, errors.New("engine: policy, backend, dialect and accountant are required")
	}
	e := &Engine{
		backend:    opts.Backend,
		dialect:    opts.Dialect,
		accountant: opts.Accountant,
		rand:       opts.Rand,
		log:        opts.Logger,
		cache:      newResultCache(opts.Policy.Cache.Size, opts.Policy.Cache.TTL),
		sessions:   map[string]int{},
	}
	e.policy.Store(opts.Policy)
	var err error
	if e.passthroughs, err = lru.New[MemoKey, *rewrite.Passthrough](passthroughMemoSize); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if e.prepared, err = lru.New[MemoKey, *sqltypes.Prepared](passthroughMemoSize); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if e.templates, err = lru.New[TemplateKey, *rewrite.Template](passthroughMemoSize); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if e.shapesSeen, err = lru.New[uint64, struct{}](passthroughMemoSize); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if e.calibrations, err = newCalibrations(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.shapeSeed = maphash.MakeSeed()
	if e.rand == nil {
		e.rand = mechanisms.Secure()
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.cache != nil {
		e.cache.shared, e.cache.log = opts.SharedReleases, e.log
	}
	return e, nil
}

// Backend returns the database the engine answers from.
func (e *Engine) Backend() backend.Backend { return e.backend }

// Policy returns the policy the engine enforces now (SetPolicy may
// replace it between two calls).
func (e *Engine) Policy() *config.Policy { return e.policy.Load() }

// SetPolicy puts pol in force for the statements that start from now on
// (a policy reload): the sessions' memos, analyses made under the old
// one, are dropped. The backend, the result cache and the accountant's
// configuration are not changed here.
func (e *Engine) SetPolicy(pol *config.Policy) {
	e.policy.Store(pol)
	e.passthroughs.Purge()
	e.prepared.Purge()
	e.templates.Purge()
}

// Dialect returns the SQL dialect of the backend: the analysis of a
// statement and the backend SQL it emits are for this dialect.
func (e *Engine) Dialect() rewrite.Dialect { return e.dialect }

// Accountant returns the privacy accountant the engine charges; sessions
// read an analyst's budget and charges from it (the dpproxy.* views).
func (e *Engine) Accountant() *budget.Accountant { return e.accountant }

// Logger returns the engine's logger.
func (e *Engine) Logger() *slog.Logger { return e.log }

// SCRAMVerifier returns an analyst's SCRAM-SHA-256 verifier.
func (e *Engine) SCRAMVerifier(user string) (auth.SCRAMVerifier, bool) {
	a, ok := e.Policy().Analyst(user)
	if !ok {
		return auth.SCRAMVerifier{}, false
	}
	return a.Password.SCRAM()
}

// OpenSession counts a new session of the analyst, refusing it beyond
// listen.max_connections_per_analyst (0: no limit). Sessions of both
// front ends count; each one opened is given back with CloseSession.
func (e *Engine) OpenSession(analyst string) error {
	limit := e.Policy().Listen.MaxConnectionsPerAnalyst
	e.sessionsMu.Lock()
	defer e.sessionsMu.Unlock()
	if limit > 0 && e.sessions[analyst] >= limit {
		return sqlerr.New(sqlerr.TooManyConnections, "too many connections for analyst %q: %d are open, the limit is %d", analyst, e.sessions[analyst], limit).
			WithHint("close idle connections, or ask the policy author to raise listen.max_connections_per_analyst")
	}
	e.sessions[analyst]++
	return nil
}

// CloseSession gives back a session counted by OpenSession.
func (e *Engine) CloseSession(analyst string) {
	e.sessionsMu.Lock()
	defer e.sessionsMu.Unlock()
	if e.sessions[analyst]--; e.sessions[analyst] <= 0 {
		delete(e.sessions, analyst)
	}
}

// MemoKey keys the sessions' memos (Passthroughs, PreparedStatements):
// what a statement's analysis depends on besides the engine's policy and
// dialect. A struct rather than the fields joined into one string: a
// lookup then copies no text.
type MemoKey struct {
	FrontEnd rewrite.FrontEnd
	// Database is the session's database: for MySQL clients it decides
	// whether a name means an information_schema view.
	Database string
	// ParamTypes lists the declared parameter types of a prepared
	// statement ("" for none).
	ParamTypes string
	SQL        string
}

// Passthroughs is the sessions' shared memo of analyzed public-table
// queries, keyed by what the analysis depends on besides the engine's
// policy and dialect (the text, the front end, the database): a repeated
// query skips parsing (BI dashboards repeat them). Safe for concurrent
// use.
func (e *Engine) Passthroughs() *lru.Cache[MemoKey, *rewrite.Passthrough] { return e.passthroughs }

// PreparedStatements is the sessions' shared memo of prepared public-table
// queries with parameters, keyed like Passthroughs and by the declared
// parameter types; its Prepared values are read-only. Safe for concurrent
// use.
func (e *Engine) PreparedStatements() *lru.Cache[MemoKey, *sqltypes.Prepared] { return e.prepared }

// TemplateKey keys the sessions' memo of DP plans by shape: the shape
// (rewrite.Shape.Key) and everything else its analysis depends on besides
// the engine's policy and dialect.
type TemplateKey struct {
	// Shape is the text with its slots taken out.
	Shape string
	// Analyst is the session's analyst: each analyst's templates are
	// their own (a template's speed must not tell one analyst what
	// another asked).
	Analyst string
	// Settings are the front end and the session's settings the
	// analysis reads (its ε, the bias report, ...), written out by the
	// session.
	Settings string
	Database string
}

// Templates is the sessions' memo of DP plans by shape: a text whose shape
// has a template gets its plan without being parsed or analyzed. A
// template that is not Usable marks a shape that has none (its texts are
// analyzed in full). Each records the policy it was made under; SetPolicy
// empties the memo. Safe for concurrent use.
func (e *Engine) Templates() *lru.Cache[TemplateKey, *rewrite.Template] { return e.templates }

// SeenBefore reports whether a session met the shape of key before (in
// the last few thousand shapes), and records that it has now. Sessions
// make a shape's template at its second sighting: a shape met once (a
// parameter of a new value each time, an analyst's one-off query) would
// cost three more analyses for nothing.
func (e *Engine) SeenBefore(key TemplateKey) bool {
	h := maphash.Comparable(e.shapeSeed, key)
	if _, ok := e.shapesSeen.Get(h); ok {
		return true
	}
	e.shapesSeen.Add(h, struct{}{})
	return false
}

// CountTemplateHit counts a DP plan a session took from Templates.
func (e *Engine) CountTemplateHit() { e.templateHits.Add(1) }

// TemplateHits is the number of DP plans sessions took from Templates.
func (e *Engine) TemplateHits() uint64 { return e.templateHits.Load() }

// Passthrough runs a public-table query unchanged in meaning, binding
// args to its parameter markers in the database. It costs no budget; the
// database's own error is passed on, since only public tables are read.
func (e *Engine) Passthrough(ctx context.Context, p *rewrite.Passthrough, args ...any) (*sqltypes.Result, error) {
	return e.passthrough(ctx, p, decodedRows, args)
}

// PassthroughText is Passthrough for a client of front end front that
// takes its rows in text: where the backend can (backend.WireQuerier for
// PostgreSQL clients, backend.MySQLWireQuerier for MySQL ones) the rows
// come in the front end's wire form (Result.PostgresText or
// Result.MySQLText), forwarded without decoding each value.
func (e *Engine) PassthroughText(ctx context.Context, p *rewrite.Passthrough, front rewrite.FrontEnd, args ...any) (*sqltypes.Result, error) {
	form := mysqlTextRows
	if front == rewrite.PostgresFrontEnd {
		form = postgresTextRows
	}
	return e.passthrough(ctx, p, form, args)
}

// rowForm is the form passthrough gives a result's rows in.
type rowForm int

const (
	decodedRows      rowForm = iota // Result.Rows
	postgresTextRows                // Result.PostgresText where the backend can
	mysqlTextRows                   // Result.MySQLText where the backend can
)

func (e *Engine) passthrough(ctx context.Context, p *rewrite.Passthrough, form rowForm, args []any) (*sqltypes.Result, error) {
	var rows *backend.Rows
	var err error
	l := e.Policy().Listen
	limited := func() context.Context {
		return backend.WithStatement(ctx, backend.ResultLimit{Rows: l.MaxResultRows, Bytes: l.MaxResultBytes}, p.Shape, backend.Lookup(p.Lookup))
	}
	pgWire, toPostgres := e.backend.(backend.WireQuerier)
	myWire, toMySQL := e.backend.(backend.MySQLWireQuerier)
	switch {
	case form == postgresTextRows && toPostgres:
		rows, err = pgWire.QueryPostgresText(limited(), p.SQL, args...)
	case form == mysqlTextRows && toMySQL:
		rows, err = myWire.QueryMySQLText(limited(), p.SQL, args...)
	case toMySQL:
		rows, err = myWire.QueryPublic(limited(), p.SQL, args...)
	default:
		rows, err = e.query(ctx, e.backend, p.SQL, args...)
	}
	if err != nil {
		// Only public tables are read: the database's error reveals no
		// protected data, and tells the analyst what is wrong.
		return nil, databaseError(err)
	}
	res := &sqltypes.Result{Rows: rows.Values, PostgresText: rows.PostgresText, MySQLText: rows.MySQLText}
	res.Tag = sqltypes.SelectTag(res.NumRows())
	res.Columns = rows.Columns
	return res, nil
}

// DescribePassthrough learns a public query's result columns by running
// it with no rows (LIMIT 0) on the backend.
func (e *Engine) DescribePassthrough(ctx context.Context, q *rewrite.Passthrough) ([]sqltypes.Column, error) {
	sql := "SELECT * FROM (" + q.SQL + ") AS " + e.dialect.QuoteIdent("dp_describe") + " LIMIT 0"
	rows, err := e.query(ctx, e.backend, sql)
	if err != nil {
		return nil, databaseError(err) // public tables only, as in Passthrough
	}
	return rows.Columns, nil
}

// chargedAnswer runs a DP plan: reserve budget, run the bounded query, add
// noise, charge durably, and only then return the release.
func (e *Engine) chargedAnswer(ctx context.Context, analyst string, plan *rewrite.Plan, queryText string) (*sqltypes.Result, budget.Cost, error) {
	queryText = ledgerText(queryText)
	cost := budget.Cost{Epsilon: plan.Epsilon, Delta: plan.Delta}
	reservation, err := e.accountant.ReserveFor(ctx, analyst, plan.ReadTables(), cost)
	if err != nil {
		var exhausted *budget.ExhaustedError
		if errors.As(err, &exhausted) {
			hint := "the privacy budget is spent: no further queries on protected data can be answered for this analyst; ask the policy author for more budget"
			switch {
			case exhausted.Team != "":
				hint = fmt.Sprintf("team %s's budget is spent: no member's queries on protected data can be answered; ask the policy author for more budget", exhausted.Team)
			case exhausted.Table != "":
				hint = fmt.Sprintf("table %s's own budget is spent: no analyst's queries that read it can be answered; queries on other tables still can", exhausted.Table)
			}
			return nil, budget.Cost{}, &sqlerr.Error{Code: sqlerr.BudgetExhausted, Message: exhausted.Error(), Hint: hint, Err: err}
		}
		if errors.Is(err, budget.ErrLedgerUnavailable) {
			return nil, budget.Cost{}, ledgerUnavailable(err)
		}
		return nil, budget.Cost{}, fmt.Errorf("reserving budget: %w", err)
	}
	charge := newEarlyCommit(ctx, reservation, queryText)
	res, err := answerPlan(backend.WithSent(ctx, charge.start), e.backend, plan, e.rand, e.calibrations.forAnalyst(analyst))
	if err != nil {
		if errors.Is(err, errBeforeData) && charge.refund() {
			// The query never reached the data: nothing depends on it.
			return nil, budget.Cost{}, err
		}
		// A failure after the query reached the data — in the backend or
		// in the release (found in review: an error in post-processing
		// could otherwise be a free bit about the noisy values) — may
		// depend on the data, so the charge stands (as it does once the
		// backend started it: earlyCommit).
		if cerr := charge.wait(context.WithoutCancel(ctx)); cerr != nil {
			// Uncharged, the failure must not reach the client either.
			e.log.Error("charging a failed query", "analyst", analyst, "err", cerr)
			return nil, budget.Cost{}, chargeFailed(cerr)
		}
		return nil, cost, err
	}
	if err := charge.wait(ctx); err != nil {
		// Fail closed: without a durable charge, no answer leaves.
		return nil, budget.Cost{}, chargeFailed(err)
	}
	if e.log.Enabled(ctx, slog.LevelDebug) { // its arguments would allocate on every answer
		e.log.Debug("answered", "analyst", analyst, "epsilon", plan.Epsilon, "rows", len(res.Rows))
	}
	return res, cost, nil
}

// chargeFailed is the client's error when a charge could not be
// recorded: the answer (or the query's failure) is withheld.
func chargeFailed(err error) error {
	switch {
	case errors.Is(err, budget.ErrLedgerUnavailable):
		return ledgerUnavailable(err)
	case errors.Is(err, budget.ErrHoldLost):
		return &sqlerr.Error{Code: sqlerr.LedgerUnavailable,
			Message: "the answer was withheld: this query's budget reservation expired before it could be charged (the shared ledger was unreachable for longer than ledger.hold_lease)",
			Hint:    "run the query again", Err: err}
	}
	return &sqlerr.Error{Code: sqlerr.InternalError, Message: "could not record the privacy charge; the answer was withheld", Err: err}
}

// ledgerUnavailable is the client's error when the shared budget ledger
// cannot be reached: nothing is answered uncharged.
func ledgerUnavailable(err error) error {
	return &sqlerr.Error{Code: sqlerr.LedgerUnavailable,
		Message: "the privacy budget ledger is unavailable: the query was not answered, because no answer leaves dpproxy uncharged",
		Hint:    "retry when the ledger database is back; queries on public tables and catalog queries still work", Err: err}
}

// query runs sql on b held to the policy's result limits
// (listen.max_result_rows and max_result_bytes). Only for results that
// may be shown as they are (public tables): on protected data
// whether a cap is reached is an exact statistic.
func (e *Engine) query(ctx context.Context, b backend.Backend, sql string, args ...any) (*backend.Rows, error) {
	l := e.Policy().Listen
	return b.Query(backend.WithResultLimit(ctx, backend.ResultLimit{Rows: l.MaxResultRows, Bytes: l.MaxResultBytes}), sql, args...)
}

// backendError maps a backend failure to a client error without passing on
// the backend's text, which may reveal data.
func backendError(err error) error {
	var tooLarge *backend.ResultTooLargeError
	if errors.As(err, &tooLarge) {
		setting := "listen.max_result_bytes"
		if tooLarge.Rows {
			setting = "listen.max_result_rows"
		}
		return &sqlerr.Error{Code: sqlerr.ProgramLimitExceeded, Err: err,
			Message: fmt.Sprintf("%s: the statement was stopped (%s = %d)", tooLarge.Error(), setting, tooLarge.Limit),
			Hint:    "add a LIMIT or narrow the query; the connection is still usable"}
	}
	if errors.Is(err, backend.ErrUnavailable) {
		return &sqlerr.Error{Code: sqlerr.BackendUnavailable, Message: "the database behind dpproxy is unavailable", Err: err}
	}
	if dbErr, ok := backend.AsDatabaseError(err); ok && backend.IsStatementError(err) {
		// Refused while preparing: its message depends on the statement
		// only. Not its hint, which may suggest a column the policy does
		// not expose (found in review), nor a position in the rewritten
		// SQL.
		return &sqlerr.Error{Code: sqlerr.Code(dbErr.Code), Message: dbErr.Message, Err: err}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &sqlerr.Error{Code: sqlerr.QueryCanceled, Message: "canceling statement", Err: err}
	}
	return &sqlerr.Error{Code: sqlerr.InternalError, Message: "the query failed on the database", Err: err}
}

// databaseError passes on the database's own error for a statement that
// cannot have read protected data (public tables only), so
// its failure reveals none. Other failures are mapped by backendError.
func databaseError(err error) error {
	if dbErr, ok := backend.AsDatabaseError(err); ok {
		return &sqlerr.Error{Code: sqlerr.Code(dbErr.Code), Message: dbErr.Message, Detail: dbErr.Detail, Hint: dbErr.Hint, Position: dbErr.Position, Err: err}
	}
	return backendError(err)
}

// ledgerText is a query's text as the analyst's query log records it with
// the charge: its runs of white space collapsed to one space. Computed
// only for a charge: a cache hit records nothing. A text already so (the
// usual one) is returned as it is, without a copy.
func ledgerText(sql string) string {
	if collapsed(sql) {
		return sql
	}
	return strings.Join(strings.Fields(sql), " ")
}

// collapsed reports whether sql is ASCII with single spaces between its
// words and none around them: what ledgerText would make of it.
func collapsed(sql string) bool {
	if sql == "" || sql[0] == ' ' || sql[len(sql)-1] == ' ' {
		return sql == ""
	}
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c >= 0x80, c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
			return false // other white space (Unicode's too, for Fields) or may be
		case c == ' ' && sql[i+1] == ' ':
			return false
		}
	}
	return true
}
