package rewrite

// PostgreSQL type mapping of NormalizePostgres: a type name as the client
// wrote it, parsed and resolved to the TiDB cast target and the canonical
// PostgreSQL type recorded in CastInfo.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
)

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
