package rewrite

import (
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// GROUP BY a CASE whose results are constants,
//
//	SELECT CASE WHEN age < 18 THEN 'child' WHEN age < 65 THEN 'adult' ELSE 'senior' END AS band, COUNT(*)
//	FROM patients GROUP BY 1
//
// groups each row by a function of its own values (conditions from the
// WHERE allowlist, so it cannot fail on a row) into a set of keys the
// query itself names: the keys are public, like a policy key list, and
// exactly those are released — no partition selection. An ELSE is
// required, so that every row has one of the keys.

// caseGroup plans GROUP BY CASE ... END.
func (a *analyzer) caseGroup(x *ast.CaseExpr) (GroupColumn, error) {
	hint := "write CASE WHEN condition THEN 'key' ... ELSE 'other key' END, with constant results"
	var keys []string
	seen := map[string]string{} // folded key → key as written
	isText, isNumber := false, false
	add := func(r ast.ExprNode) error {
		v, ok := unparen(r).(*test_driver.ValueExpr)
		if !ok || v.Kind() == test_driver.KindNull {
			return sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY CASE needs constant results (not NULL)").WithHint("%s", hint)
		}
		var k string
		switch v.Kind() {
		case test_driver.KindString:
			k, isText = v.GetString(), true
		case test_driver.KindInt64:
			k, isNumber = strconv.FormatInt(v.GetInt64(), 10), true
		default:
			return sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY CASE needs text or integer results").WithHint("%s", hint)
		}
		// Keys a backend could take for one (MySQL's default collations
		// ignore case and trailing spaces) would merge two groups under
		// a label chosen by the data.
		folded := strings.ToLower(strings.TrimRight(k, " "))
		if first, dup := seen[folded]; dup {
			if first != k {
				return sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY CASE keys %q and %q differ only in case or trailing spaces", first, k).WithHint("%s", hint)
			}
			return nil
		}
		seen[folded] = k
		keys = append(keys, k)
		return nil
	}
	for _, w := range x.WhenClauses {
		if err := add(w.Result); err != nil {
			return GroupColumn{}, err
		}
	}
	if x.ElseClause == nil {
		return GroupColumn{}, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY CASE needs an ELSE, so that every row has a key").WithHint("%s", hint)
	}
	if err := add(x.ElseClause); err != nil {
		return GroupColumn{}, err
	}
	if isText && isNumber {
		return GroupColumn{}, sqlerr.New(sqlerr.DatatypeMismatch, "GROUP BY CASE results must all be text or all be integers").WithHint("%s", hint)
	}
	e := &emitter{d: a.opts.Dialect, a: a}
	sql, _, err := e.caseOperand(x)
	if err != nil {
		return GroupColumn{}, err
	}
	col := &config.Column{Name: "case", Type: config.TypeText, GroupBy: true, Keys: keys}
	typ := sqltypes.Text
	if isNumber {
		col.Type, typ = config.TypeBigint, sqltypes.Int8
	}
	return GroupColumn{Column: col, Keys: keys, Type: typ, SQL: sql}, nil
}
