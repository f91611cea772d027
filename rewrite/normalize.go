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

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dpproxy/dpproxy/sqlerr"
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

// ---------------------------------------------------------------------------
// Lexer: PostgreSQL's lexical structure (scan.l), standard_conforming_strings
// on, UTF-8.

type tokKind uint8

const (
	tkSpace     tokKind = iota
	tkComment           // -- to end of line, or nested /* */
	tkWord              // unquoted identifier or keyword; val is lower case
	tkQIdent            // "identifier"; val is the name
	tkString            // '...' (or N'...' when national); val is the value
	tkEscString         // E'...'; val is the value
	tkDollar            // $tag$...$tag$; val is the value
	tkBitString         // B'...' or X'...'
	tkNumber            // numeric constant
	tkParam             // $n; num is n
	tkTypecast          // ::
	tkPunct             // ( ) [ ] , ; . :
	tkOp                // any other operator character
)

type token struct {
	kind     tokKind
	pos, end int    // byte offsets in the original text
	val      string // see tokKind
	num      int    // tkParam: the parameter number
	// rewrite: a tkString continued across lines, to be written as one
	// '...' string built from val.
	rewrite  bool
	national bool // tkString written N'...'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// isIdentStart: PostgreSQL's ident_start, [A-Za-z\200-\377_].
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

// isIdentCont: PostgreSQL's ident_cont, ident_start plus [0-9$].
func isIdentCont(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }

func peek(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// asciiLower folds A-Z only, as PostgreSQL does for UTF-8 identifiers.
func asciiLower(s string) string {
	if lower, ok := upperKeywords[s]; ok {
		return lower
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// upperKeywords maps the keywords clients most often write in upper case
// to lower case, so that lexing them allocates nothing.
var upperKeywords = map[string]string{}

func init() {
	for _, k := range strings.Fields(`SELECT FROM WHERE GROUP BY ORDER HAVING LIMIT OFFSET AS AND OR NOT NULL IS IN
		BETWEEN LIKE ILIKE CASE WHEN THEN ELSE END DISTINCT ON JOIN LEFT RIGHT INNER OUTER ASC DESC CAST TRUE FALSE
		WITH UNION ALL COUNT SUM AVG MIN MAX EXTRACT DATE_TRUNC COALESCE INTERVAL DATE TIMESTAMP TEXT INTEGER BIGINT
		NUMERIC VARCHAR SHOW SET BEGIN COMMIT ROLLBACK`) {
		upperKeywords[k] = strings.ToLower(k)
	}
}

// posError returns an error at byte offset off of sql.
func posError(sql string, off int, code sqlerr.Code, format string, args ...any) *sqlerr.Error {
	e := sqlerr.New(code, format, args...)
	e.Position = charPosition(sql, off)
	return e
}

// excerpt is the text from off, cut to a readable length on a character
// boundary, for "at or near" messages.
func excerpt(s string, off int) string {
	rest := s[off:]
	const max = 40
	if len(rest) <= max {
		return rest
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(rest[cut]) {
		cut--
	}
	return rest[:cut] + "..."
}

// tokenText is the source text of the token starting at off, for "at or
// near" messages: one PostgreSQL token when it lexes, else a short excerpt.
func tokenText(s string, off int) string {
	if off >= len(s) {
		return ""
	}
	l := &lexer{sql: s}
	if _, err := l.next(off); err == nil && len(l.toks) == 1 {
		return s[l.toks[0].pos:l.toks[0].end]
	}
	_, size := utf8.DecodeRuneInString(s[off:])
	return s[off : off+size]
}

func syntaxErrorAt(sql string, off int) *sqlerr.Error {
	if off >= len(sql) {
		return posError(sql, len(sql), sqlerr.SyntaxError, "syntax error at end of input")
	}
	return posError(sql, off, sqlerr.SyntaxError, "syntax error at or near \"%s\"", tokenText(sql, off))
}

// strayChar is the error for a character that starts no PostgreSQL token.
func strayChar(sql string, off int) *sqlerr.Error {
	_, size := utf8.DecodeRuneInString(sql[off:])
	return posError(sql, off, sqlerr.SyntaxError, "syntax error at or near \"%s\"", sql[off:off+size])
}

type lexer struct {
	sql  string
	toks []token
	// bare counts ? markers, dollar $n parameters; firstBare is the offset
	// of the first ?.
	bare, dollar, firstBare int
}

// lexPostgresInto splits sql into PostgreSQL tokens, appended to buf.
func lexPostgresInto(sql string, buf []token) ([]token, error) {
	if i := strings.IndexByte(sql, 0); i >= 0 {
		return buf, posError(sql, i, sqlerr.SyntaxError, "query text contains a NUL character")
	}
	l := &lexer{sql: sql, toks: buf}
	for i := 0; i < len(sql); {
		next, err := l.next(i)
		if err != nil {
			return l.toks, err
		}
		i = next
	}
	if l.bare > 0 && l.dollar > 0 {
		return l.toks, posError(sql, l.firstBare, sqlerr.FeatureNotSupported, "? parameter markers cannot be mixed with $n parameters").
			WithHint("write parameters as $1, $2, ...")
	}
	return l.toks, nil
}

func (l *lexer) add(t token) { l.toks = append(l.toks, t) }

// next lexes the token at byte offset i and returns the offset after it.
func (l *lexer) next(i int) (int, error) {
	s := l.sql
	c := s[i]
	c1 := peek(s, i+1)
	switch {
	case isSpace(c):
		j := i + 1
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		l.add(token{kind: tkSpace, pos: i, end: j})
		return j, nil
	case c == '-' && c1 == '-':
		j := i + 2
		for j < len(s) && s[j] != '\n' && s[j] != '\r' {
			j++
		}
		l.add(token{kind: tkComment, pos: i, end: j})
		return j, nil
	case c == '/' && c1 == '*':
		return l.blockComment(i)
	case c == '\'':
		return l.standardString(i, i, false)
	case (c == 'e' || c == 'E') && c1 == '\'':
		return l.escapeString(i)
	case (c == 'n' || c == 'N') && c1 == '\'':
		return l.standardString(i, i+1, true)
	case (c == 'b' || c == 'B' || c == 'x' || c == 'X') && c1 == '\'':
		j := strings.IndexByte(s[i+2:], '\'')
		if j < 0 {
			return 0, posError(s, i, sqlerr.SyntaxError, "unterminated bit string literal at or near \"%s\"", excerpt(s, i))
		}
		end := i + 2 + j + 1
		l.add(token{kind: tkBitString, pos: i, end: end})
		return end, nil
	case (c == 'u' || c == 'U') && c1 == '&' && (peek(s, i+2) == '\'' || peek(s, i+2) == '"'):
		return 0, posError(s, i, sqlerr.FeatureNotSupported, "Unicode escape strings and identifiers (U&'...', U&\"...\") are not supported").
			WithHint("write the characters themselves, or use an E'...' string with \\u escapes")
	case isIdentStart(c):
		j := i + 1
		for j < len(s) && isIdentCont(s[j]) {
			j++
		}
		l.add(token{kind: tkWord, pos: i, end: j, val: asciiLower(s[i:j])})
		return j, nil
	case c == '"':
		return l.quotedIdent(i)
	case isDigit(c) || c == '.' && isDigit(c1):
		return l.number(i)
	case c == '$':
		if isDigit(c1) {
			return l.param(i)
		}
		return l.dollarString(i)
	case c == ':' && c1 == ':':
		l.add(token{kind: tkTypecast, pos: i, end: i + 2, val: "::"})
		return i + 2, nil
	case c == '#':
		return 0, posError(s, i, sqlerr.FeatureNotSupported, "operators containing # are not supported").
			WithHint("MySQL reads # as the start of a comment, so dpproxy refuses it rather than guess")
	case c == '`':
		return 0, posError(s, i, sqlerr.FeatureNotSupported, "backquoted identifiers are not supported").
			WithHint(`quote identifiers with double quotes ("name")`)
	case c == '?':
		// PostgreSQL reads ? as an operator character (jsonb's ?, ?|, ?&),
		// MySQL as a parameter marker. Kept as a marker, numbered in text
		// order, for callers that prepare text written with ? markers; a
		// ? used as an operator ends up a syntax error or a parameter with
		// no value, never a different query.
		l.bare++
		if l.bare == 1 {
			l.firstBare = i
		}
		l.add(token{kind: tkParam, pos: i, end: i + 1, num: l.bare})
		return i + 1, nil
	case c == '\\' || c == '{' || c == '}':
		return 0, strayChar(s, i)
	case strings.IndexByte("()[],;.:", c) >= 0:
		l.add(token{kind: tkPunct, pos: i, end: i + 1, val: s[i : i+1]})
		return i + 1, nil
	}
	l.add(token{kind: tkOp, pos: i, end: i + 1, val: s[i : i+1]})
	return i + 1, nil
}

// blockComment lexes a /* */ comment; they nest in PostgreSQL.
func (l *lexer) blockComment(i int) (int, error) {
	s := l.sql
	depth, j := 1, i+2
	for j < len(s) {
		switch {
		case s[j] == '/' && peek(s, j+1) == '*':
			depth++
			j += 2
		case s[j] == '*' && peek(s, j+1) == '/':
			depth--
			j += 2
			if depth == 0 {
				l.add(token{kind: tkComment, pos: i, end: j})
				return j, nil
			}
		default:
			j++
		}
	}
	return 0, posError(s, i, sqlerr.SyntaxError, "unterminated /* comment at or near \"%s\"", excerpt(s, i))
}

// continuation reports whether a string that ended just before j goes on:
// PostgreSQL joins 'a' and 'b' separated by whitespace that holds a newline
// (and possibly -- comments). It returns the offset of the opening quote.
func continuation(s string, j int) (int, bool) {
	newline := false
	for j < len(s) {
		c := s[j]
		switch {
		case c == '\n' || c == '\r':
			newline = true
			j++
		case c == ' ' || c == '\t' || c == '\f' || c == '\v':
			j++
		case c == '-' && peek(s, j+1) == '-':
			for j < len(s) && s[j] != '\n' && s[j] != '\r' {
				j++
			}
		case c == '\'' && newline:
			return j, true
		default:
			return 0, false
		}
	}
	return 0, false
}

// standardString lexes '...' (q is the offset of the quote; start is where
// the token starts, before an N prefix).
func (l *lexer) standardString(start, q int, national bool) (int, error) {
	s := l.sql
	var b strings.Builder
	j, continued := q+1, false
	for {
		k := strings.IndexByte(s[j:], '\'')
		if k < 0 {
			return 0, posError(s, start, sqlerr.SyntaxError, "unterminated quoted string at or near \"%s\"", excerpt(s, start))
		}
		b.WriteString(s[j : j+k])
		j += k + 1
		if peek(s, j) == '\'' {
			b.WriteByte('\'')
			j++
			continue
		}
		if next, ok := continuation(s, j); ok {
			continued = true
			j = next + 1
			continue
		}
		break
	}
	l.add(token{kind: tkString, pos: start, end: j, val: b.String(), rewrite: continued, national: national})
	return j, nil
}

// escapeString lexes E'...': backslash escapes \b \f \n \r \t, \o \oo \ooo
// (octal byte), \xh \xhh (hex byte), \uXXXX and \UXXXXXXXX (code points,
// UTF-16 surrogate pairs combined), \c for any other c; a doubled quote is a quote. The
// value must be valid UTF-8 without NUL.
func (l *lexer) escapeString(start int) (int, error) {
	s := l.sql
	var b []byte
	j := start + 2
	for {
		if j >= len(s) {
			return 0, posError(s, start, sqlerr.SyntaxError, "unterminated quoted string at or near \"%s\"", excerpt(s, start))
		}
		c := s[j]
		if c == '\'' {
			if peek(s, j+1) == '\'' {
				b = append(b, '\'')
				j += 2
				continue
			}
			j++
			if next, ok := continuation(s, j); ok {
				j = next + 1
				continue
			}
			break
		}
		if c != '\\' {
			b = append(b, c)
			j++
			continue
		}
		if j+1 >= len(s) {
			return 0, posError(s, start, sqlerr.SyntaxError, "unterminated quoted string at or near \"%s\"", excerpt(s, start))
		}
		var err error
		if b, j, err = l.escape(b, j); err != nil {
			return 0, err
		}
	}
	v := string(b)
	if strings.IndexByte(v, 0) >= 0 {
		return 0, posError(s, start, sqlerr.FeatureNotSupported, "string constants containing a NUL character are not supported")
	}
	if !utf8.ValidString(v) {
		return 0, posError(s, start, sqlerr.SyntaxError, "invalid byte sequence for encoding \"UTF8\" in escape string at or near \"%s\"", excerpt(s, start))
	}
	l.add(token{kind: tkEscString, pos: start, end: j, val: v})
	return j, nil
}

// escape decodes the backslash escape at s[j] (s[j+1] exists), appending
// to b; it returns the offset after the escape.
func (l *lexer) escape(b []byte, j int) ([]byte, int, error) {
	s := l.sql
	d := s[j+1]
	switch d {
	case 'b':
		return append(b, '\b'), j + 2, nil
	case 'f':
		return append(b, '\f'), j + 2, nil
	case 'n':
		return append(b, '\n'), j + 2, nil
	case 'r':
		return append(b, '\r'), j + 2, nil
	case 't':
		return append(b, '\t'), j + 2, nil
	case '0', '1', '2', '3', '4', '5', '6', '7':
		v, k := 0, j+1
		for k < len(s) && k < j+4 && s[k] >= '0' && s[k] <= '7' {
			v = v*8 + int(s[k]-'0')
			k++
		}
		return append(b, byte(v)), k, nil
	case 'x':
		v, k := 0, j+2
		for k < len(s) && k < j+4 && isHex(s[k]) {
			x, _ := strconv.ParseUint(s[k:k+1], 16, 8)
			v = v*16 + int(x)
			k++
		}
		if k == j+2 { // \x without hex digits is a plain x
			return append(b, 'x'), j + 2, nil
		}
		return append(b, byte(v)), k, nil
	case 'u', 'U':
		r, k, err := l.unicodeEscape(j)
		if err != nil {
			return nil, 0, err
		}
		if r >= 0xD800 && r <= 0xDBFF {
			if peek(s, k) != '\\' || (peek(s, k+1) != 'u' && peek(s, k+1) != 'U') {
				return nil, 0, posError(s, j, sqlerr.SyntaxError, "invalid Unicode surrogate pair")
			}
			lo, k2, err := l.unicodeEscape(k)
			if err != nil {
				return nil, 0, err
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return nil, 0, posError(s, j, sqlerr.SyntaxError, "invalid Unicode surrogate pair")
			}
			r, k = 0x10000+(r-0xD800)<<10+(lo-0xDC00), k2
		} else if r >= 0xDC00 && r <= 0xDFFF {
			return nil, 0, posError(s, j, sqlerr.SyntaxError, "invalid Unicode surrogate pair")
		}
		if r == 0 {
			return nil, 0, posError(s, j, sqlerr.FeatureNotSupported, "string constants containing a NUL character are not supported")
		}
		return utf8.AppendRune(b, rune(r)), k, nil
	}
	// Any other character stands for itself (\\, \', ...).
	return append(b, d), j + 2, nil
}

// unicodeEscape reads \uXXXX or \UXXXXXXXX at s[j].
func (l *lexer) unicodeEscape(j int) (int, int, error) {
	s := l.sql
	digits := 4
	if s[j+1] == 'U' {
		digits = 8
	}
	if j+2+digits > len(s) {
		return 0, 0, posError(s, j, sqlerr.SyntaxError, "invalid Unicode escape").WithHint(`Unicode escapes must be \uXXXX or \UXXXXXXXX.`)
	}
	for k := j + 2; k < j+2+digits; k++ {
		if !isHex(s[k]) {
			return 0, 0, posError(s, j, sqlerr.SyntaxError, "invalid Unicode escape").WithHint(`Unicode escapes must be \uXXXX or \UXXXXXXXX.`)
		}
	}
	v, _ := strconv.ParseUint(s[j+2:j+2+digits], 16, 32)
	if v > utf8.MaxRune {
		return 0, 0, posError(s, j, sqlerr.SyntaxError, "invalid Unicode escape value")
	}
	return int(v), j + 2 + digits, nil
}

// dollarString lexes $tag$...$tag$ at s[i] == '$'.
func (l *lexer) dollarString(i int) (int, error) {
	s := l.sql
	j := i + 1
	if j < len(s) && isIdentStart(s[j]) {
		j++
		for j < len(s) && (isIdentStart(s[j]) || isDigit(s[j])) {
			j++
		}
	}
	if peek(s, j) != '$' {
		return 0, strayChar(s, i)
	}
	delim := s[i : j+1]
	body := j + 1
	k := strings.Index(s[body:], delim)
	if k < 0 {
		return 0, posError(s, i, sqlerr.SyntaxError, "unterminated dollar-quoted string at or near \"%s\"", excerpt(s, i))
	}
	end := body + k + len(delim)
	l.add(token{kind: tkDollar, pos: i, end: end, val: s[body : body+k]})
	return end, nil
}

// param lexes $n.
func (l *lexer) param(i int) (int, error) {
	s := l.sql
	j := i + 1
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j < len(s) && isIdentStart(s[j]) {
		k := j
		for k < len(s) && isIdentCont(s[k]) {
			k++
		}
		return 0, posError(s, i, sqlerr.SyntaxError, "trailing junk after parameter at or near \"%s\"", s[i:k])
	}
	n, err := strconv.Atoi(s[i+1 : j])
	if err != nil || n > maxParamNumber {
		return 0, posError(s, i, sqlerr.SyntaxError, "parameter number %s is out of range", s[i:j])
	}
	if n == 0 {
		return 0, posError(s, i, sqlerr.SyntaxError, "there is no parameter $0")
	}
	l.dollar++
	l.add(token{kind: tkParam, pos: i, end: j, num: n})
	return j, nil
}

// number lexes a numeric constant: digits, an optional fraction, an
// optional exponent. PostgreSQL 16's 0x/0o/0b integers and digit-group
// underscores are refused: MySQL reads 0x1F as a binary string and 1_000 as
// an identifier.
func (l *lexer) number(i int) (int, error) {
	s := l.sql
	if s[i] == '0' && strings.IndexByte("xXoObB", peek(s, i+1)) >= 0 && isIdentCont(peek(s, i+2)) {
		return 0, posError(s, i, sqlerr.FeatureNotSupported, "hexadecimal, octal and binary integer constants are not supported").
			WithHint("write the number in decimal")
	}
	j := i
	digits := func() error {
		for j < len(s) && isDigit(s[j]) {
			j++
			if peek(s, j) == '_' && isDigit(peek(s, j+1)) {
				return posError(s, i, sqlerr.FeatureNotSupported, "numeric constants with underscores are not supported").
					WithHint("write the number without underscores")
			}
		}
		return nil
	}
	if err := digits(); err != nil {
		return 0, err
	}
	if peek(s, j) == '.' && peek(s, j+1) != '.' {
		j++
		if err := digits(); err != nil {
			return 0, err
		}
	}
	if c := peek(s, j); c == 'e' || c == 'E' {
		k := j + 1
		if c := peek(s, k); c == '+' || c == '-' {
			k++
		}
		if isDigit(peek(s, k)) {
			j = k
			if err := digits(); err != nil {
				return 0, err
			}
		}
	}
	if j < len(s) && isIdentStart(s[j]) {
		k := j
		for k < len(s) && isIdentCont(s[k]) {
			k++
		}
		return 0, posError(s, i, sqlerr.SyntaxError, "trailing junk after numeric literal at or near \"%s\"", s[i:k])
	}
	l.add(token{kind: tkNumber, pos: i, end: j})
	return j, nil
}

// quotedIdent lexes "identifier" ("" is a quote).
func (l *lexer) quotedIdent(i int) (int, error) {
	s := l.sql
	// Most identifiers hold no doubled quote: their name is a substring.
	if k := strings.IndexByte(s[i+1:], '"'); k > 0 && peek(s, i+1+k+1) != '"' {
		j := i + 1 + k + 1
		l.add(token{kind: tkQIdent, pos: i, end: j, val: s[i+1 : j-1]})
		return j, nil
	}
	var b strings.Builder
	j := i + 1
	for {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return 0, posError(s, i, sqlerr.SyntaxError, "unterminated quoted identifier at or near \"%s\"", excerpt(s, i))
		}
		b.WriteString(s[j : j+k])
		j += k + 1
		if peek(s, j) == '"' {
			b.WriteByte('"')
			j++
			continue
		}
		break
	}
	if b.Len() == 0 {
		return 0, posError(s, i, sqlerr.SyntaxError, "zero-length delimited identifier at or near \"\"\"\"")
	}
	l.add(token{kind: tkQIdent, pos: i, end: j, val: b.String()})
	return j, nil
}

// ---------------------------------------------------------------------------
// Transformer.

// segment is a piece of the output text.
type segment struct {
	text     string
	orig     int       // byte offset in the original text this piece stands for
	verbatim bool      // text is the original text at orig
	param    int       // > 0: text is the ? marker of parameter $param
	cast     *CastInfo // non-nil: text starts with the CAST keyword of this cast
}

type itemKind uint8

const (
	itWord      itemKind = iota // unquoted word
	itQIdent                    // "identifier"
	itString                    // string constant
	itBitString                 // B'...' or X'...'
	itNumber
	itParam
	itOpen  // (
	itClose // )
	itDot   // .
	itExpr  // a complete primary expression: the CAST(...) of a cast
	itOther // operators, commas, brackets, rewritten clauses, ...
)

// item is one unit of output: a token or a rewritten construct, preceded
// by the whitespace before it.
type item struct {
	kind itemKind
	word string // itWord: lower case
	text string // itOther: the punctuation or operator
	pos  int    // byte offset of the item in the original text
	segs []segment
	// lead is the number of leading whitespace segments in segs.
	lead int
	// match is, for itClose, the index of the matching itOpen.
	match int
	// literal marks the itExpr of a typed literal, a string constant.
	literal bool
	// itOpen of CAST(: castWord is the index of the CAST keyword item;
	// castDone is set once the AS type has been mapped.
	castOpen bool
	castDone bool
	castWord int
}

type normalizer struct {
	sql       string
	toks      []token
	items     []item
	parens    []int // indices of the items of unclosed (
	gap       []segment
	arena     []segment // backing store of the items' segs (see push)
	stmtStart bool      // no item yet in the current statement
	// plainLimitEnd is the index of the token after LIMIT/OFFSET clauses
	// that limitClause left as written.
	plainLimitEnd int
}

func (n *normalizer) verbatim(t token) segment {
	return segment{text: n.sql[t.pos:t.end], orig: t.pos, verbatim: true}
}

func synth(text string, orig int) segment { return segment{text: text, orig: orig} }

// sig returns the index of the first token at or after i that is not
// whitespace or a comment, or len(n.toks).
func (n *normalizer) sig(i int) int {
	for i < len(n.toks) && (n.toks[i].kind == tkSpace || n.toks[i].kind == tkComment) {
		i++
	}
	return i
}

func (n *normalizer) isWord(i int, words ...string) bool {
	if i >= len(n.toks) || n.toks[i].kind != tkWord {
		return false
	}
	for _, w := range words {
		if n.toks[i].val == w {
			return true
		}
	}
	return false
}

func (n *normalizer) isPunct(i int, p string) bool {
	return i < len(n.toks) && n.toks[i].kind == tkPunct && n.toks[i].val == p
}

func (n *normalizer) errAt(i int) *sqlerr.Error {
	if i >= len(n.toks) {
		return syntaxErrorAt(n.sql, len(n.sql))
	}
	return syntaxErrorAt(n.sql, n.toks[i].pos)
}

// push appends an item, giving it the pending whitespace.
func (n *normalizer) push(it item, segs ...segment) {
	it.lead = len(n.gap)
	// The segments of every item are carved out of one arena (capacity
	// capped, so that appending to an item's segs copies).
	start := len(n.arena)
	n.arena = append(n.arena, n.gap...)
	n.arena = append(n.arena, segs...)
	it.segs = n.arena[start:len(n.arena):len(n.arena)]
	n.gap = n.gap[:0]
	n.items = append(n.items, it)
	n.stmtStart = false
}

func (n *normalizer) last() *item {
	if len(n.items) == 0 {
		return nil
	}
	return &n.items[len(n.items)-1]
}

func isStringToken(k tokKind) bool {
	return k == tkString || k == tkEscString || k == tkDollar || k == tkBitString
}

// stringSeg writes a string token for MySQL: standard strings as they
// are, others as a '...' string with quotes doubled.
func (n *normalizer) stringSeg(t token) segment {
	if t.kind == tkBitString || t.kind == tkString && !t.rewrite && !t.national {
		return n.verbatim(t)
	}
	return synth("'"+strings.ReplaceAll(t.val, "'", "''")+"'", t.pos)
}

func (n *normalizer) run() error {
	for i := 0; i < len(n.toks); {
		t := n.toks[i]
		switch t.kind {
		case tkSpace:
			n.gap = append(n.gap, n.verbatim(t))
		case tkComment:
			n.gap = append(n.gap, synth(" ", t.pos))
		case tkTypecast:
			next, err := n.typecast(i)
			if err != nil {
				return err
			}
			i = next
			continue
		case tkWord:
			next, err := n.word(i)
			if err != nil {
				return err
			}
			i = next
			continue
		case tkQIdent:
			n.push(item{kind: itQIdent, pos: t.pos}, n.verbatim(t))
		case tkString, tkEscString, tkDollar, tkBitString:
			if last := n.last(); last != nil && (last.kind == itString || last.kind == itBitString || last.literal) {
				// PostgreSQL joins constants only across a newline (done by
				// the lexer); MySQL would concatenate these.
				return syntaxErrorAt(n.sql, t.pos)
			}
			if t.national {
				// N'x' is PostgreSQL's NCHAR 'x', a bpchar constant.
				n.pushLiteralCast(t, pgType{name: "bpchar", written: "bpchar", pos: t.pos})
				break
			}
			kind := itString
			if t.kind == tkBitString {
				kind = itBitString
			}
			n.push(item{kind: kind, pos: t.pos}, n.stringSeg(t))
		case tkNumber:
			n.push(item{kind: itNumber, pos: t.pos}, n.verbatim(t))
		case tkParam:
			n.push(item{kind: itParam, pos: t.pos}, segment{text: "?", orig: t.pos, param: t.num})
		case tkPunct:
			n.punct(t)
		default:
			n.push(item{kind: itOther, text: t.val, pos: t.pos}, n.verbatim(t))
		}
		i++
	}
	return nil
}

func (n *normalizer) punct(t token) {
	switch t.val {
	case "(":
		it := item{kind: itOpen, pos: t.pos}
		if last := n.last(); last != nil && last.kind == itWord {
			if last.word == "cast" {
				it.castOpen, it.castWord = true, len(n.items)-1
			}
			if spaceSensitiveFunctions[last.word] {
				// PostgreSQL allows space before a call's parenthesis; the
				// TiDB lexer reads these names as functions only when "("
				// follows at once.
				n.gap = nil
			}
		}
		n.push(it, n.verbatim(t))
		n.parens = append(n.parens, len(n.items)-1)
	case ")":
		it := item{kind: itOther, text: ")", pos: t.pos}
		if k := len(n.parens); k > 0 {
			it.kind, it.match = itClose, n.parens[k-1]
			n.parens = n.parens[:k-1]
		}
		n.push(it, n.verbatim(t))
	case ".":
		n.push(item{kind: itDot, text: ".", pos: t.pos}, n.verbatim(t))
	case ";":
		n.push(item{kind: itOther, text: ";", pos: t.pos}, n.verbatim(t))
		n.parens = n.parens[:0]
		n.stmtStart = true
	default:
		n.push(item{kind: itOther, text: t.val, pos: t.pos}, n.verbatim(t))
	}
}

// literalTypeWords are the words that may start a typed literal
// (type 'string') that NormalizePostgres rewrites or rejects.
var literalTypeWords = wordSet(`int int2 int4 int8 integer smallint bigint numeric decimal dec real
	float float4 float8 double text varchar char character bpchar name date time timestamp
	timestamptz timetz bool boolean json jsonb uuid bytea oid regclass regtype regproc regprocedure
	regnamespace regrole regoper xml money inet cidr macaddr bit varbit tsvector tsquery point`)

// word handles an unquoted word at toks[i].
func (n *normalizer) word(i int) (int, error) {
	t := n.toks[i]
	last := n.last()
	afterDot := last != nil && last.kind == itDot
	switch {
	case !afterDot && i >= n.plainLimitEnd && (t.val == "limit" || t.val == "offset" || t.val == "fetch" && !n.stmtStart):
		next, done, err := n.limitClause(i)
		if err != nil || done {
			return next, err
		}
	case t.val == "as" && len(n.parens) > 0:
		if open := &n.items[n.parens[len(n.parens)-1]]; open.castOpen && !open.castDone {
			return n.castTarget(i, open)
		}
	case !afterDot && literalTypeWords[t.val]:
		next, done, err := n.typedLiteral(i)
		if err != nil || done {
			return next, err
		}
	case !afterDot && t.val[0] == '_':
		if k := n.sig(i + 1); k < len(n.toks) && isStringToken(n.toks[k].kind) {
			return 0, posError(n.sql, t.pos, sqlerr.FeatureNotSupported, "cast to type %s is not supported", n.sql[t.pos:t.end]).
				WithHint("MySQL would read %s as a character set introducer", n.sql[t.pos:t.end])
		}
	}
	n.push(item{kind: itWord, word: t.val, pos: t.pos}, n.verbatim(t))
	return i + 1, nil
}

// typedLiteral rewrites type 'string' at toks[i] into CAST('string' AS T).
// date, time and timestamp literals without modifiers are left alone
// (MySQL reads them the same way), as is anything not followed by a string.
func (n *normalizer) typedLiteral(i int) (next int, done bool, err error) {
	ty, k, err := n.parseType(i)
	if err != nil {
		return 0, false, nil
	}
	k = n.sig(k)
	if k >= len(n.toks) || !isStringToken(n.toks[k].kind) || n.toks[k].kind == tkBitString || n.toks[k].national {
		return 0, false, nil
	}
	if !ty.quoted && ty.schema == "" && !ty.array && len(ty.mods) == 0 && ty.tz == tzNone &&
		(ty.name == "date" || ty.name == "time" || ty.name == "timestamp") {
		return 0, false, nil
	}
	if _, _, err := resolveType(n.sql, ty); err != nil {
		return 0, false, err
	}
	n.pushLiteralCast(n.toks[k], ty)
	return k + 1, true, nil
}

// pushLiteralCast pushes CAST('string' AS T) for a typed literal whose
// type has been checked.
func (n *normalizer) pushLiteralCast(str token, ty pgType) {
	target, canonical, _ := resolveType(n.sql, ty)
	info := &CastInfo{Type: canonical, Target: target, Form: CastLiteral, Position: charPosition(n.sql, ty.pos)}
	open := synth("CAST(", ty.pos)
	open.cast = info
	n.push(item{kind: itExpr, literal: true, pos: ty.pos}, open, n.stringSeg(str), synth(" AS "+target+")", str.end))
}

// castTarget maps the type of CAST(x AS type) at toks[i] (the AS).
func (n *normalizer) castTarget(i int, open *item) (int, error) {
	ty, k, err := n.parseType(i + 1)
	if err != nil {
		return 0, err
	}
	if k = n.sig(k); !n.isPunct(k, ")") {
		return 0, n.errAt(k)
	}
	target, canonical, err := resolveType(n.sql, ty)
	if err != nil {
		return 0, err
	}
	open.castDone = true
	cw := &n.items[open.castWord]
	cw.segs[cw.lead].cast = &CastInfo{Type: canonical, Target: target, Form: CastFunction, Position: charPosition(n.sql, cw.pos)}
	t := n.toks[i]
	n.push(item{kind: itWord, word: "as", pos: t.pos}, n.verbatim(t))
	n.push(item{kind: itOther, pos: ty.pos}, synth(" "+target, ty.pos))
	n.gap = nil // whitespace between the type and ")"
	return k, nil
}

// typecast rewrites expr::type at toks[i] (the ::) into CAST(expr AS T).
func (n *normalizer) typecast(i int) (int, error) {
	t := n.toks[i]
	s, ok := n.primaryEndingAt(len(n.items) - 1)
	if !ok {
		if last := n.last(); last != nil && last.kind == itOther && last.text == "]" {
			return 0, posError(n.sql, t.pos, sqlerr.FeatureNotSupported, "casts of array subscripts are not supported")
		}
		return 0, syntaxErrorAt(n.sql, t.pos)
	}
	for _, p := range n.parens {
		if p >= s {
			return 0, syntaxErrorAt(n.sql, t.pos)
		}
	}
	ty, next, err := n.parseType(i + 1)
	if err != nil {
		return 0, err
	}
	target, canonical, err := resolveType(n.sql, ty)
	if err != nil {
		return 0, err
	}
	first := n.items[s]
	info := &CastInfo{Type: canonical, Target: target, Form: CastOperator, Position: charPosition(n.sql, t.pos)}
	open := synth("CAST(", first.pos)
	open.cast = info
	segs := append([]segment{}, first.segs[:first.lead]...)
	segs = append(segs, open)
	segs = append(segs, first.segs[first.lead:]...)
	for _, it := range n.items[s+1:] {
		segs = append(segs, it.segs...)
	}
	segs = append(segs, synth(" AS "+target+")", t.pos))
	n.items = append(n.items[:s], item{kind: itExpr, pos: first.pos, segs: segs, lead: first.lead})
	n.gap = nil // whitespace before ::
	return next, nil
}

// reservedWords are PostgreSQL's reserved key words, and the key words
// that can name a type or function but act as operators (LIKE, IS, JOIN,
// ...). None of them is an operand on its own (constantWords aside), and
// none names a function called with the parentheses after it
// (functionWords aside).
var reservedWords = wordSet(`all analyse analyze and any array as asc asymmetric both case cast
	check collate column constraint create current_catalog current_date current_role current_time
	current_timestamp current_user default deferrable desc distinct do else end except false fetch
	for foreign from grant group having in initially intersect into lateral leading limit localtime
	localtimestamp not null offset on only or order placing primary references returning select
	session_user some symmetric system_user table then to trailing true union unique user using
	variadic when where window with
	ilike is isnull notnull like similar overlaps join cross inner outer full natural tablesample`)

// clauseWords are non-reserved key words (so possibly column names) that,
// before "(", introduce a parenthesized expression rather than call a
// function: x BETWEEN (a) AND (b), PARTITION BY (x), AT TIME ZONE (z).
var clauseWords = wordSet(`between values escape set by zone over filter within first next rows
	range groups partition`)

// spaceSensitiveFunctions are the functions the TiDB lexer recognizes only
// when "(" follows the name at once (its btFuncTokenMap).
var spaceSensitiveFunctions = wordSet(`bit_and bit_or bit_xor cast count approx_count_distinct
	approx_percentile curdate curtime date_add date_sub extract group_concat max mid min now position
	std stddev stddev_pop stddev_samp substr substring sum sysdate translate trim variance var_pop
	var_samp`)

// functionWords are reserved words that do form a primary expression with
// the parentheses after them.
var functionWords = wordSet(`cast array current_time current_timestamp localtime localtimestamp`)

// constantWords are reserved words that are primary expressions on their
// own.
var constantWords = wordSet(`true false null current_date current_time current_timestamp localtime
	localtimestamp current_user session_user user current_role current_catalog current_schema
	system_user`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// primaryEndingAt returns the index of the first item of the primary
// expression that ends with item j: the left operand of a :: there.
func (n *normalizer) primaryEndingAt(j int) (int, bool) {
	if j < 0 {
		return 0, false
	}
	it := &n.items[j]
	switch it.kind {
	case itExpr, itNumber, itParam, itBitString:
		return j, true
	case itString:
		// date 'x'::text casts the typed literal.
		if j > 0 {
			p := &n.items[j-1]
			if p.kind == itWord && (p.word == "date" || p.word == "time" || p.word == "timestamp" || p.word == "interval") &&
				(j < 2 || n.items[j-2].kind != itDot) {
				return j - 1, true
			}
		}
		return j, true
	case itQIdent:
		return n.chainStart(j), true
	case itWord:
		if it.word == "end" {
			return n.caseStart(j)
		}
		if constantWords[it.word] {
			return j, true
		}
		if reservedWords[it.word] {
			return 0, false
		}
		return n.chainStart(j), true
	case itClose:
		return n.callStart(it.match), true
	}
	return 0, false
}

// chainStart extends a name at item j to the left over a.b."c".
func (n *normalizer) chainStart(j int) int {
	for j >= 2 && n.items[j-1].kind == itDot {
		p := &n.items[j-2]
		if p.kind == itQIdent || p.kind == itWord && !reservedWords[p.word] {
			j -= 2
			continue
		}
		break
	}
	return j
}

// callStart extends a parenthesized group starting at item s to the left
// over a function name, and over the call before FILTER (...), OVER (...)
// or WITHIN GROUP (...).
func (n *normalizer) callStart(s int) int {
	if s == 0 {
		return s
	}
	p := &n.items[s-1]
	switch {
	case p.kind == itQIdent:
		return n.chainStart(s - 1)
	case p.kind != itWord:
		return s
	case p.word == "over" || p.word == "filter":
		if s >= 2 && n.items[s-2].kind == itClose {
			return n.callStart(n.items[s-2].match)
		}
		return s
	case p.word == "group":
		if s >= 3 && n.items[s-2].kind == itWord && n.items[s-2].word == "within" && n.items[s-3].kind == itClose {
			return n.callStart(n.items[s-3].match)
		}
		return s
	case functionWords[p.word] || !reservedWords[p.word] && !clauseWords[p.word]:
		return n.chainStart(s - 1)
	}
	return s
}

// caseStart finds the CASE of the END at item j.
func (n *normalizer) caseStart(j int) (int, bool) {
	depth := 0
	for k := j; k >= 0; k-- {
		it := &n.items[k]
		switch {
		case it.kind == itClose:
			k = it.match
		case it.kind == itOpen:
			return 0, false
		case it.kind == itWord && it.word == "end":
			depth++
		case it.kind == itWord && it.word == "case":
			if depth--; depth == 0 {
				return k, true
			}
		}
	}
	return 0, false
}

// ---------------------------------------------------------------------------
// Types.

const (
	tzNone = iota
	tzWith
	tzWithout
)

// pgType is a PostgreSQL type name as written.
type pgType struct {
	name    string // lower case (unquoted) or exact (quoted); multi-word names joined by a space
	schema  string
	quoted  bool
	mods    []int
	tz      int
	array   bool
	written string // the source text, whitespace collapsed, for messages
	pos     int
}

// parseType reads a type name starting at the first significant token at
// or after i: [schema.]name, the multi-word names (double precision,
// character varying, bit varying, time[stamp] [(p)] with[out] time zone),
// integer modifiers in parentheses, and array suffixes ([], [n], ARRAY).
// It returns the index of the token after the type.
func (n *normalizer) parseType(i int) (pgType, int, error) {
	k := n.sig(i)
	if k >= len(n.toks) || n.toks[k].kind != tkWord && n.toks[k].kind != tkQIdent {
		return pgType{}, 0, n.errAt(k)
	}
	ty := pgType{name: n.toks[k].val, quoted: n.toks[k].kind == tkQIdent, pos: n.toks[k].pos}
	end := n.toks[k].end
	take := func(j int) { end = n.toks[j].end; k = j }
	if j := n.sig(k + 1); n.isPunct(j, ".") {
		m := n.sig(j + 1)
		if m >= len(n.toks) || n.toks[m].kind != tkWord && n.toks[m].kind != tkQIdent {
			return pgType{}, 0, n.errAt(m)
		}
		ty.schema, ty.name, ty.quoted = ty.name, n.toks[m].val, n.toks[m].kind == tkQIdent
		take(m)
	}
	if !ty.quoted {
		j := n.sig(k + 1)
		switch {
		case ty.name == "double" && n.isWord(j, "precision"):
			ty.name = "double precision"
			take(j)
		case (ty.name == "character" || ty.name == "char" || ty.name == "bit") && n.isWord(j, "varying"):
			ty.name += " varying"
			take(j)
		}
	}
	if j := n.sig(k + 1); n.isPunct(j, "(") {
		for {
			v := n.sig(j + 1)
			if v >= len(n.toks) || n.toks[v].kind != tkNumber {
				return pgType{}, 0, n.errAt(v)
			}
			m, err := strconv.Atoi(n.sql[n.toks[v].pos:n.toks[v].end])
			if err != nil {
				return pgType{}, 0, posError(n.sql, n.toks[v].pos, sqlerr.SyntaxError, "type modifiers must be simple constants or identifiers")
			}
			ty.mods = append(ty.mods, m)
			j = n.sig(v + 1)
			if n.isPunct(j, ")") {
				take(j)
				break
			}
			if !n.isPunct(j, ",") {
				return pgType{}, 0, n.errAt(j)
			}
		}
	}
	if !ty.quoted && (ty.name == "timestamp" || ty.name == "time") {
		j := n.sig(k + 1)
		if n.isWord(j, "with", "without") {
			t2 := n.sig(j + 1)
			z := n.sig(t2 + 1)
			if n.isWord(t2, "time") && n.isWord(z, "zone") {
				ty.tz = tzWith
				if n.toks[j].val == "without" {
					ty.tz = tzWithout
				}
				take(z)
			}
		}
	}
	for {
		j := n.sig(k + 1)
		if n.isWord(j, "array") {
			ty.array = true
			take(j)
			j = n.sig(k + 1)
			if !n.isPunct(j, "[") {
				continue
			}
		}
		if !n.isPunct(j, "[") {
			break
		}
		ty.array = true
		m := n.sig(j + 1)
		if m < len(n.toks) && n.toks[m].kind == tkNumber {
			m = n.sig(m + 1)
		}
		if !n.isPunct(m, "]") {
			return pgType{}, 0, n.errAt(m)
		}
		take(m)
	}
	ty.written = strings.Join(strings.Fields(n.sql[ty.pos:end]), " ")
	return ty, k + 1, nil
}

// typeAliases maps PostgreSQL type names to canonical ones; quotedTypes are
// the names that also work quoted (catalog names; "integer" is not one).
var typeAliases = map[string]string{
	"int": "integer", "int4": "integer", "integer": "integer",
	"smallint": "smallint", "int2": "smallint",
	"bigint": "bigint", "int8": "bigint",
	"numeric": "numeric", "decimal": "numeric", "dec": "numeric",
	"real": "real", "float4": "real",
	"double precision": "double precision", "float8": "double precision",
	"float": "float",
	"text":  "text", "name": "name",
	"varchar": "character varying", "character varying": "character varying", "char varying": "character varying",
	"char": "character", "character": "character", "bpchar": "bpchar",
	"date": "date", "timestamp": "timestamp", "timestamptz": "timestamptz", "time": "time",
}

var quotedTypes = map[string]bool{
	"int2": true, "int4": true, "int8": true, "numeric": true, "float4": true, "float8": true,
	"text": true, "varchar": true, "bpchar": true, "name": true, "date": true,
	"timestamp": true, "timestamptz": true, "time": true,
}

// resolveType maps a PostgreSQL type to a TiDB cast target and the
// canonical PostgreSQL spelling. Types without a mapping are a 0A000
// error; booleans are among them: MySQL has no boolean cast, and casting
// to an integer would give 'true'::boolean a different meaning.
func resolveType(sql string, ty pgType) (target, canonical string, err error) {
	unsupported := func() (string, string, error) {
		return "", "", posError(sql, ty.pos, sqlerr.FeatureNotSupported, "cast to type %s is not supported", ty.written).
			WithHint("casts to integer, numeric, real, double precision, text, varchar, char, date, timestamp and time are supported")
	}
	badMods := func() (string, string, error) {
		return "", "", posError(sql, ty.pos, sqlerr.SyntaxError, "invalid type modifier for type %s", ty.written)
	}
	if ty.array || ty.schema != "" && ty.schema != "pg_catalog" || ty.quoted && !quotedTypes[ty.name] {
		return unsupported()
	}
	name, ok := typeAliases[ty.name]
	if !ok {
		return unsupported()
	}
	switch name {
	case "timestamp":
		if ty.tz == tzWith {
			name = "timestamptz"
		}
	case "time":
		if ty.tz == tzWith {
			return unsupported()
		}
	}
	m := ty.mods
	switch name {
	case "integer", "smallint", "bigint":
		if len(m) > 0 {
			return badMods()
		}
		return "SIGNED", name, nil
	case "numeric":
		switch {
		case len(m) == 0:
			return "DECIMAL", "numeric", nil
		case len(m) == 1 && m[0] >= 1 && m[0] <= 1000:
			return fmt.Sprintf("DECIMAL(%d)", m[0]), fmt.Sprintf("numeric(%d)", m[0]), nil
		case len(m) == 2 && m[0] >= 1 && m[0] <= 1000 && m[1] >= 0 && m[1] <= m[0]:
			return fmt.Sprintf("DECIMAL(%d,%d)", m[0], m[1]), fmt.Sprintf("numeric(%d,%d)", m[0], m[1]), nil
		}
		return badMods()
	case "real", "double precision":
		if len(m) > 0 {
			return badMods()
		}
		return "DOUBLE", name, nil
	case "float":
		switch {
		case len(m) == 0:
			return "DOUBLE", "double precision", nil
		case len(m) == 1 && m[0] >= 1 && m[0] <= 24:
			return "DOUBLE", "real", nil
		case len(m) == 1 && m[0] >= 25 && m[0] <= 53:
			return "DOUBLE", "double precision", nil
		}
		return badMods()
	case "text", "name":
		if len(m) > 0 {
			return badMods()
		}
		return "CHAR", name, nil
	case "character varying", "character", "bpchar":
		switch {
		case len(m) == 0:
			return "CHAR", name, nil
		case len(m) == 1 && m[0] >= 1 && m[0] <= 10485760:
			if name == "bpchar" {
				name = "character"
			}
			return "CHAR", fmt.Sprintf("%s(%d)", name, m[0]), nil
		}
		return badMods()
	case "date":
		if len(m) > 0 {
			return badMods()
		}
		return "DATE", "date", nil
	case "timestamp", "timestamptz", "time":
		suffix := ""
		if name == "timestamptz" {
			name, suffix = "timestamp", " with time zone"
		}
		target := "DATETIME"
		if name == "time" {
			target = "TIME"
		}
		switch {
		case len(m) == 0:
			return target, name + suffix, nil
		case len(m) == 1 && m[0] >= 0 && m[0] <= 6:
			return fmt.Sprintf("%s(%d)", target, m[0]), fmt.Sprintf("%s(%d)%s", name, m[0], suffix), nil
		}
		return badMods()
	}
	return unsupported()
}

// ---------------------------------------------------------------------------
// LIMIT, OFFSET, FETCH.

// limitClause reads the LIMIT/OFFSET/FETCH clauses starting at toks[i]. A
// plain "LIMIT n [OFFSET m]" is left for the main loop (done is false);
// anything else is rewritten into MySQL's "LIMIT n OFFSET m".
func (n *normalizer) limitClause(i int) (next int, done bool, err error) {
	var (
		limitSeen, offsetSeen, fetchSeen bool
		needRewrite                      bool
		count, offset                    *token
		countDefault                     bool // FETCH FIRST ROW ONLY: one row
		offsetPos                        int
	)
	value := func(j int) (*token, bool) {
		if j < len(n.toks) && (n.toks[j].kind == tkNumber || n.toks[j].kind == tkParam) {
			v := n.sig(j + 1)
			if v < len(n.toks) && n.toks[v].kind == tkTypecast {
				return nil, false
			}
			return &n.toks[j], true
		}
		return nil, false
	}
	// complexValue handles a value other than a number or a parameter:
	// the parser decides about clauses that need no rewriting (LIMIT -1 is
	// a syntax error to it); others cannot be rewritten.
	complexValue := func(j int, needRewrite bool) (int, bool, error) {
		if !needRewrite {
			n.plainLimitEnd = j
			return 0, false, nil
		}
		return 0, false, posError(n.sql, n.toks[i].pos, sqlerr.FeatureNotSupported, "LIMIT, OFFSET and FETCH accept only a number or a parameter here").
			WithHint("write LIMIT n OFFSET m with constants or $n parameters")
	}
	j := i
scan:
	for {
		k := n.sig(j)
		if k >= len(n.toks) || n.toks[k].kind != tkWord {
			break
		}
		switch n.toks[k].val {
		case "limit":
			if limitSeen || fetchSeen {
				return 0, false, posError(n.sql, n.toks[k].pos, sqlerr.SyntaxError, "multiple LIMIT clauses not allowed")
			}
			limitSeen = true
			needRewrite = needRewrite || offsetSeen
			v := n.sig(k + 1)
			if n.isWord(v, "all") {
				// LIMIT ALL: no limit.
				needRewrite, j = true, v+1
				continue
			}
			tok, ok := value(v)
			if !ok {
				return complexValue(v, needRewrite)
			}
			count, j = tok, v+1
			if c := n.sig(j); n.isPunct(c, ",") {
				return 0, false, posError(n.sql, n.toks[k].pos, sqlerr.FeatureNotSupported, "LIMIT #,# syntax is not supported").
					WithHint("use separate LIMIT and OFFSET clauses")
			}
		case "offset":
			if offsetSeen {
				return 0, false, posError(n.sql, n.toks[k].pos, sqlerr.SyntaxError, "multiple OFFSET clauses not allowed")
			}
			offsetSeen, offsetPos = true, n.toks[k].pos
			v := n.sig(k + 1)
			tok, ok := value(v)
			if !ok {
				return complexValue(v, needRewrite || !limitSeen && !fetchSeen) // OFFSET alone needs a LIMIT
			}
			offset, j = tok, v+1
			if r := n.sig(j); n.isWord(r, "row", "rows") {
				needRewrite, j = true, r+1
			}
		case "fetch":
			if limitSeen || fetchSeen {
				return 0, false, posError(n.sql, n.toks[k].pos, sqlerr.SyntaxError, "multiple LIMIT clauses not allowed")
			}
			fetchSeen, needRewrite = true, true
			f := n.sig(k + 1)
			if !n.isWord(f, "first", "next") {
				return 0, false, n.errAt(f)
			}
			v := n.sig(f + 1)
			if tok, ok := value(v); ok {
				count, v = tok, n.sig(v+1)
			} else if n.isWord(v, "row", "rows") {
				countDefault = true
			} else {
				return complexValue(v, true)
			}
			if !n.isWord(v, "row", "rows") {
				return 0, false, n.errAt(v)
			}
			o := n.sig(v + 1)
			switch {
			case n.isWord(o, "only"):
				j = o + 1
			case n.isWord(o, "with"):
				return 0, false, posError(n.sql, n.toks[k].pos, sqlerr.FeatureNotSupported, "FETCH ... WITH TIES is not supported")
			default:
				return 0, false, n.errAt(o)
			}
		default:
			break scan
		}
	}
	if offsetSeen && !limitSeen && !fetchSeen {
		needRewrite = true
	}
	if !needRewrite {
		// Valid MySQL as written: copy the clauses as they are.
		n.plainLimitEnd = j
		return 0, false, nil
	}
	start := n.toks[i].pos
	valueSeg := func(t *token) segment {
		if t.kind == tkParam {
			return segment{text: "?", orig: t.pos, param: t.num}
		}
		return n.verbatim(*t)
	}
	var segs []segment
	switch {
	case count != nil:
		segs = append(segs, synth("LIMIT ", start), valueSeg(count))
	case countDefault:
		segs = append(segs, synth("LIMIT 1", start))
	case offset != nil:
		segs = append(segs, synth("LIMIT "+noLimit, start))
	}
	if offset != nil {
		segs = append(segs, synth(" OFFSET ", offsetPos), valueSeg(offset))
	}
	if len(segs) == 0 {
		segs = append(segs, synth(" ", start))
	}
	n.push(item{kind: itOther, pos: start}, segs...)
	return j, true, nil
}

// ---------------------------------------------------------------------------
// Output.

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
