package catalog

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"modernc.org/sqlite"
)

// The functions catalog queries call, registered on the catalog's own
// SQLite driver (so they reach no other SQLite connection of the process).
// Functions that would report sizes or statistics return NULL.

type sqlFunc = func(ctx *sqlite.FunctionContext, args []driver.Value) (driver.Value, error)

// registerFunctions registers the catalog's functions on drv and returns
// their names. caseInsensitiveLike gives LIKE MySQL's default collation's
// behaviour; otherwise it is PostgreSQL's (case-sensitive).
func registerFunctions(drv *sqlite.Driver, names *objectNames, caseInsensitiveLike bool) ([]string, error) {
	constant := func(v driver.Value) sqlFunc {
		return func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) { return v, nil }
	}
	started := time.Now().UTC().Format("2006-01-02 15:04:05.999999-07")
	funcs := map[string]sqlFunc{
		"regexp": regexpFunc,
		"regexp_like": func(c *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			return regexpFunc(c, []driver.Value{arg(a, 1), arg(a, 0)})
		},
		"pg_bool": pgBool,
		"pg_array_of": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			return typedArray(arg(a, 0), str(arg(a, 1)) == "number"), nil
		},
		"pg_array": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			return toJSONArray(arg(a, 0)), nil
		},
		"pg_subscript": pgSubscript,
		"pg_reg": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			return regCast(names, str(arg(a, 0)), arg(a, 1))
		},
		"pg_to_regclass": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			v, err := regCast(names, "regclass", arg(a, 0))
			if err != nil {
				return nil, nil
			}
			return v, nil
		},
		"pg_to_regtype": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			v, err := regCast(names, "regtype", arg(a, 0))
			if err != nil {
				return nil, nil
			}
			return v, nil
		},
		"format_type": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			if arg(a, 0) == nil {
				return nil, nil
			}
			typmod := int64(-1)
			if m, ok := integer(arg(a, 1)); ok {
				typmod = m
			}
			o, _ := integer(arg(a, 0))
			return formatType(o, typmod, names), nil
		},
		"pg_get_indexdef": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			o, _ := integer(arg(a, 0))
			if col, ok := integer(arg(a, 1)); ok && col > 0 {
				def, _ := names.name("indexcol", o*1000+col)
				return def, nil
			}
			def, _ := names.name("indexdef", o)
			return def, nil
		},
		"pg_get_constraintdef": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			o, _ := integer(arg(a, 0))
			def, ok := names.name("condef", o)
			if !ok {
				return nil, nil
			}
			return def, nil
		},
		"array_to_string": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			items, ok := arrayItems(arg(a, 0))
			if !ok {
				return nil, nil
			}
			var parts []string
			for _, it := range items {
				if it == nil {
					if n := arg(a, 2); n != nil {
						parts = append(parts, str(n))
					}
					continue
				}
				parts = append(parts, fmt.Sprint(it))
			}
			return strings.Join(parts, str(arg(a, 1))), nil
		},
		"array_upper": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			items, ok := arrayItems(arg(a, 0))
			if !ok || len(items) == 0 {
				return nil, nil
			}
			if s, isStr := arg(a, 0).(string); isStr && !strings.HasPrefix(s, "[") {
				return int64(len(items) - 1), nil // int2vector: 0-based
			}
			return int64(len(items)), nil
		},
		"array_lower": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			items, ok := arrayItems(arg(a, 0))
			if !ok || len(items) == 0 {
				return nil, nil
			}
			if s, isStr := arg(a, 0).(string); isStr && !strings.HasPrefix(s, "[") {
				return int64(0), nil
			}
			return int64(1), nil
		},
		"array_length": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			items, ok := arrayItems(arg(a, 0))
			if !ok || len(items) == 0 {
				return nil, nil
			}
			return int64(len(items)), nil
		},
		"cardinality": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			items, ok := arrayItems(arg(a, 0))
			if !ok {
				return nil, nil
			}
			return int64(len(items)), nil
		},
		"quote_ident": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			if arg(a, 0) == nil {
				return nil, nil
			}
			return quoteIdent(str(arg(a, 0))), nil
		},
		"quote_literal": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			if arg(a, 0) == nil {
				return nil, nil
			}
			return sqliteString(str(arg(a, 0))), nil
		},
		"split_part": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			parts := strings.Split(str(arg(a, 0)), str(arg(a, 1)))
			n, _ := integer(arg(a, 2))
			if n < 0 {
				n = int64(len(parts)) + n + 1
			}
			if n < 1 || n > int64(len(parts)) {
				return "", nil
			}
			return parts[n-1], nil
		},
		"regexp_replace": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			if arg(a, 0) == nil {
				return nil, nil
			}
			flags := str(arg(a, 3))
			pat := str(arg(a, 1))
			if strings.Contains(flags, "i") {
				pat = "(?i)" + pat
			}
			re, err := compileRegexp(pat)
			if err != nil {
				return nil, err
			}
			rep := backref.ReplaceAllString(str(arg(a, 2)), "$${$1}")
			if strings.Contains(flags, "g") {
				return re.ReplaceAllString(str(arg(a, 0)), rep), nil
			}
			s := str(arg(a, 0))
			loc := re.FindStringSubmatchIndex(s)
			if loc == nil {
				return s, nil
			}
			return s[:loc[0]] + string(re.ExpandString(nil, rep, s, loc)) + s[loc[1]:], nil
		},
		// MySQL functions SQLite lacks.
		"left": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			if arg(a, 0) == nil {
				return nil, nil
			}
			r := []rune(str(arg(a, 0)))
			n, _ := integer(arg(a, 1))
			return string(r[:max(0, min(int(n), len(r)))]), nil
		},
		"right": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			if arg(a, 0) == nil {
				return nil, nil
			}
			r := []rune(str(arg(a, 0)))
			n, _ := integer(arg(a, 1))
			return string(r[len(r)-max(0, min(int(n), len(r))):]), nil
		},
		"locate": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			return int64(strings.Index(strings.ToLower(str(arg(a, 1))), strings.ToLower(str(arg(a, 0)))) + 1), nil
		},
		"lcase": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			return strings.ToLower(str(arg(a, 0))), nil
		},
		"ucase": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			return strings.ToUpper(str(arg(a, 0))), nil
		},
		"pg_encoding_to_char": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			if e, _ := integer(arg(a, 0)); e == 6 {
				return "UTF8", nil
			}
			return "", nil
		},
		"pg_size_pretty": func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			if arg(a, 0) == nil {
				return nil, nil
			}
			n, _ := integer(arg(a, 0))
			return fmt.Sprintf("%d bytes", n), nil
		},
		"pg_now":                             constant(nil),
		"pg_postmaster_start_time":           constant(started),
		"pg_table_is_visible":                constant(int64(1)),
		"pg_type_is_visible":                 constant(int64(1)),
		"pg_function_is_visible":             constant(int64(1)),
		"pg_collation_is_visible":            constant(int64(1)),
		"pg_opclass_is_visible":              constant(int64(1)),
		"pg_operator_is_visible":             constant(int64(1)),
		"pg_conversion_is_visible":           constant(int64(1)),
		"pg_ts_config_is_visible":            constant(int64(1)),
		"pg_has_role":                        constant(int64(1)),
		"has_table_privilege":                constant(int64(1)),
		"has_schema_privilege":               constant(int64(1)),
		"has_database_privilege":             constant(int64(1)),
		"has_column_privilege":               constant(int64(1)),
		"has_any_column_privilege":           constant(int64(1)),
		"has_function_privilege":             constant(int64(1)),
		"has_sequence_privilege":             constant(int64(0)),
		"pg_is_in_recovery":                  constant(int64(0)),
		"pg_relation_is_publishable":         constant(int64(0)),
		"pg_get_expr":                        constant(nil),
		"pg_get_viewdef":                     constant(nil),
		"pg_get_triggerdef":                  constant(nil),
		"pg_get_functiondef":                 constant(nil),
		"pg_get_function_arguments":          constant(nil),
		"pg_get_function_result":             constant(nil),
		"pg_get_function_identity_arguments": constant(nil),
		"pg_get_partkeydef":                  constant(nil),
		"pg_get_serial_sequence":             constant(nil),
		"pg_get_statisticsobjdef_columns":    constant(nil),
		"pg_get_ruledef":                     constant(nil),
		"obj_description":                    constant(nil),
		"col_description":                    constant(nil),
		"shobj_description":                  constant(nil),
		"pg_tablespace_location":             constant(""),
		// Sizes would reveal how many rows a protected table holds.
		"pg_relation_size":        constant(nil),
		"pg_total_relation_size":  constant(nil),
		"pg_table_size":           constant(nil),
		"pg_indexes_size":         constant(nil),
		"pg_database_size":        constant(nil),
		"pg_stat_get_numscans":    constant(nil),
		"pg_stat_get_live_tuples": constant(nil),
		"pg_stat_get_dead_tuples": constant(nil),
		"txid_current":            constant(int64(1)),
		"pg_encoding_max_length":  constant(int64(4)),
		"pg_char_to_encoding":     constant(int64(6)),
	}
	// LIKE as the clients' servers have it, with a backslash as the
	// default escape (SQLite's has none and ignores case); GLOB, which
	// the PostgreSQL translation writes for ILIKE, is LIKE ignoring case.
	funcs["like"] = func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
		return likeFunc(a, caseInsensitiveLike)
	}
	funcs["glob"] = func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
		return likeFunc(a, true)
	}
	var registered []string
	for name, fn := range funcs {
		if err := drv.RegisterScalarFunction(name, -1, fn); err != nil {
			return nil, fmt.Errorf("registering %s: %w", name, err)
		}
		registered = append(registered, name)
	}
	return registered, nil
}

// likeFunc is like(pattern, value [, escape]): % any run, _ one
// character, the escape character (backslash by default) quoting the next.
func likeFunc(a []driver.Value, fold bool) (driver.Value, error) {
	if arg(a, 0) == nil || arg(a, 1) == nil {
		return nil, nil
	}
	pattern, value := []rune(str(arg(a, 0))), []rune(str(arg(a, 1)))
	escape := '\\'
	if len(a) > 2 {
		e := []rune(str(arg(a, 2)))
		if len(e) != 1 {
			return nil, &notSupported{"an ESCAPE of other than one character"}
		}
		escape = e[0]
	}
	if fold {
		pattern, value = []rune(strings.ToLower(string(pattern))), []rune(strings.ToLower(string(value)))
	}
	return likeMatch(pattern, value, escape), nil
}

func likeMatch(pattern, v []rune, escape rune) bool {
	// The pattern as items: a literal rune, one character (_) or a run
	// (%); then the two-pointer match that backtracks only to the last
	// run, O(len(pattern)·len(v)) at worst.
	type item struct {
		r         rune
		one, many bool
	}
	var p []item
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == escape && i+1 < len(pattern):
			i++
			p = append(p, item{r: pattern[i]})
		case c == '%':
			if len(p) == 0 || !p[len(p)-1].many {
				p = append(p, item{many: true})
			}
		case c == '_':
			p = append(p, item{one: true})
		default:
			p = append(p, item{r: c})
		}
	}
	pi, vi, star, mark := 0, 0, -1, 0
	for vi < len(v) {
		switch {
		case pi < len(p) && !p[pi].many && (p[pi].one || p[pi].r == v[vi]):
			pi++
			vi++
		case pi < len(p) && p[pi].many:
			star, mark = pi, vi
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			vi = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi].many {
		pi++
	}
	return pi == len(p)
}

func arg(a []driver.Value, i int) driver.Value {
	if i < len(a) {
		if b, ok := a[i].([]byte); ok {
			return string(b)
		}
		return a[i]
	}
	return nil
}

func str(v driver.Value) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func integer(v driver.Value) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		return int64(x), true
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// regexpCache holds compiled patterns; bounded, since clients choose them.
var regexpCache, _ = lru.New[string, *regexp.Regexp](256)

// backref is a replacement's \1, written ${1} for Go.
var backref = regexp.MustCompile(`\\(\d)`)

func compileRegexp(p string) (*regexp.Regexp, error) {
	if re, ok := regexpCache.Get(p); ok {
		return re, nil
	}
	if len(p) > 1000 {
		return nil, &notSupported{"a regular expression over 1000 characters"}
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, &notSupported{fmt.Sprintf("the regular expression %q", p)}
	}
	regexpCache.Add(p, re)
	return re, nil
}

// regexpFunc is SQLite's REGEXP: regexp(pattern, value).
func regexpFunc(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
	if arg(a, 0) == nil || arg(a, 1) == nil {
		return nil, nil
	}
	re, err := compileRegexp(str(arg(a, 0)))
	if err != nil {
		return nil, err
	}
	return re.MatchString(str(arg(a, 1))), nil
}

func pgBool(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
	switch x := arg(a, 0).(type) {
	case nil:
		return nil, nil
	case int64:
		return x != 0, nil
	case float64:
		return x != 0, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "t", "true", "y", "yes", "on", "1":
			return true, nil
		case "f", "false", "n", "no", "off", "0":
			return false, nil
		}
		return nil, fmt.Errorf("invalid input syntax for type boolean: %q", x)
	}
	return nil, nil
}

// arrayItems reads an array value: a JSON array, PostgreSQL's text form
// of an int2vector/oidvector ("1 2") or of an array ("{a,b}").
func arrayItems(v driver.Value) ([]any, bool) {
	if n, ok := v.(int64); ok {
		// A one-element int2vector stored with integer affinity.
		return []any{n}, true
	}
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "["):
		var items []any
		if err := json.Unmarshal([]byte(s), &items); err != nil {
			return nil, false
		}
		for i, it := range items {
			if f, ok := it.(float64); ok && f == float64(int64(f)) {
				items[i] = int64(f)
			}
		}
		return items, true
	case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
		return pgArrayLiteral(s[1 : len(s)-1]), true
	}
	var items []any
	for _, f := range strings.Fields(s) {
		if n, err := strconv.ParseInt(f, 10, 64); err == nil {
			items = append(items, n)
		} else {
			items = append(items, f)
		}
	}
	return items, true
}

// pgArrayLiteral reads the inside of PostgreSQL's {a,"b,c",NULL} form:
// elements separated by commas, double-quoted ones with backslash escapes,
// unquoted NULL as NULL.
func pgArrayLiteral(inner string) []any {
	var items []any
	if strings.TrimSpace(inner) == "" {
		return items
	}
	var b strings.Builder
	quoted, wasQuoted := false, false
	flush := func() {
		s := b.String()
		if !wasQuoted {
			s = strings.TrimSpace(s)
		}
		if !wasQuoted && strings.EqualFold(s, "NULL") {
			items = append(items, nil)
		} else {
			items = append(items, s)
		}
		b.Reset()
		wasQuoted = false
	}
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		switch {
		case quoted && c == '\\' && i+1 < len(inner):
			i++
			b.WriteByte(inner[i])
		case c == '"':
			quoted = !quoted
			wasQuoted = true
		case c == ',' && !quoted:
			flush()
		default:
			b.WriteByte(c)
		}
	}
	flush()
	return items
}

// typedArray converts an array's elements to numbers for a numeric
// element type (the cast '{1,2}'::int[]).
func typedArray(v driver.Value, numeric bool) driver.Value {
	items, ok := arrayItems(v)
	if !ok {
		return v
	}
	if numeric {
		for i, it := range items {
			if s, isStr := it.(string); isStr {
				if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
					items[i] = n
				} else if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
					items[i] = f
				}
			}
		}
	}
	if items == nil {
		items = []any{}
	}
	b, _ := json.Marshal(items)
	return string(b)
}

func toJSONArray(v driver.Value) driver.Value {
	items, ok := arrayItems(v)
	if !ok {
		return v
	}
	if items == nil {
		items = []any{}
	}
	b, _ := json.Marshal(items)
	return string(b)
}

// pgSubscript is arr[i]: 1-based for arrays, 0-based for int2vector and
// oidvector (PostgreSQL's rule).
func pgSubscript(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
	items, ok := arrayItems(arg(a, 0))
	i, ok2 := integer(arg(a, 1))
	if !ok || !ok2 {
		return nil, nil
	}
	if s, _ := arg(a, 0).(string); strings.HasPrefix(strings.TrimSpace(s), "[") || strings.HasPrefix(strings.TrimSpace(s), "{") {
		i--
	}
	if i < 0 || i >= int64(len(items)) {
		return nil, nil
	}
	return items[i], nil
}

// regCast is x::regclass (and the other reg types): a name becomes its
// OID, an OID its name (as PostgreSQL prints it).
func regCast(names *objectNames, kind string, x driver.Value) (driver.Value, error) {
	if x == nil {
		return nil, nil
	}
	if kind == "regproc" || kind == "regprocedure" {
		// Functions are kept by name: 'pg_catalog.array_in'::regproc
		// compares equal to pg_type.typinput.
		s := str(x)
		if i := strings.LastIndexByte(s, '.'); i >= 0 {
			s = s[i+1:]
		}
		return s, nil
	}
	if n, ok := integer(x); ok {
		// An OID stays an OID, so that it compares equal to the OID
		// columns (PostgreSQL would print the name).
		return n, nil
	}
	name := str(x)
	lookup := strings.Trim(name, `"`)
	if !strings.Contains(name, `"`) {
		lookup = strings.ToLower(lookup)
	}
	lookup = strings.TrimPrefix(lookup, "public.")
	if o, ok := names.oid(kind, lookup); ok {
		return o, nil
	}
	if o, ok := names.oid(kind, strings.TrimPrefix(lookup, "pg_catalog.")); ok {
		return o, nil
	}
	what := map[string]string{"regclass": "relation", "regtype": "type", "regnamespace": "schema", "regrole": "role"}[kind]
	if what == "" {
		what = kind
	}
	return nil, &notSupported{fmt.Sprintf("%s %q (it does not exist in dpproxy's catalog)", what, name)}
}

// quoteIdent quotes an identifier as PostgreSQL's quote_ident does.
func quoteIdent(s string) string {
	plain := s != ""
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
		}
	}
	if plain && !isKeyword(s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
