package rewrite

import (
	"slices"
	"strconv"
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
// Protected tables join when each joined row belongs to one person:
// their privacy units are equated (visits JOIN patients USING
// (patient_id)), or the join follows a key of a unit path (prescriptions
// JOIN visits ON rx.visit_id = v.visit_id, where prescriptions' unit is
// reached through visits.visit_id). Bounding per unit after the join then
// caps what one person contributes through all the tables together.
//
// A table whose unit path goes through a key (config.UnitHops) reaches its
// unit by joins dpproxy adds itself, inner joins on the keys with aliases
// dp_unit1, dp_unit2, ...: a row whose referenced row is missing belongs
// to no one and is left out, and each row meets at most one referenced row
// (the key is a primary key, checked at start).
//
// Refused: RIGHT and FULL joins (the public table's unmatched rows would
// belong to no person), joins without a condition, NATURAL joins, self
// joins, and protected tables joined on anything else than the unit or a
// unit path's key.

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
	// unitValued is set for a protected table whose privacy unit column
	// holds the unit (no key hops on its unit path).
	unitValued bool
}

// unitJoin is a join dpproxy adds to reach the protected table's privacy
// unit through a key of its unit path (config.UnitHop).
type unitJoin struct {
	hop   config.UnitHop
	alias string // dp_unit1, dp_unit2, ...
	// from is the reference the key equals: the protected table's unit
	// column, or the previous hop's.
	from string
	// provided is set when the query's own join is this one (alias is
	// then the query's): it is not written again.
	provided bool
}

// unitJoinAlias is the alias of the i-th unit join (from 0).
func unitJoinAlias(i int) string { return "dp_unit" + strconv.Itoa(i+1) }

// readUnitPath records the joins the protected table's unit path needs.
// The query's own inner join along the first key, when there is one,
// serves as the first: the table is joined once.
func (a *analyzer) readUnitPath() {
	hops := a.pol.UnitHops(a.table)
	for i, hop := range hops {
		a.unitJoins = append(a.unitJoins, unitJoin{hop: hop, alias: unitJoinAlias(i)})
	}
	if len(hops) > 0 {
		for _, j := range a.joins {
			if j.protected == hops[0].Table && !j.left && a.equates(j.on, tableColumn{a.alias, a.table.PrivacyUnit}, tableColumn{j.alias, hops[0].Key}) {
				a.unitJoins[0].alias, a.unitJoins[0].provided = j.alias, true
				break
			}
		}
	}
	q := a.opts.Dialect.QuoteIdent
	from := q(a.alias) + "." + q(a.table.PrivacyUnit)
	for i := range a.unitJoins {
		u := &a.unitJoins[i]
		u.from = from
		from = q(u.alias) + "." + q(u.hop.Table.PrivacyUnit)
	}
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
	// A column the policy lists in group_keys has a public key list, as
	// has, without group_keys, a small table's column (session/keys.go).
	c := &config.Column{Name: pc.Name, Type: pc.Type, GroupBy: true, Keys: j.table.Keys[strings.ToLower(pc.Name)], KeysAuto: j.table.AutoKeys[strings.ToLower(pc.Name)]}
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
	if err := a.checkAlias(a.alias); err != nil {
		return err
	}
	for _, step := range steps {
		if err := a.join(step); err != nil {
			return err
		}
	}
	a.readUnitPath()
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
	case pt != nil && slices.ContainsFunc(a.joins, func(j *joinedTable) bool { return j.protected == pt }):
		// Its columns are the policy's, one per table: a second copy's
		// would be written with the first one's alias (found in review).
		return sqlerr.New(sqlerr.FeatureNotSupported, "joining protected table %q twice is not supported", pt.Name).
			WithHint("join %s once; a second copy multiplies each person's rows", pt.Name)
	}
	name := tn.Name.O
	if ts.AsName.O != "" {
		name = ts.AsName.O
	}
	if strings.EqualFold(name, a.alias) || a.joined(name) != nil {
		return sqlerr.New(sqlerr.FeatureNotSupported, "table name %q is specified more than once", name).
			WithHint("give each table of the join its own alias")
	}
	if err := a.checkAlias(name); err != nil {
		return err
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
	jt.unitValued = pt != nil && len(a.pol.UnitHops(pt)) == 0
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
		return sqlerr.New(sqlerr.InsufficientPrivilege, "protected tables %q and %q must be joined on the privacy unit or a key of its path: otherwise one person's rows could join another's and their contribution would have no bound", a.table.Name, pt.Name).
			WithHint("%s", a.unitJoinHint(jt))
	}
	return nil
}

// checkAlias refuses a table name that is one of the unit joins' aliases.
func (a *analyzer) checkAlias(name string) error {
	if strings.HasPrefix(strings.ToLower(name), "dp_unit") {
		return sqlerr.New(sqlerr.FeatureNotSupported, "table name %q is reserved: dpproxy names the joins to a table's privacy unit dp_unit1, dp_unit2, ...", name).
			WithHint("give the table another alias")
	}
	return nil
}

// joinedProtected lists the protected tables of the join so far, the
// first one included, as (alias, table, unit valued).
func (a *analyzer) joinedProtected() []*joinedTable {
	tables := []*joinedTable{{protected: a.table, alias: a.alias, unitValued: len(a.pol.UnitHops(a.table)) == 0}}
	for _, j := range a.joins {
		if j.protected != nil {
			tables = append(tables, j)
		}
	}
	return tables
}

// tableColumn is a column of a table of the query, by its alias.
type tableColumn struct{ alias, column string }

func (c tableColumn) String() string { return c.alias + "." + c.column }

// unitJoinHint says how j may be joined to the protected tables before
// it.
func (a *analyzer) unitJoinHint(j *joinedTable) string {
	var ways []string
	for _, pair := range a.unitPairs(j) {
		ways = append(ways, "ON "+pair[0].String()+" = "+pair[1].String())
	}
	if len(ways) == 0 {
		return "no join of " + j.protected.Name + " with the tables before it keeps each joined row to one person; query it on its own"
	}
	return "join with " + strings.Join(ways, ", or ") + " (AND other conditions)"
}

// unitPairs lists the equalities that join j to a protected table before
// it with each joined row belonging to one person: their unit columns
// when both hold the unit, or a key of a unit path (a table's rows
// reference j's at a key, or j's rows reference that table's).
func (a *analyzer) unitPairs(j *joinedTable) [][2]tableColumn {
	var pairs [][2]tableColumn
	ref := func(alias, col string) tableColumn { return tableColumn{alias, col} }
	for _, x := range a.joinedProtected() {
		if x == j {
			continue
		}
		if x.unitValued && j.unitValued {
			pairs = append(pairs, [2]tableColumn{ref(x.alias, x.protected.PrivacyUnit), ref(j.alias, j.protected.PrivacyUnit)})
		}
		// The first hop's key equals the table's unit column (direct
		// references before it carry the same values).
		if hops := a.pol.UnitHops(x.protected); len(hops) > 0 && hops[0].Table == j.protected {
			pairs = append(pairs, [2]tableColumn{ref(x.alias, x.protected.PrivacyUnit), ref(j.alias, hops[0].Key)})
		}
		if hops := a.pol.UnitHops(j.protected); len(hops) > 0 && hops[0].Table == x.protected {
			pairs = append(pairs, [2]tableColumn{ref(j.alias, j.protected.PrivacyUnit), ref(x.alias, hops[0].Key)})
		}
	}
	return pairs
}

// joinsOnUnit reports whether a protected table's join condition has,
// as one of its AND-ed terms, an equality unitPairs allows: then each
// joined row belongs to one person, and bounding per unit after the join
// bounds what one person contributes through all the tables.
func (a *analyzer) joinsOnUnit(j *joinedTable) bool {
	for _, p := range a.unitPairs(j) {
		if a.equates(j.on, p[0], p[1]) {
			return true
		}
	}
	return false
}

// equates reports whether the condition has x = y as one of its AND-ed
// terms, with both columns qualified: by their table's alias, or by schema
// and name for the first table when the query does not alias it (as
// Metabase writes "public"."visits"."patient_id"; column resolves those
// the same way).
func (a *analyzer) equates(cond ast.ExprNode, x, y tableColumn) bool {
	is := func(e ast.ExprNode, r tableColumn) bool {
		c, ok := unparen(e).(*ast.ColumnNameExpr)
		if !ok || !strings.EqualFold(c.Name.Table.O, r.alias) || !strings.EqualFold(c.Name.Name.O, r.column) {
			return false
		}
		return c.Name.Schema.O == "" || strings.EqualFold(r.alias, a.alias) && strings.EqualFold(a.alias, a.table.Name)
	}
	b, ok := unparen(cond).(*ast.BinaryOperationExpr)
	switch {
	case !ok:
		return false
	case b.Op == opcode.LogicAnd:
		return a.equates(b.L, x, y) || a.equates(b.R, x, y)
	case b.Op == opcode.EQ:
		return is(b.L, x) && is(b.R, y) || is(b.L, y) && is(b.R, x)
	}
	return false
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
	// A LEFT-joined table's unit is NULL where it has no row: not the
	// unit of every joined row (COUNT(DISTINCT) counts its values).
	return j.protected != nil && j.unitValued && !j.left && strings.EqualFold(col.Name, j.protected.PrivacyUnit) && j.columns[strings.ToLower(col.Name)] == col
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
	if n := len(a.unitJoins); n > 0 {
		last := a.unitJoins[n-1]
		return q(last.alias) + "." + q(last.hop.Table.PrivacyUnit)
	}
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

// neverNull reports whether col's value is never NULL in the query's
// rows: the database declares it NOT NULL (config.Column.NotNull) and it
// is a column of the protected table the query reads first, which no join
// makes NULL (RIGHT JOIN is refused; a LEFT JOIN's NULLs are on the
// joined table's side).
func (a *analyzer) neverNull(col *config.Column) bool {
	if !col.NotNull {
		return false
	}
	for i := range a.table.Columns {
		if &a.table.Columns[i] == col {
			return true
		}
	}
	return false
}

// unitNeverNull reports whether the query's unit is never NULL: the
// protected table's own column (no unit path joined), which the database
// declares NOT NULL (config.ProtectedTable.UnitNotNull).
func (a *analyzer) unitNeverNull() bool {
	return len(a.unitJoins) == 0 && !a.table.IsRowPrivacy() && a.table.UnitNotNull
}

// qualified reports whether column references name their table: when
// the query joins tables, or has an EXISTS subquery that refers to the
// protected table's columns (exists.go).
func (a *analyzer) qualified() bool {
	return len(a.joins) > 0 || len(a.unitJoins) > 0 || a.correlated
}

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
	// The unit joins come last: they refer to the first table or to the
	// query's inner join along the first key, and an inner join on the
	// first table's columns gives the same rows wherever it is written.
	for _, u := range e.a.unitJoins {
		if !u.provided {
			sb.WriteString(" JOIN " + e.tableRef(u.hop.Table) + " AS " + q(u.alias) + " ON " + u.from + " = " + q(u.alias) + "." + q(u.hop.Key))
		}
	}
	e.a.joinSQL = sb.String()
	return nil
}
