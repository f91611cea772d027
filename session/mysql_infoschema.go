package session

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// information_schema for MySQL clients. DBeaver, Tableau, Grafana,
// SQLAlchemy and many scripts discover tables and columns with queries
// such as
//
//	SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'demo'
//	SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS
//	    WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION
//
// A session of the MySQL front end answers them itself, from the policy:
// SCHEMATA lists information_schema and the served database, TABLES the
// policy's tables, COLUMNS a protected table's exposed columns (as the
// policy declares them) and a public table's columns (as the backend
// describes them, with no rows). No protected data is read, row counts
// and sizes are NULL, and nothing is charged.
//
// Supported: SELECT [DISTINCT] * or a list of the view's columns and
// constants (each optionally AS alias), or COUNT(*) alone, FROM one view
// (optionally aliased); WHERE made of =, <>, <, <=, >, >=, [NOT] IN (list),
// [NOT] LIKE, IS [NOT] NULL, AND, OR, NOT over the view's columns,
// constants, parameters and DATABASE(); ORDER BY columns or positions
// [ASC|DESC]; LIMIT n [OFFSET m]. Strings compare case-insensitively, as
// under MySQL's default collation. Column names come back as the view
// names them (upper case, as MySQL 8 does) unless aliased. Anything else
// on information_schema is refused with SQLSTATE 0A000.

// infoView is one view of information_schema.
type infoView struct {
	name    string
	columns []sqltypes.Column
}

func infoColumns(spec string) []sqltypes.Column {
	var cols []sqltypes.Column
	for _, f := range strings.Fields(spec) {
		name, typ, _ := strings.Cut(f, ":")
		t := sqltypes.Text
		switch typ {
		case "i":
			t = sqltypes.Int8
		case "ts":
			t = sqltypes.Timestamp
		}
		cols = append(cols, sqltypes.Column{Name: name, Type: t})
	}
	return cols
}

var (
	infoSchemata = &infoView{name: "SCHEMATA", columns: infoColumns(
		"CATALOG_NAME SCHEMA_NAME DEFAULT_CHARACTER_SET_NAME DEFAULT_COLLATION_NAME SQL_PATH DEFAULT_ENCRYPTION")}
	infoTables = &infoView{name: "TABLES", columns: infoColumns(
		"TABLE_CATALOG TABLE_SCHEMA TABLE_NAME TABLE_TYPE ENGINE VERSION:i ROW_FORMAT TABLE_ROWS:i AVG_ROW_LENGTH:i " +
			"DATA_LENGTH:i MAX_DATA_LENGTH:i INDEX_LENGTH:i DATA_FREE:i AUTO_INCREMENT:i CREATE_TIME:ts UPDATE_TIME:ts " +
			"CHECK_TIME:ts TABLE_COLLATION CHECKSUM:i CREATE_OPTIONS TABLE_COMMENT")}
	infoColumnsView = &infoView{name: "COLUMNS", columns: infoColumns(
		"TABLE_CATALOG TABLE_SCHEMA TABLE_NAME COLUMN_NAME ORDINAL_POSITION:i COLUMN_DEFAULT IS_NULLABLE DATA_TYPE " +
			"CHARACTER_MAXIMUM_LENGTH:i CHARACTER_OCTET_LENGTH:i NUMERIC_PRECISION:i NUMERIC_SCALE:i DATETIME_PRECISION:i " +
			"CHARACTER_SET_NAME COLLATION_NAME COLUMN_TYPE COLUMN_KEY EXTRA PRIVILEGES COLUMN_COMMENT GENERATION_EXPRESSION SRS_ID:i")}
	infoViews = []*infoView{infoSchemata, infoTables, infoColumnsView}
)

func (v *infoView) column(name string) int {
	for i, c := range v.columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// infoQuery is a checked query on one information_schema view.
type infoQuery struct {
	view  *infoView
	alias string
	// fields are the output columns; count is set for SELECT COUNT(*).
	fields   []infoField
	count    bool
	distinct bool
	where    ast.ExprNode
	order    []infoOrder
	limit    int64 // -1: none
	offset   int64
	// database is the database the session's DATABASE() named when the
	// query was checked.
	database string
}

// infoField is one output column: a view column (col ≥ 0) or a constant.
type infoField struct {
	col   int
	value any
	name  string
	typ   sqltypes.Type
}

// infoOrder is an ORDER BY key: a view column (col ≥ 0) or an output
// column that is a constant (field ≥ 0).
type infoOrder struct {
	col, field int
	desc       bool
}

// infoUnknown stands for a value not known yet (a column's, while only the
// table is known): comparisons with it are unknown too.
type infoUnknown struct{}

const infoHint = "information_schema supports SELECT [DISTINCT] columns or COUNT(*) FROM SCHEMATA, TABLES or COLUMNS with WHERE (=, <>, IN, LIKE, IS NULL, AND, OR, NOT), ORDER BY and LIMIT; SHOW TABLES and SHOW COLUMNS work too"

func infoUnsupported(format string, args ...any) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "information_schema: "+format+" is not supported by dpproxy", args...).WithHint("%s", infoHint)
}

// isInformationSchema reports whether a table name refers to
// information_schema: qualified with it, or unqualified while it is the
// current database (and not a policy table).
func (s *Session) isInformationSchema(tn *ast.TableName) bool {
	if strings.EqualFold(tn.Schema.O, "information_schema") {
		return true
	}
	if tn.Schema.O != "" || !strings.EqualFold(s.database, "information_schema") {
		return false
	}
	prot, pub := s.engine.Policy().LookupTable("", tn.Name.O)
	return prot == nil && pub == nil
}

// parseInformationSchema checks a statement that names information_schema.
// It returns nil, nil when the statement names none, and an *sqlerr.Error
// when it names it in a way that is not supported.
func (s *Session) parseInformationSchema(stmt ast.StmtNode) (*infoQuery, error) {
	c := &tableNames{}
	stmt.Accept(c)
	var tn *ast.TableName
	for _, t := range c.names {
		if s.isInformationSchema(t) {
			tn = t
			break
		}
	}
	if tn == nil {
		return nil, nil
	}
	sel, ok := stmt.(*ast.SelectStmt)
	if !ok {
		return nil, infoUnsupported("a statement other than SELECT")
	}
	var view *infoView
	for _, v := range infoViews {
		if strings.EqualFold(v.name, tn.Name.O) {
			view = v
		}
	}
	if view == nil {
		if len(c.names) == 1 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "information_schema.%s is not supported by dpproxy", tn.Name.O).WithHint("%s", infoHint)
		}
		return nil, infoUnsupported("information_schema.%s", tn.Name.O)
	}
	if len(c.names) != 1 {
		return nil, infoUnsupported("combining information_schema.%s with other tables, joins, subqueries or set operations", view.name)
	}
	switch {
	case sel.With != nil:
		return nil, infoUnsupported("WITH")
	case sel.Kind != ast.SelectStmtKindSelect:
		return nil, infoUnsupported("TABLE/VALUES")
	case sel.GroupBy != nil:
		return nil, infoUnsupported("GROUP BY")
	case sel.Having != nil:
		return nil, infoUnsupported("HAVING")
	case len(sel.WindowSpecs) > 0:
		return nil, infoUnsupported("WINDOW")
	case sel.SelectIntoOpt != nil:
		return nil, infoUnsupported("SELECT INTO")
	case sel.LockInfo != nil && sel.LockInfo.LockType != ast.SelectLockNone:
		return nil, infoUnsupported("a locking clause")
	case sel.From == nil || sel.From.TableRefs == nil || sel.From.TableRefs.Right != nil:
		return nil, infoUnsupported("this FROM clause")
	case len(tn.IndexHints) > 0 || len(tn.PartitionNames) > 0 || tn.TableSample != nil || tn.AsOf != nil:
		return nil, infoUnsupported("this table clause")
	}
	ts, ok := sel.From.TableRefs.Left.(*ast.TableSource)
	if !ok || ts.Source != tn {
		return nil, infoUnsupported("information_schema.%s in a derived table", view.name)
	}
	q := &infoQuery{view: view, alias: ts.AsName.O, distinct: sel.Distinct, where: sel.Where, limit: -1, database: s.database}

	for _, f := range sel.Fields.Fields {
		if f.WildCard != nil {
			if err := q.qualifier(f.WildCard.Schema.O, f.WildCard.Table.O); err != nil {
				return nil, err
			}
			for i, col := range view.columns {
				q.fields = append(q.fields, infoField{col: i, name: col.Name, typ: col.Type})
			}
			continue
		}
		if agg, ok := unparen(f.Expr).(*ast.AggregateFuncExpr); ok && strings.EqualFold(agg.F, ast.AggFuncCount) && !agg.Distinct && len(agg.Args) == 1 {
			if len(sel.Fields.Fields) != 1 {
				return nil, infoUnsupported("COUNT(*) with other columns")
			}
			if v, ok := agg.Args[0].(*test_driver.ValueExpr); !ok || v.Kind() == test_driver.KindNull {
				return nil, infoUnsupported("COUNT of an expression (only COUNT(*))")
			}
			name := f.AsName.O
			if name == "" {
				name = f.Text()
			}
			if name == "" {
				name = "COUNT(*)"
			}
			q.count = true
			q.fields = append(q.fields, infoField{col: -1, name: name, typ: sqltypes.Int8})
			continue
		}
		field := infoField{col: -1}
		switch x := unparen(f.Expr).(type) {
		case *ast.ColumnNameExpr:
			i, err := q.column(x.Name)
			if err != nil {
				return nil, err
			}
			field.col, field.name, field.typ = i, view.columns[i].Name, view.columns[i].Type
		default:
			v, err := s.infoEval(q, x, nil)
			if err != nil {
				return nil, infoUnsupported("this expression in the select list (only columns and constants can be selected)")
			}
			field.value, field.typ = v, sqltypes.Text
			if _, isInt := v.(int64); isInt {
				field.typ = sqltypes.Int8
			}
			field.name = f.Text()
		}
		if f.AsName.O != "" {
			field.name = f.AsName.O
		}
		q.fields = append(q.fields, field)
	}
	if q.count && (sel.Distinct || sel.OrderBy != nil) {
		return nil, infoUnsupported("COUNT(*) with DISTINCT or ORDER BY")
	}
	if sel.Where != nil {
		// Checked once with every column unknown: unsupported expressions
		// and unknown columns are refused before anything runs.
		unknown := make([]any, len(view.columns))
		for i := range unknown {
			unknown[i] = infoUnknown{}
		}
		if _, err := s.infoEval(q, sel.Where, unknown); err != nil {
			return nil, err
		}
	}
	if sel.OrderBy != nil {
		for _, item := range sel.OrderBy.Items {
			k, err := q.orderKey(item.Expr)
			if err != nil {
				return nil, err
			}
			k.desc = item.Desc
			q.order = append(q.order, k)
		}
	}
	if sel.Limit != nil {
		n, ok := nonNegativeInt(sel.Limit.Count)
		if !ok {
			return nil, infoUnsupported("a LIMIT other than a non-negative integer constant")
		}
		q.limit = n
		if sel.Limit.Offset != nil {
			if q.offset, ok = nonNegativeInt(sel.Limit.Offset); !ok {
				return nil, infoUnsupported("an OFFSET other than a non-negative integer constant")
			}
		}
	}
	return q, nil
}

// qualifier checks a column's or wildcard's qualifier: none, the view's
// name (with or without information_schema), or its alias.
func (q *infoQuery) qualifier(schema, table string) error {
	switch {
	case table == "" && schema == "":
		return nil
	case schema != "" && !strings.EqualFold(schema, "information_schema"):
	case q.alias != "" && strings.EqualFold(table, q.alias) && schema == "":
		return nil
	case q.alias == "" && strings.EqualFold(table, q.view.name):
		return nil
	}
	name := table
	if schema != "" {
		name = schema + "." + table
	}
	return sqlerr.New(sqlerr.UndefinedTable, "Unknown table '%s'", name)
}

func (q *infoQuery) column(cn *ast.ColumnName) (int, error) {
	if err := q.qualifier(cn.Schema.O, cn.Table.O); err != nil {
		return 0, err
	}
	i := q.view.column(cn.Name.O)
	if i < 0 {
		return 0, sqlerr.New(sqlerr.UndefinedColumn, "Unknown column '%s' in 'information_schema.%s'", cn.Name.O, q.view.name)
	}
	return i, nil
}

// orderKey resolves an ORDER BY item: a position or an output name (an
// output column), or a view column (selected or not).
func (q *infoQuery) orderKey(expr ast.ExprNode) (infoOrder, error) {
	field := func(i int) infoOrder {
		if f := q.fields[i]; f.col >= 0 {
			return infoOrder{col: f.col, field: -1}
		}
		return infoOrder{col: -1, field: i}
	}
	switch x := unparen(expr).(type) {
	case *ast.PositionExpr:
		if x.P == nil && x.N >= 1 && x.N <= len(q.fields) {
			return field(x.N - 1), nil
		}
		return infoOrder{}, sqlerr.New(sqlerr.UndefinedColumn, "Unknown column '%d' in 'order clause'", x.N)
	case *ast.ColumnNameExpr:
		if x.Name.Table.O == "" && x.Name.Schema.O == "" {
			for i, f := range q.fields {
				if strings.EqualFold(f.name, x.Name.Name.O) {
					return field(i), nil
				}
			}
		}
		col, err := q.column(x.Name)
		if err != nil {
			return infoOrder{}, err
		}
		return infoOrder{col: col, field: -1}, nil
	}
	return infoOrder{}, infoUnsupported("ORDER BY an expression (only columns and positions)")
}

// resultColumns are the query's output columns.
func (q *infoQuery) resultColumns() []sqltypes.Column {
	cols := make([]sqltypes.Column, len(q.fields))
	for i, f := range q.fields {
		cols[i] = sqltypes.Column{Name: f.name, Type: f.typ}
	}
	return cols
}

// mysqlSchemaName is the name under which information_schema lists the
// policy's tables: the served database, else the session's.
func (s *Session) mysqlSchemaName() string {
	if db := MySQLDatabase(s.engine.Policy()); db != "" {
		return db
	}
	if s.database != "" && !strings.EqualFold(s.database, "information_schema") {
		return s.database
	}
	return "def"
}

// answerInformationSchema answers a checked query from the policy (and,
// for a public table's columns, the backend's description of it).
func (s *Session) answerInformationSchema(ctx context.Context, q *infoQuery) (*sqltypes.Result, error) {
	db := s.mysqlSchemaName()
	var rows [][]any
	keep := func(row []any) (bool, error) {
		if q.where == nil {
			return true, nil
		}
		v, err := s.infoEval(q, q.where, row)
		if err != nil {
			return false, err
		}
		return infoTrue(v), nil
	}
	add := func(row []any) error {
		ok, err := keep(row)
		if ok {
			rows = append(rows, row)
		}
		return err
	}
	switch q.view {
	case infoSchemata:
		for _, name := range []string{"information_schema", db} {
			if err := add([]any{"def", name, "utf8mb4", "utf8mb4_general_ci", nil, "NO"}); err != nil {
				return nil, err
			}
		}
	case infoTables:
		for _, t := range s.tableNames() {
			comment := ""
			if prot, _ := s.engine.Policy().LookupTable("", t); prot != nil {
				comment = "dpproxy: protected, differentially private aggregates only"
			}
			row := []any{"def", db, t, "BASE TABLE", "InnoDB", int64(10), "Dynamic", nil, nil,
				nil, nil, nil, nil, nil, nil, nil,
				nil, "utf8mb4_general_ci", nil, "", comment}
			if err := add(row); err != nil {
				return nil, err
			}
		}
	case infoColumnsView:
		for _, t := range s.tableNames() {
			// The table's own columns first: a table the WHERE excludes
			// is not described (a public one would cost a backend call).
			partial := make([]any, len(q.view.columns))
			for i := range partial {
				partial[i] = infoUnknown{}
			}
			copy(partial, []any{"def", db, t})
			if q.where != nil {
				v, err := s.infoEval(q, q.where, partial)
				if err != nil {
					return nil, err
				}
				if !infoTrue(v) && !isInfoUnknown(v) {
					continue
				}
			}
			cols, err := s.FieldList(ctx, t)
			if err != nil {
				return nil, err
			}
			for i, c := range cols {
				if err := add(infoColumnRow(db, t, i+1, c)); err != nil {
					return nil, err
				}
			}
		}
	}

	res := &sqltypes.Result{}
	res.Columns = q.resultColumns()
	if q.count {
		res.Rows = [][]any{{int64(len(rows))}}
		if q.offset > 0 || q.limit == 0 {
			res.Rows = nil
		}
		res.Tag = fmt.Sprintf("SELECT %d", len(res.Rows))
		return res, nil
	}
	type pair struct{ row, out []any }
	pairs := make([]pair, len(rows))
	for n, row := range rows {
		o := make([]any, len(q.fields))
		for i, f := range q.fields {
			if f.col >= 0 {
				o[i] = row[f.col]
			} else {
				o[i] = f.value
			}
		}
		pairs[n] = pair{row, o}
	}
	if len(q.order) > 0 {
		slices.SortStableFunc(pairs, func(a, b pair) int {
			for _, k := range q.order {
				var c int
				if k.col >= 0 {
					c = compareInfoValues(a.row[k.col], b.row[k.col])
				} else {
					c = compareInfoValues(a.out[k.field], b.out[k.field])
				}
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
	out := make([][]any, 0, len(pairs))
	seen := map[string]bool{}
	for _, p := range pairs {
		if q.distinct {
			key := fmt.Sprintf("%#v", p.out)
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, p.out)
	}
	if q.offset > 0 {
		out = out[min(int64(len(out)), q.offset):]
	}
	if q.limit >= 0 && int64(len(out)) > q.limit {
		out = out[:q.limit]
	}
	res.Rows = out
	res.Tag = fmt.Sprintf("SELECT %d", len(out))
	return res, nil
}

// infoColumnRow is a COLUMNS row for one column of a table.
func infoColumnRow(db, table string, pos int, c sqltypes.Column) []any {
	colType := mysqlTypeName(c.Type)
	dataType, _, _ := strings.Cut(colType, "(")
	var charLen, octetLen, precision, scale, dtPrecision, charset, collation any
	switch c.Type {
	case sqltypes.Bool:
		precision, scale = int64(3), int64(0)
	case sqltypes.Int2:
		precision, scale = int64(5), int64(0)
	case sqltypes.Int4:
		precision, scale = int64(10), int64(0)
	case sqltypes.Int8:
		precision, scale = int64(19), int64(0)
	case sqltypes.Float4:
		precision = int64(12)
	case sqltypes.Float8:
		precision = int64(22)
	case sqltypes.Numeric:
		precision, scale = int64(65), int64(30)
	case sqltypes.Timestamp, sqltypes.Timestamptz:
		dtPrecision = int64(6)
	case sqltypes.Date:
	case sqltypes.Bytea:
		charLen, octetLen = int64(65535), int64(65535)
	default:
		charLen, octetLen = int64(65535), int64(65535)
		charset, collation = "utf8mb4", "utf8mb4_general_ci"
	}
	return []any{"def", db, table, c.Name, int64(pos), nil, "YES", dataType,
		charLen, octetLen, precision, scale, dtPrecision,
		charset, collation, colType, "", "", "select", "", "", nil}
}

func isInfoUnknown(v any) bool { _, ok := v.(infoUnknown); return ok }

// infoTrue reports whether a WHERE value is true (not false, NULL or
// unknown).
func infoTrue(v any) bool {
	switch x := v.(type) {
	case int64:
		return x != 0
	case string:
		f, _ := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f != 0
	}
	return false
}

func infoBool(b bool) any {
	if b {
		return int64(1)
	}
	return int64(0)
}

// infoEval evaluates a WHERE or select-list expression over a view row
// (nil: no row, constants only). Values are string, int64, nil (NULL) or
// infoUnknown. Both sides of AND and OR are always evaluated, so that an
// unsupported expression is refused whatever the data.
func (s *Session) infoEval(q *infoQuery, expr ast.ExprNode, row []any) (any, error) {
	switch x := expr.(type) {
	case *ast.ParenthesesExpr:
		return s.infoEval(q, x.Expr, row)
	case *test_driver.ValueExpr:
		switch x.Kind() {
		case test_driver.KindNull:
			return nil, nil
		case test_driver.KindInt64:
			return x.GetInt64(), nil
		case test_driver.KindUint64:
			return strconv.FormatUint(x.GetUint64(), 10), nil
		case test_driver.KindString:
			return x.GetString(), nil
		case test_driver.KindFloat64:
			return strconv.FormatFloat(x.GetFloat64(), 'g', -1, 64), nil
		case test_driver.KindMysqlDecimal:
			return x.GetMysqlDecimal().String(), nil
		}
		return nil, infoUnsupported("this constant")
	case *test_driver.ParamMarkerExpr:
		// Only while a prepared statement is described: its value is not
		// known yet.
		return infoUnknown{}, nil
	case *ast.ColumnNameExpr:
		if row == nil {
			return nil, infoUnsupported("a column here")
		}
		i, err := q.column(x.Name)
		if err != nil {
			return nil, err
		}
		return row[i], nil
	case *ast.FuncCallExpr:
		if len(x.Args) == 0 && (x.FnName.L == "database" || x.FnName.L == "schema") {
			if q.database == "" {
				return nil, nil
			}
			return q.database, nil
		}
		return nil, infoUnsupported("the function %s()", x.FnName.O)
	case *ast.UnaryOperationExpr:
		if x.Op != opcode.Not && x.Op != opcode.Not2 {
			break
		}
		v, err := s.infoEval(q, x.V, row)
		if err != nil || v == nil || isInfoUnknown(v) {
			return v, err
		}
		return infoBool(!infoTrue(v)), nil
	case *ast.BinaryOperationExpr:
		l, err := s.infoEval(q, x.L, row)
		if err != nil {
			return nil, err
		}
		r, err := s.infoEval(q, x.R, row)
		if err != nil {
			return nil, err
		}
		switch x.Op {
		case opcode.LogicAnd:
			switch {
			case isFalse(l) || isFalse(r):
				return int64(0), nil
			case isInfoUnknown(l) || isInfoUnknown(r):
				return infoUnknown{}, nil
			case l == nil || r == nil:
				return nil, nil
			}
			return int64(1), nil
		case opcode.LogicOr:
			switch {
			case infoTrue(l) || infoTrue(r):
				return int64(1), nil
			case isInfoUnknown(l) || isInfoUnknown(r):
				return infoUnknown{}, nil
			case l == nil || r == nil:
				return nil, nil
			}
			return int64(0), nil
		case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE, opcode.NullEQ:
			if isInfoUnknown(l) || isInfoUnknown(r) {
				return infoUnknown{}, nil
			}
			if x.Op == opcode.NullEQ {
				if l == nil || r == nil {
					return infoBool(l == nil && r == nil), nil
				}
				return infoBool(compareInfoValues(l, r) == 0), nil
			}
			if l == nil || r == nil {
				return nil, nil
			}
			c := compareInfoValues(l, r)
			switch x.Op {
			case opcode.EQ:
				return infoBool(c == 0), nil
			case opcode.NE:
				return infoBool(c != 0), nil
			case opcode.LT:
				return infoBool(c < 0), nil
			case opcode.LE:
				return infoBool(c <= 0), nil
			case opcode.GT:
				return infoBool(c > 0), nil
			}
			return infoBool(c >= 0), nil
		}
		return nil, infoUnsupported("the operator %s", x.Op)
	case *ast.PatternInExpr:
		if x.Sel != nil {
			return nil, infoUnsupported("IN (subquery)")
		}
		v, err := s.infoEval(q, x.Expr, row)
		if err != nil {
			return nil, err
		}
		found, sawNull, unknown := false, false, isInfoUnknown(v)
		for _, e := range x.List {
			item, err := s.infoEval(q, e, row)
			if err != nil {
				return nil, err
			}
			switch {
			case isInfoUnknown(item):
				unknown = true
			case item == nil:
				sawNull = true
			case v != nil && !isInfoUnknown(v) && compareInfoValues(v, item) == 0:
				found = true
			}
		}
		switch {
		case unknown:
			return infoUnknown{}, nil
		case v == nil:
			return nil, nil
		case found:
			return infoBool(!x.Not), nil
		case sawNull:
			return nil, nil
		}
		return infoBool(x.Not), nil
	case *ast.PatternLikeOrIlikeExpr:
		if x.Escape != '\\' {
			return nil, infoUnsupported("LIKE ... ESCAPE")
		}
		v, err := s.infoEval(q, x.Expr, row)
		if err != nil {
			return nil, err
		}
		p, err := s.infoEval(q, x.Pattern, row)
		if err != nil {
			return nil, err
		}
		if isInfoUnknown(v) || isInfoUnknown(p) {
			return infoUnknown{}, nil
		}
		if v == nil || p == nil {
			return nil, nil
		}
		m := likeMatch(strings.ToLower(infoText(p)), strings.ToLower(infoText(v)))
		return infoBool(m != x.Not), nil
	case *ast.IsNullExpr:
		v, err := s.infoEval(q, x.Expr, row)
		if err != nil || isInfoUnknown(v) {
			return v, err
		}
		return infoBool((v == nil) != x.Not), nil
	}
	return nil, infoUnsupported("this expression (%T)", expr)
}

func isFalse(v any) bool {
	if v == nil || isInfoUnknown(v) {
		return false
	}
	return !infoTrue(v)
}

func infoText(v any) string {
	if n, ok := v.(int64); ok {
		return strconv.FormatInt(n, 10)
	}
	s, _ := v.(string)
	return s
}

// compareInfoValues compares two non-NULL values: numerically when both
// are numbers, else as text without regard to case (NULLs first).
func compareInfoValues(a, b any) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		}
		return 1
	}
	an, aok := a.(int64)
	bn, bok := b.(int64)
	if aok && bok {
		return cmp.Compare(an, bn)
	}
	if aok || bok {
		af, aerr := strconv.ParseFloat(strings.TrimSpace(infoText(a)), 64)
		bf, berr := strconv.ParseFloat(strings.TrimSpace(infoText(b)), 64)
		if aerr == nil && berr == nil {
			return cmp.Compare(af, bf)
		}
	}
	as, bs := infoText(a), infoText(b)
	if c := strings.Compare(strings.ToLower(as), strings.ToLower(bs)); c != 0 {
		return c
	}
	return 0
}
