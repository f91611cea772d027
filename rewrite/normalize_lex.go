package rewrite

// The PostgreSQL lexer of NormalizePostgres: PostgreSQL's lexical
// structure (scan.l), standard_conforming_strings on, UTF-8, and the
// errors it reports with a position in the client's text.

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dpproxy/dpproxy/sqlerr"
)

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
