package rewrite

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // literal values in the AST
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
// 1-based character position.
func Parse(sql string, fe FrontEnd) ([]ast.StmtNode, error) {
	p := parsers[fe].Get().(*parser.Parser)
	defer parsers[fe].Put(p)
	stmts, _, err := p.Parse(sql, "", "")
	if err != nil {
		return nil, syntaxError(sql, err)
	}
	// The parser reuses its result slice on the next Parse, which another
	// goroutine may start as soon as the parser is back in the pool.
	return slices.Clone(stmts), nil
}

var parserErrorLocation = regexp.MustCompile(`line (\d+) column (\d+) near "((?s).*)"`)

// syntaxError turns the parser's message into a client error. The TiDB
// parser reports `line L column C near "rest"`, where rest is the text from
// the offending token on (possibly truncated).
func syntaxError(sql string, err error) error {
	msg := err.Error()
	e := sqlerr.New(sqlerr.SyntaxError, "syntax error: %s", trimParserMessage(msg))
	if m := parserErrorLocation.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		e.Position = errorPosition(sql, line, col, m[3])
		if token := strings.Fields(m[3]); len(token) > 0 {
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

// errorPosition returns the 1-based character offset of the offending
// token: where the parser's "near" text starts within line L, or the end of
// the text when the parser ran out of input.
func errorPosition(sql string, line, col int, near string) int {
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
	return len([]rune(sql[:offset])) + 1
}
