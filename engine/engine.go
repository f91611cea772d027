package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

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

// Engine answers SQL for analysts: it is shared by every front end and
// every connection. It is safe for concurrent use.
type Engine struct {
	policy     *config.Policy
	backend    backend.Backend
	dialect    rewrite.Dialect
	accountant *budget.Accountant
	rand       *mechanisms.Rand
	log        *slog.Logger
	// cache holds released answers for repetition at no cost (see
	// cachedAnswer).
	cache *resultCache
	// passthroughs memoizes the analysis of public-table queries by text,
	// so a repeated one skips parsing (BI dashboards repeat them).
	passthroughs *lru.Cache[string, *rewrite.Passthrough]
	// prepared memoizes prepared public-table queries with parameters
	// (see Session.Prepare); their Prepared values are read-only.
	prepared *lru.Cache[string, *sqltypes.Prepared]
	// catalog runs catalog queries and statements dpproxy cannot parse
	// under a role that cannot read protected tables; nil when the policy
	// configures none.
	catalog CatalogBackend

	// sessionsMu guards sessions, each analyst's open sessions, held to
	// listen.max_connections_per_analyst.
	sessionsMu sync.Mutex
	sessions   map[string]int
}

// passthroughMemoSize bounds the memo of analyzed public-table queries.
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
	// Catalog, optional, is the backend connected as the catalog role
	// (policy backend.catalog_dsn), already verified to be unable to read
	// protected tables.
	Catalog CatalogBackend
}

// New returns an Engine.
func New(opts Options) (*Engine, error) {
	if opts.Policy == nil || opts.Backend == nil || opts.Dialect == nil || opts.Accountant == nil {
		return nil, errors.New("engine: policy, backend, dialect and accountant are required")
	}
	e := &Engine{
		policy:     opts.Policy,
		backend:    opts.Backend,
		dialect:    opts.Dialect,
		accountant: opts.Accountant,
		rand:       opts.Rand,
		log:        opts.Logger,
		cache:      newResultCache(opts.Policy.Cache.Size, opts.Policy.Cache.TTL),
		catalog:    opts.Catalog,
		sessions:   map[string]int{},
	}
	var err error
	if e.passthroughs, err = lru.New[string, *rewrite.Passthrough](passthroughMemoSize); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if e.prepared, err = lru.New[string, *sqltypes.Prepared](passthroughMemoSize); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if e.rand == nil {
		e.rand = mechanisms.Secure()
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	return e, nil
}

// Policy returns the policy the engine enforces.
func (e *Engine) Policy() *config.Policy { return e.policy }

// SCRAMVerifier returns an analyst's SCRAM-SHA-256 verifier.
func (e *Engine) SCRAMVerifier(user string) (auth.SCRAMVerifier, bool) {
	a, ok := e.policy.Analyst(user)
	if !ok {
		return auth.SCRAMVerifier{}, false
	}
	return a.Password.SCRAM()
}

// passthrough runs a public-table query unchanged in meaning.
func (e *Engine) passthrough(ctx context.Context, p *rewrite.Passthrough, args ...any) (*sqltypes.Result, error) {
	rows, err := e.query(ctx, e.backend, p.SQL, args...)
	if err != nil {
		// Only public tables are read: the database's error reveals no
		// protected data, and tells the analyst what is wrong.
		return nil, databaseError(err)
	}
	res := &sqltypes.Result{Rows: rows.Values, Tag: fmt.Sprintf("SELECT %d", len(rows.Values))}
	for _, c := range rows.Columns {
		res.Columns = append(res.Columns, sqltypes.Column{Name: c.Name, Type: c.Type})
	}
	return res, nil
}

// answer runs a DP plan: reserve budget, run the bounded query, add noise,
// charge durably, and only then return the release.
func (e *Engine) answer(ctx context.Context, analyst string, plan *rewrite.Plan, queryText string) (*sqltypes.Result, error) {
	cost := budget.Cost{Epsilon: plan.Epsilon, Delta: plan.Delta}
	reservation, err := e.accountant.Reserve(analyst, cost)
	if err != nil {
		var exhausted *budget.ExhaustedError
		if errors.As(err, &exhausted) {
			return nil, &sqlerr.Error{
				Code:    sqlerr.BudgetExhausted,
				Message: exhausted.Error(),
				Hint:    "the privacy budget is spent: no further queries on protected data can be answered for this analyst; ask the policy author for more budget",
				Err:     err,
			}
		}
		return nil, fmt.Errorf("reserving budget: %w", err)
	}
	// No result caps here: the bounded result has a row per group found in
	// the data, before partition selection, so an error at a cap would
	// tell the exact number of groups. Only released rows are capped.
	rows, err := e.backend.Query(ctx, plan.BackendSQL)
	if err != nil {
		if errors.Is(err, backend.ErrUnavailable) {
			// The query never reached the data: nothing depends on it.
			reservation.Release()
			return nil, backendError(err)
		}
		// A failure after the query reached the data may itself depend on
		// the data, so the charge stands.
		if _, cerr := reservation.Commit(context.WithoutCancel(ctx), queryText); cerr != nil {
			e.log.Error("charging a failed query", "analyst", analyst, "err", cerr)
		}
		return nil, backendError(err)
	}
	res, err := release(plan, rows, e.rand)
	if err != nil {
		// Nothing left the proxy: noise generation failed closed.
		reservation.Release()
		return nil, err
	}
	if _, err := reservation.Commit(ctx, queryText); err != nil {
		// Fail closed: without a durable charge, no answer leaves.
		return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: "could not record the privacy charge; the answer was withheld", Err: err}
	}
	e.log.Debug("answered", "analyst", analyst, "epsilon", plan.Epsilon, "rows", len(res.Rows))
	return res, nil
}

// query runs sql on b held to the policy's result limits
// (listen.max_result_rows and max_result_bytes). Only for results that
// may be shown as they are (public tables, catalogs): on protected data
// whether a cap is reached is an exact statistic.
func (e *Engine) query(ctx context.Context, b backend.Backend, sql string, args ...any) (*backend.Rows, error) {
	l := e.policy.Listen
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
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &sqlerr.Error{Code: sqlerr.QueryCanceled, Message: "canceling statement", Err: err}
	}
	return &sqlerr.Error{Code: sqlerr.InternalError, Message: "the query failed on the database", Err: err}
}

// normalizeQueryText is the text recorded in the analyst's query log.
func normalizeQueryText(sql string) string {
	return strings.Join(strings.Fields(sql), " ")
}
