package rewrite

import (
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// GROUP BY: resolving each item to a group key (a column, a time bucket,
// a numeric bin or a CASE) and deciding how the keys are released.

// groupColumn resolves one GROUP BY item: a column, or a position in the
// select list that names a column.
func (a *analyzer) groupColumn(expr ast.ExprNode, fields []*ast.SelectField) (GroupColumn, error) {
	expr = unparen(expr)
	if pos, ok := expr.(*ast.PositionExpr); ok {
		if pos.P == nil && pos.N >= 1 && pos.N <= len(fields) && fields[pos.N-1].Expr != nil {
			expr = unparen(fields[pos.N-1].Expr)
		} else {
			return GroupColumn{}, sqlerr.New(sqlerr.GroupingError, "GROUP BY position %d is not in the select list", pos.N).
				WithHint("GROUP BY n names the n-th item of the select list (1 to %d), or write the column itself", len(fields))
		}
	}
	// GROUP BY an alias of the select list.
	if cn, ok := expr.(*ast.ColumnNameExpr); ok && cn.Name.Table.O == "" {
		if _, isColumn := a.table.Column(cn.Name.Name.O); !isColumn {
			for _, f := range fields {
				if f.AsName.O != "" && strings.EqualFold(f.AsName.O, cn.Name.Name.O) {
					expr = unparen(f.Expr)
				}
			}
		}
	}
	if g, ok, err := a.numericBin(expr); ok {
		return g, err
	}
	var g GroupColumn
	switch x := expr.(type) {
	case *ast.ColumnNameExpr:
		col, err := a.column(x.Name)
		if err != nil {
			return g, err
		}
		g = GroupColumn{Column: col, Keys: col.Keys, Type: columnType(col.Type)}
	case *ast.FuncCallExpr:
		b, col, err := a.timeBucket(x)
		if err != nil {
			return g, err
		}
		g = GroupColumn{Column: col, Bucket: b, Type: sqltypes.Timestamp}
		if b.Func == "extract" {
			g.Type = sqltypes.Numeric
		}
	case *ast.CaseExpr:
		return a.caseGroup(x)
	default:
		return g, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY supports columns, time buckets (date_trunc, EXTRACT) of columns, numeric bins (FLOOR(x / w) * w, width_bucket) and CASE with constant results only").
			WithHint("group by one of: %s", a.groupableList())
	}
	col := g.Column
	if a.isUnit(col) {
		return g, sqlerr.New(sqlerr.InsufficientPrivilege, "cannot GROUP BY the privacy unit column %q: it would release one group per person", col.Name).
			WithHint("group by one of: %s", a.groupableList())
	}
	if !col.GroupBy {
		return g, sqlerr.New(sqlerr.InsufficientPrivilege, "the policy does not allow GROUP BY on column %q of %q", col.Name, a.table.Name).
			WithHint("group by one of: %s", a.groupableList())
	}
	return g, nil
}

// bucketUnits are the units of date_trunc and the fields of EXTRACT that
// dpproxy can write for every backend.
var bucketUnits = map[string]map[string]bool{
	"date_trunc": {"year": true, "quarter": true, "month": true, "week": true, "day": true},
	"extract":    {"year": true, "quarter": true, "month": true, "day": true, "dow": true},
}

// timeBucket reads date_trunc('unit', col) or EXTRACT(unit FROM col) over a
// date or timestamp column: functions that cannot fail on any value.
func (a *analyzer) timeBucket(x *ast.FuncCallExpr) (*TimeBucket, *config.Column, error) {
	fn := x.FnName.L
	hint := "group by date_trunc('year'|'quarter'|'month'|'week'|'day', column) or EXTRACT(YEAR|QUARTER|MONTH|DAY|DOW FROM column) of a date or timestamp column"
	if len(x.Args) != 2 || bucketUnits[fn] == nil {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY %s() is not supported", x.FnName.O).WithHint("%s", hint)
	}
	var unit string
	var colExpr ast.ExprNode
	switch fn {
	case "date_trunc":
		v, ok := unparen(x.Args[0]).(*test_driver.ValueExpr)
		if !ok || v.Kind() != test_driver.KindString {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "date_trunc needs a constant unit").WithHint("%s", hint)
		}
		unit, colExpr = strings.ToLower(v.GetString()), x.Args[1]
	case "extract":
		tu, ok := x.Args[0].(*ast.TimeUnitExpr)
		if !ok {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "EXTRACT needs a field name").WithHint("%s", hint)
		}
		unit, colExpr = strings.ToLower(tu.Unit.String()), x.Args[1]
		if unit == "dayofweek" {
			unit = "dow"
		}
	}
	if !bucketUnits[fn][unit] {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s with unit %q is not supported", fn, unit).WithHint("%s", hint)
	}
	cn, ok := unparen(colExpr).(*ast.ColumnNameExpr)
	if !ok {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s needs a plain column", fn).WithHint("%s", hint)
	}
	col, err := a.column(cn.Name)
	if err != nil {
		return nil, nil, err
	}
	if col.Type != config.TypeDate && col.Type != config.TypeTimestamp {
		return nil, nil, sqlerr.New(sqlerr.DatatypeMismatch, "%s needs a date or timestamp column; %q is %s", fn, col.Name, col.Type).
			WithHint("group by %q itself, or by a time bucket of a date column", col.Name)
	}
	return &TimeBucket{Func: fn, Unit: unit}, col, nil
}

func sameGroup(a, b GroupColumn) bool {
	if a.SQL != "" || b.SQL != "" {
		return a.SQL == b.SQL
	}
	if a.Column != b.Column || (a.Bucket == nil) != (b.Bucket == nil) {
		return false
	}
	return a.Bucket == nil || *a.Bucket == *b.Bucket
}

// narrowKeys keeps, of a group column's public key list, the keys WHERE
// can let through when it requires the column to equal one of a few
// constants (a top-level AND term col = c or col IN (c1, ...)), so that
// the keys the query excludes are not released as noisy zeros. The
// constants are the query's own: narrowing is free. Text keys are kept
// when they match a constant up to case and trailing spaces (a superset of
// what any collation matches: a key kept needlessly is a noisy zero, a key
// dropped wrongly would be a lost answer); integer keys when equal. When
// no key would remain, the list is left whole (an empty list would mean
// no list).
func (a *analyzer) narrowKeys(p *Plan, where ast.ExprNode) {
	for i := range p.Groups {
		g := &p.Groups[i]
		if len(g.Keys) == 0 || g.Bucket != nil || g.SQL != "" {
			continue
		}
		allowed, ok := a.requiredConstants(where, g.Column)
		if !ok {
			continue
		}
		var kept []string
		for _, k := range g.Keys {
			for _, c := range allowed {
				if keyMatches(k, c, g.Column.Type) {
					kept = append(kept, k)
					break
				}
			}
		}
		if len(kept) > 0 {
			g.Keys = kept
		}
	}
}

// requiredConstants finds a top-level AND term of where that requires
// col to equal one of a list of constants, and returns them.
func (a *analyzer) requiredConstants(where ast.ExprNode, col *config.Column) ([]*test_driver.ValueExpr, bool) {
	is := func(e ast.ExprNode) bool {
		cn, ok := unparen(e).(*ast.ColumnNameExpr)
		if !ok {
			return false
		}
		c, err := a.column(cn.Name)
		return err == nil && c == col
	}
	switch x := unparen(where).(type) {
	case *ast.BinaryOperationExpr:
		switch x.Op {
		case opcode.LogicAnd:
			if c, ok := a.requiredConstants(x.L, col); ok {
				return c, true
			}
			return a.requiredConstants(x.R, col)
		case opcode.EQ:
			l, lok := unparen(x.L).(*test_driver.ValueExpr)
			r, rok := unparen(x.R).(*test_driver.ValueExpr)
			switch {
			case rok && is(x.L):
				return []*test_driver.ValueExpr{r}, true
			case lok && is(x.R):
				return []*test_driver.ValueExpr{l}, true
			}
		}
	case *ast.PatternInExpr:
		if x.Not || x.Sel != nil || !is(x.Expr) {
			return nil, false
		}
		var values []*test_driver.ValueExpr
		for _, e := range x.List {
			v, ok := unparen(e).(*test_driver.ValueExpr)
			if !ok {
				return nil, false
			}
			values = append(values, v)
		}
		return values, true
	}
	return nil, false
}

// keyMatches reports whether key may equal the constant c in a column of
// type t (see narrowKeys). Text is compared only when both are printable
// ASCII: beyond it, collations also equate accents and compatibility
// forms (found in review), so such a key is kept.
func keyMatches(key string, c *test_driver.ValueExpr, t config.ColumnType) bool {
	switch {
	case t == config.TypeText && c.Kind() == test_driver.KindString:
		if !printableASCII(key) || !printableASCII(c.GetString()) {
			return true
		}
		return strings.EqualFold(strings.TrimRight(key, " "), strings.TrimRight(c.GetString(), " "))
	case t.Integer():
		n, err := strconv.ParseInt(strings.TrimSpace(key), 10, 64)
		if err != nil {
			return true
		}
		switch c.Kind() {
		case test_driver.KindInt64:
			return n == c.GetInt64()
		case test_driver.KindUint64:
			return n >= 0 && uint64(n) == c.GetUint64()
		case test_driver.KindString:
			m, err := strconv.ParseInt(strings.TrimSpace(c.GetString()), 10, 64)
			return err != nil || m == n
		}
	}
	return true // not compared: kept
}

// checkKeyLists decides how group keys are released. When every GROUP BY
// column has a public key list, exactly the combinations of those keys are
// released. Otherwise which keys occur is private, and each group found in
// the data must pass DP partition selection.
func (a *analyzer) checkKeyLists(p *Plan) error {
	// Automatic key lists (a public table without group_keys) give way to
	// partition selection when the combinations would be too many.
	all := 1.0
	for _, g := range p.Groups {
		all *= float64(len(g.Keys))
	}
	if all > maxReleasedGroups {
		for i := range p.Groups {
			if p.Groups[i].Column != nil && p.Groups[i].Column.KeysAuto {
				p.Groups[i].Keys = nil
			}
		}
	}
	combos := 1
	for _, g := range p.Groups {
		if len(g.Keys) == 0 {
			p.Selection = &PartitionSelection{}
			return nil
		}
		combos *= len(g.Keys)
		if combos > maxReleasedGroups {
			return sqlerr.New(sqlerr.ProgramLimitExceeded, "GROUP BY over %d key combinations exceeds the limit of %d", combos, maxReleasedGroups).
				WithHint("group by fewer columns")
		}
	}
	return nil
}

func groupNames(p *Plan) string {
	names := make([]string, len(p.Groups))
	for i, g := range p.Groups {
		names[i] = g.Name()
	}
	return strings.Join(names, ", ")
}

// maxReleasedGroups bounds the rows a public key list may produce.
const maxReleasedGroups = 100000

// printableASCII reports whether s has printable ASCII characters only.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
