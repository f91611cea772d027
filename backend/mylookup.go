package backend

import (
	"strconv"
	"strings"
)

// Answering a batch's lookups by key of one shape with one statement.
//
// The commonest public-table query is a lookup by key (an ORM loading a
// row by its id), many clients at once, each for its own key. Where a
// lookup's analysis found one plain SELECT of columns from one table
// whose WHERE is only a column = an integer (rewrite.Lookup, shape.go
// there), the lookups of one shape in a batch are sent as
//
//	SELECT <columns>,<key> AS `dpproxy_key` FROM <table> WHERE <key> IN (k1,k2,...)
//
// and each row goes to the lookups whose key its last column holds, the
// bytes before it being the row as the lookup alone would send it: the
// same columns of the same table, named and typed alike. MariaDB then
// parses, plans and flushes one statement where a UNION ALL had it open
// a derived table per lookup: on the development machine, seven lookups
// by primary key cost the server and the client 121 µs of CPU as one
// such statement against 213 µs as a UNION ALL, and workload 9's text
// protocol went from 0.57–0.60× to 0.77–0.83× of direct MariaDB's rate
// (in turns, 16 clients). Unlike a union's branches, its columns may be
// of any type: they are the lookup's own.
//
// It is exact because an integer column's = and IN compare integers
// exactly, so a row's key names exactly the lookups it answers. The key
// column must be an integer one in the result (lookupKeyColumn): a
// character column's = compares with a number as numbers ('5x' = 5,
// '05' = 5) where its text is not the key's, YEAR's turns 24 into 2024,
// ENUM's compares the member's number. A row whose key is none asked
// for, or columns not as in the lookups' last runs alone, fail the
// statement over as a union's do (errUnionFailed): each lookup runs again
// alone, and the prefix is not sent again (MySQL.noLookup), its shape
// left to UNION ALLs.

// lookupSQL is the statement answering stmts, lookups of one prefix,
// and the statements each key answers (a key asked twice is listed once).
func lookupSQL(stmts []*combinedStmt) (string, map[string][]int) {
	keys := make(map[string][]int, len(stmts))
	var b strings.Builder
	b.Grow(len(stmts[0].lookup) + len(stmts)*8)
	b.WriteString(stmts[0].lookup)
	for i, s := range stmts {
		if _, listed := keys[s.key]; !listed {
			if len(keys) > 0 {
				b.WriteByte(',')
			}
			b.WriteString(s.key)
		}
		keys[s.key] = append(keys[s.key], i)
	}
	b.WriteByte(')')
	return b.String(), keys
}

// lookupKey returns the key of a lookup (l set) as the statement with
// args sends it: its literal without leading zeros (the analysis writes
// none; this is what a row's key is compared with), or its one integer
// parameter in decimal (the front ends give an integer parameter as an
// int64, an unsigned one above it as a uint64); ok is false for no
// lookup, and for a parameter of another type (a string compared with an
// integer column converts as a number: '5x' = 5).
func lookupKey(l Lookup, args []any) (string, bool) {
	switch {
	case l.Prefix == "":
		return "", false
	case l.Key != "":
		if len(args) > 0 {
			return "", false
		}
		k := strings.TrimLeft(l.Key, "0")
		if k == "" {
			k = "0"
		}
		return k, true
	case len(args) != 1:
		return "", false
	}
	switch v := args[0].(type) {
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	}
	return "", false
}

// lookupKeyColumn reports whether a lookup's key column, as the result
// describes it, compares exactly with its integer keys and gives its key
// as the text of the integer: an integer type other than YEAR (whose =
// turns 24 into 2024), not zero-filled.
func lookupKeyColumn(c mysqlColumn) bool {
	switch strings.TrimPrefix(c.typeName, "UNSIGNED ") {
	case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT":
		return !c.zerofill
	}
	return false
}

// lookupRow splits a lookup statement's row of n columns into the row as
// the lookup alone gives it (all but the last column) and its key (the
// last, never NULL).
func lookupRow(p []byte, n int) (row []byte, key string, ok bool) {
	pos := 0
	for range n - 1 {
		if pos < len(p) && p[pos] == 0xfb { // NULL
			pos++
			continue
		}
		size, used, ok := lenEncInt(p[pos:])
		if !ok || uint64(len(p)-pos-used) < size {
			return nil, "", false
		}
		pos += used + int(size)
	}
	size, used, ok := lenEncInt(p[pos:])
	if !ok || size == 0 || uint64(len(p)-pos-used) != size || p[pos] == 0xfb {
		return nil, "", false
	}
	return p[:pos], string(p[pos+used:]), true
}
