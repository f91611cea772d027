package rewrite

// The normalization passes of NormalizePostgres: the transformer that
// walks the lexer's tokens and rewrites PostgreSQL forms ($n parameters,
// casts, typed literals, E'' and dollar strings) into MySQL ones, keeping
// each rewritten piece's place in the client's text.

import (
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
)

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
