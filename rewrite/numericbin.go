package rewrite

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// GROUP BY numeric bins of a column:
//
//	FLOOR(x / w) * w      the bin's start, w a whole width
//	FLOOR(x / w)          the bin's number
//	x / w * w, x DIV w    integer division (PostgreSQL's / on integers,
//	                      MySQL's DIV): truncated toward zero
//	width_bucket(x, lo, hi, n)
//
// Each row's key is a function of its own value, so binning is like any
// other group key. Which keys are released:
//
//   - width_bucket's keys are 0 … n+1 whatever the data: public, all
//     released (empty ones with noisy zeros);
//   - bins of a column with policy bounds [lo, hi] are public too: the
//     bins that meet [lo, hi] (at most maxBins), fixed by the policy and
//     the query. Rows outside the bounds fall in other bins, which are not
//     released (explain says so);
//   - bins of a column without bounds come from the data and pass partition
//     selection, as for a plain column, which the policy must allow to
//     group by.
//
// Keys are whole numbers computed by the backend in exact or floating
// arithmetic that is exact for them; fractional widths are refused (scale
// the column instead, or use width_bucket).

// maxBins bounds the public bins of a bounded column.
const maxBins = 1000

// binForm is how a bin's key is written.
type binForm int

const (
	binStart binForm = iota // FLOOR(x / w) * w, x / w * w
	binIndex                // FLOOR(x / w), x DIV w
	binWidthBucket
)

// numericBin plans a GROUP BY expression that bins a numeric column; ok is
// false when expr is not one of the bin forms.
func (a *analyzer) numericBin(expr ast.ExprNode) (g GroupColumn, ok bool, err error) {
	var (
		colExpr ast.ExprNode
		width   float64
		form    binForm
		trunc   bool
		wb      struct{ lo, hi, n float64 }
	)
	hint := "write FLOOR(column / width) * width with a whole width, or width_bucket(column, low, high, count)"
	switch x := unparen(expr).(type) {
	case *ast.BinaryOperationExpr:
		if x.Op == opcode.IntDiv { // x DIV w
			w, isNum := constantLevel(x.R)
			if !isNum {
				return g, false, nil
			}
			colExpr, width, trunc, form = x.L, w, true, binIndex
			break
		}
		if x.Op != opcode.Mul {
			return g, false, nil
		}
		mulBy, isNum := constantLevel(x.R)
		if !isNum {
			return g, false, nil
		}
		switch inner := unparen(x.L).(type) {
		case *ast.FuncCallExpr: // FLOOR(x / w) * w
			c, w, ok := floorOfDivision(inner)
			if !ok {
				return g, false, nil
			}
			colExpr, width = c, w
		case *ast.BinaryOperationExpr: // x / w * w, x DIV w * w
			w, isNum := constantLevel(inner.R)
			if !isNum || (inner.Op != opcode.Div && inner.Op != opcode.IntDiv) {
				return g, false, nil
			}
			if inner.Op == opcode.Div && a.opts.FrontEnd != PostgresFrontEnd {
				return g, true, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY column / width * width is the column itself in MySQL (/ does not truncate)").
					WithHint("write FLOOR(column / width) * width or column DIV width * width")
			}
			colExpr, width, trunc = inner.L, w, true
		default:
			return g, false, nil
		}
		if mulBy != width {
			return g, true, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY bins need the same width twice: divided by %g, multiplied by %g", width, mulBy).WithHint("%s", hint)
		}
		form = binStart
	case *ast.FuncCallExpr:
		switch x.FnName.L {
		case "floor":
			c, w, ok := floorOfDivision(x)
			if !ok {
				return g, false, nil
			}
			colExpr, width, form = c, w, binIndex
		case "width_bucket":
			if len(x.Args) != 4 {
				return g, true, sqlerr.New(sqlerr.FeatureNotSupported, "width_bucket takes a column, a low and a high bound and a bucket count").WithHint("%s", hint)
			}
			lo, ok1 := constantLevel(x.Args[1])
			hi, ok2 := constantLevel(x.Args[2])
			n, ok3 := constantLevel(x.Args[3])
			if !ok1 || !ok2 || !ok3 || !(lo < hi) || n != math.Trunc(n) || n < 1 || n > maxBins {
				return g, true, sqlerr.New(sqlerr.InvalidParameterValue, "width_bucket needs constant bounds low < high and a whole bucket count from 1 to %d", maxBins).WithHint("%s", hint)
			}
			colExpr, form = x.Args[0], binWidthBucket
			wb.lo, wb.hi, wb.n = lo, hi, n
		default:
			return g, false, nil
		}
	default:
		return g, false, nil
	}

	cn, isCol := unparen(colExpr).(*ast.ColumnNameExpr)
	if !isCol {
		return g, true, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY bins need a plain column").WithHint("%s", hint)
	}
	col, err := a.column(cn.Name)
	if err != nil {
		return g, true, err
	}
	switch {
	case a.isUnit(col):
		return g, true, sqlerr.New(sqlerr.InsufficientPrivilege, "cannot GROUP BY bins of the privacy unit column %q", col.Name).
			WithHint("group by one of: %s", a.groupableList())
	case !col.Type.Numeric():
		return g, true, sqlerr.New(sqlerr.DatatypeMismatch, "GROUP BY bins need a numeric column; %q is %s", col.Name, col.Type).WithHint("%s", hint)
	case form != binWidthBucket && !(width > 0 && width == math.Trunc(width) && width <= 1e15):
		return g, true, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY bins need a whole width from 1 up; got %g", width).
			WithHint("for fractional bins use width_bucket(%s, low, high, count)", col.Name)
	case trunc && !col.Type.Integer():
		return g, true, sqlerr.New(sqlerr.DatatypeMismatch, "integer division needs an integer column; %q is %s", col.Name, col.Type).
			WithHint("write FLOOR(%s / width) * width", col.Name)
	}

	q := a.colRef(col)
	name := fmt.Sprintf("floor(%s / %g)", col.Name, width)
	var sql string
	var keys []string
	switch form {
	case binWidthBucket:
		scale := wb.n / (wb.hi - wb.lo)
		sql = fmt.Sprintf("(CASE WHEN %s < %s THEN 0 WHEN %s >= %s THEN %d ELSE FLOOR((%s - %s) * %s) + 1 END)",
			q, formatNumber(wb.lo), q, formatNumber(wb.hi), int(wb.n)+1, q, formatNumber(wb.lo), decimalLiteral(scale))
		for k := 0; k <= int(wb.n)+1; k++ {
			keys = append(keys, strconv.Itoa(k))
		}
		name = fmt.Sprintf("width_bucket(%s, %g, %g, %g)", col.Name, wb.lo, wb.hi, wb.n)
	default:
		index := "FLOOR(" + q + " / " + decimalLiteral(width) + ")"
		if trunc {
			// Truncated toward zero, never negating x (the smallest
			// integer has no negative: found in review).
			index = "(CASE WHEN " + q + " < 0 THEN CEIL(" + q + " / " + decimalLiteral(width) + ") ELSE " + index + " END)"
			name = fmt.Sprintf("%s / %g", col.Name, width)
		}
		sql = index
		mult := 1.0
		if form == binStart {
			sql = "(" + index + " * " + formatNumber(width) + ")"
			mult = width
			name += fmt.Sprintf(" * %g", width)
		}
		if col.Bounds != nil {
			first, last := binOf(col.Bounds.Lo, width, trunc), binOf(col.Bounds.Hi, width, trunc)
			if last-first+1 > maxBins {
				if !col.GroupBy {
					return g, true, sqlerr.New(sqlerr.ProgramLimitExceeded, "GROUP BY bins of width %g over %q's bounds [%g, %g] make %.0f bins, more than %d", width, col.Name, col.Bounds.Lo, col.Bounds.Hi, last-first+1, maxBins).
						WithHint("use a wider bin")
				}
				break // from the data, through partition selection
			}
			for k := first; k <= last; k++ {
				keys = append(keys, strconv.FormatFloat(k*mult, 'f', -1, 64))
			}
		} else if !col.GroupBy {
			return g, true, sqlerr.New(sqlerr.InsufficientPrivilege, "GROUP BY bins of %q need bounds for the column in the policy (its bins are then public) or permission to group by it", col.Name).
				WithHint("declare `bounds: [lo, hi]` or `group_by: true` for %q under protected_tables/%s/columns", col.Name, a.table.Name)
		}
	}
	key := &config.Column{Name: name, Type: config.TypeBigint, GroupBy: true, Keys: keys}
	return GroupColumn{Column: key, Keys: keys, Type: sqltypes.Int8, SQL: sql, Source: col}, true, nil
}

// floorOfDivision reads FLOOR(x / w) with a numeric constant w.
func floorOfDivision(f *ast.FuncCallExpr) (ast.ExprNode, float64, bool) {
	if f.FnName.L != "floor" || len(f.Args) != 1 {
		return nil, 0, false
	}
	div, ok := unparen(f.Args[0]).(*ast.BinaryOperationExpr)
	if !ok || div.Op != opcode.Div {
		return nil, 0, false
	}
	w, ok := constantLevel(div.R)
	return div.L, w, ok
}

// binOf is the bin number of v: ⌊v/w⌋, or truncated toward zero.
func binOf(v, w float64, trunc bool) float64 {
	if trunc {
		return math.Trunc(v / w)
	}
	return math.Floor(v / w)
}

// decimalLiteral writes a number with a decimal point, so that no backend
// divides integers.
func decimalLiteral(f float64) string {
	s := formatNumber(f)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
