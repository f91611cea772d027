package rewrite

import (
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/dpproxy/dpproxy/sqlerr"
)

// passthroughFunctions are the functions a query over public tables may
// call — pure functions that read no other table, file or setting — with
// the numbers of arguments every backend accepts (max -1: any number), so
// that a wrong call is refused here rather than by the backend (found by
// FuzzAnalyze: IN (SELECT LOWER()) failed on SQLite).
var passthroughFunctions = map[string]struct{ min, max int }{}

func init() {
	for _, spec := range strings.Fields(`abs:1 ceil:1 ceiling:1 floor:1 round:1-2 trunc:1-2 truncate:1-2 sign:1 sqrt:1
		power:2 pow:2 exp:1 ln:1 log:1-2 log10:1 log2:1 mod:2 greatest:1- least:1- coalesce:1- nullif:2 ifnull:2
		if:3 lower:1 upper:1 length:1 char_length:1 character_length:1 octet_length:1 substring:2-3 substr:2-3
		left:2 right:2 trim:1-3 ltrim:1-2 rtrim:1-2 btrim:1-2 lpad:2-3 rpad:2-3 replace:3 concat:1- concat_ws:2-
		position:2 strpos:2 reverse:1 repeat:2 initcap:1 now:0-1 current_date:0 current_timestamp:0-1
		current_time:0-1 localtimestamp:0-1 date_trunc:2-3 date_part:2 extract:2 date:1 year:1 month:1 day:1
		dayofmonth:1 hour:1 minute:1 second:1 week:1-2 quarter:1 to_char:2 date_format:2 cast:1-2 convert:1-2`) {
		name, arity, _ := strings.Cut(spec, ":")
		lo, hi, ranged := strings.Cut(arity, "-")
		a := struct{ min, max int }{}
		a.min, _ = strconv.Atoi(lo)
		switch {
		case !ranged:
			a.max = a.min
		case hi == "":
			a.max = -1
		default:
			a.max, _ = strconv.Atoi(hi)
		}
		passthroughFunctions[name] = a
	}
}

// checkPassthrough rejects what a read-only query over public tables must
// not contain: calls outside the allowlist, session variables, SELECT
// INTO and locking clauses.
func checkPassthrough(n ast.Node) error {
	c := &passthroughChecker{}
	n.Accept(c)
	return c.err
}

type passthroughChecker struct{ err error }

func (c *passthroughChecker) Enter(n ast.Node) (ast.Node, bool) {
	if c.err != nil {
		return n, true
	}
	switch x := n.(type) {
	case *ast.FuncCallExpr:
		arity, ok := passthroughFunctions[x.FnName.L]
		switch {
		case !ok:
			c.err = sqlerr.New(sqlerr.UndefinedFunction, "function %s() is not allowed through dpproxy", x.FnName.O).
				WithHint("public-table queries may use common scalar functions: string, math, date and conditional functions")
		case len(x.Args) < arity.min || arity.max >= 0 && len(x.Args) > arity.max:
			want := strconv.Itoa(arity.min)
			switch {
			case arity.max < 0:
				want = "at least " + want
			case arity.max != arity.min:
				want += " to " + strconv.Itoa(arity.max)
			}
			c.err = sqlerr.New(sqlerr.UndefinedFunction, "function %s() takes %s argument(s), not %d", x.FnName.O, want, len(x.Args)).
				WithHint("call %s with %s argument(s)", x.FnName.O, want)
		}
	case *ast.VariableExpr:
		c.err = sqlerr.New(sqlerr.FeatureNotSupported, "variables are not supported in queries").
			WithHint("write the value as a constant; session settings are read with SHOW")
	case *ast.SelectStmt:
		if x.SelectIntoOpt != nil {
			c.err = sqlerr.New(sqlerr.ReadOnlyTransaction, "SELECT INTO is not allowed: dpproxy is read-only")
		} else if x.LockInfo != nil && x.LockInfo.LockType != ast.SelectLockNone {
			c.err = sqlerr.New(sqlerr.ReadOnlyTransaction, "locking clauses (FOR UPDATE/SHARE) are not allowed: dpproxy is read-only").
				WithHint("drop the locking clause: reads need no locks here")
		}
	}
	return n, false
}

func (c *passthroughChecker) Leave(n ast.Node) (ast.Node, bool) { return n, c.err == nil }
