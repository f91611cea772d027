package rewrite

import (
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// Casts are parsed as TiDB casts (CAST(x AS SIGNED), CAST(x AS CHAR)), but
// must reach the backend with the type the client asked for: PostgreSQL
// reads CAST(x AS CHAR) as char(1) and knows no SIGNED. CastOf gives the
// client's type of each cast node; castRestorer writes it per dialect.

// CastLookup returns the client's cast behind a CAST node (Parsed.CastOf);
// nil when the client wrote TiDB casts itself (the MySQL front end).
type CastLookup func(*ast.FuncCastExpr) (CastInfo, bool)

// castType is how a dialect writes a PostgreSQL cast type; ok false means
// the cast is left out (the value is kept as it is: SQLite stores dates
// and times as text).
func castType(d Dialect, pgType string) (typ string, ok bool) {
	base := pgType
	if i := strings.IndexByte(base, '('); i >= 0 {
		base = base[:i]
	}
	switch d.Name() {
	case "postgres":
		return pgType, true
	case "sqlite":
		switch base {
		case "integer", "smallint", "bigint":
			return "INTEGER", true
		case "numeric":
			return "NUMERIC", true
		case "real", "double precision":
			return "REAL", true
		case "date", "timestamp", "timestamp with time zone", "time":
			return "", false
		}
		return "TEXT", true
	}
	return "", true // mysql: TiDB's own target is MySQL's
}

// castNode restores a cast with the client's type for one dialect. It
// embeds the parsed node, so it is a drop-in replacement in the tree.
type castNode struct {
	*ast.FuncCastExpr
	typ  string
	keep bool // write CAST(... AS typ); false writes the operand alone
}

// Accept implements ast.Node, keeping the wrapper in the tree (the
// embedded node's Accept would hand the bare cast back to the parent).
func (c *castNode) Accept(v ast.Visitor) (ast.Node, bool) {
	newNode, skip := v.Enter(c)
	if skip {
		return v.Leave(newNode)
	}
	node, ok := c.Expr.Accept(v)
	if !ok {
		return c, false
	}
	c.Expr = node.(ast.ExprNode)
	return v.Leave(c)
}

// Restore implements ast.Node.
func (c *castNode) Restore(ctx *format.RestoreCtx) error {
	if !c.keep {
		ctx.WritePlain("(")
		if err := c.Expr.Restore(ctx); err != nil {
			return err
		}
		ctx.WritePlain(")")
		return nil
	}
	ctx.WriteKeyWord("CAST")
	ctx.WritePlain("(")
	if err := c.Expr.Restore(ctx); err != nil {
		return err
	}
	ctx.WriteKeyWord(" AS ")
	ctx.WritePlain(c.typ)
	ctx.WritePlain(")")
	return nil
}

// castRestorer replaces every cast node with a castNode for the dialect.
type castRestorer struct {
	d      Dialect
	lookup CastLookup
	err    error
}

func (r *castRestorer) Enter(n ast.Node) (ast.Node, bool) { return n, r.err != nil }

func (r *castRestorer) Leave(n ast.Node) (ast.Node, bool) {
	x, ok := n.(*ast.FuncCastExpr)
	if !ok || r.err != nil {
		return n, r.err == nil
	}
	info, ok := r.lookup(x)
	if !ok {
		r.err = sqlerr.New(sqlerr.FeatureNotSupported, "this cast syntax is not supported").WithHint("write CAST(x AS type) or x::type")
		return n, false
	}
	typ, keep := castType(r.d, info.Type)
	if r.d.Name() == "mysql" {
		return n, true
	}
	return &castNode{FuncCastExpr: x, typ: typ, keep: keep}, true
}

// paramNode restores a parameter marker as PostgreSQL's $n (n its position
// among the markers), for statements run with the parameters bound by the
// database (prepared public-table queries).
type paramNode struct{ *test_driver.ParamMarkerExpr }

// Restore implements ast.Node.
func (p *paramNode) Restore(ctx *format.RestoreCtx) error {
	ctx.WritePlain("$" + strconv.Itoa(p.Order+1))
	return nil
}

// Accept implements ast.Node, keeping the wrapper in the tree.
func (p *paramNode) Accept(v ast.Visitor) (ast.Node, bool) {
	n, skip := v.Enter(p)
	if skip {
		return v.Leave(n)
	}
	return v.Leave(p)
}

type paramRestorer struct{}

func (paramRestorer) Enter(n ast.Node) (ast.Node, bool) { return n, false }

func (paramRestorer) Leave(n ast.Node) (ast.Node, bool) {
	if m, ok := n.(*test_driver.ParamMarkerExpr); ok {
		return &paramNode{m}, true
	}
	return n, true
}

// restoreFor re-emits a checked statement for a dialect: casts with the
// client's types, and LIMIT/OFFSET in the form PostgreSQL and SQLite read
// (TiDB writes LIMIT m,n).
func restoreFor(n ast.Node, d Dialect, lookup CastLookup) (string, error) {
	if lookup != nil {
		r := &castRestorer{d: d, lookup: lookup}
		n.Accept(r)
		if r.err != nil {
			return "", r.err
		}
	}
	if d.Name() == "mysql" {
		return restore(n, d)
	}
	if st, ok := n.(ast.StmtNode); ok && d.Name() == "postgres" {
		ParamMarkers(st) // number them in text order
		n.Accept(paramRestorer{})
	}
	n.Accept(standardFixer{})
	// An OFFSET is only re-emitted on the outermost SELECT.
	var limit *ast.Limit
	if sel, ok := n.(*ast.SelectStmt); ok && sel.Limit != nil && sel.Limit.Offset != nil {
		limit, sel.Limit = sel.Limit, nil
		defer func() { sel.Limit = limit }()
	}
	if err := checkNoOffset(n); err != nil {
		return "", err
	}
	sql, err := restore(n, d)
	if err != nil || limit == nil {
		return sql, err
	}
	count, err := restore(limit.Count, d)
	if err != nil {
		return "", err
	}
	offset, err := restore(limit.Offset, d)
	if err != nil {
		return "", err
	}
	return sql + " LIMIT " + count + " OFFSET " + offset, nil
}

// standardFixer makes what TiDB's restorer writes MySQL's way restore as
// standard SQL: a join wrapping a single table is collapsed (TiDB writes
// it in parentheses, which PostgreSQL rejects), a cross join gets ON 1 = 1
// (TiDB writes "a JOIN b" with no condition), and MySQL's ! becomes NOT
// (found by FuzzAnalyze: SQLite has no !).
type standardFixer struct{}

func (standardFixer) Enter(n ast.Node) (ast.Node, bool) {
	if u, ok := n.(*ast.UnaryOperationExpr); ok && u.Op == opcode.Not2 {
		u.Op = opcode.Not
	}
	j, ok := n.(*ast.Join)
	if !ok {
		return n, false
	}
	for {
		inner, ok := j.Left.(*ast.Join)
		if !ok || inner.Right != nil {
			break
		}
		j.Left = inner.Left
	}
	if j.Right != nil && j.On == nil && j.Using == nil && !j.NaturalJoin && !j.StraightJoin {
		one := func() ast.ExprNode { v := &test_driver.ValueExpr{}; v.SetInt64(1); return v }
		j.On = &ast.OnCondition{Expr: &ast.BinaryOperationExpr{Op: opcode.EQ, L: one(), R: one()}}
	}
	return n, false
}

func (standardFixer) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// checkNoOffset refuses OFFSET below the outermost SELECT, which the
// restorer cannot write portably.
func checkNoOffset(n ast.Node) error {
	c := &offsetFinder{}
	n.Accept(c)
	if c.found {
		return sqlerr.New(sqlerr.FeatureNotSupported, "OFFSET in a subquery is not supported").WithHint("use OFFSET on the outermost SELECT only")
	}
	return nil
}

type offsetFinder struct{ found bool }

func (f *offsetFinder) Enter(n ast.Node) (ast.Node, bool) {
	if l, ok := n.(*ast.Limit); ok && l.Offset != nil {
		f.found = true
	}
	return n, f.found
}

func (f *offsetFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }
