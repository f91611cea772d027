package rewrite

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// Joins with public tables:
//
//	SELECT c.city, COUNT(*), AVG(v.cost)
//	FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id
//	GROUP BY c.city
//
// The protected table comes first; public tables follow with [INNER] JOIN
// or LEFT JOIN and an ON or USING condition. The join runs in the bounding
// query's innermost level, before contribution bounding: each person's
// rows are the joined rows their own rows make, so bounding caps exactly
// what they contribute, and the sensitivities are those of a single
// table. A public table is the same on neighbouring databases; a person's
// rows that match several public rows (a key that is not unique) are
// several joined rows, counted as SQL counts them and bounded like any
// other rows. The public table's columns can be selected as group keys,
// grouped by, compared in WHERE and counted; they have no bounds, so they
// are not summed. Grouped by, a column the policy lists in the table's
// group_keys releases exactly its distinct values in the public table
// (read at start: public data); any other goes through partition
// selection, as keys from the data do.
//
// Refused: RIGHT and FULL joins (the public table's unmatched rows would
// belong to no person), joins without a condition, NATURAL joins, and a
// second protected table (joins on the privacy unit are not supported
// yet).

// joinedTable is a table joined to the protected one: public, or
// protected and joined on the privacy unit.
type joinedTable struct {
	table *config.PublicTable
	// protected is set instead of table for a protected table.
	protected *config.ProtectedTable
	// alias is the name the query gives it (its own name by default).
	alias string
	left  bool // LEFT JOIN; inner otherwise
	on    ast.ExprNode
	// columns are the table's columns as this query uses them, created
	// once each so that every reference is the same *config.Column.
	columns map[string]*config.Column
}

// column returns the joined table's column name, or nil.
func (j *joinedTable) column(name string) *config.Column {
	if c, ok := j.columns[strings.ToLower(name)]; ok {
		return c
	}
	if j.protected != nil {
		c, ok := j.protected.Column(name)
		if !ok {
			return nil
		}
		j.columns[strings.ToLower(name)] = c
		return c
	}
	pc, ok := j.table.Column(name)
	if !ok {
		return nil
	}
	// A column the policy lists in group_keys has a public key list.
	c := &config.Column{Name: pc.Name, Type: pc.Type, GroupBy: true, Keys: j.table.Keys[strings.ToLower(pc.Name)]}
	j.columns[strings.ToLower(name)] = c
	return c
}

// readFrom checks the FROM clause — the protected table, then public
// tables joined to it — and records the aliases and joins.
func (a *analyzer) readFrom(from *ast.Join) error {
	// A left-deep chain: ((t JOIN p1 ON ...) JOIN p2 ON ...).
	var steps []*ast.Join
	node := ast.ResultSetNode(from)
	for {
		j, ok := node.(*ast.Join)
		if !ok {
			break
		}
		if j.Right == nil {
			node = j.Left
			continue
		}
		steps = append([]*ast.Join{j}, steps...)
		node = j.Left
	}
	first, ok := node.(*ast.TableSource)
	if !ok {
		return a.shapeError("this FROM clause")
	}
	tn, ok := first.Source.(*ast.TableName)
	if !ok {
		return a.shapeError("a derived table")
	}
	if pt, _ := a.pol.LookupTable(tn.Schema.O, tn.Name.O); pt != a.table {
		return sqlerr.New(sqlerr.FeatureNotSupported, "the protected table %q must come first in FROM, with public tables joined to it", a.table.Name).
			WithHint("write FROM %s JOIN <public table> ON ...", a.table.Name)
	}
	a.alias = a.table.Name
	if first.AsName.O != "" {
		a.alias = first.AsName.O
	}
	for _, step := range steps {
		if err := a.join(step); err != nil {
			return err
		}
	}
	return nil
}

// join records one step of the chain: a public table joined with a
// condition.
func (a *analyzer) join(j *ast.Join) error {
	ts, ok := j.Right.(*ast.TableSource)
	if !ok {
		return a.shapeError("a parenthesized join")
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return a.shapeError("a join with a derived table")
	}
	pt, pub := a.pol.LookupTable(tn.Schema.O, tn.Name.O)
	switch {
	case pt == a.table:
		return sqlerr.New(sqlerr.FeatureNotSupported, "joining protected table %q to itself is not supported", pt.Name).
			WithHint("query %s once; a self-join multiplies each person's rows beyond what the policy bounds", pt.Name)
	case pt != nil && (pt.IsRowPrivacy() || a.table.IsRowPrivacy()):
		return sqlerr.New(sqlerr.FeatureNotSupported, "joining protected tables %q and %q needs a privacy unit in both (one of them protects each row)", a.table.Name, pt.Name).
			WithHint("query each protected table on its own")
	case pt == nil && pub == nil:
		return unknownTable(tn, a.pol)
	}
	name := tn.Name.O
	if ts.AsName.O != "" {
		name = ts.AsName.O
	}
	if strings.EqualFold(name, a.alias) || a.joined(name) != nil {
		return sqlerr.New(sqlerr.FeatureNotSupported, "table name %q is specified more than once", name).
			WithHint("give each table of the join its own alias")
	}
	switch {
	case j.NaturalJoin:
		return sqlerr.New(sqlerr.FeatureNotSupported, "NATURAL JOIN is not supported on protected tables").
			WithHint("name the join columns: JOIN %s USING (column) or ON ...", name)
	case j.Tp == ast.RightJoin:
		return sqlerr.New(sqlerr.FeatureNotSupported, "RIGHT JOIN is not supported on protected tables: the public table's unmatched rows would belong to no person").
			WithHint("put the protected table first: FROM %s LEFT JOIN %s ON ...", a.table.Name, name)
	case j.Tp != ast.CrossJoin && j.Tp != ast.LeftJoin:
		return a.shapeError("this join")
	}
	jt := &joinedTable{table: pub, protected: pt, alias: name, left: j.Tp == ast.LeftJoin, columns: map[string]*config.Column{}}
	a.joins = append(a.joins, jt)
	switch {
	case j.On != nil:
		jt.on = j.On.Expr
	case len(j.Using) > 0:
		// USING (c1, c2): the protected table's and the public table's
		// columns of those names are equal.
		for _, u := range j.Using {
			eq := &ast.BinaryOperationExpr{Op: opcode.EQ,
				L: &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: ast.NewCIStr(a.alias), Name: u.Name}},
				R: &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: ast.NewCIStr(name), Name: u.Name}}}
			if jt.on == nil {
				jt.on = eq
			} else {
				jt.on = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: jt.on, R: eq}
			}
		}
	default:
		return sqlerr.New(sqlerr.FeatureNotSupported, "a join of %s with %s needs a condition", a.table.Name, name).
			WithHint("write JOIN %s ON %s.<column> = %s.<column>, or USING (<column>)", name, a.alias, name)
	}
	if pt != nil && !a.joinsOnUnit(jt) {
		return sqlerr.New(sqlerr.InsufficientPrivilege, "protected tables %q and %q must be joined on the privacy unit: otherwise one person's rows could join another's and their contribution would have no bound", a.table.Name, pt.Name).
			WithHint("join them with ON %s.%s = %s.%s (AND other conditions), or USING (%s) when the columns share a name", a.alias, a.table.PrivacyUnit, name, pt.PrivacyUnit, a.table.PrivacyUnit)
	}
	return nil
}

// joinsOnUnit reports whether a protected table's join condition equates
// its privacy unit with the first table's, as one of its AND-ed terms:
// then each joined row belongs to one unit, and bounding per unit after
// the join bounds what one person contributes through both tables.
func (a *analyzer) joinsOnUnit(j *joinedTable) bool {
	is := func(e ast.ExprNode, alias, unit string) bool {
		c, ok := unparen(e).(*ast.ColumnNameExpr)
		return ok && c.Name.Schema.O == "" && strings.EqualFold(c.Name.Table.O, alias) && strings.EqualFold(c.Name.Name.O, unit)
	}
	var terms func(e ast.ExprNode) bool
	terms = func(e ast.ExprNode) bool {
		b, ok := unparen(e).(*ast.BinaryOperationExpr)
		if !ok {
			return false
		}
		switch b.Op {
		case opcode.LogicAnd:
			return terms(b.L) || terms(b.R)
		case opcode.EQ:
			return is(b.L, a.alias, a.table.PrivacyUnit) && is(b.R, j.alias, j.protected.PrivacyUnit) ||
				is(b.R, a.alias, a.table.PrivacyUnit) && is(b.L, j.alias, j.protected.PrivacyUnit)
		}
		return false
	}
	return terms(j.on)
}

// columnNames lists the columns a query may use.
func (j *joinedTable) columnNames() []string {
	var names []string
	if j.protected != nil {
		for _, c := range j.protected.Columns {
			names = append(names, c.Name)
		}
		return names
	}
	for _, c := range j.table.Columns {
		names = append(names, c.Name)
	}
	return names
}

// isUnitOf reports whether col is the privacy unit of the joined
// protected table.
func (j *joinedTable) isUnitOf(col *config.Column) bool {
	return j.protected != nil && strings.EqualFold(col.Name, j.protected.PrivacyUnit) && j.columns[strings.ToLower(col.Name)] == col
}

// joined is the joined table the query calls name, or nil.
func (a *analyzer) joined(name string) *joinedTable {
	for _, j := range a.joins {
		if strings.EqualFold(j.alias, name) {
			return j
		}
	}
	return nil
}

// joinedColumn resolves a reference to a joined table's column: qualified
// by its name, or unqualified when exactly one joined table has it and
// the protected table does not.
func (a *analyzer) joinedColumn(cn *ast.ColumnName, inProtected bool) (*config.Column, error) {
	if cn.Table.O != "" {
		j := a.joined(cn.Table.O)
		if j == nil {
			return nil, sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", cn.Table.O)
		}
		if c := j.column(cn.Name.O); c != nil {
			return c, nil
		}
		return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %s.%s does not exist", j.alias, cn.Name.O).
			WithHint("columns of %s: %s", j.alias, strings.Join(j.columnNames(), ", "))
	}
	var found *config.Column
	var in []string
	for _, j := range a.joins {
		if c := j.column(cn.Name.O); c != nil {
			found = c
			in = append(in, j.alias)
		}
	}
	if inProtected && found != nil {
		in = append([]string{a.alias}, in...)
	}
	if len(in) > 1 {
		return nil, sqlerr.New(sqlerr.AmbiguousColumn, "column reference %q is ambiguous", cn.Name.O).
			WithHint("qualify it with its table: %s.%s", in[0], cn.Name.O)
	}
	return found, nil
}

// owner is the alias of the table col belongs to in this query.
func (a *analyzer) owner(col *config.Column) string {
	for _, j := range a.joins {
		for _, c := range j.columns {
			if c == col {
				return j.alias
			}
		}
	}
	return a.alias
}

// colRef writes a reference to col: its name, qualified with its table's
// alias when the query joins tables.
func (a *analyzer) colRef(col *config.Column) string {
	q := a.opts.Dialect.QuoteIdent
	if !a.qualified() {
		return q(col.Name)
	}
	return q(a.owner(col)) + "." + q(col.Name)
}

// unitRef writes a reference to the privacy unit column.
func (a *analyzer) unitRef() string {
	q := a.opts.Dialect.QuoteIdent
	if !a.qualified() {
		return q(a.table.PrivacyUnit)
	}
	return q(a.alias) + "." + q(a.table.PrivacyUnit)
}

// fromSQL writes the FROM clause every query of the plan reads: the
// protected table, and the joins.
func (e *emitter) fromSQL(t *config.ProtectedTable) string {
	if !e.a.qualified() {
		return e.tableRef(t)
	}
	return e.a.joinSQL
}

// qualified reports whether column references name their table: when
// the query joins tables, or has an EXISTS subquery that refers to the
// protected table's columns (exists.go).
func (a *analyzer) qualified() bool { return len(a.joins) > 0 || a.correlated }

// emitJoins writes the FROM clause with its joins, once per plan (the
// conditions are emitted like WHERE's).
func (e *emitter) emitJoins() error {
	if !e.a.qualified() {
		return nil
	}
	q := e.d.QuoteIdent
	var sb strings.Builder
	sb.WriteString(e.tableRef(e.a.table) + " AS " + q(e.a.alias))
	for _, j := range e.a.joins {
		on, err := e.boolExpr(j.on)
		if err != nil {
			return err
		}
		kind := " JOIN "
		if j.left {
			kind = " LEFT JOIN "
		}
		var ref string
		if j.protected != nil {
			ref = e.tableRef(j.protected)
		} else {
			ref = q(j.table.Name)
			if j.table.Schema != "" {
				ref = q(j.table.Schema) + "." + ref
			}
		}
		sb.WriteString(kind + ref + " AS " + q(j.alias) + " ON " + on)
	}
	e.a.joinSQL = sb.String()
	return nil
}
