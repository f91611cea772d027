package rewrite

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// Conditional aggregation: an aggregate over a searched CASE,
//
//	SUM(CASE WHEN diagnosis = 'J06' THEN cost ELSE 0 END)
//	COUNT(CASE WHEN age < 18 THEN 1 END)
//	AVG(CASE WHEN sex = 'F' THEN income END)
//
// The CASE is a value of each row, computed in the bounding query's
// innermost level like a clamped column: its conditions are WHERE
// conditions (the same allowlist, so they cannot fail on a row), each
// result is a column (clamped to its bounds when summed), a number or
// NULL. Its bounds are the hull of the results' ranges — what one row can
// contribute — so sensitivities follow as for a column with those bounds.

// conditionalColumn plans CASE x as an aggregate's argument: a synthetic
// column whose value is the CASE, with the hull of its results' bounds.
func (a *analyzer) conditionalColumn(x *ast.CaseExpr, fn string, summed bool) (*config.Column, error) {
	if x.Value != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s(CASE value WHEN ...) is not supported", fn).
			WithHint("write the searched form: %s(CASE WHEN condition THEN value [ELSE value] END)", fn)
	}
	e := &emitter{d: a.opts.Dialect, a: a}
	// sb is the CASE with summed columns clamped, raw the same unclamped
	// (what bounding changes, for the excess measurements: excess.go).
	var sb, raw strings.Builder
	sb.WriteString("CASE")
	raw.WriteString("CASE")
	lo, hi := math.Inf(1), math.Inf(-1)
	typ := config.ColumnType("")
	// combine widens the CASE's type: any fractional result makes it
	// numeric, so that a sum is never taken as whole when it is not.
	combine := func(t config.ColumnType) {
		switch {
		case typ == "":
			typ = t
		case typ.Integer() && t.Integer():
		case typ.Numeric() && t.Numeric():
			typ = config.TypeNumeric
		case !t.Numeric():
			typ = t
		}
	}
	// result writes one result, clamped and as it is.
	result := func(r ast.ExprNode) (string, string, error) {
		expr := unparen(r)
		negative := false
		if u, ok := expr.(*ast.UnaryOperationExpr); ok && u.Op == opcode.Minus {
			expr, negative = unparen(u.V), true
		}
		switch v := expr.(type) {
		case *test_driver.ValueExpr:
			if v.Kind() == test_driver.KindNull && !negative {
				return "NULL", "NULL", nil
			}
			f, ok := constantNumber(v)
			if !ok {
				if summed || negative {
					return "", "", sqlerr.New(sqlerr.DatatypeMismatch, "%s(CASE ...) needs numeric results", fn).
						WithHint("sum numbers or numeric columns: %s(CASE WHEN ... THEN cost ELSE 0 END); to count rows, COUNT(CASE WHEN ... THEN 1 END)", fn)
				}
				s, _, err := e.literal(v)
				return s, s, err
			}
			if negative {
				f = -f
			}
			// A large constant could overflow the backend's sum, an
			// error that would depend on how many rows match.
			if math.Abs(f) > maxCaseConstant {
				return "", "", sqlerr.New(sqlerr.FeatureNotSupported, "%s(CASE ...) constants must lie within ±%g", fn, maxCaseConstant).
					WithHint("scale the constants down and the result up: SUM(CASE WHEN ... THEN 1 ELSE 0 END) * 1e12")
			}
			lo, hi = math.Min(lo, f), math.Max(hi, f)
			if f == math.Trunc(f) {
				combine(config.TypeInt)
			} else {
				combine(config.TypeNumeric)
			}
			return formatNumber(f), formatNumber(f), nil
		case *ast.ColumnNameExpr:
			col, err := a.column(v.Name)
			if err != nil {
				return "", "", err
			}
			if a.isUnit(col) && summed {
				return "", "", sqlerr.New(sqlerr.InsufficientPrivilege, "the privacy unit column %q cannot be aggregated", col.Name).
					WithHint("COUNT(DISTINCT %s) counts people; COUNT(CASE WHEN ... THEN 1 END) counts rows", col.Name)
			}
			if summed {
				if !col.Type.Numeric() || col.Bounds == nil {
					return "", "", sqlerr.New(sqlerr.InsufficientPrivilege, "%s(CASE ... THEN %s ...) needs a numeric column with clamp bounds in the policy", fn, col.Name).
						WithHint("declare `bounds: [lo, hi]` for %q", col.Name)
				}
				lo, hi = math.Min(lo, col.Bounds.Lo), math.Max(hi, col.Bounds.Hi)
			}
			combine(col.Type)
			return e.clamp(col), e.a.colRef(col), nil
		}
		return "", "", sqlerr.New(sqlerr.FeatureNotSupported, "the results of %s(CASE ...) must be columns, numbers or NULL", fn)
	}
	for _, w := range x.WhenClauses {
		cond, err := e.boolExpr(w.Expr)
		if err != nil {
			return nil, err
		}
		r, unclamped, err := result(w.Result)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&sb, " WHEN %s THEN %s", cond, r)
		fmt.Fprintf(&raw, " WHEN %s THEN %s", cond, unclamped)
	}
	if x.ElseClause != nil {
		r, unclamped, err := result(x.ElseClause)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&sb, " ELSE %s", r)
		fmt.Fprintf(&raw, " ELSE %s", unclamped)
	}
	sb.WriteString(" END")
	raw.WriteString(" END")
	if typ == "" {
		typ = config.TypeInt // only NULLs: counts nothing
	}
	col := &config.Column{Name: "CASE", Type: typ}
	if summed {
		if lo > hi {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "%s(CASE ...) has no numeric result", fn).
				WithHint("give the CASE a numeric THEN or ELSE: %s(CASE WHEN ... THEN cost ELSE 0 END)", fn)
		}
		col.Bounds = &config.Bounds{Lo: lo, Hi: hi}
	}
	key := sb.String()
	if summed {
		key += " -- summed"
	}
	if have, ok := a.valueExprs[key]; ok {
		return have, nil // the same CASE again: one value column
	}
	if a.valueExprs == nil {
		a.valueExprs = map[string]*config.Column{}
		a.valueSQL = map[*config.Column]string{}
		a.rawValueSQL = map[*config.Column]string{}
	}
	a.valueExprs[key] = col
	a.valueSQL[col] = strings.TrimSuffix(key, " -- summed")
	a.rawValueSQL[col] = raw.String()
	return col, nil
}

// maxCaseConstant bounds a conditional aggregate's constants.
const maxCaseConstant = 1e9

// constantNumber reads a numeric constant.
func constantNumber(v *test_driver.ValueExpr) (float64, bool) {
	switch v.Kind() {
	case test_driver.KindInt64:
		return float64(v.GetInt64()), true
	case test_driver.KindUint64:
		return float64(v.GetUint64()), true
	case test_driver.KindFloat64:
		return v.GetFloat64(), true
	case test_driver.KindMysqlDecimal:
		f, err := strconv.ParseFloat(v.GetMysqlDecimal().String(), 64)
		return f, err == nil
	}
	return 0, false
}
