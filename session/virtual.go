package session

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// The virtual schema dpproxy holds read-only views that the session answers
// itself, from the accountant and the ledger: nothing is sent to the
// backend and nothing is charged. Each view shows only the session's own
// analyst.
//
//	dpproxy.budget   one row: analyst, epsilon_limit, epsilon_spent,
//	                 epsilon_remaining, delta_limit, delta_spent,
//	                 delta_remaining, session_epsilon, accountant
//	                 (basic, advanced, zcdp), rho_spent (zcdp's ρ),
//	                 renews and window_start (a budget that renews)
//	dpproxy.queries  the analyst's charges, newest first: id, charged_at,
//	                 epsilon, delta, query
//	dpproxy.rr_counts  the debiased counts of the session's last
//	                 randomized-response release (engine.RREstimates):
//	                 column_name, value, released, estimate,
//	                 estimate_lo95, estimate_hi95 — post-processing of
//	                 the release, free
//
// Supported: SELECT * or a list of the view's columns (each optionally
// AS alias), ORDER BY columns or positions [ASC|DESC], LIMIT n. Anything
// else is refused with SQLSTATE 0A000.

// VirtualSchema is the schema of dpproxy's own views.
const VirtualSchema = config.ReservedSchema

// virtualView is one view of the virtual schema.
type virtualView struct {
	name    string
	columns []sqltypes.Column
}

var (
	budgetView = &virtualView{name: "budget", columns: []sqltypes.Column{
		{Name: "analyst", Type: sqltypes.Text},
		{Name: "epsilon_limit", Type: sqltypes.Float8},
		{Name: "epsilon_spent", Type: sqltypes.Float8},
		{Name: "epsilon_remaining", Type: sqltypes.Float8},
		{Name: "delta_limit", Type: sqltypes.Float8},
		{Name: "delta_spent", Type: sqltypes.Float8},
		{Name: "delta_remaining", Type: sqltypes.Float8},
		{Name: "session_epsilon", Type: sqltypes.Float8},
		{Name: "accountant", Type: sqltypes.Text},
		{Name: "rho_spent", Type: sqltypes.Float8},
		{Name: "renews", Type: sqltypes.Text},
		{Name: "window_start", Type: sqltypes.Timestamptz},
	}}
	queriesView = &virtualView{name: "queries", columns: []sqltypes.Column{
		{Name: "id", Type: sqltypes.Int8},
		{Name: "charged_at", Type: sqltypes.Timestamptz},
		{Name: "epsilon", Type: sqltypes.Float8},
		{Name: "delta", Type: sqltypes.Float8},
		{Name: "query", Type: sqltypes.Text},
	}}
	rrCountsView = &virtualView{name: "rr_counts", columns: []sqltypes.Column{
		{Name: "column_name", Type: sqltypes.Text},
		{Name: "value", Type: sqltypes.Text},
		{Name: "released", Type: sqltypes.Int8},
		{Name: "estimate", Type: sqltypes.Float8},
		{Name: "estimate_lo95", Type: sqltypes.Float8},
		{Name: "estimate_hi95", Type: sqltypes.Float8},
	}}
	virtualViews = []*virtualView{budgetView, queriesView, rrCountsView}
)

// qualified is the view's name as written in queries.
func (v *virtualView) qualified() string { return VirtualSchema + "." + v.name }

// column returns the index of the named column, or -1.
func (v *virtualView) column(name string) int {
	for i, c := range v.columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

func (v *virtualView) columnList() string {
	names := make([]string, len(v.columns))
	for i, c := range v.columns {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// virtualQuery is a checked query on one view.
type virtualQuery struct {
	view *virtualView
	// output holds the view column of each output column, names their
	// output names.
	output []int
	names  []string
	order  []virtualOrder
	// limit is the LIMIT (-1 for none).
	limit int64
}

// virtualOrder is one ORDER BY key over a view column.
type virtualOrder struct {
	column int
	desc   bool
}

const virtualHint = "dpproxy views support SELECT * or a list of columns, ORDER BY columns [ASC|DESC] and LIMIT n, for example SELECT * FROM dpproxy.queries ORDER BY id DESC LIMIT 10"

func isVirtualSchema(schema string) bool { return strings.EqualFold(schema, VirtualSchema) }

// parseVirtual checks a statement that names a dpproxy.* view. It returns
// nil, nil when the statement names none, and an *sqlerr.Error when it
// names one in a way that is not supported (mixed with other tables, in a
// subquery, with WHERE, and so on).
func parseVirtual(stmt ast.StmtNode) (*virtualQuery, error) {
	c := &tableNames{}
	stmt.Accept(c)
	var tn *ast.TableName
	for _, t := range c.names {
		if isVirtualSchema(t.Schema.O) {
			tn = t
			break
		}
	}
	if tn == nil {
		return nil, nil
	}
	name := VirtualSchema + "." + tn.Name.O
	sel, ok := stmt.(*ast.SelectStmt)
	if !ok {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s is a read-only view of dpproxy: only SELECT can read it", name).
			WithHint("%s", virtualHint)
	}
	alone := func() error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "%s must be queried alone: it cannot be combined with other tables, in joins, subqueries or set operations", name).
			WithHint("%s", virtualHint)
	}
	if len(c.names) != 1 {
		return nil, alone()
	}
	var view *virtualView
	for _, v := range virtualViews {
		if strings.EqualFold(v.name, tn.Name.O) {
			view = v
		}
	}
	if view == nil {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", name).
			WithHint("dpproxy's views are %s and %s", budgetView.qualified(), queriesView.qualified())
	}
	unsupported := func(what string) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "%s is not supported on %s", what, view.qualified()).WithHint("%s", virtualHint)
	}
	switch {
	case sel.With != nil:
		return nil, unsupported("WITH")
	case sel.Kind != ast.SelectStmtKindSelect:
		return nil, unsupported("TABLE/VALUES")
	case sel.Distinct:
		return nil, unsupported("SELECT DISTINCT")
	case sel.Where != nil:
		return nil, unsupported("WHERE")
	case sel.GroupBy != nil:
		return nil, unsupported("GROUP BY")
	case sel.Having != nil:
		return nil, unsupported("HAVING")
	case len(sel.WindowSpecs) > 0:
		return nil, unsupported("WINDOW")
	case sel.SelectIntoOpt != nil:
		return nil, unsupported("SELECT INTO")
	case sel.LockInfo != nil && sel.LockInfo.LockType != ast.SelectLockNone:
		return nil, unsupported("a locking clause")
	case sel.From == nil || sel.From.TableRefs == nil || sel.From.TableRefs.Right != nil:
		return nil, unsupported("this FROM clause")
	case len(tn.IndexHints) > 0 || len(tn.PartitionNames) > 0 || tn.TableSample != nil || tn.AsOf != nil:
		return nil, unsupported("this table clause")
	}
	ts, ok := sel.From.TableRefs.Left.(*ast.TableSource)
	if !ok || ts.Source != tn {
		return nil, alone() // in a derived table
	}
	alias := ts.AsName.O
	q := &virtualQuery{view: view, limit: -1}
	r := &virtualResolver{view: view, alias: alias}

	for _, f := range sel.Fields.Fields {
		if f.WildCard != nil {
			if err := r.qualifier(f.WildCard.Schema.O, f.WildCard.Table.O); err != nil {
				return nil, err
			}
			for i, col := range view.columns {
				q.output = append(q.output, i)
				q.names = append(q.names, col.Name)
			}
			continue
		}
		cn, ok := unparen(f.Expr).(*ast.ColumnNameExpr)
		if !ok {
			return nil, unsupported("an expression in the select list (only columns can be selected)")
		}
		i, err := r.column(cn.Name)
		if err != nil {
			return nil, err
		}
		name := view.columns[i].Name
		if f.AsName.O != "" {
			name = f.AsName.O
		}
		q.output = append(q.output, i)
		q.names = append(q.names, name)
	}

	if sel.OrderBy != nil {
		for _, item := range sel.OrderBy.Items {
			i, err := r.orderKey(q, item.Expr)
			if err != nil {
				return nil, err
			}
			q.order = append(q.order, virtualOrder{column: i, desc: item.Desc})
		}
	}
	if sel.Limit != nil {
		if sel.Limit.Offset != nil {
			return nil, unsupported("OFFSET")
		}
		n, ok := rewrite.NonNegativeInt(sel.Limit.Count)
		if !ok {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "LIMIT must be a non-negative integer constant").WithHint("%s", virtualHint)
		}
		q.limit = n
	}
	return q, nil
}

// tableNames collects every table named in a statement.
type tableNames struct {
	names []*ast.TableName
	// withs are the WITH clauses met (their names are not tables).
	withs []*ast.WithClause
}

func (c *tableNames) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.TableName:
		c.names = append(c.names, x)
	case *ast.WithClause:
		c.withs = append(c.withs, x)
	}
	return n, false
}

func (c *tableNames) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// virtualResolver resolves column references against one view.
type virtualResolver struct {
	view  *virtualView
	alias string
}

// qualifier checks a column's or wildcard's qualifier: none, the view's
// name (with or without the dpproxy schema) or its alias.
func (r *virtualResolver) qualifier(schema, table string) error {
	switch {
	case table == "" && schema == "":
		return nil
	case schema != "" && !isVirtualSchema(schema):
	case r.alias != "" && strings.EqualFold(table, r.alias) && schema == "":
		return nil
	case r.alias == "" && strings.EqualFold(table, r.view.name):
		return nil
	}
	name := table
	if schema != "" {
		name = schema + "." + table
	}
	return sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", name)
}

// column resolves a column reference to a view column.
func (r *virtualResolver) column(cn *ast.ColumnName) (int, error) {
	if err := r.qualifier(cn.Schema.O, cn.Table.O); err != nil {
		return 0, err
	}
	i := r.view.column(cn.Name.O)
	if i < 0 {
		return 0, sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist in %s", cn.Name.O, r.view.qualified()).
			WithHint("columns of %s: %s", r.view.qualified(), r.view.columnList())
	}
	return i, nil
}

// orderKey resolves an ORDER BY item: an output position, an output
// alias, or a view column.
func (r *virtualResolver) orderKey(q *virtualQuery, expr ast.ExprNode) (int, error) {
	switch x := unparen(expr).(type) {
	case *ast.PositionExpr:
		if x.P == nil && x.N >= 1 && x.N <= len(q.output) {
			return q.output[x.N-1], nil
		}
		return 0, sqlerr.New(sqlerr.InvalidParameterValue, "ORDER BY position %d is not in select list", x.N)
	case *ast.ColumnNameExpr:
		if x.Name.Table.O == "" && x.Name.Schema.O == "" {
			for i, name := range q.names {
				if strings.EqualFold(name, x.Name.Name.O) {
					return q.output[i], nil
				}
			}
		}
		return r.column(x.Name)
	}
	return 0, sqlerr.New(sqlerr.FeatureNotSupported, "ORDER BY on %s must name a column or a position", r.view.qualified()).
		WithHint("%s", virtualHint)
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

// answerVirtual answers a query on a view for the session's analyst, from
// the accountant and the ledger only.
func (s *Session) answerVirtual(ctx context.Context, q *virtualQuery) (*sqltypes.Result, error) {
	var rows [][]any
	var err error
	switch q.view {
	case budgetView:
		rows, err = s.budgetRows(ctx)
	case queriesView:
		rows, err = s.queryRows(ctx, q)
	case rrCountsView:
		rows, err = s.rrCountRows()
	default:
		err = fmt.Errorf("session: unknown view %s", q.view.qualified())
	}
	if err != nil {
		return nil, err
	}
	if len(q.order) > 0 {
		slices.SortStableFunc(rows, func(a, b []any) int {
			for _, k := range q.order {
				c := compareViewValues(a[k.column], b[k.column])
				if k.desc {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
	}
	if q.limit >= 0 && int64(len(rows)) > q.limit {
		rows = rows[:q.limit]
	}
	res := &sqltypes.Result{Tag: fmt.Sprintf("SELECT %d", len(rows)), Rows: make([][]any, len(rows))}
	for i, col := range q.output {
		res.Columns = append(res.Columns, sqltypes.Column{Name: q.names[i], Type: q.view.columns[col].Type})
	}
	for i, row := range rows {
		out := make([]any, len(q.output))
		for j, col := range q.output {
			out[j] = row[col]
		}
		res.Rows[i] = out
	}
	return res, nil
}

// budgetRows is dpproxy.budget: the analyst's one row.
func (s *Session) budgetRows(ctx context.Context) ([][]any, error) {
	acct := s.engine.Accountant()
	// On a shared ledger: what every instance has spent and holds.
	if err := acct.Refresh(ctx); err != nil {
		return nil, sqlerr.New(sqlerr.InternalError, "the privacy budget ledger could not be read: %v", err).
			WithHint("the shared ledger is unavailable; try again when it is back")
	}
	st, ok := acct.Status(s.analyst)
	if !ok {
		return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "analyst %q has no privacy budget", s.analyst).
			WithHint("ask the policy author to give the analyst a budget")
	}
	// ρ in zCDP's terms for a zCDP account; when the budget renews, the
	// period and when the current one began (what spent counts).
	var rho, renews, windowStart any
	if st.Accountant == "zcdp" {
		rho = st.Rho
	}
	if st.Window != "" {
		renews, windowStart = st.Window, st.WindowStart
	}
	return [][]any{{
		s.analyst,
		st.Limit.Epsilon, st.Spent.Epsilon, st.Remaining.Epsilon,
		st.Limit.Delta, st.Spent.Delta, st.Remaining.Delta,
		s.epsilon, st.Accountant, rho, renews, windowStart,
	}}, nil
}

// queryRows is dpproxy.queries: the analyst's charges, newest first. When
// the query keeps only the newest n charges, only those are read.
func (s *Session) queryRows(ctx context.Context, q *virtualQuery) ([][]any, error) {
	fetch := 0 // all
	if q.limit >= 0 && newestFirst(q.order) {
		if q.limit == 0 {
			return nil, nil
		}
		if q.limit < math.MaxInt32 {
			fetch = int(q.limit)
		}
	}
	charges, err := s.engine.Accountant().Charges(ctx, s.analyst, fetch)
	if err != nil {
		return nil, fmt.Errorf("session: reading the query log: %w", err)
	}
	rows := make([][]any, len(charges))
	for i, c := range charges {
		rows[i] = []any{c.ID, c.At.UTC(), c.Cost.Epsilon, c.Cost.Delta, c.Query}
	}
	return rows, nil
}

// newestFirst reports whether order keeps the ledger's newest-first
// order (by id, which increases in commit order): no keys, or id
// descending.
func newestFirst(order []virtualOrder) bool {
	return len(order) == 0 || len(order) == 1 && order[0].desc && order[0].column == queriesView.column("id")
}

// compareViewValues orders two values of the same view column.
func compareViewValues(a, b any) int {
	switch x := a.(type) {
	case int64:
		return cmp.Compare(x, b.(int64))
	case float64:
		return cmp.Compare(x, b.(float64))
	case string:
		return strings.Compare(x, b.(string))
	case time.Time:
		return x.Compare(b.(time.Time))
	}
	return 0
}

// rrCountRows debiases the session's last randomized-response release
// (none yet: no rows).
func (s *Session) rrCountRows() ([][]any, error) {
	if s.lastRR == nil {
		return nil, nil
	}
	estimates, err := engine.RREstimates(s.lastRR.plan, s.lastRR.result)
	if err != nil {
		return nil, err
	}
	rows := make([][]any, len(estimates))
	for i, e := range estimates {
		rows[i] = []any{e.Column, fmt.Sprint(e.Value), e.Released, e.Estimate, e.Lo, e.Hi}
	}
	return rows, nil
}
