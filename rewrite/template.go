package rewrite

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// A Template is the analysis of a shape (shape_text.go): the DP plan of one
// of its texts with the slots' markers (constants.go) still in its SQL. Any
// text of the shape gets its plan by filling in its own values, without
// being parsed or analyzed.
//
// That is exact only if the analysis never reads a slot's value except to
// write it as a marker. BuildTemplate does not take it on trust:
//
//   - every slot must be an integer compared with a column in the WHERE
//     clause of the query itself (col = 42, col BETWEEN 2 AND 9,
//     col IN (3, 4)), under AND and OR only: a constant that filters rows
//     and does nothing else. A constant in a CASE, a HAVING, a LIMIT, an
//     expression, a subquery or a join's ON stays in the shape's text.
//   - the shape is analyzed three times, with three sets of probe values
//     (never the client's own, so that whether a shape has a template does
//     not depend on the first text's numbers), and the three plans must be
//     the same but for the slots' constants, each slot one marker of its
//     own; the same for the statement's canonical text (the result
//     cache's key).
//
// The sites of the analysis that read a constant's value (narrowing GROUP
// BY keys to the ones a WHERE names, an empty-result probe's 1 = 0, a
// boolean column's 0 and 1, dates, LIMIT, conditional aggregates' THEN)
// either never see a slot or change the plan between the probes, so that
// the shape is refused; TestTemplateMatchesAnalysis holds every template
// to a fresh analysis.
type Template struct {
	// Policy is the policy the template was analyzed under: it must not
	// be used under another (a reload can make any table protected).
	Policy *config.Policy
	// plan is nil for a shape found to have no template (NoTemplate).
	plan *Plan
	// consts are the plan's constants; entry[c] indexes the one of slot
	// class c, filled in for each text.
	consts constantTable
	entry  []int
	opts   Options
	// canon is the canonical text around the slots, canonClass each
	// gap's class.
	canon      []string
	canonClass []int
}

// TemplateText is one text of a shape, parsed: what BuildTemplate analyzes.
type TemplateText struct {
	Stmt  ast.StmtNode
	Casts CastLookup
	// Values are the text's values of the shape's classes.
	Values []int64
}

// ProbeBases are the bases of a shape's three probe texts (Shape.Probe):
// far from any constant a query is likely to hold and from each other,
// PostgreSQL integers and a bigint (the types differ in the backend SQL's
// parameters).
var ProbeBases = [3]int64{1_234_500_000, 987_654_321_000_000, 7_777_000}

// NoTemplate marks a shape found to have no template under pol: its texts
// are analyzed in full.
func NoTemplate(pol *config.Policy) *Template { return &Template{Policy: pol} }

// Usable reports whether t is a template, not the mark of a shape that
// has none.
func (t *Template) Usable() bool { return t.plan != nil }

// BuildTemplate makes the template of shape from its probe texts, parsed:
// Shape.Probe with each of ProbeBases, in that order. The error says why
// a shape has none; the caller then analyzes each of its texts in full.
func BuildTemplate(shape *Shape, texts []TemplateText, pol *config.Policy, opts Options) (*Template, error) {
	if len(texts) != len(ProbeBases) {
		return nil, fmt.Errorf("rewrite: a template needs %d probes, got %d texts", len(ProbeBases), len(texts))
	}
	type draft struct {
		plan      *Plan
		consts    *constantTable
		canonical string
	}
	drafts := make([]draft, len(texts))
	for i, t := range texts {
		sel, ok := t.Stmt.(*ast.SelectStmt)
		if !ok || isRR(sel) {
			return nil, fmt.Errorf("rewrite: not a template: not a SELECT with aggregates")
		}
		if !slotsFilterRows(sel, t.Values, len(shape.slotClass)) {
			return nil, fmt.Errorf("rewrite: not a template: a slot is not a constant a WHERE condition compares a column with")
		}
		o := opts
		o.Casts = t.Casts
		q, consts, err := draftSelect(sel, pol, o)
		if err != nil {
			return nil, fmt.Errorf("rewrite: not a template: %w", err)
		}
		if q.Plan == nil || q.Plan.Auto != nil || consts == nil {
			return nil, fmt.Errorf("rewrite: not a template: no DP plan of fixed bounds")
		}
		canonical, err := Canonical(sel)
		if err != nil {
			return nil, fmt.Errorf("rewrite: not a template: %w", err)
		}
		drafts[i] = draft{plan: q.Plan, consts: consts, canonical: canonical}
	}
	for i := 1; i < len(drafts); i++ {
		if !reflect.DeepEqual(drafts[0].plan, drafts[i].plan) {
			return nil, fmt.Errorf("rewrite: not a template: the plan depends on a slot's value")
		}
	}
	t := &Template{Policy: pol, plan: drafts[0].plan, opts: opts}
	values := make([][]int64, len(texts))
	for i := range texts {
		values[i] = texts[i].Values
	}
	var err error
	if t.consts, t.entry, err = slotEntries(drafts[0].consts, drafts[1].consts, drafts[2].consts, values); err != nil {
		return nil, err
	}
	t.canon, t.canonClass = splitCanonical(drafts[1].canonical, values[1])
	if len(t.canonClass) != len(shape.slotClass) || fill(t.canon, t.canonClass, values[0]) != drafts[0].canonical ||
		fill(t.canon, t.canonClass, values[2]) != drafts[2].canonical {
		return nil, fmt.Errorf("rewrite: not a template: the canonical text depends on a slot's value")
	}
	return t, nil
}

// slotEntries matches the constants of the three drafts: an entry is fixed
// when its text is the same in all three, and a slot class's when it is
// that class's value in each; every class must have exactly one.
func slotEntries(a, b, c *constantTable, values [][]int64) (constantTable, []int, error) {
	if len(a.texts) != len(b.texts) || len(a.texts) != len(c.texts) {
		return constantTable{}, nil, fmt.Errorf("rewrite: not a template: the constants depend on a slot's value")
	}
	entry := make([]int, len(values[0]))
	for k := range entry {
		entry[k] = -1
	}
	for i := range a.texts {
		if a.texts[i] == b.texts[i] && a.texts[i] == c.texts[i] {
			continue
		}
		k := -1
		for class := range entry {
			if a.texts[i] == strconv.FormatInt(values[0][class], 10) &&
				b.texts[i] == strconv.FormatInt(values[1][class], 10) &&
				c.texts[i] == strconv.FormatInt(values[2][class], 10) {
				k = class
				break
			}
		}
		if k < 0 || entry[k] >= 0 {
			return constantTable{}, nil, fmt.Errorf("rewrite: not a template: constant %d is not one slot's", i)
		}
		entry[k] = i
	}
	if slices.Contains(entry, -1) {
		return constantTable{}, nil, fmt.Errorf("rewrite: not a template: a slot is not a constant of the plan")
	}
	return constantTable{texts: slices.Clone(a.texts), values: slices.Clone(a.values)}, entry, nil
}

// splitCanonical cuts a probe's canonical text at its slots: the whole
// numbers that are one of the probe's values.
func splitCanonical(canonical string, probe []int64) (pieces []string, classes []int) {
	last := 0
	for i := 0; i < len(canonical); {
		if !isDigit(canonical[i]) || (i > 0 && (isIdentCont(canonical[i-1]) || canonical[i-1] == '.')) {
			i++
			continue
		}
		j := i
		for j < len(canonical) && isDigit(canonical[j]) {
			j++
		}
		if j == len(canonical) || !isIdentCont(canonical[j]) && canonical[j] != '.' {
			if v, err := strconv.ParseInt(canonical[i:j], 10, 64); err == nil {
				if k := slices.Index(probe, v); k >= 0 {
					pieces = append(pieces, canonical[last:i])
					classes = append(classes, k)
					last = j
				}
			}
		}
		i = j
	}
	return append(pieces, canonical[last:]), classes
}

// fill writes pieces with the classes' values between them.
func fill(pieces []string, classes []int, values []int64) string {
	var b strings.Builder
	size := 20 * len(classes) // the longest int64 is 20 bytes
	for _, p := range pieces {
		size += len(p)
	}
	b.Grow(size)
	for n, k := range classes {
		b.WriteString(pieces[n])
		b.WriteString(strconv.FormatInt(values[k], 10))
	}
	b.WriteString(pieces[len(pieces)-1])
	return b.String()
}

// Instantiate returns the plan and canonical text of a text of the
// template's shape (the same Shape.Key).
func (t *Template) Instantiate(s *Shape) (*Query, string, error) {
	if !t.Usable() {
		return nil, "", fmt.Errorf("rewrite: the shape has no template")
	}
	if len(s.Values) != len(t.entry) {
		return nil, "", fmt.Errorf("rewrite: a text of %d slot classes for a template of %d", len(s.Values), len(t.entry))
	}
	consts := constantTable{texts: slices.Clone(t.consts.texts), values: slices.Clone(t.consts.values)}
	for k, i := range t.entry {
		text := strconv.FormatInt(s.Values[k], 10)
		c, ok := bindable(text)
		if !ok {
			return nil, "", fmt.Errorf("rewrite: slot value %s is not a constant", text)
		}
		consts.texts[i], consts.values[i] = text, c
	}
	plan := clonePlanSQL(t.plan)
	finishConstants(plan, &consts, t.opts)
	return &Query{Plan: plan}, fill(t.canon, t.canonClass, s.Values), nil
}

// slotsFilterRows reports whether sel holds want integer constants with
// one of probe's values, each compared with a column in sel's own WHERE
// under AND and OR only. The column must not be one the query groups by:
// the analysis narrows a grouped column's public keys to the constants a
// WHERE requires it to equal (narrowKeys), a test of the value that probes
// need not see (a key list holds few values).
func slotsFilterRows(sel *ast.SelectStmt, probe []int64, want int) bool {
	isProbe := func(e ast.ExprNode) bool {
		v, ok := unparen(e).(*test_driver.ValueExpr)
		return ok && v.Kind() == test_driver.KindInt64 && slices.Contains(probe, v.GetInt64())
	}
	if sel.With != nil || !plainFrom(sel) {
		return false // a WHERE over a CTE or derived table
	}
	grouped := groupedColumns(sel)
	isColumn := func(e ast.ExprNode) bool {
		c, ok := unparen(e).(*ast.ColumnNameExpr)
		return ok && !grouped[c.Name.Name.L]
	}
	found := 0
	var walk func(e ast.ExprNode)
	walk = func(e ast.ExprNode) {
		switch x := unparen(e).(type) {
		case *ast.BinaryOperationExpr:
			switch x.Op {
			case opcode.LogicAnd, opcode.LogicOr:
				walk(x.L)
				walk(x.R)
			case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE:
				if isColumn(x.L) && isProbe(x.R) || isProbe(x.L) && isColumn(x.R) {
					found++
				}
			}
		case *ast.BetweenExpr:
			if isColumn(x.Expr) {
				for _, bound := range []ast.ExprNode{x.Left, x.Right} {
					if isProbe(bound) {
						found++
					}
				}
			}
		case *ast.PatternInExpr:
			if x.Sel == nil && isColumn(x.Expr) {
				for _, item := range x.List {
					if isProbe(item) {
						found++
					}
				}
			}
		}
	}
	if sel.Where != nil {
		walk(sel.Where)
	}
	if found != want {
		return false
	}
	all := &probeCounter{probe: probe}
	sel.Accept(all)
	return all.n == want
}

// plainFrom reports whether sel's FROM clause names tables only (joined or
// not), no derived table.
func plainFrom(sel *ast.SelectStmt) bool {
	if sel.From == nil || sel.From.TableRefs == nil {
		return false
	}
	var plain func(n ast.ResultSetNode) bool
	plain = func(n ast.ResultSetNode) bool {
		switch x := n.(type) {
		case *ast.Join:
			return plain(x.Left) && (x.Right == nil || plain(x.Right))
		case *ast.TableSource:
			_, ok := x.Source.(*ast.TableName)
			return ok
		}
		return false
	}
	return plain(sel.From.TableRefs)
}

// groupedColumns names (lower case, without qualifier) the columns a
// GROUP BY may group by: those in its items and in the fields outside
// aggregates (GROUP BY 1 or an alias names a field; SELECT DISTINCT is
// planned as a GROUP BY of its fields). Nil without either.
func groupedColumns(sel *ast.SelectStmt) map[string]bool {
	if sel.GroupBy == nil && !sel.Distinct {
		return nil
	}
	c := &columnCollector{names: map[string]bool{}}
	if sel.GroupBy != nil {
		for _, item := range sel.GroupBy.Items {
			item.Expr.Accept(c)
		}
	}
	if sel.Fields != nil {
		for _, f := range sel.Fields.Fields {
			if f.Expr != nil {
				f.Expr.Accept(c)
			}
		}
	}
	return c.names
}

// columnCollector names the columns of a tree outside aggregates.
type columnCollector struct{ names map[string]bool }

func (c *columnCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.AggregateFuncExpr, *ast.WindowFuncExpr:
		return n, true
	case *ast.ColumnNameExpr:
		c.names[x.Name.Name.L] = true
	}
	return n, false
}

func (c *columnCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// probeCounter counts the integer constants of a tree with a probe value.
type probeCounter struct {
	probe []int64
	n     int
}

func (c *probeCounter) Enter(n ast.Node) (ast.Node, bool) {
	if v, ok := n.(*test_driver.ValueExpr); ok {
		switch v.Kind() {
		case test_driver.KindInt64:
			if slices.Contains(c.probe, v.GetInt64()) {
				c.n++
			}
		case test_driver.KindUint64:
			if u := v.GetUint64(); u <= math.MaxInt64 && slices.Contains(c.probe, int64(u)) {
				c.n++
			}
		}
	}
	return n, false
}

func (c *probeCounter) Leave(n ast.Node) (ast.Node, bool) { return n, true }
