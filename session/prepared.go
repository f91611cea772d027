package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// handle is what a session keeps in a Prepared's Handle to execute it.
type handle struct {
	// command is set for statements the session answers itself
	// (SET dpproxy.epsilon, EXPLAIN DP, ...), which take no parameters.
	command bool
	// catalog is set for statements that run as written under the catalog
	// role, with their parameters bound by the database.
	catalog bool
	// markerParams maps each parameter marker, in text order, to its
	// 1-based parameter number.
	markerParams []int
	// passthrough, for a query on public tables, is its analysis with
	// the parameters left as markers in its backend SQL ($n for
	// PostgreSQL, ? otherwise), in marker order: executions bind them in
	// the database, without parsing the statement again — while the
	// policy it was checked against (its Policy) is in force; after a
	// reload the statement is checked again (found in review: a table
	// made protected stayed readable through statements prepared before).
	passthrough *rewrite.Passthrough
}

// Prepare checks and describes a statement a client prepared (PostgreSQL
// Parse, MySQL COM_STMT_PREPARE) without running it on protected data and
// without charging; ExecutePrepared then runs it with parameter values any
// number of times. Each execution of a query on protected data is a
// release of its own and is charged (or answered from the cache when the
// same values were asked before). paramTypes are the types the client
// declared (may be shorter than the parameter count; Unknown = not
// declared). A statement that would be refused is refused here, with the
// error executing it would give.
func (s *Session) Prepare(ctx context.Context, sql string, paramTypes []sqltypes.Type) (*sqltypes.Prepared, error) {
	key := s.prepareKey(sql, paramTypes)
	if p, ok := s.memoized(key); ok {
		return p, nil
	}
	p, err := s.prepareNew(ctx, sql, paramTypes)
	if err == nil && handleOf(p).passthrough != nil {
		// A public-table query with parameters: its description depends
		// only on the text and the declared types, and executing it only
		// reads p. Drivers that Parse before every Execute (pgx's exec
		// mode, pgbench -M extended) then skip parsing and describing.
		s.engine.PreparedStatements().Add(key, p)
	}
	return p, err
}

// PrepareMemoized is Prepare when the engine's memo of prepared
// public-table queries holds sql with paramTypes under the policy in
// force: it neither blocks nor fails, so a front end can skip what it
// wraps a statement's run in (a context, the statement timer). ok is false
// otherwise; Prepare then does the work.
func (s *Session) PrepareMemoized(sql string, paramTypes []sqltypes.Type) (p *sqltypes.Prepared, ok bool) {
	return s.memoized(s.prepareKey(sql, paramTypes))
}

// memoized looks key up in the engine's memo of prepared public-table
// queries; one prepared under another policy does not count.
func (s *Session) memoized(key engine.MemoKey) (*sqltypes.Prepared, bool) {
	p, ok := s.engine.PreparedStatements().Get(key)
	if !ok || handleOf(p).passthrough == nil || handleOf(p).passthrough.Policy != s.engine.Policy() {
		return nil, false
	}
	return p, true
}

// prepareKey keys the engine's memo of prepared public-table queries.
func (s *Session) prepareKey(sql string, paramTypes []sqltypes.Type) engine.MemoKey {
	key := s.passthroughKey(sql)
	if len(paramTypes) > 0 {
		var sb strings.Builder
		for _, t := range paramTypes {
			sb.WriteByte(',')
			sb.WriteString(strconv.Itoa(int(t)))
		}
		key.ParamTypes = sb.String()
	}
	return key
}

func (s *Session) prepareNew(ctx context.Context, sql string, paramTypes []sqltypes.Type) (*sqltypes.Prepared, error) {
	h := &handle{}
	p := &sqltypes.Prepared{SQL: sql, Handle: h}
	cmd, err := matchSessionCommand(sql)
	if err != nil {
		return nil, err
	}
	if cmd != nil {
		h.command = true
		return p, s.describeCommand(ctx, p, cmd, sql)
	}
	// MySQL front end: session and catalog statements (mysql.go),
	// described without changing the session.
	if s.frontEnd == rewrite.MySQLFrontEnd {
		if res, ok, err := s.mysqlStatement(ctx, sql, false); err != nil {
			return nil, err
		} else if ok {
			h.command = true
			if len(res.Columns) > 0 {
				p.Columns = res.Columns
			} else {
				p.Tag = res.Tag
			}
			return p, nil
		}
	}
	if s.frontEnd == rewrite.PostgresFrontEnd {
		guc, err := matchPostgresSetting(sql)
		if err != nil {
			return nil, err
		}
		if guc != nil {
			h.command = true
			switch guc.kind {
			case cmdShow:
				p.Columns = []sqltypes.Column{{Name: guc.name, Type: sqltypes.Text}}
			case cmdReset:
				p.Tag = "RESET"
			default:
				p.Tag = "SET"
			}
			return p, nil
		}
	}
	if s.frontEnd == rewrite.PostgresFrontEnd {
		if cmd, ok, err := parseCursorCommand(sql); ok {
			if err != nil {
				return nil, err
			}
			h.command = true
			switch c := s.cursors[cmd.name]; {
			case cmd.verb == "fetch" && c != nil:
				p.Columns = c.result.Columns
			case cmd.verb == "declare":
				p.Tag = "DECLARE CURSOR"
			case cmd.verb == "close":
				p.Tag = "CLOSE CURSOR"
			default:
				p.Tag = strings.ToUpper(cmd.verb)
			}
			return p, nil
		}
	}
	// A DP text without parameters whose shape has a template is
	// described from it (templates.go).
	var learn *rewrite.Shape
	if len(paramTypes) == 0 {
		var prep *prepared
		if prep, learn = s.templatedPlan(sql); prep != nil {
			return p, s.describe(ctx, p, prep)
		}
	}
	stmt, parsed, err := s.parseForBinding(sql)
	if err != nil {
		if s.frontEnd == rewrite.PostgresFrontEnd && !errors.Is(err, errMultipleStatements) && mentionsCatalog(sql) {
			return s.prepareCatalog(ctx, p, nil, 0)
		}
		return nil, err
	}
	if stmt == nil {
		p.Empty = true
		return p, nil
	}
	if route, err := s.route(stmt); err != nil {
		return nil, err
	} else if route == toCatalog {
		return s.prepareCatalog(ctx, p, stmt, parsed.ParamCount)
	}
	markers := parsed.Params
	h.markerParams = markers
	p.Params = rewrite.InferParamTypes(stmt, s.engine.Policy(), markers, max(parsed.ParamCount, len(paramTypes)))
	for i, t := range paramTypes {
		if t != sqltypes.Unknown {
			p.Params[i] = t
		}
	}
	// Check and plan with placeholder values of the right types: the
	// statement's shape, and so its result columns, do not depend on them.
	placeholders := make([]any, len(p.Params))
	for i, t := range p.Params {
		placeholders[i] = rewrite.PlaceholderValue(t)
	}
	if err := rewrite.BindParams(stmt, markers, placeholders, p.Params); err != nil {
		return nil, err
	}
	prep, err := s.prepare(stmt, castLookup(parsed))
	if err != nil {
		return nil, err
	}
	if learn != nil && len(markers) == 0 && prep.query != nil && prep.query.Plan != nil {
		s.learnText(learn, prep)
	}
	if err := s.describe(ctx, p, prep); err != nil {
		return nil, err
	}
	if prep.query != nil && prep.query.Passthrough != nil && len(markers) > 0 {
		// Analyze a fresh tree with its markers intact: the checks do not
		// depend on the values, and the database binds them.
		fresh, freshParsed, err := s.parseForBinding(sql)
		if err != nil {
			return nil, err
		}
		q, err := rewrite.Analyze(fresh, s.engine.Policy(), s.analyzeOptions(s.epsilon, castLookup(freshParsed)))
		if err == nil && q.Passthrough != nil {
			h.passthrough = q.Passthrough
		}
	}
	return p, nil
}

// ExecutePrepared runs a prepared statement with parameter values of the
// Go types listed in package sqltypes (nil for NULL), one per Params entry.
// Values are bound into a fresh syntax tree of the statement as constants,
// never spliced into SQL text. The result has exactly p.Columns.
func (s *Session) ExecutePrepared(ctx context.Context, p *sqltypes.Prepared, params []any) (*sqltypes.Result, error) {
	if s.frontEnd == rewrite.MySQLFrontEnd && !s.decodeRows {
		// The binary protocol encodes each value from its decoded form.
		s.decodeRows = true
		defer func() { s.decodeRows = false }()
	}
	var res *sqltypes.Result
	text := ""
	if s.recording() {
		text = logText(p.SQL, params)
	}
	err := s.observed(text, func() (int, error) {
		var err error
		res, err = s.executePrepared(ctx, p, params, text)
		return rowCount(res), err
	})
	return res, err
}

// executePrepared runs p with params; text is the statement with its
// parameters as the records show it (logText), or "" where no observer
// records this execution: it is then made only for a charge's record.
func (s *Session) executePrepared(ctx context.Context, p *sqltypes.Prepared, params []any, text string) (*sqltypes.Result, error) {
	if err := s.stillInPolicy(); err != nil {
		return nil, err
	}
	if p.Empty {
		return nil, nil
	}
	h := handleOf(p)
	if h == nil {
		return nil, errors.New("session: the statement was not prepared by a session")
	}
	if h.command {
		if len(params) > 0 {
			return nil, sqlerr.New(sqlerr.ProtocolViolation, "this statement takes no parameters, got %d", len(params))
		}
		res, err := s.Execute(ctx, p.SQL)
		if err != nil || len(res) == 0 {
			return nil, err
		}
		return res[0], nil
	}
	if len(params) != len(p.Params) {
		return nil, sqlerr.New(sqlerr.ProtocolViolation, "the statement has %d parameter(s) but %d value(s) were supplied", len(p.Params), len(params))
	}
	if h.catalog {
		var stmt ast.StmtNode
		if s.frontEnd == rewrite.MySQLFrontEnd {
			var err error
			if stmt, _, err = s.parseForBinding(p.SQL); err != nil {
				return nil, err
			}
		}
		res, err := s.queryCatalog(ctx, p.SQL, stmt, params)
		if err != nil {
			return nil, err
		}
		return conform(res, p.Columns), nil
	}
	if h.passthrough != nil && h.passthrough.Policy == s.engine.Policy() {
		s.note.kind = KindPublic
		args := params // each marker its own parameter, in order: the values as they are
		if !inOrder(h.markerParams, len(params)) {
			args = make([]any, len(h.markerParams))
		}
		for i, n := range h.markerParams {
			if err := checkParam(params[n-1], n); err != nil {
				return nil, err
			}
			args[i] = params[n-1]
		}
		res, err := s.passthrough(ctx, h.passthrough, args...)
		if err != nil {
			return nil, err
		}
		if err := conformWire(res, p.Columns); err != nil {
			return nil, err
		}
		return conform(res, p.Columns), nil
	}
	// A DP plan from the session's memo, or from the template of the
	// text's shape, or of this execution's (templates.go).
	prep, learn := s.memoizedPlan(p.SQL, params), (*rewrite.Shape)(nil)
	switch {
	case prep != nil:
	case len(params) == 0:
		prep, learn = s.templatedPlan(p.SQL)
	default:
		prep, learn = s.templatedExecution(p.SQL, h.markerParams, params, p.Params)
	}
	if prep == nil {
		stmt, parsed, err := s.parseForBinding(p.SQL)
		if err != nil {
			return nil, err
		}
		if err := rewrite.BindParams(stmt, h.markerParams, params, p.Params); err != nil {
			return nil, err
		}
		if prep, err = s.prepare(stmt, castLookup(parsed)); err != nil {
			return nil, err
		}
		if prep.tag != "" {
			s.forgetPlans()
		}
		switch {
		case learn == nil || prep.query == nil || prep.query.Plan == nil:
		case len(params) == 0:
			s.learnText(learn, prep)
		default:
			s.learnExecution(learn, prep, p.SQL, h.markerParams, params, p.Params)
		}
		s.memoizePlan(p.SQL, params, prep)
	}
	if text == "" {
		text = logText(p.SQL, params)
	}
	res, err := s.run(ctx, prep, text)
	if err != nil {
		return nil, err
	}
	return conform(res, p.Columns), nil
}

// handleOf is the session's record in a Prepared it made; nil for one it
// did not make.
func handleOf(p *sqltypes.Prepared) *handle {
	h, _ := p.Handle.(*handle)
	return h
}

// checkParam refuses values no statement should receive: non-finite
// numbers (as BindParams does for bound constants).
func checkParam(v any, n int) error {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return sqlerr.New(sqlerr.InvalidParameterValue, "parameter $%d: NaN and infinite numbers are not allowed", n)
	}
	return nil
}

// prepareCatalog describes a catalog statement: its parameters (text) and
// result columns, from running it on the virtual catalog with every
// parameter NULL (the catalog holds no data: this costs nothing).
func (s *Session) prepareCatalog(ctx context.Context, p *sqltypes.Prepared, stmt ast.StmtNode, params int) (*sqltypes.Prepared, error) {
	if s.frontEnd == rewrite.PostgresFrontEnd {
		types, cols, err := s.describeCatalog(ctx, p.SQL)
		if err != nil {
			return nil, err
		}
		p.Params, p.Columns = types, cols
	} else {
		res, err := s.queryCatalog(ctx, p.SQL, stmt, make([]any, params))
		if err != nil {
			return nil, err
		}
		p.Params = make([]sqltypes.Type, params)
		for i := range p.Params {
			p.Params[i] = sqltypes.Text
		}
		p.Columns = res.Columns
	}
	handleOf(p).catalog = true
	if len(p.Columns) == 0 {
		p.Tag = "SELECT 0"
	}
	return p, nil
}

// parseForBinding parses a statement that may hold parameter markers and
// returns it with its parse (the marker-to-parameter mapping, the
// parameter count, the client's cast types).
func (s *Session) parseForBinding(sql string) (ast.StmtNode, *rewrite.Parsed, error) {
	return s.parseOne(sql)
}

// describe fills in the result columns of a checked statement.
func (s *Session) describe(ctx context.Context, p *sqltypes.Prepared, prep *prepared) error {
	switch {
	case prep.tag != "":
		p.Tag = prep.tag
		return nil
	case prep.local != nil:
		p.Columns = prep.local.Columns
		return nil
	case prep.catalog != nil:
		res, err := s.queryCatalog(ctx, p.SQL, prep.catalog, nil)
		if err != nil {
			return err
		}
		p.Columns = res.Columns
		return nil
	case prep.virtual != nil:
		// Reading a view is free and has no side effects.
		res, err := s.answerVirtual(ctx, prep.virtual)
		if err != nil {
			return err
		}
		p.Columns = res.Columns
		return nil
	case prep.query.Empty != nil:
		p.Columns = emptyResult(prep.query.Empty).Columns
		return nil
	case prep.query.Plan != nil:
		if s.intervals == intervalsColumns {
			p.Columns = describeWithIntervals(prep.query.Plan)
			return nil
		}
		for _, o := range prep.query.Plan.Columns() {
			p.Columns = append(p.Columns, sqltypes.Column{Name: o.Name, Type: o.Type})
		}
		return nil
	}
	cols, err := s.engine.DescribePassthrough(ctx, prep.query.Passthrough)
	if err != nil {
		return err
	}
	p.Columns = cols
	return nil
}

// describeCommand describes a statement the session answers itself.
func (s *Session) describeCommand(ctx context.Context, p *sqltypes.Prepared, cmd *sessionCommand, sql string) error {
	switch cmd.kind {
	case cmdSet:
		p.Tag = "SET"
	case cmdReset:
		p.Tag = "RESET"
	case cmdShow:
		p.Columns = s.showSetting(cmd.name).Columns
	case cmdExplainDP:
		// Explaining runs nothing and costs nothing.
		res, err := s.explainDP(ctx, cmd, sql)
		if err != nil {
			return err
		}
		p.Columns = res.Columns
	}
	return nil
}

// conform gives a result the columns its statement was described with,
// converting values where the backend reported a different type (an
// expression column that SQLite types from its values, say): clients
// decode rows with the description they were given. res is not changed:
// it may be a release the engine's cache shares with other sessions, so
// the converted rows are a copy.
func conform(res *sqltypes.Result, cols []sqltypes.Column) *sqltypes.Result {
	if res == nil || len(res.Columns) != len(cols) || res.InWireForm() {
		return res // rows in wire form: checked by conformWire before
	}
	var convert []int
	for i, c := range cols {
		if res.Columns[i].Type != c.Type {
			convert = append(convert, i)
		}
	}
	if len(convert) == 0 {
		return res
	}
	out := *res
	out.Columns = slices.Clone(res.Columns)
	out.Rows = make([][]any, len(res.Rows))
	for r, row := range res.Rows {
		out.Rows[r] = slices.Clone(row)
	}
	for _, i := range convert {
		for _, row := range out.Rows {
			row[i] = sqltypes.Convert(row[i], cols[i].Type)
		}
		out.Columns[i].Type = cols[i].Type
	}
	return &out
}

// conformWire checks that rows forwarded in wire form have the column types
// the statement was described with: their text is passed on as it is, so
// it cannot be converted. A table changed since the statement was
// prepared is refused as PostgreSQL refuses it.
func conformWire(res *sqltypes.Result, cols []sqltypes.Column) error {
	if res == nil || !res.InWireForm() {
		return nil
	}
	if len(res.Columns) == len(cols) {
		same := true
		for i, c := range cols {
			same = same && res.Columns[i].Type == c.Type
		}
		if same {
			return nil
		}
	}
	return sqlerr.New(sqlerr.FeatureNotSupported, "cached plan must not change result type").
		WithHint("the table's columns changed since the statement was prepared: prepare it again")
}

// inOrder reports whether markerParams are 1, 2, ..., n: each of n
// parameters used once, in text order.
func inOrder(markerParams []int, n int) bool {
	if len(markerParams) != n {
		return false
	}
	for i, p := range markerParams {
		if p != i+1 {
			return false
		}
	}
	return true
}

// logText is what the analyst's query log records for one execution of a
// prepared statement: the text and the values it ran with.
func logText(sql string, params []any) string {
	if len(params) == 0 {
		return sql
	}
	b := make([]byte, 0, len(sql)+16+16*len(params))
	b = append(b, sql...)
	b = append(b, " -- parameters:"...)
	for i, v := range params {
		b = append(b, " $"...)
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, '=')
		switch x := v.(type) {
		case nil:
			b = append(b, "NULL"...)
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case string:
			b = append(b, x...)
		default:
			b = fmt.Append(b, x)
		}
	}
	return string(b)
}
