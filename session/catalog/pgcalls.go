package catalog

import (
	"fmt"
	"strconv"
	"strings"
)

// Function calls and casts in PostgreSQL catalog queries.

// renamedFunctions are PostgreSQL functions SQLite has under another name.
var renamedFunctions = map[string]string{
	"array_agg": "json_group_array", "greatest": "max", "least": "min", "char_length": "length",
	"character_length": "length", "btrim": "trim", "strpos": "instr", "to_regclass": "pg_to_regclass",
	"to_regtype": "pg_to_regtype", "to_regnamespace": "pg_to_regnamespace", "now": "pg_now",
	"transaction_timestamp": "pg_now", "statement_timestamp": "pg_now", "clock_timestamp": "pg_now",
	"json_build_object": "json_object", "jsonb_build_object": "json_object", "json_build_array": "json_array",
	"jsonb_build_array": "json_array", "json_agg": "json_group_array", "jsonb_agg": "json_group_array",
	"json_object_agg": "json_group_object", "jsonb_object_agg": "json_group_object", "to_json": "pg_to_json", "to_jsonb": "pg_to_json",
}

// call translates name(args) followed by rest; it returns how many nodes
// of rest it consumed (an alias after a function in FROM).
func (t *pgTranslator) call(parts []token, args node, rest []node, out *[]unit, clause string) ([]unit, int, error) {
	name := parts[len(parts)-1].text
	// The name is written into the SQL as it is: only a plain
	// identifier may be one (a quoted name could hold anything).
	if parts[len(parts)-1].kind != tokIdent || !plainName(name) {
		return nil, 0, &notSupported{"a quoted or unusual function name"}
	}
	if len(parts) > 1 {
		schema := parts[len(parts)-2].text
		if schema != "pg_catalog" && schema != "information_schema" {
			return nil, 0, &notSupported{"the function " + schema + "." + name}
		}
	}
	inFrom := clause == "from" || clause == "join"
	if inFrom && len(*out) > 0 {
		prev := strings.ToLower((*out)[len(*out)-1].text)
		inFrom = prev == "from" || prev == "join" || prev == "," || prev == "lateral"
	}
	switch name {
	case "generate_series", "unnest", "_pg_expandarray", "pg_get_keywords", "pg_show_all_settings", "json_each", "json_array_elements":
		if !inFrom {
			if name == "json_each" {
				break
			}
			return nil, 0, &notSupported{name + "() outside FROM"}
		}
		return t.tableFunction(name, args, rest)
	case "cast":
		return t.castCall(args)
	case "trim", "btrim", "substring", "position", "overlay", "extract":
		if us, ok, err := t.keywordCall(name, args); ok || err != nil {
			return us, 0, err
		}
	case "version":
		return []unit{{sqliteString(t.sess.ServerVersion), true}}, 0, nil
	case "current_database":
		return []unit{{sqliteString(t.sess.Database), true}}, 0, nil
	case "current_schema":
		t.usesSettings = true
		return []unit{{sqliteString(t.sess.currentSchema()), true}}, 0, nil
	case "current_user", "session_user", "current_role":
		return []unit{{sqliteString(t.sess.User), true}}, 0, nil
	case "current_schemas":
		withImplicit := len(args.children) == 1 && args.children[0].isWord("true")
		var names []string
		if withImplicit {
			names = append(names, sqliteString("pg_catalog"))
		}
		t.usesSettings = true
		for _, s := range t.sess.searchPath() {
			names = append(names, sqliteString(s))
		}
		return []unit{{"json_array(" + strings.Join(names, ", ") + ")", true}}, 0, nil
	case "current_setting":
		if len(args.children) == 0 || args.children[0].group != 0 || args.children[0].tok.kind != tokString {
			return nil, 0, &notSupported{"current_setting() of anything but a constant name"}
		}
		setting := strings.ToLower(args.children[0].tok.text)
		t.usesSettings = true
		v, ok := t.sess.setting(setting)
		if !ok {
			missingOK := len(args.children) == 3 && args.children[2].isWord("true")
			if !missingOK {
				return nil, 0, &unknownSetting{setting}
			}
			return []unit{{"NULL", true}}, 0, nil
		}
		return []unit{{sqliteString(v), true}}, 0, nil
	case "pg_backend_pid":
		t.usesSettings = true // the session's own: not memoized
		return []unit{{strconv.Itoa(int(t.sess.BackendPID)), true}}, 0, nil
	case "pg_get_userbyid":
		inner, err := t.translate(args.children)
		if err != nil {
			return nil, 0, err
		}
		return []unit{{fmt.Sprintf("(CASE WHEN (%s) = %d THEN %s ELSE 'unknown (OID=' || (%s) || ')' END)", inner, analystOID, sqliteString(t.sess.User), inner), true}}, 0, nil
	case "inet_server_addr", "inet_client_addr", "inet_server_port", "inet_client_port":
		return []unit{{"NULL", true}}, 0, nil
	case "set_config":
		return nil, 0, &notSupported{"set_config()"}
	}
	if r, ok := renamedFunctions[name]; ok {
		name = r
	}
	inner, err := t.translate(args.children)
	if err != nil {
		return nil, 0, err
	}
	return []unit{{name + "(" + inner + ")", true}}, 0, nil
}

// plainName reports whether s is a lower-case identifier of letters,
// digits and underscores, starting with a letter or underscore: the only
// client text written into catalog SQL unquoted.
func plainName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// unknownSetting is current_setting() of a parameter the session does not
// know (PostgreSQL's 42704).
type unknownSetting struct{ name string }

func (e *unknownSetting) Error() string {
	return fmt.Sprintf("unrecognized configuration parameter %q", e.name)
}

// tableFunction translates a set-returning function in FROM, with its
// optional alias and column names, into a subquery.
func (t *pgTranslator) tableFunction(name string, args node, rest []node) ([]unit, int, error) {
	consumed := 0
	alias, cols := name, []string(nil)
	if len(rest) > 0 && rest[0].isWord("with") && len(rest) > 1 && rest[1].isWord("ordinality") {
		return nil, 0, &notSupported{"WITH ORDINALITY"}
	}
	if len(rest) > 0 && rest[0].isWord("as") {
		consumed++
	}
	if len(rest) > consumed && rest[consumed].group == 0 && rest[consumed].tok.isName() && !isKeyword(rest[consumed].tok.text) {
		alias = rest[consumed].tok.text
		consumed++
		if len(rest) > consumed && rest[consumed].group == '(' {
			for _, c := range rest[consumed].children {
				if c.group == 0 && c.tok.isName() {
					cols = append(cols, c.tok.text)
				}
			}
			consumed++
		}
	}
	col := func(i int, def string) string {
		if i < len(cols) {
			return sqliteIdent(cols[i])
		}
		return sqliteIdent(def)
	}
	argv, err := t.splitArgs(args.children)
	if err != nil {
		return nil, 0, err
	}
	if len(argv) == 0 && name != "pg_get_keywords" && name != "pg_show_all_settings" {
		return nil, 0, &notSupported{name + "() without arguments"}
	}
	var sub string
	switch name {
	case "generate_series":
		if len(argv) < 2 || len(argv) > 3 {
			return nil, 0, &notSupported{"generate_series with these arguments"}
		}
		step := "1"
		if len(argv) == 3 {
			step = argv[2]
		}
		if strings.TrimSpace(step) == "0" {
			return nil, 0, &notSupported{"generate_series with step 0"}
		}
		// Rows from start while within stop, in the step's direction;
		// none when start is already past stop or an argument is NULL.
		within := func(v string) string {
			return fmt.Sprintf("((%[2]s) > 0 AND %[1]s <= (%[3]s) OR (%[2]s) < 0 AND %[1]s >= (%[3]s))", v, step, argv[1])
		}
		sub = fmt.Sprintf("WITH RECURSIVE _dpproxy_s(v) AS (SELECT %s WHERE %s UNION ALL SELECT v + (%s) FROM _dpproxy_s WHERE %s) SELECT v AS %s FROM _dpproxy_s",
			argv[0], within("("+argv[0]+")"), step, within("v + ("+step+")"), col(0, alias))
	case "unnest", "json_array_elements":
		if len(argv) != 1 {
			return nil, 0, &notSupported{"unnest of several arrays"}
		}
		sub = fmt.Sprintf("SELECT value AS %s FROM json_each(pg_array(%s)) ORDER BY key", col(0, alias), argv[0])
	case "json_each":
		sub = fmt.Sprintf("SELECT key AS %s, value AS %s FROM json_each(%s)", col(0, "key"), col(1, "value"), strings.Join(argv, ", "))
	case "_pg_expandarray":
		sub = fmt.Sprintf("SELECT value AS %s, key + 1 AS %s FROM json_each(pg_array(%s)) ORDER BY key", col(0, "x"), col(1, "n"), argv[0])
	case "pg_get_keywords":
		sub = fmt.Sprintf("SELECT NULL AS %s, NULL AS %s, NULL AS %s, NULL AS %s, NULL AS %s WHERE 0", col(0, "word"), col(1, "catcode"), col(2, "barelabel"), col(3, "catdesc"), col(4, "baredesc"))
	case "pg_show_all_settings":
		sub = "SELECT * FROM pg_settings"
	}
	return []unit{{"(" + sub + ") AS " + sqliteIdent(alias), true}}, consumed, nil
}

// splitArgs translates a call's arguments one by one.
func (t *pgTranslator) splitArgs(nodes []node) ([]string, error) {
	var args []string
	start := 0
	for i := 0; i <= len(nodes); i++ {
		if i == len(nodes) || nodes[i].isTok(tokPunct, ",") {
			if i == start {
				if len(nodes) == 0 {
					return nil, nil
				}
				return nil, fmt.Errorf("empty argument")
			}
			a, err := t.translate(nodes[start:i])
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			start = i + 1
		}
	}
	return args, nil
}

// castCall translates CAST(x AS type).
func (t *pgTranslator) castCall(args node) ([]unit, int, error) {
	for k := len(args.children) - 1; k > 0; k-- {
		if args.children[k].isWord("as") {
			inner, err := t.translate(args.children[:k])
			if err != nil {
				return nil, 0, err
			}
			typ, n, err := readTypeName(args.children[k+1:])
			if err != nil {
				return nil, 0, err
			}
			if k+1+n != len(args.children) {
				return nil, 0, fmt.Errorf("unexpected text after the type in CAST")
			}
			return []unit{{castTo("("+inner+")", typ), true}}, 0, nil
		}
	}
	return nil, 0, fmt.Errorf("CAST without AS")
}

// pgType is a type name as written in a cast: base name (lower case, no
// schema) and whether it is an array.
type pgType struct {
	name  string
	array bool
}

// readTypeName reads a type name at the start of nodes and returns it
// and how many nodes it took.
func readTypeName(nodes []node) (pgType, int, error) {
	var words []string
	k := 0
	for k < len(nodes) && nodes[k].group == 0 && (nodes[k].tok.isName()) {
		w := nodes[k].tok.text
		if len(words) > 0 && !multiWordType(words, w) {
			break
		}
		words = append(words, w)
		k++
		if k+1 < len(nodes) && nodes[k].isTok(tokPunct, ".") {
			// schema.type: keep the type.
			words = words[:0]
			k++
		}
	}
	if len(words) == 0 {
		return pgType{}, 0, fmt.Errorf("a type name must follow the cast")
	}
	typ := pgType{name: strings.Join(words, " ")}
	if k < len(nodes) && nodes[k].group == '(' {
		k++ // type modifier: varchar(10), numeric(10,2)
	}
	for k < len(nodes) && nodes[k].group == '[' {
		typ.array = true
		k++
	}
	return typ, k, nil
}

// multiWordType reports whether w continues the type name words.
func multiWordType(words []string, w string) bool {
	last := words[len(words)-1]
	switch {
	case last == "double" && w == "precision",
		last == "character" && w == "varying",
		last == "bit" && w == "varying",
		(last == "timestamp" || last == "time") && (w == "with" || w == "without"),
		(last == "with" || last == "without") && w == "time",
		last == "time" && len(words) > 1 && w == "zone":
		return true
	}
	return false
}

// castTo translates a cast of the SQLite expression x.
func castTo(x string, typ pgType) string {
	if typ.array {
		switch typ.name {
		case "int", "int2", "int4", "int8", "integer", "smallint", "bigint", "oid", "float4", "float8", "real", "double precision", "numeric", "regtype", "regclass":
			return "pg_array_of(" + x + ", 'number')"
		}
		return "pg_array_of(" + x + ", 'text')"
	}
	switch typ.name {
	case "regclass", "regtype", "regproc", "regprocedure", "regnamespace", "regrole", "regoper", "regoperator", "regconfig", "regcollation":
		return fmt.Sprintf("pg_reg('%s', %s)", typ.name, x)
	case "oid", "int", "int2", "int4", "int8", "integer", "smallint", "bigint", "xid", "cid", "tid":
		return "CAST(" + x + " AS INTEGER)"
	case "text", "name", "varchar", "character varying", "char", "character", "bpchar", "citext", "unknown":
		return "CAST(" + x + " AS TEXT)"
	case "bool", "boolean":
		return "pg_bool(" + x + ")"
	case "float", "float4", "float8", "real", "double precision", "numeric", "decimal":
		return "CAST(" + x + " AS REAL)"
	}
	// Other types (int2vector, oidvector, dates, json, ...) keep the
	// value as it is.
	return x
}

// keywordCall translates the SQL-standard call forms with keywords inside
// the parentheses: trim([both|leading|trailing] [x] from y),
// substring(x from a [for b]), position(a in b). ok is false for the
// ordinary comma form.
func (t *pgTranslator) keywordCall(name string, args node) ([]unit, bool, error) {
	at := func(word string) int {
		for i, c := range args.children {
			if c.isWord(word) {
				return i
			}
		}
		return -1
	}
	part := func(nodes []node) (string, error) {
		if len(nodes) == 0 {
			return "", nil
		}
		return t.translate(nodes)
	}
	switch name {
	case "trim", "btrim":
		from := at("from")
		if from < 0 {
			return nil, false, nil
		}
		fn, chars := "trim", args.children[:from]
		if len(chars) > 0 && chars[0].group == 0 && chars[0].tok.kind == tokIdent {
			switch chars[0].tok.text {
			case "both":
				chars = chars[1:]
			case "leading":
				fn, chars = "ltrim", chars[1:]
			case "trailing":
				fn, chars = "rtrim", chars[1:]
			}
		}
		x, err := part(args.children[from+1:])
		if err != nil {
			return nil, true, err
		}
		c, err := part(chars)
		if err != nil {
			return nil, true, err
		}
		if c == "" {
			return []unit{{fn + "(" + x + ")", true}}, true, nil
		}
		return []unit{{fn + "(" + x + ", " + c + ")", true}}, true, nil
	case "substring":
		from, forAt := at("from"), at("for")
		if from < 0 && forAt < 0 {
			return nil, false, nil
		}
		if from < 0 {
			return nil, true, &notSupported{"substring(x FOR n) without FROM"}
		}
		end := len(args.children)
		if forAt > from {
			end = forAt
		}
		x, err := part(args.children[:from])
		if err != nil {
			return nil, true, err
		}
		a, err := part(args.children[from+1 : end])
		if err != nil {
			return nil, true, err
		}
		if forAt > from {
			b, err := part(args.children[forAt+1:])
			if err != nil {
				return nil, true, err
			}
			return []unit{{"substr(" + x + ", " + a + ", " + b + ")", true}}, true, nil
		}
		return []unit{{"substr(" + x + ", " + a + ")", true}}, true, nil
	case "position":
		in := at("in")
		if in < 0 {
			return nil, false, nil
		}
		a, err := part(args.children[:in])
		if err != nil {
			return nil, true, err
		}
		b, err := part(args.children[in+1:])
		if err != nil {
			return nil, true, err
		}
		return []unit{{"instr(" + b + ", " + a + ")", true}}, true, nil
	}
	return nil, true, &notSupported{name + "(...)"}
}
