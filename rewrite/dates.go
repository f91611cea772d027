package rewrite

import (
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// Date and time constants in WHERE: the forms accepted (typed literals,
// ISO 8601 with zones, BI tools' TO_TIMESTAMP/STR_TO_DATE calls), checked
// before anything runs, and written as every backend reads them for the
// column they meet.

// typedLiteral is the string of DATE 'x', TIME 'x' or TIMESTAMP 'x', which
// the TiDB parser reads as calls of internal functions, or of a BI tool's
// TO_TIMESTAMP/TO_DATE/STR_TO_DATE of an ISO constant; nil for other
// calls.
func typedLiteral(x *ast.FuncCallExpr) *test_driver.ValueExpr {
	text := func(e ast.ExprNode) (string, bool) {
		v, ok := unparen(e).(*test_driver.ValueExpr)
		if !ok || v.Kind() != test_driver.KindString {
			return "", false
		}
		return v.GetString(), true
	}
	switch x.FnName.L {
	case strings.ToLower(ast.DateLiteral), strings.ToLower(ast.TimeLiteral), strings.ToLower(ast.TimestampLiteral):
		if len(x.Args) == 1 {
			if v, ok := x.Args[0].(*test_driver.ValueExpr); ok && v.Kind() == test_driver.KindString {
				return v
			}
		}
	case "to_timestamp", "to_date", "str_to_date":
		// BI time filters: Superset writes TO_TIMESTAMP('2024-01-01
		// 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') on PostgreSQL and
		// STR_TO_DATE(..., '%Y-%m-%d %H:%i:%s.%f') on MySQL. With a
		// constant in one of these ISO formats the call is that constant.
		if len(x.Args) != 2 || x.Schema.L != "" {
			return nil
		}
		s, ok1 := text(x.Args[0])
		format, ok2 := text(x.Args[1])
		if !ok1 || !ok2 || !isoDateFormats[format] {
			return nil
		}
		if _, ok := normalizeDate(s, ""); !ok {
			return nil
		}
		v := &test_driver.ValueExpr{}
		v.SetString(s)
		return v
	}
	return nil
}

// isoDateFormats are the TO_TIMESTAMP, TO_DATE and STR_TO_DATE formats
// that read ISO dates and times (typedLiteral).
var isoDateFormats = map[string]bool{
	"YYYY-MM-DD HH24:MI:SS.US": true, "YYYY-MM-DD HH24:MI:SS": true, "YYYY-MM-DD": true,
	"%Y-%m-%d %H:%i:%s.%f": true, "%Y-%m-%d %H:%i:%s": true, "%Y-%m-%d": true,
}

func validDate(expr ast.ExprNode) error {
	v, ok := unparen(expr).(*test_driver.ValueExpr)
	if call, isCall := unparen(expr).(*ast.FuncCallExpr); isCall {
		v = typedLiteral(call)
		ok = v != nil
	}
	if !ok {
		return sqlerr.New(sqlerr.DatatypeMismatch, "cannot compare a date with a text column").
			WithHint("compare a date column with a date constant: visit_date >= '2024-01-31' or DATE '2024-01-31'")
	}
	if _, ok := normalizeDate(v.GetString(), ""); ok {
		return nil
	}
	s := v.GetString()
	return sqlerr.New(sqlerr.InvalidTextRepresent, "invalid date/time constant %q; expected YYYY-MM-DD or YYYY-MM-DD HH:MM:SS", s).
		WithHint("write dates as '2024-01-31' or '2024-01-31 08:30:00'; relative dates (now, yesterday) depend on the clock and are not accepted")
}

// dateLayouts are the date and time constants dpproxy accepts: dates,
// times with a space or a T, fractions of a second, and ISO 8601 zones
// (Z, +02:00), as Grafana's time filters write them.
var dateLayouts = []string{"2006-01-02", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999 Z07:00"}

// normalizeDate reads a date or time constant and writes it as every
// backend reads it for a column of type t: a date column gets the date
// alone (PostgreSQL casts the constant to date, dropping its time; SQLite
// compares dates as text, where '2024-01-01' sorts before '2024-01-01
// 00:00:00'), a timestamp column YYYY-MM-DD HH:MM:SS[.ffffff]; anything
// else the date alone at midnight, the time otherwise. A constant naming a
// zone is converted to UTC first (the backend sessions run in UTC).
func normalizeDate(s string, t config.ColumnType) (string, bool) {
	for _, layout := range dateLayouts {
		v, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		v = v.UTC()
		switch {
		case t == config.TypeDate:
			return v.Format("2006-01-02"), true
		case t == config.TypeTimestamp:
			return v.Format("2006-01-02 15:04:05.999999"), true
		case v.Equal(v.Truncate(24 * time.Hour)):
			return v.Format("2006-01-02"), true
		}
		return v.Format("2006-01-02 15:04:05.999999"), true
	}
	return "", false
}

// dateLiteral writes a text constant compared with a date or time operand
// in its normalized form (normalizeDate) for that operand's column type;
// compatible has checked it.
func (e *emitter) dateLiteral(sql string, k valueKind, expr ast.ExprNode, other valueKind, otherExpr ast.ExprNode) (string, error) {
	if k != kindText || other != kindTemporal {
		return sql, nil
	}
	v, ok := unparen(expr).(*test_driver.ValueExpr)
	if call, isCall := unparen(expr).(*ast.FuncCallExpr); isCall {
		v = typedLiteral(call)
		ok = v != nil
	}
	if !ok || v.Kind() != test_driver.KindString {
		return sql, nil
	}
	var t config.ColumnType
	if cn, isCol := unparen(otherExpr).(*ast.ColumnNameExpr); isCol {
		if col, err := e.a.column(cn.Name); err == nil {
			t = col.Type
		}
	}
	norm, ok := normalizeDate(v.GetString(), t)
	if !ok {
		return sql, nil
	}
	return e.d.QuoteString(norm)
}
