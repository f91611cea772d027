package rewrite

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpproxy/dpproxy/config"
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
	// RowBound, when > 0, is the Linf an auto bound chose (autobound.go)
	// for a table with max_rows_per_unit: auto.
	RowBound int
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
}

// supportedAggregates is quoted in errors so analysts know what is allowed.
const supportedAggregates = "COUNT(*), COUNT(column), SUM(column), AVG(column)"

// Analyze checks a parsed statement against the policy and plans it.
func Analyze(stmt ast.StmtNode, pol *config.Policy, opts Options) (*Query, error) {
	switch s := stmt.(type) {
	case *ast.SelectStmt:
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
	if sel.With != nil && len(sel.With.CTEs) > 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "common table expressions (WITH %s AS (...)) are not supported yet", sel.With.CTEs[0].Name.O).
			WithHint("write the common table expression's conditions into the query's WHERE clause")
	}
	tables := collectTables(sel)
	var protected *config.ProtectedTable
	for _, tn := range tables {
		pt, pub := pol.LookupTable(tn.Schema.O, tn.Name.O)
		switch {
		case pt != nil:
			protected = pt
		case pub == nil:
			return nil, unknownTable(tn, pol)
		}
	}
	if protected == nil {
		if err := checkPassthrough(sel); err != nil {
			return nil, err
		}
		return passthrough(sel, pol, opts)
	}
	a := &analyzer{pol: pol, table: protected, opts: opts}
	if empty := a.emptyProbe(sel, len(tables)); empty != nil {
		return &Query{Empty: empty}, nil
	}
	if inner := derivedTable(sel); inner != nil {
		return a.planOuter(sel, inner, len(tables))
	}
	plan, err := a.plan(sel, len(tables))
	if err != nil {
		return nil, err
	}
	return &Query{Plan: plan}, nil
}

// collectTables returns every table named anywhere in the statement,
// subqueries and CTEs included.
func collectTables(n ast.Node) []*ast.TableName {
	c := &tableCollector{}
	n.Accept(c)
	return c.tables
}

type tableCollector struct{ tables []*ast.TableName }

func (c *tableCollector) Enter(n ast.Node) (ast.Node, bool) {
	if tn, ok := n.(*ast.TableName); ok {
		c.tables = append(c.tables, tn)
	}
	return n, false
}

func (c *tableCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func unknownTable(tn *ast.TableName, pol *config.Policy) error {
	name := tn.Name.O
	if tn.Schema.O != "" {
		name = tn.Schema.O + "." + name
	}
	var known []string
	for _, t := range pol.ProtectedTables {
		known = append(known, t.Name+" (protected)")
	}
	for _, t := range pol.PublicTables {
		known = append(known, t.Name+" (public)")
	}
	return sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist or is not in the policy", name).
		WithHint("tables available: %s", strings.Join(known, ", "))
}

// checkTables rejects statements naming unknown tables; with
// allowProtected false, protected tables are rejected too.
func checkTables(n ast.Node, pol *config.Policy, allowProtected bool) error {
	for _, tn := range collectTables(n) {
		pt, pub := pol.LookupTable(tn.Schema.O, tn.Name.O)
		if pt != nil && !allowProtected {
			return sqlerr.New(sqlerr.InsufficientPrivilege, "protected table %q cannot be used in a set operation or subquery", pt.Name).
				WithHint("query a protected table alone with aggregates: %s", supportedAggregates)
		}
		if pt == nil && pub == nil {
			return unknownTable(tn, pol)
		}
	}
	return checkPassthrough(n)
}

func passthrough(n ast.Node, pol *config.Policy, opts Options) (*Query, error) {
	dropDefaultSchema(n, pol)
	sql, err := restoreFor(n, opts.Dialect, opts.Casts)
	if err != nil {
		return nil, err
	}
	return &Query{Passthrough: &Passthrough{SQL: sql}}, nil
}

// dropDefaultSchema removes the qualifier of references to tables the
// policy declares without a schema ("public.clinics", "main.clinics":
// the schema the catalog shows them in), so that the backend reads them
// in its own default schema, whatever the backend calls it.
func dropDefaultSchema(n ast.Node, pol *config.Policy) {
	for _, tn := range collectTables(n) {
		if tn.Schema.O == "" {
			continue
		}
		if pt, pub := pol.LookupTable(tn.Schema.O, tn.Name.O); (pt != nil && pt.Schema == "") || (pub != nil && pub.Schema == "") {
			tn.Schema = ast.NewCIStr("")
		}
	}
}

// analyzer plans one SELECT over a protected table.
type analyzer struct {
	pol   *config.Policy
	table *config.ProtectedTable
	opts  Options
	// alias is the name the query gives the table (its own name by default).
	alias string
	// valueExprs are the conditional aggregates' CASE values by their SQL,
	// and valueSQL the same the other way (conditional.go).
	valueExprs map[string]*config.Column
	valueSQL   map[*config.Column]string
	// distinctColumns are the columns COUNT(DISTINCT ...) counts, each a
	// side query (distinct.go).
	distinctColumns []*config.Column
}

func (a *analyzer) plan(sel *ast.SelectStmt, tableRefs int) (*Plan, error) {
	if err := a.checkShape(sel, tableRefs); err != nil {
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
	autoPending := false
	switch {
	case a.table.IsRowPrivacy():
		p.MaxGroupsPerUnit, p.MaxRowsPerUnit = 1, 1
	case a.table.AutoRows() && a.opts.RowBound > 0:
		p.MaxRowsPerUnit = a.opts.RowBound
	case a.table.AutoRows():
		// Provisional: the plan is rebound at the Linf chosen when the
		// query runs (autobound.go).
		p.MaxRowsPerUnit, autoPending = 1, true
	}
	e := &emitter{d: a.opts.Dialect, a: a}

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
					return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s appears twice in GROUP BY", g.Name())
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
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "the keys of %s are public: the policy lists them (%s), so dpproxy does not query them", groupNames(p), keys).
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
	}
	if err := a.orderAndLimit(p, sel); err != nil {
		return nil, err
	}
	p.planTopK()
	b.finish(p)
	eps := a.opts.Epsilon
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
	if err := p.assignPrivacy(eps, delta); err != nil {
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
		lists = append(lists, g.Column.Name+": "+strings.Join(g.Keys, ", "))
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

// planOuter plans a DP query wrapped by an outer SELECT that only picks,
// renames, orders and limits its released rows: post-processing, which
// costs nothing more. Anything that would compute on the released rows
// (WHERE, GROUP BY, expressions) is refused for now.
func (a *analyzer) planOuter(sel, inner *ast.SelectStmt, tableRefs int) (*Query, error) {
	unsupported := func(what string) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "%s over a derived table on protected data is not supported", what).
			WithHint("the outer query may select, rename, order and limit the inner query's columns")
	}
	switch {
	case sel.Where != nil:
		return nil, unsupported("WHERE")
	case sel.GroupBy != nil || sel.Having != nil:
		return nil, unsupported("GROUP BY")
	case sel.Distinct:
		return nil, unsupported("DISTINCT")
	case sel.With != nil || len(sel.WindowSpecs) > 0 || sel.SelectIntoOpt != nil:
		return nil, unsupported("this clause")
	}
	if derivedTable(inner) != nil {
		return nil, unsupported("a derived table")
	}
	plan, err := a.plan(inner, tableRefs)
	if err != nil {
		return nil, err
	}
	alias := sel.From.TableRefs.Left.(*ast.TableSource).AsName.O
	outer := &OuterQuery{Limit: -1}
	find := func(cn *ast.ColumnName) (int, error) {
		if cn.Table.O != "" && !strings.EqualFold(cn.Table.O, alias) {
			return 0, sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", cn.Table.O)
		}
		for i, o := range plan.Output {
			if strings.EqualFold(o.Name, cn.Name.O) {
				return i, nil
			}
		}
		return 0, sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist in the derived table", cn.Name.O)
	}
	for _, f := range sel.Fields.Fields {
		if f.WildCard != nil {
			for i, o := range plan.Output {
				outer.Columns = append(outer.Columns, OuterColumn{Inner: i, Name: o.Name})
			}
			continue
		}
		cn, ok := unparen(f.Expr).(*ast.ColumnNameExpr)
		if !ok {
			return nil, unsupported("an expression")
		}
		i, err := find(cn.Name)
		if err != nil {
			return nil, err
		}
		outer.Columns = append(outer.Columns, OuterColumn{Inner: i, Name: fieldName(f, plan.Output[i].Name)})
	}
	if sel.OrderBy != nil {
		for _, item := range sel.OrderBy.Items {
			idx := -1
			switch x := unparen(item.Expr).(type) {
			case *ast.PositionExpr:
				if x.P == nil && x.N >= 1 && x.N <= len(outer.Columns) {
					idx = x.N - 1
				}
			case *ast.ColumnNameExpr:
				for i, c := range outer.Columns {
					if strings.EqualFold(c.Name, x.Name.Name.O) && (x.Name.Table.O == "" || strings.EqualFold(x.Name.Table.O, alias)) {
						idx = i
						break
					}
				}
				if idx < 0 {
					if inner, err := find(x.Name); err == nil {
						for i, c := range outer.Columns {
							if c.Inner == inner {
								idx = i
								break
							}
						}
					}
				}
			}
			if idx < 0 {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ORDER BY must name a column of the outer select list")
			}
			outer.OrderBy = append(outer.OrderBy, OrderKey{Output: idx, Desc: item.Desc})
		}
	}
	if sel.Limit != nil {
		n, err := constantInt(sel.Limit.Count, "LIMIT")
		if err != nil {
			return nil, err
		}
		outer.Limit = n
		if sel.Limit.Offset != nil {
			if outer.Offset, err = constantInt(sel.Limit.Offset, "OFFSET"); err != nil {
				return nil, err
			}
		}
	}
	plan.Outer = outer
	return &Query{Plan: plan}, nil
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
func (a *analyzer) checkShape(sel *ast.SelectStmt, tableRefs int) error {
	unsupported := func(what string) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "%s is not supported in queries on protected table %q", what, a.table.Name).
			WithHint("supported: SELECT [group columns,] %s FROM %s [WHERE ...] [GROUP BY ...] [ORDER BY ...] [LIMIT n]", supportedAggregates, a.table.Name)
	}
	if tableRefs != 1 {
		return sqlerr.New(sqlerr.FeatureNotSupported, "a query on protected table %q must read that table alone: joins, subqueries and repeated references are not supported", a.table.Name).
			WithHint("query one protected table with aggregates: %s", supportedAggregates)
	}
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
	join := sel.From.TableRefs
	if join == nil || join.Right != nil {
		return unsupported("a join")
	}
	ts, ok := join.Left.(*ast.TableSource)
	if !ok {
		return unsupported("this FROM clause")
	}
	if _, ok := ts.Source.(*ast.TableName); !ok {
		return unsupported("a derived table")
	}
	a.alias = a.table.Name
	if ts.AsName.O != "" {
		a.alias = ts.AsName.O
	}
	if sel.GroupBy != nil && sel.GroupBy.Rollup {
		return unsupported("WITH ROLLUP")
	}
	return nil
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

// column resolves a column reference against the protected table.
func (a *analyzer) column(cn *ast.ColumnName) (*config.Column, error) {
	if cn.Table.O != "" && !strings.EqualFold(cn.Table.O, a.alias) {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", cn.Table.O)
	}
	if cn.Schema.O != "" && !strings.EqualFold(cn.Table.O, a.table.Name) {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", cn.Schema.O+"."+cn.Table.O)
	}
	col, ok := a.table.Column(cn.Name.O)
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

func (a *analyzer) isUnit(col *config.Column) bool {
	return !a.table.IsRowPrivacy() && strings.EqualFold(col.Name, a.table.PrivacyUnit)
}

// groupColumn resolves one GROUP BY item: a column, or a position in the
// select list that names a column.
func (a *analyzer) groupColumn(expr ast.ExprNode, fields []*ast.SelectField) (GroupColumn, error) {
	expr = unparen(expr)
	if pos, ok := expr.(*ast.PositionExpr); ok {
		if pos.P == nil && pos.N >= 1 && pos.N <= len(fields) && fields[pos.N-1].Expr != nil {
			expr = unparen(fields[pos.N-1].Expr)
		} else {
			return GroupColumn{}, sqlerr.New(sqlerr.GroupingError, "GROUP BY position %d is not in the select list", pos.N)
		}
	}
	// GROUP BY an alias of the select list.
	if cn, ok := expr.(*ast.ColumnNameExpr); ok && cn.Name.Table.O == "" {
		if _, isColumn := a.table.Column(cn.Name.Name.O); !isColumn {
			for _, f := range fields {
				if f.AsName.O != "" && strings.EqualFold(f.AsName.O, cn.Name.Name.O) {
					expr = unparen(f.Expr)
				}
			}
		}
	}
	if g, ok, err := a.numericBin(expr); ok {
		return g, err
	}
	var g GroupColumn
	switch x := expr.(type) {
	case *ast.ColumnNameExpr:
		col, err := a.column(x.Name)
		if err != nil {
			return g, err
		}
		g = GroupColumn{Column: col, Keys: col.Keys, Type: columnType(col.Type)}
	case *ast.FuncCallExpr:
		b, col, err := a.timeBucket(x)
		if err != nil {
			return g, err
		}
		g = GroupColumn{Column: col, Bucket: b, Type: sqltypes.Timestamp}
		if b.Func == "extract" {
			g.Type = sqltypes.Numeric
		}
	case *ast.CaseExpr:
		return a.caseGroup(x)
	default:
		return g, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY supports columns, time buckets (date_trunc, EXTRACT) of columns, numeric bins (FLOOR(x / w) * w, width_bucket) and CASE with constant results only").
			WithHint("group by one of: %s", a.groupableList())
	}
	col := g.Column
	if a.isUnit(col) {
		return g, sqlerr.New(sqlerr.InsufficientPrivilege, "cannot GROUP BY the privacy unit column %q: it would release one group per person", col.Name).
			WithHint("group by one of: %s", a.groupableList())
	}
	if !col.GroupBy {
		return g, sqlerr.New(sqlerr.InsufficientPrivilege, "the policy does not allow GROUP BY on column %q of %q", col.Name, a.table.Name).
			WithHint("group by one of: %s", a.groupableList())
	}
	return g, nil
}

// bucketUnits are the units of date_trunc and the fields of EXTRACT that
// dpproxy can write for every backend.
var bucketUnits = map[string]map[string]bool{
	"date_trunc": {"year": true, "quarter": true, "month": true, "week": true, "day": true},
	"extract":    {"year": true, "quarter": true, "month": true, "day": true, "dow": true},
}

// timeBucket reads date_trunc('unit', col) or EXTRACT(unit FROM col) over a
// date or timestamp column: functions that cannot fail on any value.
func (a *analyzer) timeBucket(x *ast.FuncCallExpr) (*TimeBucket, *config.Column, error) {
	fn := x.FnName.L
	hint := "group by date_trunc('year'|'quarter'|'month'|'week'|'day', column) or EXTRACT(YEAR|QUARTER|MONTH|DAY|DOW FROM column) of a date or timestamp column"
	if len(x.Args) != 2 || bucketUnits[fn] == nil {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY %s() is not supported", x.FnName.O).WithHint("%s", hint)
	}
	var unit string
	var colExpr ast.ExprNode
	switch fn {
	case "date_trunc":
		v, ok := unparen(x.Args[0]).(*test_driver.ValueExpr)
		if !ok || v.Kind() != test_driver.KindString {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "date_trunc needs a constant unit").WithHint("%s", hint)
		}
		unit, colExpr = strings.ToLower(v.GetString()), x.Args[1]
	case "extract":
		tu, ok := x.Args[0].(*ast.TimeUnitExpr)
		if !ok {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "EXTRACT needs a field name").WithHint("%s", hint)
		}
		unit, colExpr = strings.ToLower(tu.Unit.String()), x.Args[1]
		if unit == "dayofweek" {
			unit = "dow"
		}
	}
	if !bucketUnits[fn][unit] {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s with unit %q is not supported", fn, unit).WithHint("%s", hint)
	}
	cn, ok := unparen(colExpr).(*ast.ColumnNameExpr)
	if !ok {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s needs a plain column", fn).WithHint("%s", hint)
	}
	col, err := a.column(cn.Name)
	if err != nil {
		return nil, nil, err
	}
	if col.Type != config.TypeDate && col.Type != config.TypeTimestamp {
		return nil, nil, sqlerr.New(sqlerr.DatatypeMismatch, "%s needs a date or timestamp column; %q is %s", fn, col.Name, col.Type)
	}
	return &TimeBucket{Func: fn, Unit: unit}, col, nil
}

func sameGroup(a, b GroupColumn) bool {
	if a.SQL != "" || b.SQL != "" {
		return a.SQL == b.SQL
	}
	if a.Column != b.Column || (a.Bucket == nil) != (b.Bucket == nil) {
		return false
	}
	return a.Bucket == nil || *a.Bucket == *b.Bucket
}

// checkKeyLists decides how group keys are released. When every GROUP BY
// column has a public key list, exactly the combinations of those keys are
// released. Otherwise which keys occur is private, and each group found in
// the data must pass DP partition selection.
func (a *analyzer) checkKeyLists(p *Plan) error {
	combos := 1
	for _, g := range p.Groups {
		if len(g.Keys) == 0 {
			p.Selection = &PartitionSelection{}
			return nil
		}
		combos *= len(g.Keys)
		if combos > maxReleasedGroups {
			return sqlerr.New(sqlerr.ProgramLimitExceeded, "GROUP BY over %d key combinations exceeds the limit of %d", combos, maxReleasedGroups).
				WithHint("group by fewer columns")
		}
	}
	return nil
}

func groupNames(p *Plan) string {
	names := make([]string, len(p.Groups))
	for i, g := range p.Groups {
		names[i] = g.Name()
	}
	return strings.Join(names, ", ")
}

// maxReleasedGroups bounds the rows a public key list may produce.
const maxReleasedGroups = 100000

// outputColumn plans one select-list item.
func (a *analyzer) outputColumn(p *Plan, b *backendColumns, f *ast.SelectField, index int) (OutputColumn, error) {
	if f.WildCard != nil {
		return OutputColumn{}, a.rawRowsError()
	}
	expr := unparen(f.Expr)
	switch x := expr.(type) {
	case *ast.ColumnNameExpr:
		col, err := a.column(x.Name)
		if err != nil {
			return OutputColumn{}, err
		}
		for gi, g := range p.Groups {
			if g.Column == col && g.Bucket == nil {
				return OutputColumn{Name: fieldName(f, col.Name), Type: columnType(col.Type), Source: OutputSource{Group: gi, Aggregate: -1}}, nil
			}
		}
		if len(p.Groups) == 0 {
			return OutputColumn{}, a.rawRowsError()
		}
		return OutputColumn{}, sqlerr.New(sqlerr.GroupingError, "column %q must appear in the GROUP BY clause or be used in an aggregate function", col.Name)
	case *ast.FuncCallExpr:
		if bucketUnits[x.FnName.L] != nil {
			bucket, col, err := a.timeBucket(x)
			if err != nil {
				return OutputColumn{}, err
			}
			want := GroupColumn{Column: col, Bucket: bucket}
			for gi, g := range p.Groups {
				if sameGroup(g, want) {
					return OutputColumn{Name: a.exprName(f, x.FnName.L), Type: g.Type, Source: OutputSource{Group: gi, Aggregate: -1}}, nil
				}
			}
			return OutputColumn{}, sqlerr.New(sqlerr.GroupingError, "%s must appear in the GROUP BY clause", want.Name())
		}
	case *ast.CaseExpr:
		// The select list's CASE that a GROUP BY CASE groups by.
		if g, err := a.caseGroup(x); err == nil {
			for gi, have := range p.Groups {
				if sameGroup(have, g) {
					return OutputColumn{Name: a.exprName(f, "case"), Type: have.Type, Source: OutputSource{Group: gi, Aggregate: -1}}, nil
				}
			}
		}
	case *ast.AggregateFuncExpr:
		agg, name, typ, err := a.aggregate(x, writtenName(f), p, b)
		if err != nil {
			return OutputColumn{}, err
		}
		agg.Type = typ
		p.Aggregates = append(p.Aggregates, agg)
		return OutputColumn{Name: a.exprName(f, name), Type: typ, Source: OutputSource{Group: -1, Aggregate: len(p.Aggregates) - 1}}, nil
	case *ast.WindowFuncExpr:
		return OutputColumn{}, sqlerr.New(sqlerr.FeatureNotSupported, "window functions are not allowed on protected table %q", a.table.Name).
			WithHint("use aggregates: %s", supportedAggregates)
	}
	// The select list's bin of a column that GROUP BY bins by.
	if g, ok, err := a.numericBin(expr); ok && err == nil {
		for gi, have := range p.Groups {
			if sameGroup(have, g) {
				name := "?column?"
				if call, isCall := expr.(*ast.FuncCallExpr); isCall {
					name = call.FnName.L
				}
				return OutputColumn{Name: a.exprName(f, name), Type: have.Type, Source: OutputSource{Group: gi, Aggregate: -1}}, nil
			}
		}
	}
	// An expression over aggregates, group columns and constants,
	// computed on the released row (post.go). Aliases are not names here.
	d, typ, err := a.derived(expr, p, b, nil)
	if err != nil {
		return OutputColumn{}, err
	}
	if typ == sqltypes.Unknown {
		typ = sqltypes.Text
	}
	name := "?column?"
	if call, ok := expr.(*ast.FuncCallExpr); ok {
		name = call.FnName.L
	}
	return OutputColumn{Name: a.exprName(f, name), Type: typ, Source: OutputSource{Group: -1, Aggregate: -1, Derived: d}}, nil
}

// writtenName is the function name as the query spells it (the parser
// normalizes synonyms such as VARIANCE to VAR_POP).
func writtenName(f *ast.SelectField) string {
	name, _, _ := strings.Cut(f.Text(), "(")
	return strings.ToLower(strings.TrimSpace(name))
}

// aggregate plans one aggregate function call.
func (a *analyzer) aggregate(x *ast.AggregateFuncExpr, written string, p *Plan, b *backendColumns) (Aggregate, string, sqltypes.Type, error) {
	fn := strings.ToLower(x.F)
	notSupported := func(format string, args ...any) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, format, args...).WithHint("supported aggregates: %s", supportedAggregates)
	}
	if x.Distinct {
		return a.countDistinct(x, p, b)
	}
	if x.Order != nil {
		return Aggregate{}, "", 0, notSupported("ordered aggregates are not supported")
	}
	switch fn {
	case "count":
		if len(x.Args) != 1 {
			return Aggregate{}, "", 0, notSupported("COUNT takes one argument")
		}
		if isNonNullConstant(x.Args[0]) { // COUNT(*) parses as COUNT(1)
			mi := p.addMeasurement(Measurement{Kind: MeasureCount, CountColumn: b.rowCount(), SumColumn: -1, SquaresColumn: -1})
			return Aggregate{Func: CountStar, Measurements: []int{mi}}, "count", sqltypes.Int8, nil
		}
		col, err := a.aggregateColumn(x, false)
		if err != nil {
			return Aggregate{}, "", 0, err
		}
		v := b.value(col)
		mi := p.addMeasurement(Measurement{Kind: MeasureCount, CountColumn: v.count, SumColumn: -1, SquaresColumn: -1})
		return Aggregate{Func: CountCol, Column: col, Measurements: []int{mi}}, "count", sqltypes.Int8, nil
	case "sum", "avg":
		col, err := a.aggregateColumn(x, true)
		if err != nil {
			return Aggregate{}, "", 0, err
		}
		v := b.value(col)
		bounds := *col.Bounds
		if fn == "sum" {
			mi := p.addMeasurement(Measurement{Kind: MeasureSum, CountColumn: v.count, SumColumn: v.sum, SquaresColumn: -1})
			return Aggregate{Func: Sum, Column: col, Bounds: bounds, Measurements: []int{mi}}, "sum", sumType(col.Type), nil
		}
		ci := p.addMeasurement(Measurement{Kind: MeasureCount, CountColumn: v.count, SumColumn: -1, SquaresColumn: -1})
		si := p.addMeasurement(Measurement{Kind: MeasureCenteredSum, CountColumn: v.count, SumColumn: v.sum, SquaresColumn: -1, Mid: (bounds.Lo + bounds.Hi) / 2})
		return Aggregate{Func: Avg, Column: col, Bounds: bounds, Measurements: []int{ci, si}}, "avg", avgType(col.Type), nil
	}
	if f, ok := varianceFuncs[fn]; ok {
		if a.opts.FrontEnd == PostgresFrontEnd {
			switch written {
			case "variance":
				f = VarSamp
			case "stddev":
				f = StddevSamp
			}
		}
		if written != "" && written != fn && varianceFuncs[written] != 0 {
			fn = written // name the column as the query wrote it
		}
		col, err := a.aggregateColumn(x, true)
		if err != nil {
			return Aggregate{}, "", 0, err
		}
		bounds := *col.Bounds
		mid := (bounds.Lo + bounds.Hi) / 2
		if err := checkCentredPrecision(fn, col, bounds); err != nil {
			return Aggregate{}, "", 0, err
		}
		v := b.value(col)
		b.squares(v)
		ci := p.addMeasurement(Measurement{Kind: MeasureCount, CountColumn: v.count, SumColumn: -1, SquaresColumn: -1})
		si := p.addMeasurement(Measurement{Kind: MeasureCenteredSum, CountColumn: v.count, SumColumn: v.sum, SquaresColumn: -1, Mid: mid})
		qi := p.addMeasurement(Measurement{Kind: MeasureCenteredSquares, CountColumn: v.count, SumColumn: v.sum, SquaresColumn: v.sq, Mid: mid})
		return Aggregate{Func: f, Column: col, Bounds: bounds, Measurements: []int{ci, si, qi}}, fn, avgType(col.Type), nil
	}
	if fn == "min" || fn == "max" {
		agg, typ, err := a.minMax(x, p)
		return agg, fn, typ, err
	}
	return Aggregate{}, "", 0, notSupported("aggregate %s is not supported on protected data", strings.ToUpper(fn))
}

// varianceFuncs maps the variance family's names (as PostgreSQL reads
// them: VARIANCE and STDDEV are the sample forms).
var varianceFuncs = map[string]AggFunc{
	"var_pop": VarPop, "var_samp": VarSamp, "variance": VarPop,
	"stddev_pop": StddevPop, "stddev_samp": StddevSamp, "stddev": StddevPop, "std": StddevPop,
}

// countDistinct plans COUNT(DISTINCT privacy_unit): the number of units in
// each group, which changes by at most 1 in each of L0 groups.
func (a *analyzer) countDistinct(x *ast.AggregateFuncExpr, p *Plan, b *backendColumns) (Aggregate, string, sqltypes.Type, error) {
	hint := "COUNT(DISTINCT ...) is supported on the privacy unit column only"
	if strings.ToLower(x.F) != "count" || len(x.Args) != 1 {
		return Aggregate{}, "", 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s(DISTINCT ...) is not supported", strings.ToUpper(x.F)).WithHint("%s", hint)
	}
	cn, ok := unparen(x.Args[0]).(*ast.ColumnNameExpr)
	if !ok {
		return Aggregate{}, "", 0, sqlerr.New(sqlerr.FeatureNotSupported, "COUNT(DISTINCT ...) needs a plain column").WithHint("%s", hint)
	}
	col, err := a.column(cn.Name)
	if err != nil {
		return Aggregate{}, "", 0, err
	}
	if !a.isUnit(col) {
		return a.countDistinctValues(col, p)
	}
	mi := p.addMeasurement(Measurement{Kind: MeasureUnits, CountColumn: b.units(), SumColumn: -1, SquaresColumn: -1})
	return Aggregate{Func: CountDistinctUnit, Column: col, Measurements: []int{mi}}, "count", sqltypes.Int8, nil
}

// aggregateColumn checks an aggregate's argument: a plain, non-unit column;
// numeric with bounds when summed.
func (a *analyzer) aggregateColumn(x *ast.AggregateFuncExpr, summed bool) (*config.Column, error) {
	fn := strings.ToUpper(x.F)
	if c, ok := unparen(x.Args[0]).(*ast.CaseExpr); ok {
		return a.conditionalColumn(c, fn, summed)
	}
	cn, ok := unparen(x.Args[0]).(*ast.ColumnNameExpr)
	if !ok {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s supports a column or a CASE as its argument", fn).
			WithHint("write %s(column) or %s(CASE WHEN condition THEN column END)", fn, fn)
	}
	col, err := a.column(cn.Name)
	if err != nil {
		return nil, err
	}
	if a.isUnit(col) && summed {
		return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "the privacy unit column %q cannot be aggregated with %s", col.Name, fn).
			WithHint("COUNT(%s) counts rows and COUNT(DISTINCT %s) counts people", col.Name, col.Name)
	}
	if summed {
		if !col.Type.Numeric() {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "%s needs a numeric column; %q is %s", fn, col.Name, col.Type)
		}
		if col.Bounds == nil {
			return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "%s(%s) needs clamp bounds for %q in the policy", fn, col.Name, col.Name).
				WithHint("declare `bounds: [lo, hi]` for the column under protected_tables/%s/columns", a.table.Name)
		}
	}
	return col, nil
}

// addMeasurement adds a measurement, or returns the index of an identical
// one: aggregates that need the same noisy quantity (AVG(x) and COUNT(x),
// VAR_POP(x) and STDDEV(x)) share it, which spends ε once and keeps the
// released values consistent.
func (p *Plan) addMeasurement(m Measurement) int {
	for i, have := range p.Measurements {
		if have == m {
			return i
		}
	}
	p.Measurements = append(p.Measurements, m)
	return len(p.Measurements) - 1
}

// orderAndLimit plans ORDER BY over output columns and LIMIT/OFFSET. Both
// run after noise, on the released rows: post-processing costs nothing.
func (a *analyzer) orderAndLimit(p *Plan, sel *ast.SelectStmt) error {
	if sel.OrderBy != nil {
		for _, item := range sel.OrderBy.Items {
			idx, err := a.orderTarget(p, sel, item.Expr)
			if err != nil {
				return err
			}
			p.OrderBy = append(p.OrderBy, OrderKey{Output: idx, Desc: item.Desc})
		}
	}
	if sel.Limit != nil {
		count, err := constantInt(sel.Limit.Count, "LIMIT")
		if err != nil {
			return err
		}
		p.Limit = count
		if sel.Limit.Offset != nil {
			return sqlerr.New(sqlerr.FeatureNotSupported, "OFFSET is not supported yet on protected tables")
		}
	}
	return nil
}

func (a *analyzer) orderTarget(p *Plan, sel *ast.SelectStmt, expr ast.ExprNode) (int, error) {
	expr = unparen(expr)
	if pos, ok := expr.(*ast.PositionExpr); ok {
		if pos.P == nil && pos.N >= 1 && pos.N <= len(p.Output) {
			return pos.N - 1, nil
		}
		return 0, sqlerr.New(sqlerr.InvalidParameterValue, "ORDER BY position %d is not in select list", pos.N)
	}
	if cn, ok := expr.(*ast.ColumnNameExpr); ok {
		if cn.Name.Table.O == "" {
			for i, out := range p.Output {
				if strings.EqualFold(out.Name, cn.Name.Name.O) {
					return i, nil
				}
			}
		}
		// A (qualified) group column: the output showing it.
		if col, err := a.column(cn.Name); err == nil {
			for i, out := range p.Output {
				if g := out.Source.Group; g >= 0 && p.Groups[g].Column == col && p.Groups[g].Bucket == nil {
					return i, nil
				}
			}
		}
	}
	want, err := restore(expr, Postgres)
	if err == nil {
		for i, f := range sel.Fields.Fields {
			if f.Expr == nil {
				continue
			}
			if got, err := restore(f.Expr, Postgres); err == nil && got == want {
				return i, nil
			}
		}
	}
	return 0, sqlerr.New(sqlerr.FeatureNotSupported, "ORDER BY must name a column of the select list").
		WithHint("order by an output column name, alias or position")
}

func constantInt(expr ast.ExprNode, clause string) (int64, error) {
	v, ok := expr.(*test_driver.ValueExpr)
	if ok {
		switch v.Kind() {
		case test_driver.KindInt64:
			if n := v.GetInt64(); n >= 0 {
				return n, nil
			}
		case test_driver.KindUint64:
			if n := v.GetUint64(); n <= math.MaxInt64 {
				return int64(n), nil
			}
		}
	}
	return 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s must be a non-negative integer constant", clause)
}

func isNonNullConstant(expr ast.ExprNode) bool {
	v, ok := expr.(*test_driver.ValueExpr)
	return ok && v.Kind() != test_driver.KindNull
}

func unparen(expr ast.ExprNode) ast.ExprNode {
	for {
		p, ok := expr.(*ast.ParenthesesExpr)
		if !ok {
			return expr
		}
		expr = p.Expr
	}
}

// exprName names an expression's output column the way the client's
// database would: PostgreSQL by the function name ("count"), MySQL by the
// expression as written ("COUNT(*)"); an alias always wins.
func (a *analyzer) exprName(f *ast.SelectField, pgName string) string {
	if f.AsName.O == "" && a.opts.FrontEnd == MySQLFrontEnd {
		if text := strings.TrimSpace(f.Text()); text != "" {
			return text
		}
	}
	return fieldName(f, pgName)
}

func fieldName(f *ast.SelectField, def string) string {
	if f.AsName.O != "" {
		return f.AsName.O
	}
	return strings.ToLower(def)
}

// columnType is the result type of a column as the policy declares it.
func columnType(t config.ColumnType) sqltypes.Type { return t.SQLType() }

// sumType and avgType follow PostgreSQL: sum(integer) is bigint,
// sum(bigint) and sum(numeric) are numeric, sum(float8) is float8; avg of
// any exact type is numeric.
func sumType(t config.ColumnType) sqltypes.Type {
	switch t {
	case config.TypeInt:
		return sqltypes.Int8
	case config.TypeFloat:
		return sqltypes.Float8
	}
	return sqltypes.Numeric
}

func avgType(t config.ColumnType) sqltypes.Type {
	if t == config.TypeFloat {
		return sqltypes.Float8
	}
	return sqltypes.Numeric
}

// backendColumns allocates the backend result columns of a DP plan:
// group keys first, then the per-group row count, then a count and a sum
// per aggregated value column, then the distinct-unit count.
type backendColumns struct {
	groups   int
	rowCnt   int // -1 until needed
	values   []*valueColumn
	next     int
	assigned bool
	unitCol  int // -1 until needed
}

type valueColumn struct {
	col        *config.Column
	count, sum int
	sq         int // sum of squares, -1 until needed
}

func (b *backendColumns) alloc() int {
	if b.next < b.groups {
		b.next = b.groups
	}
	i := b.next
	b.next++
	return i
}

func (b *backendColumns) rowCount() int {
	if !b.assigned {
		b.assigned = true
		b.rowCnt = b.alloc()
	}
	return b.rowCnt
}

func (b *backendColumns) value(col *config.Column) *valueColumn {
	for _, v := range b.values {
		if v.col == col {
			return v
		}
	}
	v := &valueColumn{col: col, count: b.alloc(), sum: b.alloc(), sq: -1}
	b.values = append(b.values, v)
	return v
}

func (b *backendColumns) squares(v *valueColumn) {
	if v.sq < 0 {
		v.sq = b.alloc()
	}
}

// units is the column counting distinct units per group.
func (b *backendColumns) units() int {
	if b.unitCol < 0 {
		b.unitCol = b.alloc()
	}
	return b.unitCol
}

// finish allocates the units column when partition selection needs it,
// and the last column, k, when the plan weights groups.
func (b *backendColumns) finish(p *Plan) {
	if p.Selection != nil {
		b.units()
	}
	p.UnitsColumn = b.unitCol
	if p.WeightsGroups() {
		p.GroupCountColumn = b.alloc()
	}
}

// maxCentredOffset bounds |mid| / ((hi − lo)/2) for the variance family.
// Its centred squares are computed as Σx² − 2·mid·Σx + mid²·n in floating
// point: the cancellation error grows with mid²·n and must stay far below
// the sensitivity Linf·((hi − lo)/2)², or the released value would move
// with one person by more than the noise covers. At this ratio the error
// is below 2⁻⁷ of it for a billion values.
const maxCentredOffset = 256

// checkCentredPrecision refuses a variance over bounds too narrow for
// their distance from zero.
func checkCentredPrecision(fn string, col *config.Column, b config.Bounds) error {
	half := (b.Hi - b.Lo) / 2
	mid := (b.Lo + b.Hi) / 2
	if half > 0 && math.Abs(mid) > maxCentredOffset*half {
		return sqlerr.New(sqlerr.FeatureNotSupported, "%s(%s) is not supported: its bounds [%g, %g] are too narrow for their distance from zero to be computed exactly enough", strings.ToUpper(fn), col.Name, b.Lo, b.Hi).
			WithHint("AVG, SUM and COUNT of the column are answered; the policy author can widen the column's bounds to at most %d times their half-width away from zero", maxCentredOffset)
	}
	return nil
}
