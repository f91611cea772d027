package rewrite

import (
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
	return strings.Contains(asciiLower(s), w)
}

// filterAggregates are the aggregates FILTER is rewritten for.
var filterAggregates = map[string]bool{
	"count": true, "sum": true, "avg": true, "var_pop": true, "var_samp": true, "variance": true,
	"stddev_pop": true, "stddev_samp": true, "stddev": true,
}

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
