package rewrite

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/format"
)

// Dialect is the SQL flavour of a backend. The emitter writes identifiers,
// literals and random ordering through it; everything else it emits is
// portable SQL (CASE, window functions, derived tables).
type Dialect interface {
	// Name is the backend name shown by explain ("postgres", "sqlite", "mysql").
	Name() string
	// QuoteIdent quotes an identifier.
	QuoteIdent(name string) string
	// QuoteString writes a string literal; strings that cannot be written
	// safely (NUL bytes) are an error.
	QuoteString(s string) (string, error)
	// Random is an expression giving a fresh random value per row.
	Random() string
	// RestoreFlags are the TiDB restore flags for passthrough SQL.
	RestoreFlags() format.RestoreFlags
}

// Postgres is the PostgreSQL dialect (standard_conforming_strings=on).
var Postgres Dialect = ansiDialect{name: "postgres", random: "random()"}

// SQLite is the SQLite dialect.
var SQLite Dialect = ansiDialect{name: "sqlite", random: "random()"}

// MySQL is the MySQL/MariaDB dialect (backslash escapes in strings).
var MySQL Dialect = mysqlDialect{}

type ansiDialect struct{ name, random string }

func (d ansiDialect) Name() string { return d.name }

func (ansiDialect) QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func (ansiDialect) QuoteString(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("string literal contains a NUL byte")
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'", nil
}

func (d ansiDialect) Random() string { return d.random }

func (ansiDialect) RestoreFlags() format.RestoreFlags {
	return format.RestoreStringSingleQuotes | format.RestoreKeyWordUppercase |
		format.RestoreNameDoubleQuotes | format.RestoreStringWithoutCharset
}

type mysqlDialect struct{}

func (mysqlDialect) Name() string { return "mysql" }

func (mysqlDialect) QuoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

func (mysqlDialect) QuoteString(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("string literal contains a NUL byte")
	}
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", "''") + "'", nil
}

func (mysqlDialect) Random() string { return "RAND()" }

func (mysqlDialect) RestoreFlags() format.RestoreFlags {
	return format.RestoreStringSingleQuotes | format.RestoreKeyWordUppercase |
		format.RestoreNameBackQuotes | format.RestoreStringWithoutCharset |
		format.RestoreStringEscapeBackslash
}

// formatNumber writes a finite float as a plain SQL numeric literal.
func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
