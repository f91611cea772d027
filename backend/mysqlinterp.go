package backend

import (
	"math"
	"strconv"
	"strings"
)

// interpolateMySQL returns sql with each ? parameter marker replaced by
// its argument written as a literal, for a combined statement
// (mycombine.go), and false where that is not exact: a text with a
// comment (MySQL runs the code of /*! ... */ ones), an unterminated
// quote, markers and arguments that do not pair, or an argument without
// a literal of the type the driver binds it as (go-sql-driver binds
// integers as BIGINT, floats as DOUBLE, strings as strings; strings
// beyond ASCII, bools, byte strings, times and the rest run alone).
//
// Strings are escaped with backslashes, which the session's sql_mode
// (mysqlSQLMode, no NO_BACKSLASH_ESCAPES) reads as escapes, in a
// character set where no character holds a backslash byte
// (mysqlPipelinable).
func interpolateMySQL(sql string, args []any) (string, bool) {
	if len(args) == 0 {
		return sql, true
	}
	b := make([]byte, 0, len(sql)+24*len(args))
	n := 0
	limitEnd := -1   // where the last literal of a LIMIT clause ended in b
	ordered := false // an ORDER BY or GROUP BY has been passed
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; c {
		case '\'', '"', '`':
			end := quotedEnd(sql, i)
			if end < 0 {
				return "", false
			}
			b = append(b, sql[i:end]...)
			i = end - 1
		case '?':
			if n == len(args) {
				return "", false
			}
			inLimit := limitContext(b, limitEnd)
			if ordered && !inLimit && mayBePosition(b) {
				// An integer literal that is an ORDER BY or GROUP BY item
				// is a column's position. So is a parameter to MariaDB,
				// but a constant to MySQL.
				return "", false
			}
			// Spaces keep the literal a token of its own (?e1, X?, @?).
			b = append(b, ' ')
			var ok bool
			if b, ok = appendMySQLLiteral(b, args[n]); !ok {
				return "", false
			}
			if inLimit {
				limitEnd = len(b)
			}
			b = append(b, ' ')
			n++
		case '#':
			return "", false
		case '-', '/':
			if i+1 < len(sql) && ((c == '-' && sql[i+1] == '-') || (c == '/' && sql[i+1] == '*')) {
				return "", false
			}
			b = append(b, c)
		default:
			b = append(b, c)
			if c|0x20 == 'y' && (i+1 == len(sql) || !isWordByte(sql[i+1])) && endsWithOrderBy(b) {
				ordered = true
			}
		}
	}
	if n != len(args) {
		return "", false
	}
	return string(b), true
}

// quotedEnd returns the index just past the quoted string or identifier
// that starts at sql[start], or -1 if it does not end. A doubled quote
// stays inside; in strings, a backslash escapes the next byte.
func quotedEnd(sql string, start int) int {
	q := sql[start]
	for i := start + 1; i < len(sql); i++ {
		switch sql[i] {
		case '\\':
			if q != '`' {
				i++
			}
		case q:
			if i+1 < len(sql) && sql[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return -1
}

// limitContext reports whether a marker after b is a LIMIT or OFFSET
// count, never a column position: b ends with LIMIT or OFFSET, or with
// the comma after the LIMIT literal that ended at limitEnd (LIMIT
// offset, count).
func limitContext(b []byte, limitEnd int) bool {
	end := len(b)
	for end > 0 && isSpace(b[end-1]) {
		end--
	}
	if end > 0 && b[end-1] == ',' && limitEnd >= 0 {
		end--
		for end > 0 && isSpace(b[end-1]) {
			end--
		}
		return end == limitEnd
	}
	start := end
	for start > 0 && isLetter(b[start-1]) {
		start--
	}
	word := strings.ToUpper(string(b[start:end]))
	return word == "LIMIT" || word == "OFFSET"
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isWordByte(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// trailingWord returns the word that ends b[:end] after any spaces, in
// upper case, and where it starts.
func trailingWord(b []byte, end int) (string, int) {
	for end > 0 && isSpace(b[end-1]) {
		end--
	}
	start := end
	for start > 0 && isWordByte(b[start-1]) {
		start--
	}
	return strings.ToUpper(string(b[start:end])), start
}

// endsWithOrderBy reports whether b ends with ORDER BY or GROUP BY.
func endsWithOrderBy(b []byte) bool {
	by, start := trailingWord(b, len(b))
	if by != "BY" || start == 0 || !isSpace(b[start-1]) {
		return false
	}
	w, _ := trailingWord(b, start)
	return w == "ORDER" || w == "GROUP"
}

// mayBePosition reports whether a marker after b may be a whole ORDER BY
// or GROUP BY item: it follows BY, a comma or an opening parenthesis.
func mayBePosition(b []byte) bool {
	end := len(b)
	for end > 0 && isSpace(b[end-1]) {
		end--
	}
	if end > 0 && (b[end-1] == ',' || b[end-1] == '(') {
		return true
	}
	w, _ := trailingWord(b, end)
	return w == "BY"
}

// appendMySQLLiteral appends v as a MySQL literal of the type
// go-sql-driver binds it as, and reports whether it has one.
func appendMySQLLiteral(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "NULL"...), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int32:
		return strconv.AppendInt(b, int64(x), 10), true
	case uint64:
		return strconv.AppendUint(b, x, 10), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, false
		}
		// An exponent makes it a DOUBLE literal, not a DECIMAL one.
		return strconv.AppendFloat(b, x, 'e', -1, 64), true
	case string:
		for i := 0; i < len(x); i++ {
			if x[i] >= 0x80 {
				// Outside ASCII, a literal's character set and collation
				// take part in the statement's (CONCAT with a latin1
				// column fails), where a parameter's value is converted.
				return b, false
			}
		}
		return appendMySQLString(b, x), true
	}
	return b, false
}

// appendMySQLString appends s as a quoted string literal, escaped.
func appendMySQLString(b []byte, s string) []byte {
	b = append(b, '\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 0:
			b = append(b, '\\', '0')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case 0x1a:
			b = append(b, '\\', 'Z')
		case '\'', '"', '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return append(b, '\'')
}
