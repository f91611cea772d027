package rewrite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// Options are the per-query settings the analysis needs.
type Options struct {
	Dialect Dialect
	// Epsilon is the ε this query spends (validated by the caller against
	// the policy's per-query maximum).
	Epsilon float64
	// Delta is the δ a query spends when it needs one (partition
	// selection); 0 means the policy's defaults.delta.
	Delta float64
	// FrontEnd is the client's SQL flavour, for functions whose meaning
	// differs (VARIANCE and STDDEV are sample statistics in PostgreSQL,
	// population statistics in MySQL).
	FrontEnd FrontEnd
	// Casts gives the client's type of each CAST node (Parsed.CastOf);
	// nil when the statement's casts are TiDB's own (MySQL front end).
	Casts CastLookup
	// ReportBias adds the bias report (bias.go), which spends a tenth of
	// Epsilon.
	ReportBias bool
	// BiasBounds adds excess measurements (excess.go), so that intervals
	// cover what bounding removed; they spend a tenth of Epsilon.
	BiasBounds bool
	// RowBound, when > 0, is the Linf an auto bound chose (autobound.go)
	// for a table with max_rows_per_unit: auto.
	RowBound int
	// R2T answers the auto-bound queries it can (a count or sum without
	// GROUP BY) with R2T instead of a quantile-chosen bound (r2t.go).
	R2T bool
	// BindConstants sets Plan.Bound, the backend SQL with the query's
	// constants as parameters (constants.go), when the dialect is
	// PostgreSQL's.
	BindConstants bool
}

// Query is an analyzed SELECT: exactly one of Plan (protected data, answered
// with differential privacy), Passthrough (public tables only) and Empty
// (a probe that returns no rows whatever the data) is set.
type Query struct {
	Plan        *Plan
	Passthrough *Passthrough
	Empty       *EmptyResult
}

// EmptyResult answers a query on a protected table that returns no rows
// whatever the data (LIMIT 0, or a WHERE clause that is constant false):
// BI tools send such probes (Metabase: SELECT TRUE AS _ FROM t WHERE 1 <> 1
// LIMIT 0) to learn a table's columns or whether they may read it. Nothing
// runs on the backend and nothing is charged: the answer does not depend
// on the data.
type EmptyResult struct {
	Columns []OutputColumn
}

// Passthrough is a read-only query over public tables, re-emitted from the
// AST (never the client's text, so what runs is what was checked).
type Passthrough struct {
	SQL string
	// Shape, on a MySQL backend, is what queries that may be answered
	// together by one UNION ALL have in common, "" for a query that may
	// not (shape.go).
	Shape string
	// Lookup, on a MySQL backend, is set for a lookup by one integer key:
	// concurrent lookups of one shape may be answered by one statement
	// with the keys in a list (shape.go).
	Lookup Lookup
	// Policy is the policy it was checked against: a memo must not reuse
	// it under another (a reload may have made its tables protected).
	Policy *config.Policy
}

// supportedAggregates is quoted in errors so analysts know what is allowed.
const supportedAggregates = "COUNT(*), COUNT(column), SUM(column), AVG(column)"

// Analyze checks a parsed statement against the policy and plans it.
func Analyze(stmt ast.StmtNode, pol *config.Policy, opts Options) (*Query, error) {
	switch s := stmt.(type) {
	case *ast.SelectStmt:
		if isRR(s) {
			return analyzeRR(s, pol, opts)
		}
		q, err := analyzeSelect(s, pol, opts)
		if err == nil && q.Plan != nil && q.Plan.Auto != nil {
			// Rebinding replans the same statement at the chosen Linf with
			// the rest of the ε, and charges the same ε in all.
			total := opts.Epsilon
			rest := total - q.Plan.Auto.Epsilon
			q.Plan.Auto.Rebind = func(linf int) (*Plan, error) {
				o := opts
				o.Epsilon, o.RowBound = rest, linf
				r, err := analyzeSelect(s, pol, o)
				if err != nil {
					return nil, err
				}
				r.Plan.Epsilon = total
				return r.Plan, nil
			}
		}
		return q, err
	case *ast.SetOprStmt:
		if err := checkTables(s, pol, false); err != nil {
			return nil, err
		}
		return passthrough(s, pol, opts)
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt, *ast.LoadDataStmt, *ast.CallStmt:
		return nil, sqlerr.New(sqlerr.ReadOnlyTransaction, "dpproxy is read-only: %s statements are not allowed", statementName(stmt)).
			WithHint("only SELECT statements can be run through dpproxy")
	case ast.DDLNode:
		return nil, sqlerr.New(sqlerr.ReadOnlyTransaction, "dpproxy is read-only: DDL statements (%s) are not allowed", statementName(stmt)).
			WithHint("only SELECT statements can be run through dpproxy")
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s statements are not supported by dpproxy", statementName(stmt)).
		WithHint("dpproxy answers SELECT statements")
}

func statementName(stmt ast.StmtNode) string {
	name := fmt.Sprintf("%T", stmt)
	name = strings.TrimPrefix(name, "*ast.")
	name = strings.TrimSuffix(name, "Stmt")
	return strings.ToUpper(name)
}

func analyzeSelect(sel *ast.SelectStmt, pol *config.Policy, opts Options) (*Query, error) {
	q, consts, err := draftSelect(sel, pol, opts)
	if err != nil {
		return nil, err
	}
	if q.Plan != nil {
		finishConstants(q.Plan, consts, opts)
	}
	return q, nil
}

// draftSelect is analyzeSelect without the last step: a DP plan's SQL
// still holds the markers of its constants, numbered in consts
// (constants.go). A shape template (template.go) is made of a draft.
func draftSelect(sel *ast.SelectStmt, pol *config.Policy, opts Options) (*Query, *constantTable, error) {
	if readsProtected(sel, pol) {
		// CTEs and derived tables that filter rows fold into the query
		// (inline.go); public-only statements go to the backend as written.
		if err := inlineCTEs(sel); err != nil {
			return nil, nil, err
		}
		if _, err := flattenDerived(sel); err != nil {
			return nil, nil, err
		}
	}
	tables := collectTables(sel)
	var protected *config.ProtectedTable
	for _, tn := range tables {
		pt, pub := pol.LookupTable(tn.Schema.O, tn.Name.O)
		switch {
		case pt != nil:
			if protected == nil {
				protected = pt // the first one named; others must be joined to it (join.go)
			}
		case pub == nil:
			return nil, nil, unknownTable(tn, pol)
		}
	}
	if protected == nil {
		if err := checkPassthrough(sel); err != nil {
			return nil, nil, err
		}
		q, err := passthrough(sel, pol, opts)
		return q, nil, err
	}
	a := &analyzer{pol: pol, table: protected, opts: opts}
	// Tables read by WHERE's subqueries are checked where they are
	// emitted (public tables only); the FROM clause must name one table.
	from := collectFromTables(sel)
	if !slices.ContainsFunc(from, func(tn *ast.TableName) bool { pt, _ := pol.LookupTable(tn.Schema.O, tn.Name.O); return pt != nil }) {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "protected table %q is read in a subquery: a protected table can only be read in FROM, with aggregates", protected.Name).
			WithHint("query %s in FROM with aggregates; subqueries in WHERE may read public tables", protected.Name)
	}
	fromTables := len(from)
	if empty := a.emptyProbe(sel, fromTables); empty != nil {
		return &Query{Empty: empty}, nil, nil
	}
	if inner := derivedTable(sel); inner != nil {
		q, err := a.planOuter(sel, inner)
		if err != nil {
			return nil, nil, a.consts.inlineError(err)
		}
		return q, &a.consts, nil
	}
	plan, err := a.plan(sel)
	if err != nil {
		return nil, nil, a.consts.inlineError(err)
	}
	return &Query{Plan: plan}, &a.consts, nil
}

func passthrough(n ast.Node, pol *config.Policy, opts Options) (*Query, error) {
	dropDefaultSchema(n, pol)
	sql, err := restoreFor(n, opts.Dialect, opts.Casts)
	if err != nil {
		return nil, err
	}
	p := &Passthrough{SQL: sql, Policy: pol, Shape: unionShape(n, sql, opts.Dialect)}
	if p.Shape != "" {
		p.Lookup = lookupShape(n, opts.Dialect)
	}
	return &Query{Passthrough: p}, nil
}

// analyzer plans one SELECT over a protected table.
type analyzer struct {
	pol   *config.Policy
	table *config.ProtectedTable
	opts  Options
	// consts are the query's constants the emitter marked (constants.go).
	consts constantTable
	// alias is the name the query gives the table (its own name by default).
	alias string
	// valueExprs are the conditional aggregates' CASE values by their SQL,
	// and valueSQL the same the other way (conditional.go); rawValueSQL
	// is each one's CASE without clamping.
	valueExprs  map[string]*config.Column
	valueSQL    map[*config.Column]string
	rawValueSQL map[*config.Column]string
	// distinctColumns are the columns COUNT(DISTINCT ...) counts, each a
	// side query (distinct.go).
	distinctColumns []*config.Column
	// joins are the public tables joined to the protected one, and
	// joinSQL the FROM clause that joins them (join.go).
	joins   []*joinedTable
	joinSQL string
	// unitJoins reach the protected table's privacy unit through the
	// keys of its unit path (join.go).
	unitJoins []unitJoin
	// correlated is set when an EXISTS subquery refers to the protected
	// table: its columns are then qualified everywhere (exists.go).
	correlated bool
	// subquery is set when WHERE holds a subquery (of public tables).
	subquery bool
}

func (a *analyzer) plan(sel *ast.SelectStmt) (*Plan, error) {
	if err := a.checkShape(sel); err != nil {
		return nil, err
	}
	p := &Plan{
		Table:               a.table,
		MaxGroupsPerUnit:    a.table.MaxGroupsPerUnit,
		MaxRowsPerUnit:      a.table.MaxRowsPerUnit,
		MaxTotalRowsPerUnit: a.table.MaxTotalRowsPerUnit,
		Neighbouring:        a.pol.Defaults.Neighbouring,
		Mechanism:           a.pol.Defaults.Mechanism,
		Limit:               -1,
		UnitsColumn:         -1,
		GroupCountColumn:    -1,
	}
	if p.Neighbouring == "" {
		p.Neighbouring = config.AddRemove
	}
	p.OneRowPerUnit = a.table.IsRowPrivacy() || a.table.UnitIsKey && len(a.joins) == 0 && len(a.unitJoins) == 0
	autoPending := false
	switch {
	case p.OneRowPerUnit:
		p.MaxGroupsPerUnit, p.MaxRowsPerUnit, p.MaxTotalRowsPerUnit = 1, 1, 0
	case a.table.AutoRows() && a.opts.RowBound > 0:
		p.MaxRowsPerUnit = a.opts.RowBound
	case a.table.AutoRows():
		// Provisional: the plan is rebound at the Linf chosen when the
		// query runs (autobound.go).
		p.MaxRowsPerUnit, autoPending = 1, true
	}
	e := &emitter{d: a.opts.Dialect, a: a}
	if err := e.emitJoins(); err != nil {
		return nil, err
	}
	for _, j := range a.joins {
		schema, name := "", ""
		if j.protected != nil {
			schema, name = j.protected.Schema, j.protected.Name
		} else {
			schema, name = j.table.Schema, j.table.Name
		}
		if schema != "" {
			name = schema + "." + name
		}
		p.Joins = append(p.Joins, Join{Table: name, Alias: j.alias, Left: j.left, Protected: j.protected != nil})
	}
	for _, u := range a.unitJoins {
		name := u.hop.Table.Name
		if u.hop.Table.Schema != "" {
			name = u.hop.Table.Schema + "." + name
		}
		p.UnitJoins = append(p.UnitJoins, UnitJoin{Table: name, Alias: u.alias, Key: u.hop.Key, Unit: u.hop.Table.PrivacyUnit, ByQuery: u.provided})
	}

	// SELECT DISTINCT a, b without GROUP BY is GROUP BY a, b with the keys
	// alone in the select list.
	if sel.Distinct {
		if sel.GroupBy != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SELECT DISTINCT with GROUP BY is not supported on protected table %q", a.table.Name).
				WithHint("drop DISTINCT: the groups are distinct already")
		}
		items := make([]*ast.ByItem, 0, len(sel.Fields.Fields))
		for _, f := range sel.Fields.Fields {
			if f.WildCard != nil {
				return nil, a.rawRowsError()
			}
			if _, isAgg := unparen(f.Expr).(*ast.AggregateFuncExpr); isAgg {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SELECT DISTINCT over aggregates is not supported on protected table %q", a.table.Name).
					WithHint("drop DISTINCT")
			}
			items = append(items, &ast.ByItem{Expr: f.Expr})
		}
		sel = shallowWithGroupBy(sel, items)
	}
	// GROUP BY columns, in the order the query lists them.
	if sel.GroupBy != nil {
		for _, item := range sel.GroupBy.Items {
			g, err := a.groupColumn(item.Expr, sel.Fields.Fields)
			if err != nil {
				return nil, err
			}
			for _, have := range p.Groups {
				if sameGroup(have, g) {
					return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s appears twice in GROUP BY", g.Name()).
						WithHint("list each group key once")
				}
			}
			g.BackendColumn = len(p.Groups)
			p.Groups = append(p.Groups, g)
		}
	}

	// Without GROUP BY the total bound is a bound on the one group's rows.
	if c := p.MaxTotalRowsPerUnit; len(p.Groups) == 0 && c > 0 && c < p.MaxRowsPerUnit {
		p.MaxRowsPerUnit = c
	}
	// Select list: group columns and aggregates.
	b := &backendColumns{groups: len(p.Groups), unitCol: -1}
	for i, f := range sel.Fields.Fields {
		out, err := a.outputColumn(p, b, f, i)
		if err != nil {
			return nil, err
		}
		p.Output = append(p.Output, out)
	}
	if len(p.Aggregates) == 0 && !a.keysOnly(p) {
		if keys := publicKeysOnly(p); keys != "" {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "the keys of %s are public (%s), so dpproxy does not query them", groupNames(p), keys).
				WithHint("add an aggregate, such as COUNT(*), to learn something about each key")
		}
		return nil, a.rawRowsError()
	}
	if sel.Having != nil {
		// A condition on released rows: post-processing (post.go).
		d, _, err := a.derived(sel.Having.Expr, p, b, sel.Fields.Fields)
		if err != nil {
			return nil, err
		}
		p.Having = d
	}
	if sel.Where != nil {
		a.narrowKeys(p, sel.Where)
	}
	if err := a.checkKeyLists(p); err != nil {
		return nil, err
	}
	delta := a.opts.Delta
	if delta == 0 {
		delta = a.pol.Defaults.Delta
	}
	if p.Selection != nil && delta <= 0 {
		return nil, sqlerr.New(sqlerr.PrivacyParameterError, "GROUP BY %s without a public key list needs δ > 0 for DP partition selection, but δ is 0", groupNames(p)).
			WithHint("set defaults.delta in the policy (e.g. 1e-6), or declare the columns' keys with `keys: [...]` so that exactly those groups are released")
	}
	where := ""
	if sel.Where != nil {
		w, err := e.boolExpr(sel.Where)
		if err != nil {
			return nil, err
		}
		where = w
		p.Filter = w
	}
	if err := a.orderAndLimit(p, sel); err != nil {
		return nil, err
	}
	p.planTopK()
	b.finish(p)
	eps := a.opts.Epsilon
	if autoPending && a.opts.R2T && !a.opts.ReportBias {
		if p.R2T = e.r2tRelease(p, where); p.R2T != nil {
			p.Epsilon, p.Measurements, p.Aggregates[0].Measurements = eps, nil, nil
			if err := mechanisms.CheckR2T(eps, p.R2T.Step, p.R2T.Thresholds); err != nil {
				return nil, sqlerr.New(sqlerr.PrivacyParameterError, "R2T cannot calibrate its noise for this query at ε = %g: %v", eps, err).
					WithHint("raise dpproxy.epsilon, or SET dpproxy.auto_bound = quantile")
			}
			return p, nil
		}
	}
	if autoPending {
		p.Auto = &AutoBound{SQL: e.autoRowsSQL(p, where), Max: config.MaxContribution, Grid: autoGrid(config.MaxContribution), Level: AutoLevel, Epsilon: eps * AutoShare}
		eps -= p.Auto.Epsilon
	}
	if a.opts.ReportBias {
		if p.Bias = e.biasReport(p, where); p.Bias != nil {
			p.Bias.Epsilon = eps * biasShare
			p.Bias.Sensitivity = float64(1 + len(p.Bias.Labels))
			eps -= p.Bias.Epsilon
		}
	}
	var excess []int
	excessEps := 0.0
	if a.opts.BiasBounds {
		if excess = p.excessCandidates(); len(excess) > 0 {
			excessEps = eps * excessShare
			eps -= excessEps
		}
	}
	if err := p.assignPrivacy(eps, delta); err != nil {
		return nil, err
	}
	p.addExcess(excess, excessEps, b)
	if err := p.checkMechanismEpsilons(); err != nil {
		return nil, err
	}
	p.Epsilon = a.opts.Epsilon
	if p.Selection != nil || slices.ContainsFunc(p.Measurements, func(m Measurement) bool { return m.SideQuery == 0 }) {
		// (A plan of quantiles alone over public keys, or without GROUP
		// BY, needs only its histograms.)
		sql, err := e.backendSQL(p, b, where)
		if err != nil {
			return nil, err
		}
		p.BackendSQL = sql
	}
	for i := range p.Histograms {
		p.Histograms[i].BackendSQL = e.histogramSQL(p, &p.Histograms[i], where)
	}
	for _, col := range a.distinctColumns {
		p.SideQueries = append(p.SideQueries, e.distinctValuesSQL(p, col, where))
	}
	return p, nil
}

// shallowWithGroupBy is sel with GROUP BY items and without DISTINCT; the
// caller's statement is left as it was.
func shallowWithGroupBy(sel *ast.SelectStmt, items []*ast.ByItem) *ast.SelectStmt {
	c := *sel
	c.Distinct = false
	c.GroupBy = &ast.GroupByClause{Items: items}
	return &c
}

// publicKeysOnly lists the public keys of a select list of group keys
// that all have key lists; "" otherwise.
func publicKeysOnly(p *Plan) string {
	if len(p.Groups) == 0 {
		return ""
	}
	for _, o := range p.Output {
		if o.Source.Group < 0 {
			return ""
		}
	}
	var lists []string
	for _, g := range p.Groups {
		if len(g.Keys) == 0 {
			return ""
		}
		shown := strings.Join(g.Keys[:min(len(g.Keys), 10)], ", ")
		if len(g.Keys) > 10 {
			shown += fmt.Sprintf(", … (%d in all)", len(g.Keys))
		}
		lists = append(lists, g.Column.Name+": "+shown)
	}
	return strings.Join(lists, "; ")
}

// keysOnly reports whether a select list of group keys alone can be
// released: through partition selection, which decides which keys occur
// (a group column without a public key list). With public key lists only
// the answer would be the lists themselves, which is refused (the policy
// shows them) rather than charged.
func (a *analyzer) keysOnly(p *Plan) bool {
	if len(p.Groups) == 0 {
		return false
	}
	for _, o := range p.Output {
		if o.Source.Group < 0 {
			return false
		}
	}
	for _, g := range p.Groups {
		if len(g.Keys) == 0 {
			return true
		}
	}
	return false
}

// derivedTable returns the SELECT of a FROM clause that is a single
// derived table (SELECT ... FROM (SELECT ...) AS source), nil otherwise.
func derivedTable(sel *ast.SelectStmt) *ast.SelectStmt {
	if sel.From == nil || sel.From.TableRefs == nil || sel.From.TableRefs.Right != nil {
		return nil
	}
	ts, ok := sel.From.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return nil
	}
	inner, _ := ts.Source.(*ast.SelectStmt)
	return inner
}

// emptyProbe recognizes a SELECT on one protected table that returns no
// rows whatever the data, and describes its columns; nil otherwise.
func (a *analyzer) emptyProbe(sel *ast.SelectStmt, tableRefs int) *EmptyResult {
	if tableRefs != 1 || sel.From == nil || sel.From.TableRefs == nil || sel.From.TableRefs.Right != nil ||
		sel.GroupBy != nil || sel.Having != nil || sel.With != nil {
		return nil
	}
	ts, ok := sel.From.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return nil
	}
	if _, ok := ts.Source.(*ast.TableName); !ok {
		return nil
	}
	limitZero := false
	if sel.Limit != nil && sel.Limit.Offset == nil {
		if n, err := constantInt(sel.Limit.Count, "LIMIT"); err == nil && n == 0 {
			limitZero = true
		}
	}
	if !limitZero && !constantFalse(sel.Where) {
		return nil
	}
	a.alias = a.table.Name
	if ts.AsName.O != "" {
		a.alias = ts.AsName.O
	}
	empty := &EmptyResult{}
	for _, f := range sel.Fields.Fields {
		switch {
		case f.WildCard != nil:
			for i := range a.table.Columns {
				c := &a.table.Columns[i]
				empty.Columns = append(empty.Columns, OutputColumn{Name: c.Name, Type: columnType(c.Type)})
			}
			continue
		}
		switch x := unparen(f.Expr).(type) {
		case *ast.ColumnNameExpr:
			col, err := a.column(x.Name)
			if err != nil {
				return nil
			}
			empty.Columns = append(empty.Columns, OutputColumn{Name: fieldName(f, col.Name), Type: columnType(col.Type)})
		case *test_driver.ValueExpr:
			t := sqltypes.Text
			switch {
			case x.Type.GetFlag()&mysql.IsBooleanFlag != 0:
				t = sqltypes.Bool
			case x.Kind() == test_driver.KindInt64:
				t = sqltypes.Int4
			}
			empty.Columns = append(empty.Columns, OutputColumn{Name: fieldName(f, "?column?"), Type: t})
		default:
			return nil
		}
	}
	return empty
}

// constantFalse reports whether a WHERE clause is false for every row:
// a comparison of two different integer constants (1 <> 1, 1 = 0) or FALSE.
func constantFalse(where ast.ExprNode) bool {
	switch x := unparen(where).(type) {
	case *test_driver.ValueExpr:
		return x.Kind() == test_driver.KindInt64 && x.GetInt64() == 0
	case *ast.BinaryOperationExpr:
		l, lok := unparen(x.L).(*test_driver.ValueExpr)
		r, rok := unparen(x.R).(*test_driver.ValueExpr)
		if !lok || !rok || l.Kind() != test_driver.KindInt64 || r.Kind() != test_driver.KindInt64 {
			if x.Op == opcode.LogicAnd {
				return constantFalse(x.L) || constantFalse(x.R)
			}
			return false
		}
		switch x.Op {
		case opcode.EQ:
			return l.GetInt64() != r.GetInt64()
		case opcode.NE:
			return l.GetInt64() == r.GetInt64()
		}
	}
	return false
}

// checkShape rejects every construct beyond one protected table with
// aggregates, WHERE, GROUP BY, ORDER BY and LIMIT.
func (a *analyzer) checkShape(sel *ast.SelectStmt) error {
	unsupported := a.shapeError
	switch {
	case sel.With != nil:
		return unsupported("WITH")
	case sel.Having != nil && sel.Distinct:
		return unsupported("SELECT DISTINCT with HAVING")
	case len(sel.WindowSpecs) > 0:
		return unsupported("WINDOW")
	case sel.SelectIntoOpt != nil:
		return unsupported("SELECT INTO")
	case sel.LockInfo != nil && sel.LockInfo.LockType != ast.SelectLockNone:
		return unsupported("a locking clause")
	case sel.Kind != ast.SelectStmtKindSelect:
		return unsupported("TABLE/VALUES")
	case sel.From == nil:
		return unsupported("a query without FROM")
	}
	if sel.From.TableRefs == nil {
		return unsupported("this FROM clause")
	}
	if err := a.readFrom(sel.From.TableRefs); err != nil {
		return err
	}
	a.correlated = sel.Where != nil && hasExists(sel.Where)
	a.subquery = sel.Where != nil && hasSubquery(sel.Where)
	if sel.GroupBy != nil && sel.GroupBy.Rollup {
		return unsupported("WITH ROLLUP")
	}
	return nil
}

// shapeError refuses a construct the analyzer does not support.
func (a *analyzer) shapeError(what string) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "%s is not supported in queries on protected table %q", what, a.table.Name).
		WithHint("supported: SELECT [group columns,] %s FROM %s [JOIN public_table ON ...] [WHERE ...] [GROUP BY ...] [ORDER BY ...] [LIMIT n]", supportedAggregates, a.table.Name)
}

func (a *analyzer) rawRowsError() error {
	return sqlerr.New(sqlerr.InsufficientPrivilege, "queries on protected table %q must aggregate: raw rows are never returned", a.table.Name).
		WithHint("use %s, optionally with GROUP BY on %s", supportedAggregates, a.groupableList())
}

func (a *analyzer) groupableList() string {
	var names []string
	for _, c := range a.table.Columns {
		if c.GroupBy {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return "no column (the policy allows none)"
	}
	return strings.Join(names, ", ")
}

// column resolves a column reference against the protected table and the
// public tables joined to it.
func (a *analyzer) column(cn *ast.ColumnName) (*config.Column, error) {
	if cn.Table.O != "" && !strings.EqualFold(cn.Table.O, a.alias) {
		if cn.Schema.O == "" && len(a.joins) > 0 {
			return a.joinedColumn(cn, false)
		}
		return nil, sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", cn.Table.O)
	}
	if cn.Schema.O != "" && !strings.EqualFold(cn.Table.O, a.table.Name) {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", cn.Schema.O+"."+cn.Table.O)
	}
	col, ok := a.table.Column(cn.Name.O)
	if cn.Table.O == "" && len(a.joins) > 0 {
		joined, err := a.joinedColumn(cn, ok)
		if err != nil {
			return nil, err
		}
		if !ok && joined != nil {
			return joined, nil
		}
	}
	if !ok {
		var names []string
		for _, c := range a.table.Columns {
			names = append(names, c.Name)
		}
		return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist in protected table %q (or the policy does not expose it)", cn.Name.O, a.table.Name).
			WithHint("columns available: %s", strings.Join(names, ", "))
	}
	return col, nil
}

// isUnit reports whether col is a privacy unit column: the protected
// table's, or that of a protected table joined on it (the same units).
func (a *analyzer) isUnit(col *config.Column) bool {
	if a.table.IsRowPrivacy() {
		return false
	}
	for _, j := range a.joins {
		if j.isUnitOf(col) {
			return true
		}
	}
	// A unit column that references a key (a unit join) is not the unit.
	return len(a.unitJoins) == 0 && strings.EqualFold(col.Name, a.table.PrivacyUnit) && a.owner(col) == a.alias
}
