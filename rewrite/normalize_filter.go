package rewrite

import (
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
)

// FILTER (WHERE condition) after an aggregate, which the TiDB parser does
// not read, is rewritten before normalization into the conditional
// aggregate it means:
//
//	COUNT(*) FILTER (WHERE c)   →  COUNT(CASE WHEN c THEN 1 END)
//	SUM(x) FILTER (WHERE c)     →  SUM(CASE WHEN (c) THEN x END)
//
// (conditional.go plans those). The rewrite works on the lexer's tokens,
// so strings, quoted names and comments are never mistaken for it. Error
// positions after it refer to the rewritten text.

// containsFold reports whether s contains the lower-case word w in any case.
func containsFold(s, w string) bool {
	if len(w) == 0 {
		return true
	}
	first, firstUpper := w[0], w[0]-('a'-'A')
	for i := 0; i+len(w) <= len(s); i++ {
		if c := s[i]; c != first && c != firstUpper {
			continue
		}
		match := true
		for j := 1; j < len(w) && match; j++ {
			c := s[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			match = c == w[j]
		}
		if match {
			return true
		}
	}
	return false
}

// filterAggregates are the aggregates FILTER is rewritten for.
var filterAggregates = map[string]bool{
	"count": true, "sum": true, "avg": true, "var_pop": true, "var_samp": true, "variance": true,
	"stddev_pop": true, "stddev_samp": true, "stddev": true,
}

// A quantile's WITHIN GROUP (ORDER BY x), which the TiDB parser does not
// read either, becomes the column as the first argument:
//
//	percentile_cont(0.5) WITHIN GROUP (ORDER BY x)       →  percentile_cont(x, 0.5)
//	percentile_disc(0.9) WITHIN GROUP (ORDER BY x DESC)  →  percentile_disc(x, 0.1)
//
// (quantile.go plans those).

// maxFilters bounds the rewrites of one statement.
const maxFilters = 64

// rewriteFilters rewrites every aggregate's FILTER clause; the text is
// returned unchanged when it has none.
func rewriteFilters(sql string) (string, error) {
	for range maxFilters {
		toks, err := lexPostgresInto(sql, nil)
		if err != nil {
			return sql, nil // the normalizer reports it
		}
		out, found, err := rewriteOneFilter(sql, toks)
		if err != nil || !found {
			return sql, err
		}
		sql = out
	}
	return "", sqlerr.New(sqlerr.StatementTooComplex, "more than %d FILTER clauses in one statement", maxFilters)
}

// rewriteOneFilter rewrites the first FILTER clause of sql.
func rewriteOneFilter(sql string, toks []token) (string, bool, error) {
	// sig lists the significant tokens (no spaces or comments).
	var sig []int
	for i, t := range toks {
		if t.kind != tkSpace && t.kind != tkComment {
			sig = append(sig, i)
		}
	}
	tok := func(k int) token { return toks[sig[k]] }
	isPunct := func(k int, p string) bool {
		return k >= 0 && k < len(sig) && tok(k).kind == tkPunct && sql[tok(k).pos:tok(k).end] == p
	}
	// matching returns the index of the parenthesis closing the one at k.
	matching := func(k int) int {
		depth := 0
		for j := k; j < len(sig); j++ {
			switch {
			case isPunct(j, "("):
				depth++
			case isPunct(j, ")"):
				depth--
				if depth == 0 {
					return j
				}
			}
		}
		return -1
	}
	for k := 1; k < len(sig); k++ {
		if t := tok(k); t.kind == tkWord && t.val == "within" && isPunct(k-1, ")") && k+1 < len(sig) && tok(k+1).kind == tkWord && tok(k+1).val == "group" {
			return rewriteWithinGroup(sql, toks, sig, k)
		}
		if t := tok(k); t.kind != tkWord || t.val != "filter" || !isPunct(k-1, ")") || !isPunct(k+1, "(") {
			continue
		}
		// The call before FILTER: name ( args ).
		closeArgs := k - 1
		openArgs := -1
		depth := 0
		for j := closeArgs; j >= 0; j-- {
			if isPunct(j, ")") {
				depth++
			} else if isPunct(j, "(") {
				depth--
				if depth == 0 {
					openArgs = j
					break
				}
			}
		}
		if openArgs < 1 || tok(openArgs-1).kind != tkWord || !filterAggregates[tok(openArgs-1).val] {
			return "", false, sqlerr.New(sqlerr.FeatureNotSupported, "FILTER is supported after COUNT, SUM, AVG and the variance family only").
				WithHint("write the condition into the aggregate: SUM(CASE WHEN condition THEN x END)")
		}
		closeFilter := matching(k + 1)
		if closeFilter < 0 || k+2 >= len(sig) || tok(k+2).kind != tkWord || tok(k+2).val != "where" {
			return "", false, sqlerr.New(sqlerr.SyntaxError, "FILTER must be followed by (WHERE condition)")
		}
		if openArgs+1 < closeArgs && tok(openArgs+1).kind == tkWord && tok(openArgs+1).val == "distinct" {
			return "", false, sqlerr.New(sqlerr.FeatureNotSupported, "FILTER with DISTINCT is not supported")
		}
		cond := sql[tok(k+2).end:tok(closeFilter).pos]
		args := sql[tok(openArgs).end:tok(closeArgs).pos]
		star := openArgs+2 == closeArgs && tok(openArgs+1).kind == tkOp && sql[tok(openArgs+1).pos:tok(openArgs+1).end] == "*"
		switch {
		case openArgs+1 == closeArgs:
			return "", false, sqlerr.New(sqlerr.SyntaxError, "%s() needs an argument", tok(openArgs-1).val)
		case star && tok(openArgs-1).val != "count":
			return "", false, sqlerr.New(sqlerr.SyntaxError, "%s(*) is not an aggregate", tok(openArgs-1).val)
		case star:
			args = "1" // COUNT(*)
		}
		out := sql[:tok(openArgs).end] + "CASE WHEN (" + cond + ") THEN " + args + " END" +
			sql[tok(closeArgs).pos:tok(k).pos] + sql[tok(closeFilter).end:]
		return out, true, nil
	}
	return sql, false, nil
}

// rewriteWithinGroup rewrites the WITHIN GROUP clause whose WITHIN is the
// k-th significant token.
func rewriteWithinGroup(sql string, toks []token, sig []int, k int) (string, bool, error) {
	tok := func(j int) token { return toks[sig[j]] }
	text := func(j int) string { return sql[tok(j).pos:tok(j).end] }
	isPunct := func(j int, p string) bool { return j >= 0 && j < len(sig) && tok(j).kind == tkPunct && text(j) == p }
	isWord := func(j int, w string) bool { return j >= 0 && j < len(sig) && tok(j).kind == tkWord && tok(j).val == w }
	hint := "write percentile_cont(0.5) WITHIN GROUP (ORDER BY column), or MEDIAN(column)"
	// Errors point at WITHIN.
	at := func(e *sqlerr.Error) error {
		e.Position = charPosition(sql, tok(k).pos)
		return e.WithHint("%s", hint)
	}
	// The call before WITHIN: name ( level ).
	closeArgs := k - 1
	openArgs, depth := -1, 0
	for j := closeArgs; j >= 0; j-- {
		if isPunct(j, ")") {
			depth++
		} else if isPunct(j, "(") {
			if depth--; depth == 0 {
				openArgs = j
				break
			}
		}
	}
	if openArgs < 1 || tok(openArgs-1).kind != tkWord {
		return "", false, at(sqlerr.New(sqlerr.SyntaxError, "WITHIN GROUP must follow an ordered-set aggregate"))
	}
	name := tok(openArgs - 1).val
	if name != "percentile_cont" && name != "percentile_disc" {
		return "", false, at(sqlerr.New(sqlerr.FeatureNotSupported, "%s ... WITHIN GROUP is not supported", name))
	}
	// WITHIN GROUP ( ORDER BY column [ASC | DESC] )
	open := k + 2
	if !isPunct(open, "(") || !isWord(open+1, "order") || !isWord(open+2, "by") {
		return "", false, at(sqlerr.New(sqlerr.SyntaxError, "WITHIN GROUP must be followed by (ORDER BY column)"))
	}
	end := open + 3
	for end < len(sig) && !isPunct(end, ")") && !isPunct(end, "(") && !isPunct(end, ",") {
		end++
	}
	if !isPunct(end, ")") || end == open+3 {
		return "", false, at(sqlerr.New(sqlerr.FeatureNotSupported, "%s WITHIN GROUP needs (ORDER BY column) with one column", name))
	}
	last := end - 1
	desc := false
	switch {
	case isWord(last, "desc"):
		desc, last = true, last-1
	case isWord(last, "asc"):
		last--
	}
	if last < open+3 {
		return "", false, at(sqlerr.New(sqlerr.SyntaxError, "WITHIN GROUP (ORDER BY) needs a column"))
	}
	column := sql[tok(open+3).pos:tok(last).end]
	level := strings.TrimSpace(sql[tok(openArgs).end:tok(closeArgs).pos])
	if desc {
		// The q-quantile in descending order is the (1 − q)-quantile.
		q, err := strconv.ParseFloat(level, 64)
		if err != nil || q < 0 || q > 1 {
			return "", false, at(sqlerr.New(sqlerr.InvalidParameterValue, "%s needs a constant level from 0 to 1", name))
		}
		level = strconv.FormatFloat(1-q, 'g', 15, 64)
	}
	out := sql[:tok(openArgs).end] + column + ", " + level + sql[tok(closeArgs).pos:tok(closeArgs).end] + sql[tok(end).end:]
	return out, true, nil
}
