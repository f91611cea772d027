package rewrite

// Lexical normalization of PostgreSQL text for the TiDB parser.
//
// The TiDB parser reads MySQL. Most analytic SQL a PostgreSQL client sends
// is also valid MySQL (with ANSI quotes and no backslash escapes), but a
// few PostgreSQL lexical forms either fail to parse or, worse, parse into
// something else: `$1` is an identifier to MySQL, `E'a\n'` is the column E
// with an alias, `/*! ... */` is code, `#` starts a comment, `text 'x'` is
// a column with an alias. NormalizePostgres lexes the text exactly as
// PostgreSQL does and rewrites those forms, outside strings, quoted
// identifiers and comments, into equivalent MySQL forms, or rejects them.
// Everything else is copied byte for byte.
//
// This file holds the entry point, the result and its map back to the
// client's text; the lexer is in normalize_lex.go, the rewriting passes
// in normalize_pass.go, PostgreSQL type names in normalize_types.go and
// the LIMIT/OFFSET/FETCH forms in normalize_limit.go.

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// Normalized is PostgreSQL text rewritten for the TiDB parser by
// NormalizePostgres.
//
// Transformations, applied outside string literals, quoted identifiers and
// comments:
//
//   - $n parameters become ? markers; Params[i] is the PostgreSQL number of
//     the i-th marker in SQL, so "a=$2 AND b=$1 AND c=$2" becomes
//     "a=? AND b=? AND c=?" with Params [2 1 2] and ParamCount 2. A bare ?
//     (an operator character to PostgreSQL) is kept as a marker and
//     numbered 1, 2, ... in text order, for callers that prepare text
//     written with ? markers; as an operator it can only end up a syntax
//     error or a parameter without a value.
//   - expr::type becomes CAST(expr AS T), where expr is the primary
//     expression to the left of :: (a possibly qualified name, a constant,
//     a parameter, a parenthesized expression, a function call with an
//     optional FILTER/OVER/WITHIN GROUP, CASE ... END, or the result of a
//     previous cast, so x::text::int nests). The PostgreSQL type is mapped
//     to a TiDB cast target (see Casts and CastInfo); types in the
//     CAST(x AS type) form and in typed literals (text 'x', N'x',
//     timestamptz 'x') are mapped the same way. date 'x', time 'x',
//     timestamp 'x' and interval 'x' literals are left as written: MySQL
//     reads the first three the same way, INTERVAL 'n' DAY is common to
//     both, and PostgreSQL's interval '1 day' does not parse.
//   - E'...' escape strings and $tag$...$tag$ strings become standard
//     '...' strings holding the same characters; a string continued on the
//     next line ('a'<newline>'b') becomes one string.
//   - Comments become a single space, so that MySQL's executable comments
//     (/*! ... */) and optimizer hints (/*+ ... */) are never read as code.
//   - White space and comments between the name of one of the functions
//     the TiDB lexer is sensitive about (count, sum, cast, extract, ...)
//     and its "(" are dropped: TiDB would read count (*) as a column
//     followed by a parenthesis.
//   - LIMIT ALL is dropped; OFFSET m [ROW|ROWS] and
//     FETCH {FIRST|NEXT} [n] {ROW|ROWS} ONLY become LIMIT n OFFSET m, in
//     MySQL's order; an OFFSET without a limit becomes
//     LIMIT 9223372036854775807 OFFSET m.
//
// Rejected, as *sqlerr.Error with a position in the original text:
//
//   - 0A000: casts to types without a mapping (regclass, oid, arrays,
//     interval, json, uuid, ...; also boolean: MySQL has no boolean cast
//     target, and SIGNED would read 'true' as 0); casts of array
//     subscripts (a[1]::int); # (a PostgreSQL operator, a
//     comment to MySQL), backticks (MySQL identifier quotes); ? markers
//     mixed with $n parameters; U&'...' strings;
//     hexadecimal, octal and binary integer literals and numbers with
//     underscores (PostgreSQL 16 syntax that MySQL reads differently);
//     string constants holding NUL; MySQL's LIMIT m, n; FETCH ... WITH
//     TIES; LIMIT/OFFSET values other than a number or a parameter when the
//     clause has to be rewritten; character-set introducers (_utf8mb4'x').
//   - 42601: what PostgreSQL's own lexer rejects: unterminated strings,
//     identifiers and comments, zero-length "" identifiers, trailing junk
//     after numbers and parameters ($1abc, 12abc), $0, invalid escapes, a
//     stray $, and characters outside PostgreSQL's lexical structure that
//     MySQL gives a meaning to (\, {, }); two string constants side by side
//     (MySQL would concatenate them).
//
// SQL keeps the original text byte for byte between rewritten spans, so
// positions stay meaningful; OriginalOffset and OriginalPosition map a
// position in SQL back to the original text.
type Normalized struct {
	// SQL is the text for the TiDB parser.
	SQL string
	// Original is the text NormalizePostgres was given.
	Original string
	// Params holds the PostgreSQL parameter number of each ? marker in SQL,
	// in text order. The TiDB parser records each marker's byte offset in
	// test_driver.ParamMarkerExpr.Offset; ParseStatement numbers the
	// markers (ParamMarkerExpr.Order) in the same order.
	Params []int
	// ParamCount is the highest parameter number, the statement's parameter
	// count as PostgreSQL counts it ($3 alone makes three parameters).
	ParamCount int
	// Casts describes every CAST in SQL that NormalizePostgres produced or
	// mapped, in text order (by Offset). Each CAST in SQL has one.
	Casts []CastInfo

	// paramOffsets are the byte offsets in SQL of the markers of Params.
	paramOffsets []int
	// spans cover SQL from start to end, in order.
	spans []span
}

// CastForm says how a cast was written in the original text.
type CastForm int

const (
	// CastOperator is expr::type.
	CastOperator CastForm = iota
	// CastFunction is CAST(expr AS type).
	CastFunction
	// CastLiteral is a typed literal: type 'string', or N'string' (bpchar).
	CastLiteral
)

func (f CastForm) String() string {
	return [...]string{"::", "CAST", "literal"}[f]
}

// CastInfo describes one cast: the PostgreSQL type the client asked for
// and the TiDB cast target written in its place. The TiDB target only lets
// the statement parse and tells the analyzer the coarse kind of the value
// (SIGNED: integer, DECIMAL: exact numeric, DOUBLE: float, CHAR: text,
// DATE/DATETIME/TIME: date/time); backend SQL must be written with Type,
// which keeps the precise PostgreSQL semantics: a PostgreSQL backend reads
// CAST(x AS CHAR) as char(1) and has no SIGNED, DOUBLE or DATETIME types.
type CastInfo struct {
	// Type is the PostgreSQL type in canonical spelling, valid PostgreSQL
	// SQL: "integer", "smallint", "bigint", "numeric", "numeric(10,2)",
	// "real", "double precision", "text", "character varying",
	// "character varying(20)", "character", "character(3)", "bpchar",
	// "name", "date", "timestamp", "timestamp(3)",
	// "timestamp with time zone", "time", "time(3)".
	Type string
	// Target is the TiDB cast target written into SQL: SIGNED, DECIMAL,
	// DECIMAL(p), DECIMAL(p,s), DOUBLE, CHAR, DATE, DATETIME, DATETIME(p),
	// TIME or TIME(p).
	Target string
	// Form is how the cast was written.
	Form CastForm
	// Offset is the byte offset of the CAST keyword in Normalized.SQL. The
	// TiDB parser records the same offset as the OriginTextPosition of the
	// *ast.FuncCastExpr it builds, which is how Parsed.CastOf finds it.
	Offset int
	// Position is the 1-based character position in the original text of
	// the ::, the CAST keyword, or the typed literal's type name.
	Position int
}

// span maps a run of Normalized.SQL to the original text. A verbatim span
// is a copy of the original text at orig; any other span stands for the
// construct that starts at orig.
type span struct {
	norm, orig, n int
	verbatim      bool
}

// OriginalOffset maps a byte offset in n.SQL to a byte offset in
// n.Original: within text copied from the original, the same character;
// within rewritten text, the start of the construct it replaced; at or
// past the end of SQL, the end of the original.
func (n *Normalized) OriginalOffset(off int) int {
	if off >= len(n.SQL) || len(n.spans) == 0 {
		return len(n.Original)
	}
	if off < 0 {
		return 0
	}
	i := sort.Search(len(n.spans), func(i int) bool { return n.spans[i].norm > off }) - 1
	sp := n.spans[i]
	if sp.verbatim {
		return sp.orig + (off - sp.norm)
	}
	return sp.orig
}

// OriginalPosition maps a byte offset in n.SQL to a 1-based character
// position in n.Original, as sqlerr.Error.Position counts.
func (n *Normalized) OriginalPosition(off int) int {
	return charPosition(n.Original, n.OriginalOffset(off))
}

// charPosition is the 1-based character position of byte offset off.
func charPosition(s string, off int) int {
	if off > len(s) {
		off = len(s)
	}
	return utf8.RuneCountInString(s[:off]) + 1
}

// maxParamNumber is the highest $n accepted: the PostgreSQL protocol
// counts parameters in 16 bits.
const maxParamNumber = 65535

// noLimit is the LIMIT written for an OFFSET without a limit: MySQL needs
// one, and every backend reads the largest signed 64-bit integer.
const noLimit = "9223372036854775807"

// NormalizePostgres rewrites PostgreSQL text for the TiDB parser (run in
// ANSI_QUOTES and NO_BACKSLASH_ESCAPES mode); see Normalized for what it
// changes and rejects. Errors are *sqlerr.Error with SQLSTATE 42601 or
// 0A000 and the 1-based character position of the offending construct.
func NormalizePostgres(sql string) (*Normalized, error) {
	if containsFold(sql, "filter") || containsFold(sql, "within") {
		var err error
		if sql, err = rewriteFilters(sql); err != nil {
			return nil, err
		}
	}
	sc := scratchPool.Get().(*normScratch)
	defer sc.release()
	toks, err := lexPostgresInto(sql, sc.toks[:0])
	sc.toks = toks
	if err != nil {
		return nil, err
	}
	n := &normalizer{sql: sql, toks: toks, stmtStart: true, items: sc.items[:0], arena: sc.arena[:0], gap: sc.gap[:0]}
	defer func() { sc.items, sc.arena, sc.gap = n.items, n.arena, n.gap }()
	if err := n.run(); err != nil {
		return nil, err
	}
	return n.assemble(), nil
}

// normScratch holds the lexer's and normalizer's working slices between
// calls: a statement's tokens, items and segments are garbage as soon as
// the normalized text is assembled, and reusing them spares the garbage
// collector most of the work of normalizing.
type normScratch struct {
	toks       []token
	items      []item
	arena, gap []segment
}

var scratchPool = sync.Pool{New: func() any { return new(normScratch) }}

// maxScratch is the largest slice (in elements) kept for reuse, so that
// one huge statement does not pin its buffers.
const maxScratch = 4096

// release clears the slices (they point into the last statement's text)
// and returns the scratch to the pool.
func (sc *normScratch) release() {
	if cap(sc.toks) > maxScratch || cap(sc.items) > maxScratch || cap(sc.arena) > maxScratch || cap(sc.gap) > maxScratch {
		return
	}
	clear(sc.toks[:cap(sc.toks)])
	clear(sc.items[:cap(sc.items)])
	clear(sc.arena[:cap(sc.arena)])
	clear(sc.gap[:cap(sc.gap)])
	scratchPool.Put(sc)
}

// Output: the normalized text and the map from its offsets to the
// original ones.

// needsSpace reports whether two output pieces would run together into a
// different token if written side by side.
func needsSpace(a, b byte) bool {
	switch {
	case isIdentCont(a) && isIdentCont(b):
		return true
	case a == '-' && b == '-', a == '/' && b == '*', a == '*' && b == '/':
		return true
	case a == '\'' && b == '\'', a == '"' && b == '"':
		return true
	}
	return false
}

func (n *normalizer) assemble() *Normalized {
	out := &Normalized{Original: n.sql}
	var b strings.Builder
	b.Grow(len(n.sql) + 16)
	var lastByte byte
	add := func(seg segment) {
		if seg.text == "" {
			return
		}
		if b.Len() > 0 && needsSpace(lastByte, seg.text[0]) {
			out.addSpan(b.Len(), seg.orig, 1, false)
			b.WriteByte(' ')
		}
		lastByte = seg.text[len(seg.text)-1]
		if seg.param > 0 {
			out.Params = append(out.Params, seg.param)
			out.paramOffsets = append(out.paramOffsets, b.Len())
			out.ParamCount = max(out.ParamCount, seg.param)
		}
		if seg.cast != nil {
			seg.cast.Offset = b.Len()
			out.Casts = append(out.Casts, *seg.cast)
		}
		out.addSpan(b.Len(), seg.orig, len(seg.text), seg.verbatim)
		b.WriteString(seg.text)
	}
	for _, it := range n.items {
		for _, seg := range it.segs {
			add(seg)
		}
	}
	for _, seg := range n.gap {
		add(seg)
	}
	out.SQL = b.String()
	return out
}

// addSpan records a span, merging it into the previous one when both copy
// contiguous original text.
func (n *Normalized) addSpan(norm, orig, length int, verbatim bool) {
	if k := len(n.spans); k > 0 && verbatim {
		p := &n.spans[k-1]
		if p.verbatim && p.norm+p.n == norm && p.orig+p.n == orig {
			p.n += length
			return
		}
	}
	n.spans = append(n.spans, span{norm: norm, orig: orig, n: length, verbatim: verbatim})
}
