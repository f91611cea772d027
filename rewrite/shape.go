package rewrite

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// The shape of a public-table query. Dashboards and applications send the
// same lookup with different constants, many clients at once: on a MySQL
// backend several such queries can be answered by one statement, each a
// branch of a UNION ALL tagged with its number (backend/myunion.go),
// which costs the server one statement where it cost one per query. That
// is exact only where each branch's result is what the query gives alone:
//
//   - the branches' columns must have one type, so no constant may be
//     part of what a query selects (1 in one branch and 1.5 in another
//     would make both DECIMAL); constants elsewhere (WHERE, LIMIT) change
//     which rows come back, never their types;
//   - each branch must return its rows in the order it would alone: a
//     query whose order is defined (ORDER BY) or that the server sorts on
//     its own (GROUP BY, DISTINCT) is not combined, since a branch in a
//     derived table may lose it; a plain one has no defined order either
//     way;
//   - the query must be one SELECT over tables, without a WITH clause,
//     and without what applies to a whole statement or is refused in a
//     derived table: optimizer hints (MAX_EXECUTION_TIME), HIGH_PRIORITY,
//     SQL_NO_CACHE, SQL_BUFFER_RESULT and the other SELECT options.
//
// Queries of one shape differ only in those constants: the shape is the
// query's text with each constant replaced by ? (maskConstants),
// everything else as it is, identifiers' case included (two tables may
// differ only in case). The backend checks the columns of what comes
// back as well, and runs a shape's queries one by one from the first
// time that fails.

// unionShape returns the shape of a public-table query on a MySQL
// backend (sql is its text for that backend), or "" when it cannot be
// answered as a branch of a UNION ALL.
func unionShape(n ast.Node, sql string, d Dialect) string {
	sel, ok := n.(*ast.SelectStmt)
	if !ok || d.Name() != "mysql" || !unionSafe(sel) {
		return ""
	}
	return maskConstants(sql)
}

// unionSafe reports whether sel can be a branch of a UNION ALL (above).
func unionSafe(sel *ast.SelectStmt) bool {
	if sel.From == nil || sel.With != nil || sel.OrderBy != nil || sel.GroupBy != nil || sel.Having != nil ||
		sel.Distinct || len(sel.WindowSpecs) > 0 || sel.LockInfo != nil || sel.SelectIntoOpt != nil ||
		sel.Fields == nil || len(sel.TableHints) > 0 {
		return false
	}
	if o := sel.SelectStmtOpts; o != nil && (o.CalcFoundRows || o.Distinct || o.SQLBigResult || o.SQLSmallResult ||
		o.SQLBufferResult || !o.SQLCache || o.StraightJoin || o.Priority != mysql.NoPriority || len(o.TableHints) > 0) {
		return false
	}
	v := &selectedConstants{}
	sel.Accept(v)
	return !v.found
}

// selectedConstants finds a constant, a parameter marker, a cast or a
// window function in what a SELECT (the query's or a subquery's)
// selects, and a SELECT that is not one over tables (VALUES, TABLE),
// whose rows are constants.
type selectedConstants struct {
	found    bool
	inFields int // depth inside a SELECT's field list
}

func (v *selectedConstants) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SelectStmt:
		v.found = v.found || x.Kind != ast.SelectStmtKindSelect
	case *ast.FieldList:
		v.inFields++
	case *ast.WindowFuncExpr:
		v.found = true
	case *ast.AggregateFuncExpr:
		if strings.EqualFold(x.F, ast.AggFuncCount) {
			// COUNT(*) counts 1s; whatever it counts, a count is a
			// BIGINT.
			return n, true
		}
	case *test_driver.ValueExpr, *test_driver.ParamMarkerExpr, *ast.FuncCastExpr:
		// A cast's length and scale are constants too (CHAR(3),
		// DECIMAL(10, 2)).
		v.found = v.found || v.inFields > 0
	}
	return n, v.found
}

func (v *selectedConstants) Leave(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(*ast.FieldList); ok {
		v.inFields--
	}
	return n, !v.found
}

// maskConstants replaces the constants of sql, a query as restored for
// MySQL (names in backquotes, strings in single quotes with backslash
// escapes, numbers bare), by ?: each quoted string and each word that
// starts with a digit (a number, 0x1F) or with a dot and a digit (.5).
// Everything else, names in their case included, stays as it is, so two
// texts with one mask differ in constants alone.
func maskConstants(sql string) string {
	var b strings.Builder
	b.Grow(len(sql))
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '`':
			j := i + 1
			for j < len(sql) {
				if sql[j] == '`' {
					if j+1 < len(sql) && sql[j+1] == '`' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			b.WriteString(sql[i:min(j+1, len(sql))])
			i = j + 1
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(sql) {
				if sql[j] == '\\' {
					j += 2
					continue
				}
				if sql[j] == c {
					if j+1 < len(sql) && sql[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			b.WriteByte('?')
			i = j + 1
		case isIdentCont(c) && !isDigit(c):
			// A bare word: a keyword, a function, a charset introducer.
			j := i
			for j < len(sql) && isIdentCont(sql[j]) {
				j++
			}
			b.WriteString(sql[i:j])
			i = j
		case isDigit(c) || c == '.' && i+1 < len(sql) && isDigit(sql[i+1]):
			j := i
			for j < len(sql) && (isIdentCont(sql[j]) || sql[j] == '.' ||
				(sql[j] == '+' || sql[j] == '-') && (sql[j-1] == 'e' || sql[j-1] == 'E')) {
				j++
			}
			b.WriteByte('?')
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// A lookup by key: a query of a union shape that is one plain SELECT of
// columns from one table whose WHERE is only a column compared with = to
// an integer literal (or to the statement's one parameter). On a MySQL
// backend, concurrent lookups of one shape are answered by one statement
// with their keys in a list (backend/mylookup.go), each row going to the
// lookups of the key it carries. That is exact only where each lookup's
// rows are what it gets alone: nothing but columns may be selected (an
// aggregate would count every key's rows together, a function or a
// variable could see the other keys' rows), there may be no LIMIT (it
// limits each lookup alone), and the key must be an integer literal (a
// string compared with an integer column converts as a number: '5x' =
// 5). The backend checks that the key column is an integer one.

// Lookup is what a lookup by key needs to be answered with others of its
// shape; the zero Lookup is none.
type Lookup struct {
	// Prefix is the statement answering lookups of the shape up to its
	// list of keys: "SELECT ..., `k` AS dpproxy_key FROM ... WHERE `k` IN (".
	// Lookups of one shape have one Prefix.
	Prefix string
	// Key is this lookup's key, decimal digits; "" when the key is the
	// statement's one parameter.
	Key string
}

// lookupShape returns sel's Lookup on a MySQL backend, or the zero
// Lookup.
func lookupShape(n ast.Node, d Dialect) Lookup {
	sel, ok := n.(*ast.SelectStmt)
	if !ok || d.Name() != "mysql" || !unionSafe(sel) || sel.Limit != nil || sel.From == nil || sel.From.TableRefs == nil ||
		sel.From.TableRefs.Right != nil || sel.Fields == nil {
		return Lookup{}
	}
	if ts, ok := sel.From.TableRefs.Left.(*ast.TableSource); !ok {
		return Lookup{}
	} else if _, ok := ts.Source.(*ast.TableName); !ok {
		return Lookup{}
	}
	for _, f := range sel.Fields.Fields {
		if _, col := f.Expr.(*ast.ColumnNameExpr); f.WildCard == nil && !col {
			return Lookup{}
		}
	}
	eq, ok := sel.Where.(*ast.BinaryOperationExpr)
	if !ok || eq.Op != opcode.EQ {
		return Lookup{}
	}
	col, value := eq.L, eq.R
	if _, ok := col.(*ast.ColumnNameExpr); !ok {
		col, value = eq.R, eq.L
	}
	if _, ok := col.(*ast.ColumnNameExpr); !ok {
		return Lookup{}
	}
	var key string
	switch v := value.(type) {
	case *test_driver.ParamMarkerExpr:
	case *test_driver.ValueExpr:
		if k := v.Kind(); k != test_driver.KindInt64 && k != test_driver.KindUint64 {
			return Lookup{}
		}
		text, err := restore(v, d)
		if err != nil || !allDigits(text) {
			return Lookup{} // TRUE, a negative number
		}
		key = text
	default:
		return Lookup{}
	}
	fields, err := restore(sel.Fields, d)
	if err != nil {
		return Lookup{}
	}
	keyCol, err := restore(col, d)
	if err != nil {
		return Lookup{}
	}
	from, err := restore(sel.From, d)
	if err != nil {
		return Lookup{}
	}
	return Lookup{Prefix: "SELECT " + fields + "," + keyCol + " AS `dpproxy_key` FROM " + from + " WHERE " + keyCol + " IN (", Key: key}
}

// allDigits reports whether s is one or more decimal digits.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}
