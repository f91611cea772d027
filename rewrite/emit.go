package rewrite

import (
	"math"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// emitter writes backend SQL for one plan. WHERE expressions are rebuilt
// from the AST through an allowlist: every construct it writes is one that
// cannot raise an error depending on a row's data, so no error can reveal
// one unit's values.
type emitter struct {
	d Dialect
	a *analyzer
}

// valueKind is the coarse type of an operand, for type checks before any
// SQL reaches the backend.
type valueKind int

const (
	kindNull valueKind = iota
	kindNumber
	kindText
	kindTemporal
	kindBool
)

func (k valueKind) String() string {
	return [...]string{"NULL", "number", "text", "date/time", "boolean"}[k]
}

func kindOf(t config.ColumnType) valueKind {
	switch {
	case t.Numeric():
		return kindNumber
	case t == config.TypeDate || t == config.TypeTimestamp:
		return kindTemporal
	case t == config.TypeBool:
		return kindBool
	}
	return kindText
}

func whereError(format string, args ...any) *sqlerr.Error {
	return sqlerr.New(sqlerr.FeatureNotSupported, format, args...).
		WithHint("WHERE on protected tables allows comparisons (=, <>, <, <=, >, >=), AND, OR, NOT, IN (list), BETWEEN, IS [NOT] NULL and LIKE between columns and constants")
}

// boolExpr writes a condition.
func (e *emitter) boolExpr(expr ast.ExprNode) (string, error) {
	switch x := expr.(type) {
	case *ast.ParenthesesExpr:
		inner, err := e.boolExpr(x.Expr)
		return "(" + inner + ")", err
	case *ast.BinaryOperationExpr:
		switch x.Op {
		case opcode.LogicAnd, opcode.LogicOr:
			l, err := e.boolExpr(x.L)
			if err != nil {
				return "", err
			}
			r, err := e.boolExpr(x.R)
			if err != nil {
				return "", err
			}
			op := " AND "
			if x.Op == opcode.LogicOr {
				op = " OR "
			}
			return "(" + l + op + r + ")", nil
		case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE:
			return e.comparison(x)
		}
		return "", whereError("operator %s is not supported in WHERE on protected tables", strings.ToUpper(x.Op.String()))
	case *ast.UnaryOperationExpr:
		if x.Op == opcode.Not || x.Op == opcode.Not2 {
			inner, err := e.boolExpr(x.V)
			return "(NOT " + inner + ")", err
		}
	case *ast.PatternInExpr:
		return e.in(x)
	case *ast.BetweenExpr:
		return e.between(x)
	case *ast.IsNullExpr:
		v, _, err := e.operand(x.Expr)
		if err != nil {
			return "", err
		}
		if x.Not {
			return "(" + v + " IS NOT NULL)", nil
		}
		return "(" + v + " IS NULL)", nil
	case *ast.PatternLikeOrIlikeExpr:
		return e.like(x)
	case *ast.ColumnNameExpr:
		v, k, err := e.operand(x)
		if err != nil {
			return "", err
		}
		if k != kindBool {
			return "", sqlerr.New(sqlerr.DatatypeMismatch, "argument of WHERE must be boolean, not %s", k).
				WithHint("compare the column with a value: WHERE %s = ... or WHERE %s IS NOT NULL", x.Name.Name.O, x.Name.Name.O)
		}
		return v, nil
	case *test_driver.ValueExpr:
		switch x.Kind() {
		case test_driver.KindInt64, test_driver.KindUint64:
			if x.GetValue() == int64(0) || x.GetValue() == uint64(0) {
				return "(1 = 0)", nil
			}
			return "(1 = 1)", nil
		}
	case *ast.ExistsSubqueryExpr:
		return e.existsPublic(x)
	case *ast.SubqueryExpr, *ast.CompareSubqueryExpr:
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "this subquery is not allowed in WHERE on protected tables").
			WithHint("a condition may test a column against a public table's values: WHERE clinic_id IN (SELECT clinic_id FROM clinics WHERE city = 'Midvale')")
	case *ast.FuncCallExpr:
		return "", whereError("function %s() is not allowed in WHERE on protected tables", x.FnName.O)
	}
	return "", whereError("this WHERE expression is not supported on protected tables")
}

func (e *emitter) comparison(x *ast.BinaryOperationExpr) (string, error) {
	l, lk, err := e.operand(x.L)
	if err != nil {
		return "", err
	}
	r, rk, err := e.operand(x.R)
	if err != nil {
		return "", err
	}
	if r, rk, err = coerceLiteral(r, rk, x.R, lk); err != nil {
		return "", err
	}
	if l, lk, err = coerceLiteral(l, lk, x.L, rk); err != nil {
		return "", err
	}
	if err := compatible(lk, rk, x.L, x.R); err != nil {
		return "", err
	}
	if r, err = e.dateLiteral(r, rk, x.R, lk, x.L); err != nil {
		return "", err
	}
	if l, err = e.dateLiteral(l, lk, x.L, rk, x.R); err != nil {
		return "", err
	}
	if r, err = boolLiteral(r, lk, rk, x.R); err != nil {
		return "", err
	}
	if l, err = boolLiteral(l, rk, lk, x.L); err != nil {
		return "", err
	}
	if e.needsCollation(lk, rk, x.L, x.R) {
		l, r = collated(l), collated(r)
	}
	l, r = e.constant(l, x.L), e.constant(r, x.R)
	ops := map[opcode.Op]string{opcode.EQ: "=", opcode.NE: "<>", opcode.LT: "<", opcode.LE: "<=", opcode.GT: ">", opcode.GE: ">="}
	return "(" + l + " " + ops[x.Op] + " " + r + ")", nil
}

// needsCollation reports whether two operands are text columns compared
// on PostgreSQL, which then get an explicit collation (collated): columns
// of different collations would otherwise fail with 42P22 when a row
// reaches the comparison, an error that depends on the data (found in
// review). "C" equality is byte equality, as every deterministic
// collation's is; its order is bytewise.
func (e *emitter) needsCollation(lk, rk valueKind, le, re ast.ExprNode) bool {
	_, lcol := unparen(le).(*ast.ColumnNameExpr)
	_, rcol := unparen(re).(*ast.ColumnNameExpr)
	return e.d.Name() == "postgres" && lk == kindText && rk == kindText && lcol && rcol
}

// collated writes an operand under the "C" collation, in parentheses
// (PostgreSQL's BETWEEN bounds take no bare COLLATE).
func collated(operand string) string { return "(" + operand + ` COLLATE "C")` }

func (e *emitter) in(x *ast.PatternInExpr) (string, error) {
	v, k, err := e.operand(x.Expr)
	if err != nil {
		return "", err
	}
	if x.Sel != nil {
		return e.inPublicSubquery(v, x)
	}
	items := make([]string, len(x.List))
	collate := false
	for i, item := range x.List {
		s, ik, err := e.operand(item)
		if err != nil {
			return "", err
		}
		if s, ik, err = coerceLiteral(s, ik, item, k); err != nil {
			return "", err
		}
		if err := compatible(k, ik, x.Expr, item); err != nil {
			return "", err
		}
		if s, err = e.dateLiteral(s, ik, item, k, x.Expr); err != nil {
			return "", err
		}
		if e.needsCollation(k, ik, x.Expr, item) {
			s, collate = collated(s), true
		}
		items[i] = e.constant(s, item)
	}
	if collate {
		v = collated(v) // every item then compares under "C"
	}
	v = e.constant(v, x.Expr)
	not := ""
	if x.Not {
		not = "NOT "
	}
	return "(" + v + " " + not + "IN (" + strings.Join(items, ", ") + "))", nil
}

// inPublicSubquery writes `v [NOT] IN (subquery)` for a subquery over
// public tables only: a condition on each row that reads public data, so
// the plan's bounding and sensitivities are unchanged. The subquery is
// uncorrelated (a reference to the outer query is refused, and it is sent
// as a derived table, which could not see one), so it is the same set of
// values for every row.
func (e *emitter) inPublicSubquery(v string, x *ast.PatternInExpr) (string, error) {
	sub, ok := x.Sel.(*ast.SubqueryExpr)
	if !ok {
		return "", whereError("this IN (subquery) form is not supported")
	}
	if one, ok := sub.Query.(*ast.SelectStmt); !ok || len(one.Fields.Fields) != 1 || one.Fields.Fields[0].WildCard != nil || isRow(one.Fields.Fields[0].Expr) {
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "the subquery of IN must be one SELECT of one column").
			WithHint("write col IN (SELECT key FROM public_table WHERE ...)")
	}
	sql, err := e.publicSubquery(sub, "the subquery of IN", "IN (SELECT ...)", false)
	if err != nil {
		return "", err
	}
	not := ""
	if x.Not {
		not = "NOT "
	}
	return "(" + v + " " + not + "IN (SELECT * FROM (" + sql + ") AS " + e.d.QuoteIdent("dp_in") + "))", nil
}

// isRow reports whether expr is a row constructor, (a, b) or ROW(a, b),
// which IN compares with one column on no backend (found by FuzzAnalyze).
func isRow(expr ast.ExprNode) bool {
	_, ok := unparen(expr).(*ast.RowExpr)
	return ok
}

// publicTablesOf checks that a subquery in WHERE reads public tables only
// (what and form name it in messages) and returns them by lower-case name.
func (e *emitter) publicTablesOf(sub *ast.SubqueryExpr, what, form string) (map[string]*config.PublicTable, error) {
	tables := map[string]*config.PublicTable{}
	for _, tn := range collectTables(sub.Query) {
		pt, pub := e.a.pol.LookupTable(tn.Schema.O, tn.Name.O)
		if pt != nil {
			return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "%s reads protected table %q", what, pt.Name).
				WithHint("%s may read public tables only; to combine protected tables, join them on the privacy unit", form)
		}
		if pub == nil {
			return nil, unknownTable(tn, e.a.pol)
		}
		tables[strings.ToLower(tn.Name.O)] = pub
	}
	return tables, nil
}

// publicSubquery checks a WHERE subquery — public tables only (what and
// form name it in messages), every column theirs or, with outer, an
// exposed column of the outer query (checkSubqueryColumns), the functions
// a passthrough query may use — and writes it for the backend.
func (e *emitter) publicSubquery(sub *ast.SubqueryExpr, what, form string, outer bool) (string, error) {
	tables, err := e.publicTablesOf(sub, what, form)
	if err != nil {
		return "", err
	}
	if err := e.checkSubqueryColumns(sub, tables, outer); err != nil {
		return "", err
	}
	if err := checkPassthrough(sub.Query); err != nil {
		return "", err
	}
	dropDefaultSchema(sub.Query, e.a.pol)
	return restoreFor(sub.Query, e.d, e.a.opts.Casts)
}

func (e *emitter) between(x *ast.BetweenExpr) (string, error) {
	v, k, err := e.operand(x.Expr)
	if err != nil {
		return "", err
	}
	lo, lk, err := e.operand(x.Left)
	if err != nil {
		return "", err
	}
	hi, hk, err := e.operand(x.Right)
	if err != nil {
		return "", err
	}
	if lo, lk, err = coerceLiteral(lo, lk, x.Left, k); err != nil {
		return "", err
	}
	if hi, hk, err = coerceLiteral(hi, hk, x.Right, k); err != nil {
		return "", err
	}
	if err := compatible(k, lk, x.Expr, x.Left); err != nil {
		return "", err
	}
	if err := compatible(k, hk, x.Expr, x.Right); err != nil {
		return "", err
	}
	if lo, err = e.dateLiteral(lo, lk, x.Left, k, x.Expr); err != nil {
		return "", err
	}
	if hi, err = e.dateLiteral(hi, hk, x.Right, k, x.Expr); err != nil {
		return "", err
	}
	if e.needsCollation(k, lk, x.Expr, x.Left) || e.needsCollation(k, hk, x.Expr, x.Right) {
		v, lo, hi = collated(v), collated(lo), collated(hi)
	}
	v, lo, hi = e.constant(v, x.Expr), e.constant(lo, x.Left), e.constant(hi, x.Right)
	not := ""
	if x.Not {
		not = "NOT "
	}
	return "(" + v + " " + not + "BETWEEN " + lo + " AND " + hi + ")", nil
}

func (e *emitter) like(x *ast.PatternLikeOrIlikeExpr) (string, error) {
	if !x.IsLike {
		return "", whereError("ILIKE is not supported yet; use LIKE")
	}
	v, k, err := e.operand(x.Expr)
	if err != nil {
		return "", err
	}
	if k != kindText {
		return "", sqlerr.New(sqlerr.DatatypeMismatch, "LIKE needs a text column, not %s", k).
			WithHint("compare numbers and dates with =, <, > or BETWEEN")
	}
	pat, ok := x.Pattern.(*test_driver.ValueExpr)
	if !ok || pat.Kind() != test_driver.KindString {
		return "", whereError("the LIKE pattern must be a string constant")
	}
	p, err := e.d.QuoteString(pat.GetString())
	if err != nil {
		return "", sqlerr.New(sqlerr.InvalidParameterValue, "invalid LIKE pattern: %v", err)
	}
	escape := x.Escape
	if escape == 0 {
		escape = '\\'
	}
	esc, err := e.d.QuoteString(string(rune(escape)))
	if err != nil {
		return "", err
	}
	not := ""
	if x.Not {
		not = "NOT "
	}
	return "(" + v + " " + not + "LIKE " + e.constant(p, x.Pattern) + " ESCAPE " + esc + ")", nil
}

// constant marks the final SQL text of an operand that is one of the
// query's constants, so that the plan can send it as a parameter
// (constants.go); other operands are returned as they are.
func (e *emitter) constant(sql string, expr ast.ExprNode) string {
	switch x := unparen(expr).(type) {
	case *test_driver.ValueExpr:
	case *ast.UnaryOperationExpr:
		if _, lit := x.V.(*test_driver.ValueExpr); x.Op != opcode.Minus || !lit {
			return sql
		}
	case *ast.FuncCallExpr:
		if typedLiteral(x) == nil {
			return sql
		}
	default:
		return sql
	}
	return e.a.consts.mark(sql)
}

// operand writes a column reference or a constant.
func (e *emitter) operand(expr ast.ExprNode) (string, valueKind, error) {
	switch x := expr.(type) {
	case *ast.ParenthesesExpr:
		return e.operand(x.Expr)
	case *ast.ColumnNameExpr:
		col, err := e.a.column(x.Name)
		if err != nil {
			return "", 0, err
		}
		return e.a.colRef(col), kindOf(col.Type), nil
	case *ast.UnaryOperationExpr:
		if x.Op == opcode.Minus {
			if v, ok := x.V.(*test_driver.ValueExpr); ok {
				s, k, err := e.literal(v)
				if err == nil && k == kindNumber {
					if strings.HasPrefix(s, "-") {
						return s[1:], k, nil
					}
					return "-" + s, k, nil
				}
			}
		}
	case *test_driver.ValueExpr:
		return e.literal(x)
	case *ast.FuncCastExpr:
		return e.castConstant(x)
	case *ast.CaseExpr:
		return e.caseOperand(x)
	case *ast.FuncCallExpr:
		if x.FnName.L == "coalesce" && x.Schema.L == "" {
			return e.coalesce(x)
		}
		if lit := typedLiteral(x); lit != nil {
			// DATE '2024-01-01' (and TIME, TIMESTAMP): the quoted
			// constant, checked as a date where it meets one.
			s, _, err := e.literal(lit)
			if err != nil {
				return "", 0, err
			}
			return s, kindText, nil
		}
		return "", 0, sqlerr.New(sqlerr.FeatureNotSupported, "function %s() is not allowed on protected tables yet", x.FnName.O).
			WithHint("compare columns with constants; CASE and COALESCE are allowed")
	case *ast.BinaryOperationExpr:
		return "", 0, whereError("arithmetic (%s) is not allowed on protected tables: it could fail on one person's data", strings.ToUpper(x.Op.String()))
	case *ast.SubqueryExpr:
		return "", 0, sqlerr.New(sqlerr.FeatureNotSupported, "scalar subqueries are not allowed in queries on protected tables").
			WithHint("compare with a constant, or test membership in a public table: WHERE clinic_id IN (SELECT clinic_id FROM clinics WHERE ...)")
	}
	return "", 0, whereError("this expression is not supported on protected tables")
}

// caseOperand writes CASE [value] WHEN ... THEN ... [ELSE ...] END whose
// conditions are WHERE conditions (or constants compared with value) and
// whose results are columns or constants of one type: it cannot fail on
// any row.
func (e *emitter) caseOperand(x *ast.CaseExpr) (string, valueKind, error) {
	var sb strings.Builder // the WHEN and ELSE clauses
	value, valueKind, collate := "", kindNull, false
	if x.Value != nil {
		v, k, err := e.operand(x.Value)
		if err != nil {
			return "", 0, err
		}
		value, valueKind = " "+v, k
	}
	kind := kindNull
	result := func(expr ast.ExprNode) (string, error) {
		r, rk, err := e.operand(expr)
		if err != nil {
			return "", err
		}
		if r, rk, err = coerceLiteral(r, rk, expr, kind); err != nil {
			return "", err
		}
		if kind != kindNull && rk != kindNull && rk != kind {
			return "", sqlerr.New(sqlerr.DatatypeMismatch, "CASE results must have one type, not %s and %s", kind, rk).
				WithHint("give every THEN and ELSE a value of one type (all numbers, or all text)")
		}
		if rk != kindNull {
			kind = rk
		}
		return r, nil
	}
	for _, w := range x.WhenClauses {
		var cond string
		if x.Value != nil {
			c, ck, err := e.operand(w.Expr)
			if err != nil {
				return "", 0, err
			}
			if c, ck, err = coerceLiteral(c, ck, w.Expr, valueKind); err != nil {
				return "", 0, err
			}
			if err := compatible(valueKind, ck, x.Value, w.Expr); err != nil {
				return "", 0, err
			}
			if c, err = e.dateLiteral(c, ck, w.Expr, valueKind, x.Value); err != nil {
				return "", 0, err
			}
			if e.needsCollation(valueKind, ck, x.Value, w.Expr) {
				c, collate = collated(c), true
			}
			cond = c
		} else {
			c, err := e.boolExpr(w.Expr)
			if err != nil {
				return "", 0, err
			}
			cond = c
		}
		r, err := result(w.Result)
		if err != nil {
			return "", 0, err
		}
		sb.WriteString(" WHEN " + cond + " THEN " + r)
	}
	if x.ElseClause != nil {
		r, err := result(x.ElseClause)
		if err != nil {
			return "", 0, err
		}
		sb.WriteString(" ELSE " + r)
	}
	if collate {
		value = " " + collated(strings.TrimPrefix(value, " "))
	}
	return "(CASE" + value + sb.String() + " END)", kind, nil
}

// coalesce writes COALESCE over columns and constants of one type.
func (e *emitter) coalesce(x *ast.FuncCallExpr) (string, valueKind, error) {
	if len(x.Args) == 0 {
		return "", 0, whereError("COALESCE needs arguments")
	}
	kind := kindNull
	args := make([]string, len(x.Args))
	for i, arg := range x.Args {
		a, k, err := e.operand(arg)
		if err != nil {
			return "", 0, err
		}
		if a, k, err = coerceLiteral(a, k, arg, kind); err != nil {
			return "", 0, err
		}
		if kind != kindNull && k != kindNull && k != kind {
			return "", 0, sqlerr.New(sqlerr.DatatypeMismatch, "COALESCE arguments must have one type, not %s and %s", kind, k).
				WithHint("give COALESCE a fallback of the column's type: COALESCE(note, 'none'), COALESCE(cost, 0)")
		}
		if k != kindNull {
			kind = k
		}
		args[i] = a
	}
	if len(args) == 1 {
		// COALESCE(x) is x; SQLite and MySQL refuse it with one argument.
		return "(" + args[0] + ")", kind, nil
	}
	return "COALESCE(" + strings.Join(args, ", ") + ")", kind, nil
}

// castConstant writes a cast of a constant ('2024-01-01'::date, '10'::int)
// as a constant of the cast's type. Casts of columns are refused: a cast
// can fail on a value ('abc'::int), and so on one person's data.
func (e *emitter) castConstant(x *ast.FuncCastExpr) (string, valueKind, error) {
	v, ok := unparen(x.Expr).(*test_driver.ValueExpr)
	if !ok {
		return "", 0, whereError("casts are allowed on constants only in queries on protected tables: a cast of a column could fail on one person's value")
	}
	kind := kindNumber
	if e.a.opts.Casts != nil {
		info, ok := e.a.opts.Casts(x)
		if !ok {
			return "", 0, whereError("this cast syntax is not supported")
		}
		base, _, _ := strings.Cut(info.Type, "(")
		switch base {
		case "integer", "smallint", "bigint", "numeric", "real", "double precision":
		case "date", "timestamp", "timestamp with time zone", "time":
			kind = kindTemporal
		default:
			kind = kindText
		}
	} else {
		switch x.Tp.GetType() {
		case mysql.TypeDate, mysql.TypeDatetime, mysql.TypeTimestamp, mysql.TypeDuration:
			kind = kindTemporal
		case mysql.TypeVarString, mysql.TypeString, mysql.TypeVarchar:
			kind = kindText
		}
	}
	lit, litKind, err := e.literal(v)
	if err != nil || litKind == kindNull {
		return lit, litKind, err
	}
	switch kind {
	case kindNumber:
		if litKind == kindNumber {
			return lit, kindNumber, nil
		}
		f, perr := strconv.ParseFloat(strings.TrimSpace(v.GetString()), 64)
		if perr != nil {
			return "", 0, sqlerr.New(sqlerr.InvalidTextRepresent, "invalid input syntax for a number: %q", v.GetString()).
				WithHint("compare a numeric column with a number, such as 42 or 3.5")
		}
		return strconv.FormatFloat(f, 'g', -1, 64), kindNumber, nil
	case kindTemporal:
		if err := validDate(v); err != nil {
			return "", 0, err
		}
		return lit, kindTemporal, nil
	}
	if litKind == kindText {
		return lit, kindText, nil
	}
	q, qerr := e.d.QuoteString(lit)
	return q, kindText, qerr
}

func (e *emitter) literal(v *test_driver.ValueExpr) (string, valueKind, error) {
	switch v.Kind() {
	case test_driver.KindNull:
		return "NULL", kindNull, nil
	case test_driver.KindInt64:
		return strconv.FormatInt(v.GetInt64(), 10), kindNumber, nil
	case test_driver.KindUint64:
		return strconv.FormatUint(v.GetUint64(), 10), kindNumber, nil
	case test_driver.KindFloat64:
		return strconv.FormatFloat(v.GetFloat64(), 'g', -1, 64), kindNumber, nil
	case test_driver.KindMysqlDecimal:
		return v.GetMysqlDecimal().String(), kindNumber, nil
	case test_driver.KindString:
		s, err := e.d.QuoteString(v.GetString())
		if err != nil {
			return "", 0, sqlerr.New(sqlerr.InvalidParameterValue, "invalid string constant: %v", err)
		}
		return s, kindText, nil
	}
	return "", 0, whereError("this kind of constant is not supported")
}

// coerceLiteral reads a quoted constant compared with a number as the
// number it spells, as PostgreSQL reads an untyped literal ('18' = 18;
// pgx's simple protocol sends every argument that way). A constant that is
// not a number is refused before anything runs, as PostgreSQL refuses it.
func coerceLiteral(sql string, k valueKind, expr ast.ExprNode, want valueKind) (string, valueKind, error) {
	if k != kindText || want != kindNumber {
		return sql, k, nil
	}
	v, ok := unparen(expr).(*test_driver.ValueExpr)
	if !ok || v.Kind() != test_driver.KindString {
		return sql, k, nil
	}
	text := strings.TrimSpace(v.GetString())
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return "", 0, sqlerr.New(sqlerr.InvalidTextRepresent, "invalid input syntax for a number: %q", v.GetString()).
			WithHint("compare a numeric column with a finite number, such as 42 or 3.5")
	}
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return strconv.FormatInt(n, 10), kindNumber, nil
	}
	return strconv.FormatFloat(f, 'g', -1, 64), kindNumber, nil
}

// boolLiteral writes a number constant compared with a boolean column as
// the boolean it stands for (TRUE is the number 1 to the TiDB parser):
// PostgreSQL refuses boolean = integer; TRUE and FALSE read the same on
// all three backends. Other numbers are refused.
func boolLiteral(sql string, other, k valueKind, expr ast.ExprNode) (string, error) {
	if other != kindBool || k != kindNumber {
		return sql, nil
	}
	v, ok := unparen(expr).(*test_driver.ValueExpr)
	if ok && v.Kind() == test_driver.KindInt64 {
		switch v.GetInt64() {
		case 1:
			return "TRUE", nil
		case 0:
			return "FALSE", nil
		}
	}
	return "", sqlerr.New(sqlerr.DatatypeMismatch, "cannot compare boolean with number %s", sql).
		WithHint("compare a boolean column with TRUE or FALSE")
}

// compatible checks that two operands may be compared. Text constants may
// be compared with dates when they are well-formed dates, so the backend
// never fails to parse them.
func compatible(a, b valueKind, ea, eb ast.ExprNode) error {
	if a == b || a == kindNull || b == kindNull {
		return nil
	}
	if a == kindTemporal && b == kindText {
		return validDate(eb)
	}
	if b == kindTemporal && a == kindText {
		return validDate(ea)
	}
	if a == kindBool && b == kindNumber || a == kindNumber && b == kindBool {
		return nil
	}
	return sqlerr.New(sqlerr.DatatypeMismatch, "cannot compare %s with %s", a, b).
		WithHint("compare a column with a value of its type: text in quotes ('J06'), numbers bare (42), dates as '2024-01-31'")
}

// restore re-emits a checked AST for the backend dialect.
func restore(n ast.Node, d Dialect) (string, error) {
	var sb strings.Builder
	if err := n.Restore(format.NewRestoreCtx(d.RestoreFlags(), &sb)); err != nil {
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "cannot re-emit this query for the %s backend", d.Name())
	}
	return sb.String(), nil
}
