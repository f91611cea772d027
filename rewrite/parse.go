package rewrite

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/dpproxy/dpproxy/sqlerr"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/test_driver" // literal values in the AST
)

// FrontEnd selects the SQL flavour the client speaks, which decides how
// string literals are lexed.
type FrontEnd int

const (
	// PostgresFrontEnd: standard_conforming_strings=on, so a backslash in a
	// string literal is an ordinary character.
	PostgresFrontEnd FrontEnd = iota
	// MySQLFrontEnd: backslash escapes in strings, as MySQL does by default.
	MySQLFrontEnd
)

// parsers pools TiDB parsers, which are not safe for concurrent use.
var parsers = [...]sync.Pool{
	PostgresFrontEnd: {New: func() any {
		p := parser.New()
		p.SetSQLMode(mysql.ModeANSIQuotes | mysql.ModeNoBackslashEscapes | mysql.ModePipesAsConcat)
		return p
	}},
	MySQLFrontEnd: {New: func() any {
		p := parser.New()
		p.SetSQLMode(mysql.ModeANSIQuotes)
		return p
	}},
}

// Parse parses sql into statements. A syntax error becomes an
// *sqlerr.Error with SQLSTATE 42601 and, where the parser reports it, the
// 1-based character position. PostgreSQL text is normalized first (see
// ParseStatement); $n parameters become ? markers.
//
// Parse returns no parameter mapping, so its callers can only take marker
// i to be parameter i+1. Until they use ParseStatement's Params, Parse
// refuses statements where that is wrong ($2 before $1, $1 twice, $2
// without $1) rather than let values bind to the wrong markers.
func Parse(sql string, fe FrontEnd) ([]ast.StmtNode, error) {
	p, err := ParseStatement(sql, fe)
	if err != nil {
		return nil, err
	}
	for i, n := range p.Params { // then ParamCount == len(Params)
		if n != i+1 {
			return nil, p.paramOrderError(i)
		}
	}
	return p.Stmts, nil
}

// paramOrderError is Parse's refusal of the i-th marker.
func (p *Parsed) paramOrderError(i int) error {
	e := sqlerr.New(sqlerr.FeatureNotSupported, "parameters must be used in order ($1, $2, ...), each once")
	if p.norm != nil {
		e.Position = p.norm.OriginalPosition(p.norm.paramOffsets[i])
	}
	return e
}

// Parsed is the result of ParseStatement.
type Parsed struct {
	// Stmts are the parsed statements.
	Stmts []ast.StmtNode
	// SQL is the text the TiDB parser read: the normalized text for the
	// PostgreSQL front end, the client's text for the MySQL front end.
	SQL string
	// Params holds, for each ? marker in SQL in text order, the number of
	// the client parameter it stands for: PostgreSQL's $n for the
	// PostgreSQL front end, 1, 2, 3, ... for the MySQL front end. Each
	// marker's *test_driver.ParamMarkerExpr has Order set to its index
	// here (as ParamMarkers numbers them), so its value is client parameter
	// Params[Order]. Only a single statement may have parameters.
	Params []int
	// ParamCount is the number of parameters the statement declares: the
	// highest $n for PostgreSQL ($3 alone declares three), the number of
	// markers for MySQL.
	ParamCount int
	// Casts describes the casts of PostgreSQL text (see Normalized.Casts),
	// in text order; nil for the MySQL front end.
	Casts []CastInfo

	norm *Normalized
}

// CastOf returns the PostgreSQL cast behind a CAST node of p.Stmts: the
// type the client asked for, which backend SQL must use instead of the
// node's TiDB type (a PostgreSQL backend reads CAST(x AS CHAR) as char(1)).
// For the PostgreSQL front end every *ast.FuncCastExpr has one:
// ParseStatement refuses statements where one would not.
func (p *Parsed) CastOf(x *ast.FuncCastExpr) (CastInfo, bool) {
	off := x.OriginTextPosition()
	i := sort.Search(len(p.Casts), func(i int) bool { return p.Casts[i].Offset >= off })
	if i < len(p.Casts) && p.Casts[i].Offset == off {
		return p.Casts[i], true
	}
	return CastInfo{}, false
}

// errParserPanicked reports that the TiDB parser panicked on a text (it
// does on some numeric literals of many digits).
var errParserPanicked = errors.New("rewrite: the parser panicked")

// parseSafely runs a pooled parser over text. A parser that panics is
// not returned to the pool, and the panic becomes errParserPanicked: no
// client text can take a connection down.
func parseSafely(fe FrontEnd, text string) (stmts []ast.StmtNode, err error) {
	p := parsers[fe].Get().(*parser.Parser)
	defer func() {
		if r := recover(); r != nil {
			stmts, err = nil, fmt.Errorf("%w: %v", errParserPanicked, r)
		}
	}()
	stmts, _, err = p.Parse(text, "", "")
	// The parser reuses its result slice on the next Parse, which another
	// goroutine may start as soon as the parser is back in the pool.
	stmts = slices.Clone(stmts)
	parsers[fe].Put(p)
	return stmts, err
}

// normalized memoizes NormalizePostgres by text: a prepared statement's
// text is normalized again at every execution (its tree is bound to the
// values, so it is parsed afresh), and the result depends on the text
// alone. A *Normalized is read, never changed, once made, so one is
// shared by every parse of its text. Texts longer than
// maxNormalizedMemoText are not kept.
var normalized = func() *lru.Cache[string, *Normalized] {
	c, err := lru.New[string, *Normalized](1024)
	if err != nil {
		panic(err) // only for a size ≤ 0
	}
	return c
}()

const maxNormalizedMemoText = 4 << 10

// normalizeMemo is NormalizePostgres through the normalized memo.
func normalizeMemo(sql string) (*Normalized, error) {
	if norm, ok := normalized.Get(sql); ok {
		return norm, nil
	}
	norm, err := NormalizePostgres(sql)
	if err == nil && len(sql) <= maxNormalizedMemoText {
		normalized.Add(sql, norm)
	}
	return norm, err
}

// ParseStatement parses sql like Parse and also returns the parameter
// mapping and the casts. For the PostgreSQL front end the text first goes
// through NormalizePostgres ($n parameters, :: casts, E'...' and dollar
// strings, comments, LIMIT/OFFSET/FETCH forms); its errors are returned as
// they are (42601 or 0A000, positioned in sql), and syntax errors from the
// TiDB parser are positioned in sql, not in the normalized text.
func ParseStatement(sql string, fe FrontEnd) (*Parsed, error) {
	text := sql
	var norm *Normalized
	if fe == PostgresFrontEnd {
		var err error
		if norm, err = normalizeMemo(sql); err != nil {
			return nil, err
		}
		text = norm.SQL
	}
	stmts, err := parseSafely(fe, text)
	if errors.Is(err, errParserPanicked) {
		return nil, sqlerr.New(sqlerr.SyntaxError, "cannot parse this statement").
			WithHint("a literal or construct in it is beyond what dpproxy's parser handles (for example a numeric literal of many digits)")
	}
	if err != nil {
		return nil, syntaxError(sql, text, norm, err)
	}
	out := &Parsed{Stmts: stmts, SQL: text, norm: norm}
	var markers []*test_driver.ParamMarkerExpr
	for _, s := range stmts {
		markers = append(markers, ParamMarkers(s)...)
	}
	if len(markers) > 0 && len(stmts) > 1 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "parameters are not supported in a query with several statements").
			WithHint("send one statement at a time")
	}
	if norm == nil {
		out.Params = make([]int, len(markers))
		for i := range markers {
			out.Params[i] = i + 1
		}
		out.ParamCount = len(markers)
		return out, nil
	}
	out.Params, out.ParamCount, out.Casts = norm.Params, norm.ParamCount, norm.Casts
	// Each marker must be one the normalizer wrote, and each one it wrote
	// must be in the tree: otherwise values would bind to the wrong place.
	if len(markers) != len(norm.paramOffsets) {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "parameters are not supported in this statement")
	}
	for i, m := range markers {
		if m.Offset != norm.paramOffsets[i] {
			e := sqlerr.New(sqlerr.FeatureNotSupported, "parameters are not supported in this position")
			e.Position = norm.OriginalPosition(norm.paramOffsets[i])
			return nil, e
		}
	}
	// Every CAST must carry the client's PostgreSQL type; MySQL-only forms
	// (BINARY x, CONVERT(x, type)) have none.
	c := &castCollector{}
	for _, s := range stmts {
		s.Accept(c)
	}
	for _, x := range c.casts {
		if _, ok := out.CastOf(x); !ok {
			e := sqlerr.New(sqlerr.FeatureNotSupported, "this cast syntax is not supported")
			e.Position = norm.OriginalPosition(x.OriginTextPosition())
			return nil, e.WithHint("write CAST(x AS type) or x::type")
		}
	}
	return out, nil
}

type castCollector struct{ casts []*ast.FuncCastExpr }

func (c *castCollector) Enter(n ast.Node) (ast.Node, bool) {
	if x, ok := n.(*ast.FuncCastExpr); ok {
		c.casts = append(c.casts, x)
	}
	return n, false
}

func (c *castCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

var parserErrorLocation = regexp.MustCompile(`line (\d+) column (\d+) near "((?s).*)"`)

// syntaxError turns the parser's message into a client error. The TiDB
// parser reports `line L column C near "rest"` in the text it read
// (parsed), where rest is the text from the offending token on (possibly
// truncated). When parsed is the normalized form of sql (norm != nil), the
// position is mapped back to sql and the token quoted is sql's.
func syntaxError(sql, parsed string, norm *Normalized, err error) error {
	msg := err.Error()
	e := sqlerr.New(sqlerr.SyntaxError, "syntax error: %s", trimParserMessage(msg))
	if m := parserErrorLocation.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		near := m[3]
		offset := errorOffset(parsed, msg, line, col, near)
		if norm != nil {
			offset = norm.OriginalOffset(offset)
			near = ""
			if offset < len(sql) {
				near = tokenText(sql, offset)
			}
		}
		e.Position = charPosition(sql, offset)
		if token := strings.Fields(near); len(token) > 0 {
			e.Message = fmt.Sprintf("syntax error at or near %q", token[0])
		} else {
			e.Message = "syntax error at end of input"
		}
	}
	e.Hint = "dpproxy accepts SELECT statements with aggregates (COUNT, SUM, AVG) over protected tables, and read-only SELECTs over public tables"
	e.Err = err
	return e
}

// trimParserMessage drops the parser's error-code prefix ("[parser:1064]").
func trimParserMessage(msg string) string {
	if len(msg) > 0 && msg[0] == '[' {
		for i := 1; i < len(msg); i++ {
			if msg[i] == ']' {
				msg = msg[i+1:]
				break
			}
		}
	}
	for len(msg) > 0 && msg[0] == ' ' {
		msg = msg[1:]
	}
	return msg
}

var parserErrorLength = regexp.MustCompile(`\(total length (\d+)\)\s*$`)

// errorOffset returns the byte offset in sql of the offending token. The
// parser's "near" text is sql from that token on, cut to 2048 bytes with
// "(total length N)" after it when longer; failing that, the offset is
// where near first occurs in line L, or the end of the text when the
// parser ran out of input.
func errorOffset(sql, msg string, line, col int, near string) int {
	if strings.HasSuffix(sql, near) {
		return len(sql) - len(near)
	}
	if m := parserErrorLength.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n <= len(sql) && strings.HasPrefix(sql[len(sql)-n:], near) {
			return len(sql) - n
		}
	}
	lineStart, currentLine := 0, 1
	for currentLine < line && lineStart < len(sql) {
		if sql[lineStart] == '\n' {
			currentLine++
		}
		lineStart++
	}
	offset := len(sql)
	if near != "" {
		if i := strings.Index(sql[lineStart:], near); i >= 0 {
			offset = lineStart + i
		} else if lineStart+col <= len(sql) {
			offset = lineStart + col
		}
	}
	return offset
}
