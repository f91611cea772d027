package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Session is one connection's conversation with its client: what the
// client set (ε, run-time parameters, the database, variables) and the
// answer to each statement it sends. A session is used by one goroutine
// at a time.
//
// Besides SQL queries, a session answers these statements itself, without
// the backend and at no cost:
//
//	SET [SESSION] dpproxy.epsilon { = | TO } { number | 'number' | DEFAULT }
//	RESET dpproxy.epsilon            (also RESET ALL)
//	SHOW dpproxy.epsilon
//	EXPLAIN DP query
//	SELECT ... FROM dpproxy.budget   (see virtual.go)
//	SELECT ... FROM dpproxy.queries
//
// Other SET statements, BEGIN, COMMIT and ROLLBACK are accepted and have no
// effect.
type Session struct {
	server  *Server
	engine  *engine.Engine
	analyst string
	// id numbers the session (pg_backend_pid(), CONNECTION_ID()).
	id uint32
	// cursors are the open SQL cursors (cursor.go), by name.
	cursors map[string]*cursor
	// inTransaction is set between BEGIN and COMMIT/ROLLBACK.
	inTransaction bool
	frontEnd      rewrite.FrontEnd
	// epsilon is what the session's next query on protected data costs:
	// always in [mechanisms.MinEpsilon, policy max_epsilon_per_query].
	epsilon float64
	// intervals is SettingIntervals: off, notice or columns.
	intervals string
	// targetError is SettingTargetError (0: off).
	targetError float64
	// reportBias is SettingReportBias.
	reportBias bool
	// autoBound is SettingAutoBound ("" is the default, quantile).
	autoBound string
	// warnings are the last statement's notices, for MySQL's SHOW
	// WARNINGS (which does not clear them).
	warnings []string
	// database is the database name the client connected to.
	database string
	// gucs are the run-time parameters the client set (see guc.go);
	// startupSettings those it sent when connecting.
	gucs, startupSettings map[string]string
	// pendingParse is the parse mysqlStatement just made, for parseOne to
	// take instead of parsing the same text again.
	pendingParse *pendingParse
	// closed is set by Close, which gives back the analyst's connection.
	closed bool
	// lastRR is the session's last randomized-response release, for
	// dpproxy.rr_counts.
	lastRR *rrRelease
	// client is the client's address; observing is set while a statement
	// runs under observed, note gathers its record (observe.go).
	client    string
	observing bool
	note      statementNote
	// plans memoizes the session's analyzed DP statements (planmemo.go).
	plans *planMemo
	// decodeRows asks for public-table rows decoded even where the front
	// end could forward them in wire form: a cursor's result is sliced by
	// FETCH, and MySQL's binary protocol encodes each value.
	decodeRows bool
}

// sessionIDs numbers sessions.
var sessionIDs atomic.Uint32

type pendingParse struct {
	sql    string
	parsed *rewrite.Parsed
	err    error
}

// New starts a session of the engine e for an authenticated analyst,
// speaking the front end's SQL. Its queries cost the policy's
// defaults.epsilon until SET dpproxy.epsilon changes it. A session is
// counted against the analyst's listen.max_connections_per_analyst until
// Close.
func New(srv *Server, analyst string, fe rewrite.FrontEnd) (*Session, error) {
	e := srv.engine
	pol := e.Policy()
	if _, ok := pol.Analyst(analyst); !ok {
		return nil, sqlerr.New(sqlerr.InvalidAuthorization, "analyst %q is not in the policy", analyst)
	}
	if err := e.OpenSession(analyst); err != nil {
		return nil, err
	}
	return &Session{
		server: srv, engine: e, analyst: analyst, frontEnd: fe, epsilon: pol.Defaults.Epsilon, intervals: intervalsOff,
		id:   sessionIDs.Add(1),
		gucs: map[string]string{}, startupSettings: map[string]string{},
	}, nil
}

// stillInPolicy refuses the statements of an analyst a policy reload
// removed (the connection stays open; it can run nothing).
func (s *Session) stillInPolicy() error {
	if _, ok := s.engine.Policy().Analyst(s.analyst); !ok {
		return sqlerr.New(sqlerr.InvalidAuthorization, "analyst %q is no longer in the policy (it was reloaded): this connection can run no statement; reconnect as an analyst the policy names", s.analyst)
	}
	return nil
}

// Analyst returns the session's analyst.
func (s *Session) Analyst() string { return s.analyst }

// Epsilon returns the ε the session's next query on protected data costs.
func (s *Session) Epsilon() float64 { return s.epsilon }

// Execute runs one query string. It returns one Result per statement, or
// an *sqlerr.Error; other errors mean an internal failure and must not be
// shown to the client in detail.
func (s *Session) Execute(ctx context.Context, sql string) ([]*sqltypes.Result, error) {
	var results []*sqltypes.Result
	err := s.observed(sql, func() (int, error) {
		var err error
		results, err = s.execute(ctx, sql)
		return rowCount(results...), err
	})
	return results, err
}

func (s *Session) execute(ctx context.Context, sql string) ([]*sqltypes.Result, error) {
	if err := s.stillInPolicy(); err != nil {
		return nil, err
	}
	cmd, err := matchSessionCommand(sql)
	if err != nil {
		return nil, err
	}
	if cmd != nil {
		if cmd.kind != cmdExplainDP {
			s.forgetPlans()
		}
		res, err := s.runCommand(ctx, cmd, sql)
		if err != nil {
			return nil, err
		}
		return []*sqltypes.Result{res}, nil
	}
	// A public-table query analyzed before (for this front end and
	// database) skips parsing. Session statements are never memoized, so
	// this may come before them.
	// An entry made under an earlier policy is ignored (found in review: a
	// reload can make a public table protected while one is being added).
	if pt, ok := s.engine.Passthroughs().Get(s.passthroughKey(sql)); ok && pt.Policy == s.engine.Policy() {
		s.note.kind = KindPublic
		res, err := s.passthrough(ctx, pt)
		if err != nil {
			return nil, err
		}
		return []*sqltypes.Result{res}, nil
	}
	// A DP query this session analyzed before, under the same settings,
	// skips parsing and analysis (planmemo.go); so does one whose shape
	// has a template (templates.go).
	p, learn := s.memoizedPlan(sql, nil), (*rewrite.Shape)(nil)
	if p == nil {
		p, learn = s.templatedPlan(sql)
	}
	if p != nil {
		res, err := s.run(ctx, p, sql)
		if err != nil {
			return nil, err
		}
		return []*sqltypes.Result{res}, nil
	}
	// MySQL front end: session and catalog statements (mysql.go).
	if s.frontEnd == rewrite.MySQLFrontEnd {
		if res, ok, err := s.mysqlStatement(ctx, sql, true); err != nil {
			return nil, err
		} else if ok {
			s.forgetPlans() // SET, USE, user variables
			return []*sqltypes.Result{res}, nil
		}
	}
	if s.frontEnd == rewrite.PostgresFrontEnd {
		guc, err := matchPostgresSetting(sql)
		if err != nil {
			return nil, err
		}
		if guc != nil {
			s.forgetPlans()
			res, err := s.runSetting(guc)
			if err != nil {
				return nil, err
			}
			return []*sqltypes.Result{res}, nil
		}
	}
	if s.frontEnd == rewrite.PostgresFrontEnd {
		if res, ok, err := s.cursorStatement(ctx, sql); ok {
			if err != nil {
				return nil, err
			}
			return []*sqltypes.Result{res}, nil
		}
	}
	stmt, parsed, err := s.parseOne(sql)
	if err != nil {
		if s.frontEnd == rewrite.PostgresFrontEnd && !errors.Is(err, errMultipleStatements) && mentionsCatalog(sql) {
			res, cerr := s.queryCatalog(ctx, sql, nil, nil)
			if cerr != nil {
				return nil, cerr
			}
			return []*sqltypes.Result{res}, nil
		}
		return nil, err
	}
	if stmt == nil {
		return nil, nil
	}
	if res, ok, err := s.catalogStatement(ctx, sql, stmt, parsed); ok {
		if err != nil {
			return nil, err
		}
		return []*sqltypes.Result{res}, nil
	}
	if len(parsed.Params) > 0 {
		return nil, sqlerr.New(sqlerr.ProtocolViolation, "the query has parameters ($n) but no values: send it with the extended query protocol (Parse/Bind)")
	}
	p, err = s.prepare(stmt, castLookup(parsed))
	if err != nil {
		return nil, err
	}
	if p.query != nil && p.query.Passthrough != nil {
		s.engine.Passthroughs().Add(s.passthroughKey(sql), p.query.Passthrough)
	}
	if learn != nil && p.query != nil && p.query.Plan != nil {
		s.learnText(learn, p)
	}
	if p.tag != "" {
		s.forgetPlans()
	}
	s.memoizePlan(sql, nil, p)
	res, err := s.run(ctx, p, sql)
	if err != nil {
		return nil, err
	}
	return []*sqltypes.Result{res}, nil
}

// passthroughKey keys the engine's memo of analyzed public-table queries:
// the analysis depends only on the text, the front end's SQL flavour, the
// policy and the backend dialect (the last two are the engine's own). The
// session's database is part of the key too: for MySQL clients it decides
// whether a name means an information_schema view.
func (s *Session) passthroughKey(sql string) engine.MemoKey {
	return engine.MemoKey{FrontEnd: s.frontEnd, Database: s.database, SQL: sql}
}

// parseOne parses sql, which must hold at most one statement; it returns
// nil for none. Parsed carries the parameter mapping and the client's
// cast types.
func (s *Session) parseOne(sql string) (ast.StmtNode, *rewrite.Parsed, error) {
	var parsed *rewrite.Parsed
	var err error
	if pp := s.pendingParse; pp != nil && pp.sql == sql {
		// Taken once: whoever gets the AST may change it.
		parsed, err = pp.parsed, pp.err
	} else {
		parsed, err = rewrite.ParseStatement(sql, s.frontEnd)
	}
	s.pendingParse = nil
	if err != nil {
		return nil, nil, err
	}
	switch len(parsed.Stmts) {
	case 0:
		return nil, parsed, nil
	case 1:
		return parsed.Stmts[0], parsed, nil
	}
	e := sqlerr.New(sqlerr.FeatureNotSupported, "multiple statements in one query are not supported (got %d)", len(parsed.Stmts)).
		WithHint("send one statement at a time")
	e.Err = errMultipleStatements
	return nil, nil, e
}

// castLookup is the client's cast types of a parsed statement (nil for the
// MySQL front end, whose casts are TiDB's own).
func castLookup(p *rewrite.Parsed) rewrite.CastLookup {
	if p == nil || p.Casts == nil {
		return nil
	}
	return p.CastOf
}

// errMultipleStatements marks the refusal of a multi-statement string, which
// is never tried as a catalog query.
var errMultipleStatements = errors.New("multiple statements")

// prepared is a statement checked and planned, ready to run or explain:
// exactly one of tag, local, virtual, catalog and query is set.
type prepared struct {
	// tag answers a session statement (SET, BEGIN, ...) that does nothing.
	tag string
	// keepsTransaction marks a COMMIT or ROLLBACK that does not end the
	// transaction (AND CHAIN, TO SAVEPOINT): cursors without HOLD stay.
	keepsTransaction bool
	// local is the answer to a query about the session or server
	// (SELECT version(), ...), computed without the backend.
	local *sqltypes.Result
	// virtual is a query on a dpproxy.* view.
	virtual *virtualQuery
	// catalog is a catalog query (catalog.go), answered by the virtual
	// catalog.
	catalog ast.StmtNode
	// query is a query for the backend, DP or passthrough.
	query *rewrite.Query
	// canonical is the statement's canonical text (rewrite.Canonical),
	// the result cache's key for a DP plan; "" when not available.
	canonical string
	// release names the DP plan's release for the session's analyst (the
	// result cache's key, built once).
	release *engine.Release
	// derived are the earlier releases the query can be answered from at
	// no cost, if the cache holds one (derived.go).
	derived []*derivation
	// notice goes with the answer (the ε dpproxy.target_error chose).
	notice string
}

// prepare checks a statement against the policy and plans it, without
// running anything. Running it and explaining it share this step, so a
// query and EXPLAIN DP of it are refused with the same error.
func (s *Session) prepare(stmt ast.StmtNode, casts rewrite.CastLookup) (*prepared, error) {
	switch x := stmt.(type) {
	case *ast.SetStmt:
		for _, v := range x.Variables {
			if strings.HasPrefix(strings.ToLower(v.Name), settingPrefix) {
				// A form the session-command matcher did not take (several
				// assignments, @@, a comment first): refuse rather than
				// ignore a privacy setting.
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s can only be set on its own, as SET %s = <number>", v.Name, SettingEpsilon).
					WithHint("send SET %s = 0.5 as a statement of its own", SettingEpsilon)
			}
		}
		return &prepared{tag: "SET"}, nil
	case *ast.BeginStmt:
		return &prepared{tag: "BEGIN"}, nil
	case *ast.CommitStmt:
		return &prepared{tag: "COMMIT", keepsTransaction: x.CompletionType == ast.CompletionTypeChain}, nil
	case *ast.RollbackStmt:
		// ROLLBACK TO SAVEPOINT and AND CHAIN stay in the transaction.
		return &prepared{tag: "ROLLBACK", keepsTransaction: x.SavepointName != "" || x.CompletionType == ast.CompletionTypeChain}, nil
	case *ast.SavepointStmt:
		return &prepared{tag: "SAVEPOINT"}, nil
	case *ast.ReleaseSavepointStmt:
		return &prepared{tag: "RELEASE"}, nil
	case *ast.ExplainStmt:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "EXPLAIN statements are not supported by dpproxy").
			WithHint("EXPLAIN DP <query> shows how dpproxy would answer a query, at no cost")
	}
	if sel, ok := stmt.(*ast.SelectStmt); ok {
		if res, ok := s.evalLocal(sel); ok {
			return &prepared{local: res}, nil
		}
	}
	if route, err := s.route(stmt); err != nil {
		return nil, err
	} else if route == toCatalog {
		return &prepared{catalog: stmt}, nil
	}
	v, err := parseVirtual(stmt)
	if err != nil {
		return nil, err
	}
	if v != nil {
		return &prepared{virtual: v}, nil
	}
	p := &prepared{}
	q, err := rewrite.Analyze(stmt, s.engine.Policy(), s.analyzeOptions(s.epsilon, casts))
	if err != nil {
		s.note.kind = KindDP // a query on the data, refused
		return nil, err
	}
	if q.Plan != nil && s.targetError > 0 {
		// Accuracy first: the ε that meets the session's target (target.go).
		if q, p.notice, err = s.planForTarget(stmt, casts); err != nil {
			return nil, err
		}
	}
	p.query = q
	if q.Plan != nil {
		// The result cache's key: the statement as the analyst wrote it
		// (analysis of a DP query reads the tree, never changes it).
		// Without a canonical text the query is not cached.
		if c, err := rewrite.Canonical(stmt); err == nil {
			suffix := s.canonicalSuffix()
			p.canonical = c + suffix
			p.derived = s.deriveFrom(stmt, q.Plan, casts, suffix)
		} else {
			s.engine.Logger().Debug("query not cacheable", "err", err)
		}
		p.release = s.engine.Release(s.analyst, q.Plan, p.canonical)
	}
	return p, nil
}

// run executes a prepared statement. sql is the client's text, recorded
// (normalized) in the ledger with the charge.
func (s *Session) run(ctx context.Context, p *prepared, sql string) (*sqltypes.Result, error) {
	if p.local == nil {
		s.warnings = nil
	}
	switch {
	case p.tag != "":
		switch p.tag {
		case "BEGIN":
			s.inTransaction = true
		case "COMMIT", "ROLLBACK":
			if !p.keepsTransaction {
				s.endTransaction()
			}
		}
		return &sqltypes.Result{Tag: p.tag}, nil
	case p.local != nil:
		return p.local, nil
	case p.virtual != nil:
		return s.answerVirtual(ctx, p.virtual)
	case p.catalog != nil:
		return s.queryCatalog(ctx, sql, p.catalog, nil)
	case p.query.Passthrough != nil:
		s.note.kind = KindPublic
		return s.passthrough(ctx, p.query.Passthrough)
	case p.query.Empty != nil:
		s.note.kind = KindDP
		return emptyResult(p.query.Empty), nil
	}
	plan := p.query.Plan
	s.note.kind = KindCached
	// The query's own release, when cached, comes first: asking again
	// returns the same answer (found in review).
	derivable := p.derived
	if len(derivable) > 0 && released(ctx, s, p.release) {
		derivable = nil
	}
	res, from, derived := s.answerDerived(ctx, derivable)
	if derived && from.sums == nil {
		plan = from.plan // the base's rows, in its columns
	}
	if !derived {
		var out engine.Outcome
		var err error
		res, out, err = s.engine.Answer(ctx, p.release, sql)
		s.note.charged, s.note.cacheHit = out.Charged, out.CacheHit
		if !out.CacheHit {
			s.note.kind = KindDP
		}
		if err != nil {
			return nil, err
		}
	} else {
		s.note.cacheHit = true
	}
	if plan.RR != nil {
		s.lastRR = &rrRelease{plan: plan, result: res}
	}
	res = withIntervals(res, plan, s.intervals)
	if p.notice != "" {
		copied := *res
		copied.Notices = append([]string{p.notice}, res.Notices...)
		res = &copied
	}
	s.warnings = res.Notices
	return res, nil
}

// passthrough runs a public-table query; the client gets the backend's
// rows in its front end's wire form where they can be forwarded as they
// are, unless decodeRows asks for them decoded.
func (s *Session) passthrough(ctx context.Context, p *rewrite.Passthrough, args ...any) (*sqltypes.Result, error) {
	if !s.decodeRows {
		return s.engine.PassthroughText(ctx, p, s.frontEnd, args...)
	}
	return s.engine.Passthrough(ctx, p, args...)
}

// emptyResult answers a query that returns no rows whatever the data.
func emptyResult(e *rewrite.EmptyResult) *sqltypes.Result {
	res := &sqltypes.Result{Tag: "SELECT 0"}
	for _, c := range e.Columns {
		res.Columns = append(res.Columns, sqltypes.Column{Name: c.Name, Type: c.Type})
	}
	return res
}

// runCommand runs a session command recognized before parsing.
func (s *Session) runCommand(ctx context.Context, cmd *sessionCommand, sql string) (*sqltypes.Result, error) {
	switch cmd.kind {
	case cmdSet:
		if cmd.name == SettingAutoBound {
			v := autoBoundQuantile
			if !cmd.isDefault {
				var err error
				if v, err = parseAutoBound(cmd.value); err != nil {
					return nil, err
				}
			}
			s.autoBound = v
			return &sqltypes.Result{Tag: "SET"}, nil
		}
		if cmd.name == SettingReportBias {
			v := false
			if !cmd.isDefault {
				var err error
				if v, err = parseOnOff(cmd.name, cmd.value); err != nil {
					return nil, err
				}
			}
			s.reportBias = v
			return &sqltypes.Result{Tag: "SET"}, nil
		}
		if cmd.name == SettingTargetError {
			v := 0.0
			if !cmd.isDefault {
				var err error
				if v, err = parseTargetError(cmd.value); err != nil {
					return nil, err
				}
			}
			s.targetError = v
			return &sqltypes.Result{Tag: "SET"}, nil
		}
		if cmd.name == SettingIntervals {
			v := intervalsOff
			if !cmd.isDefault {
				var err error
				if v, err = parseIntervals(cmd.value); err != nil {
					return nil, err
				}
			}
			s.intervals = v
			return &sqltypes.Result{Tag: "SET"}, nil
		}
		eps := s.engine.Policy().Defaults.Epsilon
		if !cmd.isDefault {
			var err error
			if eps, err = s.parseEpsilon(cmd.value); err != nil {
				return nil, err
			}
		}
		s.epsilon = eps
		return &sqltypes.Result{Tag: "SET"}, nil
	case cmdReset:
		if cmd.name == "" || cmd.name == SettingEpsilon {
			s.epsilon = s.engine.Policy().Defaults.Epsilon
		}
		if cmd.name == "" || cmd.name == SettingIntervals {
			s.intervals = intervalsOff
		}
		if cmd.name == "" || cmd.name == SettingTargetError {
			s.targetError = 0
		}
		if cmd.name == "" || cmd.name == SettingReportBias {
			s.reportBias = false
		}
		if cmd.name == "" || cmd.name == SettingAutoBound {
			s.autoBound = autoBoundQuantile
		}
		return &sqltypes.Result{Tag: "RESET"}, nil
	case cmdShow:
		return s.showSetting(cmd.name), nil
	case cmdExplainDP:
		return s.explainDP(ctx, cmd, sql)
	}
	return nil, fmt.Errorf("session: unknown session command %d", cmd.kind)
}

// analyzeOptions are the session's options for rewrite.Analyze at eps.
func (s *Session) analyzeOptions(eps float64, casts rewrite.CastLookup) rewrite.Options {
	return rewrite.Options{Dialect: s.engine.Dialect(), Epsilon: eps, FrontEnd: s.frontEnd, Casts: casts, ReportBias: s.reportBias,
		BiasBounds: s.intervals != "" && s.intervals != intervalsOff, R2T: s.autoBound == autoBoundR2T,
		BindConstants: true}
}

// showSetting answers SHOW dpproxy.<name>.
func (s *Session) showSetting(name string) *sqltypes.Result {
	switch name {
	case SettingIntervals:
		return showSetting(name, s.intervals)
	case SettingAutoBound:
		if s.autoBound == "" {
			return showSetting(name, autoBoundQuantile)
		}
		return showSetting(name, s.autoBound)
	case SettingReportBias:
		if s.reportBias {
			return showSetting(name, "on")
		}
		return showSetting(name, "off")
	case SettingTargetError:
		if s.targetError == 0 {
			return showSetting(name, "off")
		}
		return showSetting(name, strconv.FormatFloat(s.targetError, 'g', -1, 64))
	}
	return showSetting(name, strconv.FormatFloat(s.epsilon, 'g', -1, 64))
}

// parseEpsilon checks a value for dpproxy.epsilon against the policy; the
// error states the allowed range.
func (s *Session) parseEpsilon(text string) (float64, error) {
	maxEps := s.engine.Policy().Defaults.MaxEpsilonPerQuery
	eps, err := parseEpsilon(text, maxEps)
	if err != nil {
		e := sqlerr.As(err)
		e.Message += fmt.Sprintf("; %s must be a finite number from %g to %g", SettingEpsilon, mechanisms.MinEpsilon, maxEps)
		e.Hint = fmt.Sprintf("%g is the policy's max_epsilon_per_query; its default ε is %g (SET %s = %g, or RESET %s)",
			maxEps, s.engine.Policy().Defaults.Epsilon, SettingEpsilon, s.engine.Policy().Defaults.Epsilon, SettingEpsilon)
		return 0, e
	}
	return eps, nil
}

// explainDP answers EXPLAIN DP <query> with one result set: the rows of
// Explain for a query on protected data, followed by rows whose first
// column is a label ("summary", "backend SQL (<dialect>)", "cache") and
// whose second is one line of text, the other columns NULL. Nothing runs
// on the backend and nothing is charged. A query that would be refused is
// refused with the same error.
func (s *Session) explainDP(ctx context.Context, cmd *sessionCommand, sql string) (*sqltypes.Result, error) {
	stmt, parsed, err := s.parseOne(cmd.query)
	if err != nil {
		// Positions are counted from the start of the whole text.
		if e := sqlerr.As(err); e.Position > 0 {
			e.Position += utf8.RuneCountInString(sql[:cmd.offset])
		}
		return nil, err
	}
	if stmt == nil {
		return nil, sqlerr.New(sqlerr.SyntaxError, "EXPLAIN DP needs a query to explain").WithHint("write EXPLAIN DP SELECT ...")
	}
	p, err := s.prepare(stmt, castLookup(parsed))
	if err != nil {
		return nil, err
	}
	if p.tag != "" {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "EXPLAIN DP explains queries; %s is a session statement", p.tag).
			WithHint("write EXPLAIN DP SELECT ...")
	}
	var plan *rewrite.Plan
	if p.query != nil {
		plan = p.query.Plan
	}
	res, err := explainTable(plan)
	if err != nil {
		return nil, err
	}
	backendLabel := fmt.Sprintf("backend SQL (%s)", s.engine.Dialect().Name())
	switch {
	case p.virtual != nil:
		addExplainNote(res, "summary", fmt.Sprintf("%s is answered by dpproxy itself from the budget ledger: nothing runs on the backend and no budget is spent", p.virtual.view.qualified()))
	case p.catalog != nil:
		addExplainNote(res, "summary", "a catalog query (or one without a table), answered by dpproxy's virtual catalog from the policy: nothing runs on the backend and no budget is spent")
	case p.local != nil:
		addExplainNote(res, "summary", "a question about the server or session, answered by dpproxy itself: nothing runs on the backend and no budget is spent")
	case p.query.Empty != nil:
		addExplainNote(res, "summary", "returns no rows whatever the data (LIMIT 0 or a constant-false WHERE): answered by dpproxy itself with the columns only; no budget is spent")
	case p.query.Passthrough != nil:
		addExplainNote(res, "summary", "public tables only: runs on the backend as re-emitted below; no budget is spent")
		addExplainNote(res, backendLabel, p.query.Passthrough.SQL)
	default:
		for _, line := range strings.Split(strings.TrimRight(engine.ExplainSummary(plan), "\n"), "\n") {
			addExplainNote(res, "summary", line)
		}
		if p.notice != "" {
			addExplainNote(res, "summary", p.notice)
		}
		// The relational plan, operator by operator, with what each
		// does to one person's contribution (an RR release has none).
		for _, op := range relationalOf(plan) {
			addExplainNote(res, "plan: "+string(op.Kind), op.What+" — "+op.Effect)
		}
		for _, sql := range plan.BackendQueries() {
			addExplainNote(res, backendLabel, sql)
		}
		if st, ok := s.engine.Accountant().Status(s.analyst); ok {
			addExplainNote(res, "budget", budgetLine(st, plan.Epsilon))
		}
		// Released also finds another instance's release on a shared
		// ledger (reading it costs nothing).
		for _, d := range p.derived {
			if !released(ctx, s, d.release) {
				continue
			}
			if d.sums != nil {
				addExplainNote(res, "cache", fmt.Sprintf("this query sums keys of your earlier release of %s: if that release has every key asked, it is answered from the sums of their rows at no cost, with the error of the sums stated", d.canonical))
			} else {
				addExplainNote(res, "cache", fmt.Sprintf("this query only picks keys of your earlier release of %s: it would be answered from that release's rows at no cost, with its error bounds", d.canonical))
			}
			break
		}
		if released(ctx, s, p.release) {
			addExplainNote(res, "cache", fmt.Sprintf("this query was answered at ε = %g within the cache's time to live: running it again returns the same answer and costs nothing", plan.Epsilon))
		}
	}
	res.Tag = "EXPLAIN"
	return res, nil
}

// explainTable is Explain's table for plan, or an empty table with
// Explain's columns when plan is nil.
func explainTable(plan *rewrite.Plan) (*sqltypes.Result, error) {
	if plan == nil {
		plan = &rewrite.Plan{}
	}
	res, err := engine.Explain(plan)
	if err != nil {
		return nil, err
	}
	if len(res.Columns) < 2 || res.Columns[0].Type != sqltypes.Text || res.Columns[1].Type != sqltypes.Text {
		return nil, fmt.Errorf("session: EXPLAIN DP needs Explain's first two columns to be text, got %v", res.Columns)
	}
	return res, nil
}

// addExplainNote appends a row with label and text in the first two
// columns and NULL in the others.
func addExplainNote(res *sqltypes.Result, label, text string) {
	row := make([]any, len(res.Columns))
	row[0], row[1] = label, text
	res.Rows = append(res.Rows, row)
}

// Close ends the session. Reservations never outlive a call to Execute,
// so there is nothing to give back.
func (s *Session) Close() {
	if !s.closed {
		s.closed = true
		s.engine.CloseSession(s.analyst)
	}
}

// budgetLine is EXPLAIN DP's account of the analyst's budget, in the
// accountant's terms: what this query would add to it.
func budgetLine(st budget.Status, epsilon float64) string {
	line := fmt.Sprintf("your budget (%s composition): ε %.4g spent of %g, %.4g remaining", st.Accountant, st.Spent.Epsilon, st.Limit.Epsilon, st.Remaining.Epsilon)
	if st.Window != "" {
		line += fmt.Sprintf(" %s (since %s)", st.Window, st.WindowStart.Format("2006-01-02 15:04 UTC"))
	}
	switch st.Accountant {
	case "zcdp":
		line += fmt.Sprintf("; in zCDP terms ρ = %.4g spent, and this query adds ρ = ε²/2 = %.4g", st.Rho, epsilon*epsilon/2)
	case "advanced":
		line += "; advanced composition: many small queries cost less than the sum of their ε"
	}
	return line
}

// rrRelease is a randomized-response release and its plan.
type rrRelease struct {
	plan   *rewrite.Plan
	result *sqltypes.Result
}

// relationalOf is plan's relational operators (none for a
// randomized-response release, which aggregates nothing).
func relationalOf(plan *rewrite.Plan) []rewrite.Operator {
	if plan.RR != nil {
		return nil
	}
	return plan.Relational()
}

// released reports whether r is cached (here or, on a shared ledger, by
// another instance).
func released(ctx context.Context, s *Session, r *engine.Release) bool {
	_, ok := s.engine.Released(ctx, r)
	return ok
}
