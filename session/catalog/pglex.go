package catalog

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A lexer for PostgreSQL text, as far as catalog queries need: it splits
// a statement into identifiers (folded to lower case unless quoted),
// strings (decoded: '', E'', $$ and U&'' forms), numbers, parameters ($n),
// operators and punctuation, dropping comments and white space.

type tokenKind int

const (
	tokIdent  tokenKind = iota // unquoted identifier or keyword, lower case
	tokQuoted                  // "quoted identifier", as written inside the quotes
	tokString                  // string constant, decoded
	tokNumber
	tokParam // $n, text is n
	tokOp    // operator: + - * / < > = ~ ! @ # % ^ & | ` ? and combinations, ::
	tokPunct // ( ) [ ] , ; .
)

type token struct {
	kind tokenKind
	text string
}

func (t token) is(kind tokenKind, text string) bool { return t.kind == kind && t.text == text }

// isWord reports whether t is the unquoted word w (lower case).
func (t token) isWord(w string) bool { return t.kind == tokIdent && t.text == w }

// isName reports whether t can name something (an identifier, quoted or not).
func (t token) isName() bool { return t.kind == tokIdent || t.kind == tokQuoted }

const opChars = "+-*/<>=~!@#%^&|`?"

// lexPostgres splits sql into tokens.
func lexPostgres(sql string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			depth := 0
			j := i
			for j < len(sql) {
				if strings.HasPrefix(sql[j:], "/*") {
					depth++
					j += 2
				} else if strings.HasPrefix(sql[j:], "*/") {
					depth--
					j += 2
					if depth == 0 {
						break
					}
				} else {
					j++
				}
			}
			if depth != 0 {
				return nil, fmt.Errorf("unterminated /* comment")
			}
			i = j
		case c == '\'':
			s, n, err := lexString(sql[i:], false)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokString, s})
			i += n
		case (c == 'e' || c == 'E') && i+1 < len(sql) && sql[i+1] == '\'':
			s, n, err := lexString(sql[i+1:], true)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokString, s})
			i += 1 + n
		case (c == 'u' || c == 'U') && strings.HasPrefix(sql[i+1:], "&'"):
			return nil, fmt.Errorf("unicode escape strings (U&'...') are not supported here")
		case c == '"':
			j := i + 1
			var b strings.Builder
			for {
				k := strings.IndexByte(sql[j:], '"')
				if k < 0 {
					return nil, fmt.Errorf("unterminated quoted identifier")
				}
				b.WriteString(sql[j : j+k])
				j += k + 1
				if j < len(sql) && sql[j] == '"' {
					b.WriteByte('"')
					j++
					continue
				}
				break
			}
			toks = append(toks, token{tokQuoted, b.String()})
			i = j
		case c == '$' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9':
			j := i + 1
			for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
				j++
			}
			toks = append(toks, token{tokParam, sql[i+1 : j]})
			i = j
		case c == '$':
			// $tag$ ... $tag$
			j := i + 1
			for j < len(sql) && (isIdentChar(sql[j])) {
				j++
			}
			if j >= len(sql) || sql[j] != '$' {
				return nil, fmt.Errorf("unexpected $ at %d", i)
			}
			tag := sql[i : j+1]
			end := strings.Index(sql[j+1:], tag)
			if end < 0 {
				return nil, fmt.Errorf("unterminated dollar-quoted string")
			}
			toks = append(toks, token{tokString, sql[j+1 : j+1+end]})
			i = j + 1 + end + len(tag)
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9':
			j := i
			for j < len(sql) && (sql[j] >= '0' && sql[j] <= '9' || sql[j] == '.' || sql[j] == '_') {
				j++
			}
			if j < len(sql) && (sql[j] == 'e' || sql[j] == 'E') {
				k := j + 1
				if k < len(sql) && (sql[k] == '+' || sql[k] == '-') {
					k++
				}
				if k < len(sql) && sql[k] >= '0' && sql[k] <= '9' {
					j = k
					for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
						j++
					}
				}
			}
			toks = append(toks, token{tokNumber, strings.ReplaceAll(sql[i:j], "_", "")})
			i = j
		case isIdentStart(sql[i:]):
			j := i
			for j < len(sql) {
				r, size := utf8.DecodeRuneInString(sql[j:])
				if r < utf8.RuneSelf && !isIdentChar(byte(r)) && r != '$' {
					break
				}
				j += size
			}
			toks = append(toks, token{tokIdent, strings.ToLower(sql[i:j])})
			i = j
		case strings.IndexByte("()[],;.", c) >= 0:
			toks = append(toks, token{tokPunct, string(c)})
			i++
		case c == ':':
			if i+1 < len(sql) && sql[i+1] == ':' {
				toks = append(toks, token{tokOp, "::"})
				i += 2
			} else {
				return nil, fmt.Errorf("unexpected ':' at %d", i)
			}
		case strings.IndexByte(opChars, c) >= 0:
			j := i
			for j < len(sql) && strings.IndexByte(opChars, sql[j]) >= 0 {
				if strings.HasPrefix(sql[j:], "--") || strings.HasPrefix(sql[j:], "/*") {
					break
				}
				j++
			}
			op := sql[i:j]
			// PostgreSQL drops a trailing + or - from a multi-character
			// operator unless it contains ~ ! @ # % ^ & | ` ?.
			for len(op) > 1 && (op[len(op)-1] == '+' || op[len(op)-1] == '-') && !strings.ContainsAny(op, "~!@#%^&|`?") {
				op = op[:len(op)-1]
			}
			toks = append(toks, token{tokOp, op})
			i += len(op)
		default:
			return nil, fmt.Errorf("unexpected character %q at %d", c, i)
		}
	}
	return toks, nil
}

func isIdentStart(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= utf8.RuneSelf
}

func isIdentChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// lexString reads a quoted string starting at s[0] == '\”; escapes
// selects E” backslash escapes. A string continued on the next line
// ('a'<newline>'b') is one string. It returns the value and the bytes read.
func lexString(s string, escapes bool) (string, int, error) {
	var b strings.Builder
	i := 1
	for {
		if i >= len(s) {
			return "", 0, fmt.Errorf("unterminated string")
		}
		c := s[i]
		switch {
		case c == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i += 2
		case c == '\'':
			i++
			// Continuation: white space with a newline, then another quote.
			j := i
			newline := false
			for j < len(s) && strings.IndexByte(" \t\r\n\f", s[j]) >= 0 {
				newline = newline || s[j] == '\n'
				j++
			}
			if newline && j < len(s) && s[j] == '\'' {
				i = j + 1
				continue
			}
			return b.String(), i, nil
		case c == '\\' && escapes && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'x':
				j := i + 1
				for j < len(s) && j < i+3 && strings.IndexByte("0123456789abcdefABCDEF", s[j]) >= 0 {
					j++
				}
				v, _ := strconv.ParseUint(s[i+1:j], 16, 8)
				b.WriteByte(byte(v))
				i = j - 1
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				if i+n >= len(s) {
					return "", 0, fmt.Errorf("bad unicode escape")
				}
				v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
				if err != nil {
					return "", 0, fmt.Errorf("bad unicode escape")
				}
				b.WriteRune(rune(v))
				i += n
			default:
				if e >= '0' && e <= '7' {
					j := i
					for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
						j++
					}
					v, _ := strconv.ParseUint(s[i:j], 8, 8)
					b.WriteByte(byte(v))
					i = j - 1
				} else {
					b.WriteByte(e)
				}
			}
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
}

// sqliteString quotes s as an SQLite string constant.
func sqliteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// sqliteIdent quotes s as an SQLite identifier. Grave accents, not double
// quotes: SQLite reads a double-quoted name that matches no column as a
// string, which would turn a misspelt column into a constant.
func sqliteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
