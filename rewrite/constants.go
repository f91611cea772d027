package rewrite

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
)

// The constants a query compares its columns with (WHERE diagnosis = 'J06',
// patient_id = 42) change from one query to the next while the rest of its
// backend SQL does not. On PostgreSQL the plan sends them as parameters
// ($1, $2, ...), so that queries differing only in their constants are one
// statement to the backend, which then parses and plans it once per
// connection instead of once per query (Plan.Bound).
//
// The emitter writes each such constant as a marker, "\x00" + its number +
// "\x00", and records its SQL text in the analysis' constantTable. When the
// plan is complete, finishConstants replaces every marker: with its text
// in every SQL the plan holds (BackendSQL stays what it was, for EXPLAIN,
// the result cache and the golden files), and with a parameter in
// Plan.Bound. No SQL with a marker leaves the rewrite package (tested on
// every plan of the golden queries); one that did would fail rather than
// run changed: no constant can hold a NUL byte (Dialect.QuoteString
// refuses it), PostgreSQL refuses one in a statement, and a backend that
// ends the statement there is left inside an unclosed parenthesis.

// constantTable numbers the constants of one analysis by their SQL text:
// equal constants get the same marker, so that expressions the analysis
// compares by their SQL (conditional aggregates' values) still match.
type constantTable struct {
	texts  []string
	values []boundConstant
	index  map[string]int
}

// mark returns the marker that stands for the constant whose SQL text is
// sql, or sql itself when it is no plain number or quoted string (NULL,
// TRUE, a CAST, ...), which stays in the SQL as written.
func (t *constantTable) mark(sql string) string {
	c, ok := bindable(sql)
	if !ok {
		return sql
	}
	i, seen := t.index[sql]
	if !seen {
		if t.index == nil {
			t.index = map[string]int{}
		}
		i = len(t.texts)
		t.texts = append(t.texts, sql)
		t.values = append(t.values, c)
		t.index[sql] = i
	}
	return "\x00" + strconv.Itoa(i) + "\x00"
}

// inline replaces every marker in sql with its constant's text.
func (t *constantTable) inline(sql string) string {
	if strings.IndexByte(sql, 0) < 0 {
		return sql
	}
	var b strings.Builder
	b.Grow(len(sql) + 16*len(t.texts))
	t.each(sql, &b, func(i int) { b.WriteString(t.texts[i]) })
	return b.String()
}

// bind replaces every marker in sql with a PostgreSQL parameter, one per
// occurrence, numbered in order, and returns the parameters' values. A
// number gets the type PostgreSQL gives the same literal (integer, bigint
// or numeric), so that operators resolve as they would for the literal;
// a string stays untyped, as a quoted literal is, and takes the type its
// context gives it. Each occurrence has its own parameter because that
// type is the context's: one parameter for '2025-01-05' compared with a
// date and with a text column would take the date type at the first and
// then fail at the second, where two literals do not.
func (t *constantTable) bind(sql string) (string, []any) {
	if strings.IndexByte(sql, 0) < 0 {
		return sql, nil
	}
	var (
		b    strings.Builder
		args []any
	)
	b.Grow(len(sql) + 8*len(t.texts))
	t.each(sql, &b, func(i int) {
		args = append(args, t.values[i].value)
		b.WriteString("$" + strconv.Itoa(len(args)) + t.values[i].cast)
	})
	return b.String(), args
}

// each copies sql to b, calling put for each marker in place of it.
func (t *constantTable) each(sql string, b *strings.Builder, put func(i int)) {
	for {
		start := strings.IndexByte(sql, 0)
		if start < 0 {
			b.WriteString(sql)
			return
		}
		end := strings.IndexByte(sql[start+1:], 0)
		i, err := -1, error(nil)
		if end >= 0 {
			i, err = strconv.Atoi(sql[start+1 : start+1+end])
		}
		if end < 0 || err != nil || i < 0 || i >= len(t.texts) {
			// Not a marker of this table: left as it is, so the
			// statement fails at the backend (see the file comment).
			b.WriteString(sql)
			return
		}
		b.WriteString(sql[:start])
		put(i)
		sql = sql[start+1+end+1:]
	}
}

// boundConstant is a constant as a parameter: its value as text, and the
// cast that gives the parameter the literal's type ("" for a string).
type boundConstant struct {
	value string
	cast  string
}

// bindable reads the SQL text of a constant: a number as the emitter
// writes it (-12, 3.5, 1e+06), or a string as Dialect.QuoteString quotes
// it, in single quotes with each quote inside doubled.
func bindable(sql string) (boundConstant, bool) {
	if len(sql) >= 2 && sql[0] == '\'' && sql[len(sql)-1] == '\'' {
		inner := sql[1 : len(sql)-1]
		if strings.Contains(strings.ReplaceAll(inner, "''", ""), "'") {
			return boundConstant{}, false
		}
		return boundConstant{value: strings.ReplaceAll(inner, "''", "'")}, true
	}
	if !isNumberLiteral(sql) {
		return boundConstant{}, false
	}
	// PostgreSQL's literal types: integer when the value fits 32 bits,
	// bigint when it fits 64, numeric otherwise or with a point or an
	// exponent.
	if n, err := strconv.ParseInt(sql, 10, 64); err == nil {
		if int64(int32(n)) == n {
			return boundConstant{value: sql, cast: "::integer"}, true
		}
		return boundConstant{value: sql, cast: "::bigint"}, true
	}
	return boundConstant{value: sql, cast: "::numeric"}, true
}

// isNumberLiteral reports whether s is an optionally negative decimal
// number with an optional fraction and exponent.
func isNumberLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	digits := func() int {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		d := n
		s = s[n:]
		return d
	}
	whole := digits()
	frac := 0
	if strings.HasPrefix(s, ".") {
		s = s[1:]
		frac = digits()
	}
	if whole+frac == 0 {
		return false
	}
	if len(s) > 0 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		if digits() == 0 {
			return false
		}
	}
	return s == ""
}

// BoundSQL is a backend query with the query's constants as parameters.
type BoundSQL struct {
	SQL  string
	Args []any // the constants' values as text, $1 first
}

// finishConstants replaces the markers in every SQL of p with their
// constants' texts in t and, with Options.BindConstants on PostgreSQL,
// sets p.Bound from BackendSQL.
func finishConstants(p *Plan, t *constantTable, opts Options) {
	if t == nil || len(t.texts) == 0 {
		return
	}
	if opts.BindConstants && opts.Dialect.Name() == "postgres" && p.BackendSQL != "" {
		sql, args := t.bind(p.BackendSQL)
		p.Bound = &BoundSQL{SQL: sql, Args: args}
	}
	p.BackendSQL = t.inline(p.BackendSQL)
	p.Filter = t.inline(p.Filter)
	for i := range p.Groups {
		p.Groups[i].SQL = t.inline(p.Groups[i].SQL)
	}
	for i := range p.Histograms {
		p.Histograms[i].BackendSQL = t.inline(p.Histograms[i].BackendSQL)
	}
	for i := range p.SideQueries {
		p.SideQueries[i] = t.inline(p.SideQueries[i])
	}
	if p.Bias != nil {
		p.Bias.SQL = t.inline(p.Bias.SQL)
	}
	if p.R2T != nil {
		p.R2T.SQL = t.inline(p.R2T.SQL)
	}
	if p.Auto != nil {
		p.Auto.SQL = t.inline(p.Auto.SQL)
	}
}

// clonePlanSQL copies p deep enough for finishConstants to fill in the copy
// (a template's plan is shared by every text of its shape): every field
// finishConstants writes is copied, the rest is shared and only read.
func clonePlanSQL(p *Plan) *Plan {
	c := *p
	c.Groups = slices.Clone(p.Groups)
	c.Histograms = slices.Clone(p.Histograms)
	c.SideQueries = slices.Clone(p.SideQueries)
	if p.Bias != nil {
		b := *p.Bias
		c.Bias = &b
	}
	if p.R2T != nil {
		r := *p.R2T
		c.R2T = &r
	}
	if p.Auto != nil {
		a := *p.Auto
		c.Auto = &a
	}
	return &c
}

// inlineError replaces markers in the texts of an analysis error with
// their constants, for errors that quote emitted SQL.
func (t *constantTable) inlineError(err error) error {
	var e *sqlerr.Error
	if len(t.texts) == 0 || !errors.As(err, &e) {
		return err
	}
	e.Message, e.Hint, e.Detail = t.inline(e.Message), t.inline(e.Hint), t.inline(e.Detail)
	return err
}
