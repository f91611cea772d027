package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// SQL cursors of the PostgreSQL front end, as psycopg2's named cursors and
// ORMs' streaming results use them:
//
//	DECLARE name [BINARY] [ASENSITIVE | INSENSITIVE] [NO SCROLL] CURSOR [{WITH | WITHOUT} HOLD] FOR query
//	FETCH [NEXT | FORWARD [n | ALL] | n | ALL] [FROM | IN] name
//	MOVE  (the same forms)
//	CLOSE {name | ALL}
//
// The query is answered once when the cursor is declared — a DP answer is
// released and charged once, whatever is fetched — and its rows are kept
// in the session; FETCH and MOVE walk them forward. A cursor without HOLD
// needs a transaction and ends with it; WITH HOLD lasts until CLOSE or the
// end of the session. SCROLL and backward fetches are refused.

// cursor is a declared cursor's released rows and position.
type cursor struct {
	result *sqltypes.Result
	pos    int
	hold   bool
}

// cursorCommand is a parsed DECLARE, FETCH, MOVE or CLOSE.
type cursorCommand struct {
	verb  string // "declare", "fetch", "move", "close"
	name  string
	query string // DECLARE
	hold  bool   // DECLARE ... WITH HOLD
	count int    // FETCH/MOVE: rows; -1 for ALL
	all   bool   // CLOSE ALL
}

// parseCursorCommand recognizes a cursor statement; ok is false for other
// statements.
func parseCursorCommand(sql string) (cmd *cursorCommand, ok bool, err error) {
	text := strings.TrimSpace(sql)
	text = strings.TrimSpace(strings.TrimSuffix(text, ";"))
	words, rest := leadingWords(text, 12)
	if len(words) == 0 {
		return nil, false, nil
	}
	verb := strings.ToLower(words[0].text)
	switch verb {
	case "declare":
		return parseDeclare(text, words)
	case "fetch", "move":
		c := &cursorCommand{verb: verb, count: 1}
		i := 1
		lower := func(k int) string {
			if k < len(words) {
				return strings.ToLower(words[k].text)
			}
			return ""
		}
		switch lower(i) {
		case "next":
			i++
		case "forward":
			i++
			if n, err := strconv.Atoi(lower(i)); err == nil {
				if n < 0 {
					return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "FETCH FORWARD with a negative count is not supported: dpproxy's cursors move forward only")
				}
				c.count = n
				i++
			} else if lower(i) == "all" {
				c.count = -1
				i++
			}
		case "all":
			c.count = -1
			i++
		case "prior", "first", "last", "absolute", "relative", "backward":
			return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "FETCH %s is not supported: dpproxy's cursors move forward only", strings.ToUpper(lower(i)))
		default:
			if n, err := strconv.Atoi(lower(i)); err == nil {
				if n < 0 {
					return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "a negative FETCH count is not supported: dpproxy's cursors move forward only")
				}
				c.count = n
				i++
			}
		}
		if lower(i) == "from" || lower(i) == "in" {
			i++
		}
		if i != len(words)-1 || rest != "" {
			return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error in %s: expected %s [NEXT | FORWARD [n | ALL] | n | ALL] [FROM] cursor_name", strings.ToUpper(verb), strings.ToUpper(verb))
		}
		c.name = words[i].name()
		return c, true, nil
	case "close":
		if len(words) != 2 || rest != "" {
			return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error in CLOSE: expected CLOSE cursor_name or CLOSE ALL")
		}
		if strings.EqualFold(words[1].text, "all") && !words[1].quoted {
			return &cursorCommand{verb: "close", all: true}, true, nil
		}
		return &cursorCommand{verb: "close", name: words[1].name()}, true, nil
	}
	return nil, false, nil
}

func parseDeclare(text string, words []word) (*cursorCommand, bool, error) {
	if len(words) < 2 {
		return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error in DECLARE: expected DECLARE name CURSOR FOR query")
	}
	c := &cursorCommand{verb: "declare", name: words[1].name()}
	i := 2
	lower := func(k int) string {
		if k < len(words) && !words[k].quoted {
			return strings.ToLower(words[k].text)
		}
		return ""
	}
	for {
		switch lower(i) {
		case "binary":
			return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "DECLARE BINARY CURSOR is not supported: fetch in text form")
		case "asensitive", "insensitive":
			i++
			continue
		case "scroll":
			return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "SCROLL cursors are not supported: dpproxy's cursors move forward only")
		case "no":
			if lower(i+1) == "scroll" {
				i += 2
				continue
			}
		}
		break
	}
	if lower(i) != "cursor" {
		return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error in DECLARE: expected DECLARE name [NO SCROLL] CURSOR [WITH HOLD] FOR query")
	}
	i++
	if (lower(i) == "with" || lower(i) == "without") && lower(i+1) == "hold" {
		c.hold = lower(i) == "with"
		i += 2
	}
	if lower(i) != "for" || i+1 >= len(words) {
		return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error in DECLARE: expected DECLARE name [NO SCROLL] CURSOR [WITH HOLD] FOR query")
	}
	c.query = text[words[i+1].offset:]
	switch strings.ToLower(words[i+1].text) {
	case "select", "with", "values", "table":
	default:
		if !strings.HasPrefix(c.query, "(") {
			return nil, true, sqlerr.New(sqlerr.SyntaxError, "DECLARE CURSOR needs a query (SELECT, WITH, VALUES), not %s", strings.ToUpper(words[i+1].text))
		}
	}
	return c, true, nil
}

// word is one leading word of a statement: an identifier or keyword,
// possibly double-quoted, and where it starts.
type word struct {
	text   string
	quoted bool
	offset int
}

// name is the word as an identifier: quoted as written, else lower case.
func (w word) name() string {
	if w.quoted {
		return w.text
	}
	return strings.ToLower(w.text)
}

// leadingWords splits up to n leading words (identifiers, keywords,
// numbers, quoted identifiers) of text; rest is what follows the last one
// read when it stopped early at something else, or "".
func leadingWords(text string, n int) (words []word, rest string) {
	i := 0
	for len(words) < n {
		for i < len(text) && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
			i++
		}
		if i >= len(text) {
			return words, ""
		}
		start := i
		if text[i] == '"' {
			j := i + 1
			var b strings.Builder
			for j < len(text) {
				if text[j] == '"' {
					if j+1 < len(text) && text[j+1] == '"' {
						b.WriteByte('"')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(text[j])
				j++
			}
			if j >= len(text) {
				return words, text[start:]
			}
			words = append(words, word{b.String(), true, start})
			i = j + 1
			continue
		}
		j := i
		for j < len(text) && (text[j] == '_' || text[j] == '-' && j == i || text[j] >= 'a' && text[j] <= 'z' || text[j] >= 'A' && text[j] <= 'Z' || text[j] >= '0' && text[j] <= '9' || text[j] >= 0x80) {
			j++
		}
		if j == i {
			return words, text[i:]
		}
		words = append(words, word{text[i:j], false, start})
		i = j
	}
	return words, strings.TrimSpace(text[i:])
}

// fetch takes up to count rows (all for -1) from the cursor.
func (c *cursor) fetch(count int) [][]any {
	remaining := len(c.result.Rows) - c.pos
	if count < 0 || count > remaining {
		count = remaining
	}
	// Capped: the rows may be a cached release shared with other sessions
	// (engine.Answer), which no append may write into.
	rows := c.result.Rows[c.pos : c.pos+count : c.pos+count]
	c.pos += count
	return rows
}

func cursorNotFound(name string) error {
	return sqlerr.New(sqlerr.InvalidCursorName, "cursor %q does not exist", name)
}

func cursorTag(verb string, n int) string { return fmt.Sprintf("%s %d", strings.ToUpper(verb), n) }

// cursorStatement answers DECLARE, FETCH, MOVE and CLOSE; ok is false for
// other statements.
func (s *Session) cursorStatement(ctx context.Context, sql string) (res *sqltypes.Result, ok bool, err error) {
	cmd, ok, err := parseCursorCommand(sql)
	if !ok || err != nil {
		return nil, ok, err
	}
	switch cmd.verb {
	case "declare":
		if !cmd.hold && !s.inTransaction {
			return nil, true, sqlerr.New(sqlerr.NoActiveSQLTransaction, "DECLARE CURSOR can only be used in transaction blocks").
				WithHint("BEGIN first, or declare the cursor WITH HOLD")
		}
		if _, dup := s.cursors[cmd.name]; dup {
			return nil, true, sqlerr.New(sqlerr.DuplicateCursor, "cursor %q already exists", cmd.name)
		}
		s.decodeRows = true // a cursor slices its rows
		results, err := s.Execute(ctx, cmd.query)
		s.decodeRows = false
		if err != nil {
			return nil, true, err
		}
		if len(results) != 1 || results[0].Columns == nil {
			return nil, true, sqlerr.New(sqlerr.InvalidCursorName, "DECLARE CURSOR needs a query that returns rows")
		}
		if s.cursors == nil {
			s.cursors = map[string]*cursor{}
		}
		s.cursors[cmd.name] = &cursor{result: results[0], hold: cmd.hold}
		return &sqltypes.Result{Tag: "DECLARE CURSOR"}, true, nil
	case "fetch", "move":
		c, found := s.cursors[cmd.name]
		if !found {
			return nil, true, cursorNotFound(cmd.name)
		}
		rows := c.fetch(cmd.count)
		if cmd.verb == "move" {
			return &sqltypes.Result{Tag: cursorTag("move", len(rows))}, true, nil
		}
		return &sqltypes.Result{Columns: c.result.Columns, Rows: rows, Tag: cursorTag("fetch", len(rows))}, true, nil
	default: // close
		if cmd.all {
			s.cursors = nil
			return &sqltypes.Result{Tag: "CLOSE CURSOR ALL"}, true, nil
		}
		if _, found := s.cursors[cmd.name]; !found {
			return nil, true, cursorNotFound(cmd.name)
		}
		delete(s.cursors, cmd.name)
		return &sqltypes.Result{Tag: "CLOSE CURSOR"}, true, nil
	}
}

// endTransaction closes the cursors declared without HOLD.
func (s *Session) endTransaction() {
	s.inTransaction = false
	for name, c := range s.cursors {
		if !c.hold {
			delete(s.cursors, name)
		}
	}
}
