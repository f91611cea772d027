package catalog

import (
	"fmt"
	"strconv"
	"strings"
)

// Translation of a PostgreSQL catalog query into SQLite, the dialect of
// the in-memory database that holds the catalog. The two are close for
// what catalog queries use (joins, subqueries, CASE, aggregates, window
// functions, ORDER BY ... NULLS FIRST); the differences are handled on
// the token tree, one construct at a time:
//
//	pg_catalog.pg_class          pg_class (the tables live in SQLite's main schema)
//	information_schema.tables    "information_schema.tables"
//	x::type, CAST(x AS type)     CAST(x AS INTEGER | TEXT | REAL), pg_reg('regclass', x), ...
//	OPERATOR(pg_catalog.~)       ~
//	a ~ 'p', a !~ 'p', a ~* 'p'  a REGEXP 'p', a NOT REGEXP 'p', a REGEXP '(?i)p'
//	~~, ILIKE (~~*)              LIKE, GLOB (both the catalog's own: PostgreSQL's rules)
//	COLLATE name                 dropped (catalog strings compare bytewise)
//	IS [NOT] DISTINCT FROM       IS NOT / IS
//	ARRAY[a, b], ARRAY(SELECT)   json_array(a, b), a JSON array of the subquery's rows
//	x = ANY(arr), x <> ALL(arr)  x IN (SELECT value FROM json_each(pg_array(arr))), NOT IN
//	arr[i]                       pg_subscript(arr, i)
//	generate_series, unnest,     subqueries in FROM (with the alias's column name)
//	_pg_expandarray in FROM
//	current_user, version(),     constants of the session
//	current_setting('x'), ...
//	$n                           ?n
//	LIMIT ALL, FETCH FIRST n     dropped, LIMIT n
//
// Arrays are JSON arrays in the catalog; int2vector and oidvector keep
// PostgreSQL's text form ("1 2"), and pg_array and pg_subscript read both
// (int2vector subscripts start at 0, as in PostgreSQL).
//
// What is not translated fails in SQLite and is reported as a feature the
// catalog does not support (SQLSTATE 0A000), naming the object.

// node is a token or a parenthesized/bracketed group of nodes.
type node struct {
	tok      token
	group    byte // '(' or '[' for a group, 0 for a token
	children []node
	// raw, when set, is already SQLite text (an operand).
	raw string
}

func (n node) isTok(kind tokenKind, text string) bool { return n.group == 0 && n.tok.is(kind, text) }
func (n node) isWord(w string) bool                   { return n.group == 0 && n.tok.isWord(w) }

// buildTree groups tokens by parentheses and brackets.
func buildTree(toks []token) ([]node, error) {
	nodes, rest, err := buildGroup(toks, 0)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("unbalanced %q", rest[0].text)
	}
	return nodes, nil
}

func buildGroup(toks []token, closer byte) ([]node, []token, error) {
	var out []node
	for len(toks) > 0 {
		t := toks[0]
		toks = toks[1:]
		if t.kind == tokPunct && (t.text == "(" || t.text == "[") {
			want := byte(')')
			if t.text == "[" {
				want = ']'
			}
			children, rest, err := buildGroup(toks, want)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, node{group: t.text[0], children: children})
			toks = rest
			continue
		}
		if t.kind == tokPunct && (t.text == ")" || t.text == "]") {
			if closer == 0 || t.text[0] != closer {
				return nil, nil, fmt.Errorf("unbalanced %q", t.text)
			}
			return out, toks, nil
		}
		out = append(out, node{tok: t})
	}
	if closer != 0 {
		return nil, nil, fmt.Errorf("missing %q", string(closer))
	}
	return out, nil, nil
}

// unit is one piece of translated text; atom marks an operand (a name,
// constant, call or parenthesized expression) that :: or [] may follow.
type unit struct {
	text string
	atom bool
}

// pgTranslator translates one statement.
type pgTranslator struct {
	sess *Session
	// sessionViews are the session-dependent relations the statement
	// reads, which the translation defines as common table expressions.
	sessionViews map[string]bool
	maxParam     int
	// usesSettings is set when the translation read the session's
	// run-time parameters (which SET changes) or its process id: it is
	// not cached.
	usesSettings bool
}

// notSupported is an error naming a construct the catalog does not answer.
type notSupported struct{ what string }

func (e *notSupported) Error() string { return e.what + " is not supported by dpproxy's catalog" }

// keywordsBeforeParen are words that a parenthesis may follow without
// making them a function call.
var keywordsBeforeParen = map[string]bool{
	"in": true, "exists": true, "values": true, "as": true, "over": true, "filter": true, "using": true,
	"on": true, "and": true, "or": true, "not": true, "when": true, "then": true, "else": true,
	"select": true, "from": true, "where": true, "join": true, "lateral": true, "by": true,
	"union": true, "intersect": true, "except": true, "all": true, "distinct": true, "with": true,
	"recursive": true, "having": true, "limit": true, "offset": true, "is": true, "between": true,
	"like": true, "ilike": true, "case": true, "end": true, "group": true, "within": true, "row": true,
	"return": true, "into": true, "set": true, "escape": true, "asc": true, "desc": true,
	"any": true, "some": true, "array": true,
}

// clauseWords change what a comma or a call means (FROM items vs values).
var clauseWords = map[string]bool{
	"select": true, "from": true, "where": true, "group": true, "order": true, "having": true,
	"limit": true, "offset": true, "on": true, "using": true, "join": true, "window": true,
	"union": true, "intersect": true, "except": true, "values": true,
}

// translate translates a sequence of nodes (a statement or a group's
// contents).
func (t *pgTranslator) translate(nodes []node) (string, error) {
	units, err := t.units(nodes)
	if err != nil {
		return "", err
	}
	return joinUnits(units), nil
}

func joinUnits(units []unit) string {
	var b strings.Builder
	for i, u := range units {
		if i > 0 && u.text != "," && !strings.HasPrefix(u.text, ".") && !strings.HasSuffix(units[i-1].text, ".") {
			b.WriteByte(' ')
		}
		b.WriteString(u.text)
	}
	return b.String()
}

func (t *pgTranslator) units(nodes []node) ([]unit, error) {
	var out []unit
	clause := ""
	lastAtom := func() bool { return len(out) > 0 && out[len(out)-1].atom }
	nodes, err := t.selectListSRFs(nodes)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(nodes); i++ {
		n := nodes[i]
		if n.raw != "" {
			out = append(out, unit{n.raw, true})
			continue
		}
		if n.group != 0 {
			if n.group == '[' {
				if !lastAtom() {
					return nil, &notSupported{"an array bracket here"}
				}
				if len(n.children) == 0 {
					return nil, &notSupported{"an empty subscript"}
				}
				idx, err := t.translate(n.children)
				if err != nil {
					return nil, err
				}
				if strings.Contains(idx, ":") {
					return nil, &notSupported{"an array slice"}
				}
				prev := out[len(out)-1]
				out[len(out)-1] = unit{"pg_subscript(" + prev.text + ", " + idx + ")", true}
				continue
			}
			inner, err := t.translate(n.children)
			if err != nil {
				return nil, err
			}
			out = append(out, unit{"(" + inner + ")", true})
			continue
		}
		tok := n.tok
		switch tok.kind {
		case tokString:
			out = append(out, unit{sqliteString(tok.text), true})
		case tokNumber:
			out = append(out, unit{tok.text, true})
		case tokParam:
			p, err := strconv.Atoi(tok.text)
			if err != nil || p < 1 || p > 65535 {
				return nil, fmt.Errorf("bad parameter $%s", tok.text)
			}
			t.maxParam = max(t.maxParam, p)
			out = append(out, unit{"?" + tok.text, true})
		case tokPunct:
			switch tok.text {
			case ".":
				// A qualified name is read as a chain below; a dot
				// here follows a parenthesized composite value,
				// (v).field, which the catalog keeps as a JSON object.
				if i+1 < len(nodes) && nodes[i+1].group == 0 && nodes[i+1].tok.isName() && lastAtom() {
					prev := out[len(out)-1]
					out[len(out)-1] = unit{"json_extract(" + prev.text + ", " + sqliteString("$."+nodes[i+1].tok.text) + ")", true}
					i++
					continue
				}
				return nil, fmt.Errorf("unexpected '.'")
			case ";":
				if i != len(nodes)-1 {
					return nil, &notSupported{"more than one statement in a catalog query"}
				}
			default:
				out = append(out, unit{tok.text, false})
			}
		case tokOp:
			next, err := t.operator(nodes, &i, &out)
			if err != nil {
				return nil, err
			}
			out = append(out, next...)
		case tokQuoted, tokIdent:
			consumed, us, err := t.word(nodes, i, &out, clause)
			if err != nil {
				return nil, err
			}
			if tok.kind == tokIdent && clauseWords[tok.text] {
				clause = tok.text
			}
			i += consumed - 1
			out = append(out, us...)
		}
	}
	return out, nil
}

// operator translates the operator at nodes[*i]; it may consume more
// nodes and rewrite the last unit of out.
func (t *pgTranslator) operator(nodes []node, i *int, out *[]unit) ([]unit, error) {
	op := nodes[*i].tok.text
	switch op {
	case "::":
		if len(*out) == 0 || !(*out)[len(*out)-1].atom {
			return nil, fmt.Errorf("a cast (::) needs a value before it")
		}
		typ, n, err := readTypeName(nodes[*i+1:])
		if err != nil {
			return nil, err
		}
		*i += n
		prev := (*out)[len(*out)-1]
		(*out)[len(*out)-1] = unit{castTo(prev.text, typ), true}
		return nil, nil
	case "~", "!~", "~*", "!~*":
		word := "REGEXP"
		if op[0] == '!' {
			word = "NOT REGEXP"
		}
		if strings.HasSuffix(op, "*") {
			if *i+1 >= len(nodes) || nodes[*i+1].group != 0 || nodes[*i+1].tok.kind != tokString {
				return nil, &notSupported{"a case-insensitive match on anything but a constant pattern"}
			}
			*i++
			return []unit{{word, false}, {sqliteString("(?i)" + nodes[*i].tok.text), true}}, nil
		}
		return []unit{{word, false}}, nil
	case "~~":
		return []unit{{"LIKE", false}}, nil
	case "!~~":
		return []unit{{"NOT LIKE", false}}, nil
	case "~~*":
		return []unit{{"GLOB", false}}, nil // the catalog's glob() is ILIKE
	case "!~~*":
		return []unit{{"NOT GLOB", false}}, nil
	case "=", "<>", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/", "%", "||", "&", "|", "<<", ">>":
		return []unit{{op, false}}, nil
	}
	return nil, &notSupported{"the operator " + op}
}

// word translates an identifier at nodes[i] and what belongs to it (a
// qualified name, a call and its arguments, a keyword's phrase); it
// returns how many nodes it consumed.
func (t *pgTranslator) word(nodes []node, i int, out *[]unit, clause string) (int, []unit, error) {
	tok := nodes[i].tok
	next := func(k int) node {
		if i+k < len(nodes) {
			return nodes[i+k]
		}
		return node{tok: token{kind: tokPunct, text: ""}}
	}
	if tok.kind == tokIdent {
		switch tok.text {
		case "operator":
			g := next(1)
			if g.group != '(' || len(g.children) == 0 || g.children[len(g.children)-1].group != 0 || g.children[len(g.children)-1].tok.kind != tokOp {
				return 0, nil, fmt.Errorf("OPERATOR must be followed by (schema.op)")
			}
			// Re-run the operator as if written bare.
			rest := append([]node{g.children[len(g.children)-1]}, nodes[i+2:]...)
			j := 0
			us, err := t.operator(rest, &j, out)
			return 2 + j, us, err
		case "array":
			g := next(1)
			switch g.group {
			case '[':
				inner, err := t.translate(g.children)
				if err != nil {
					return 0, nil, err
				}
				return 2, []unit{{"json_array(" + inner + ")", true}}, nil
			case '(':
				inner, err := t.translate(g.children)
				if err != nil {
					return 0, nil, err
				}
				return 2, []unit{{"(WITH _dpproxy_a(v) AS (" + inner + ") SELECT json_group_array(v) FROM _dpproxy_a)", true}}, nil
			}
			return 0, nil, &notSupported{"ARRAY without [ ] or ( )"}
		case "any", "some", "all":
			g := next(1)
			if g.group != '(' {
				break
			}
			if len(*out) == 0 {
				return 0, nil, fmt.Errorf("%s without a comparison", strings.ToUpper(tok.text))
			}
			cmp := (*out)[len(*out)-1].text
			in := ""
			switch {
			case tok.text != "all" && cmp == "=":
				in = "IN"
			case tok.text == "all" && (cmp == "<>" || cmp == "!="):
				in = "NOT IN"
			default:
				return 0, nil, &notSupported{cmp + " " + strings.ToUpper(tok.text) + "(...)"}
			}
			*out = (*out)[:len(*out)-1]
			inner, err := t.translate(g.children)
			if err != nil {
				return 0, nil, err
			}
			if len(g.children) > 0 && (g.children[0].isWord("select") || g.children[0].isWord("with") || g.children[0].isWord("values")) {
				return 2, []unit{{in, false}, {"(" + inner + ")", true}}, nil
			}
			return 2, []unit{{in, false}, {"(SELECT value FROM json_each(pg_array(" + inner + ")))", true}}, nil
		case "collate":
			// COLLATE name[.name]: dropped.
			k := 2
			if next(k).isTok(tokPunct, ".") {
				k += 2
			}
			return k, nil, nil
		case "is":
			if next(1).isWord("distinct") && next(2).isWord("from") {
				return 3, []unit{{"IS NOT", false}}, nil
			}
			if next(1).isWord("not") && next(2).isWord("distinct") && next(3).isWord("from") {
				return 4, []unit{{"IS", false}}, nil
			}
		case "ilike":
			// GLOB calls the catalog's glob(), which is LIKE ignoring
			// case (functions.go).
			return 1, []unit{{"GLOB", false}}, nil
		case "limit":
			if next(1).isWord("all") {
				return 2, nil, nil
			}
		case "fetch":
			if next(1).isWord("first") || next(1).isWord("next") {
				k := 2
				n := "1"
				if next(k).group == 0 && next(k).tok.kind == tokNumber {
					n = next(k).tok.text
					k++
				}
				if (next(k).isWord("row") || next(k).isWord("rows")) && next(k+1).isWord("only") {
					return k + 2, []unit{{"LIMIT", false}, {n, true}}, nil
				}
			}
		case "rows", "row":
			// OFFSET n ROWS
			if len(*out) >= 2 && strings.EqualFold((*out)[len(*out)-2].text, "offset") {
				return 1, nil, nil
			}
		case "true", "false", "null":
			return 1, []unit{{strings.ToUpper(tok.text), true}}, nil
		case "current_user", "session_user", "user", "current_role":
			if next(1).group != '(' {
				return 1, []unit{{sqliteString(t.sess.User), true}}, nil
			}
		case "current_catalog":
			return 1, []unit{{sqliteString(t.sess.Database), true}}, nil
		case "current_schema":
			if next(1).group != '(' {
				t.usesSettings = true
				return 1, []unit{{sqliteString(t.sess.currentSchema()), true}}, nil
			}
		case "current_timestamp", "localtimestamp", "current_date", "current_time", "localtime":
			return 1, []unit{{strings.ToUpper(tok.text), true}}, nil
		}
		isCall := (tok.text == "left" || tok.text == "right") && next(1).group == '('
		if !isCall && (keywordsBeforeParen[tok.text] || clauseWords[tok.text] || isKeyword(tok.text)) {
			return 1, []unit{{strings.ToUpper(tok.text), false}}, nil
		}
	}
	// A possibly qualified name.
	parts := []token{tok}
	k := 1
	for next(k).isTok(tokPunct, ".") && (next(k+1).group == 0 && (next(k+1).tok.isName() || next(k+1).tok.is(tokOp, "*"))) {
		parts = append(parts, next(k+1).tok)
		k += 2
	}
	if g := next(k); g.group == '(' {
		us, consumed, err := t.call(parts, g, nodes[i+k+1:], out, clause)
		return k + 1 + consumed, us, err
	}
	return k, []unit{{t.relationName(parts), true}}, nil
}

// relationName translates a (possibly qualified) name that is not a call.
func (t *pgTranslator) relationName(parts []token) string {
	if len(parts) >= 2 && parts[0].kind == tokIdent {
		switch parts[0].text {
		case "pg_catalog":
			parts = parts[1:]
		case "information_schema":
			name := "information_schema." + parts[1].text
			if sessionViews[name] != nil {
				t.sessionViews[name] = true
			}
			rest := ""
			for _, p := range parts[2:] {
				rest += "." + quotePart(p)
			}
			return sqliteIdent(name) + rest
		}
	}
	if len(parts) == 1 && parts[0].kind == tokIdent && sessionViews[parts[0].text] != nil {
		t.sessionViews[parts[0].text] = true
	}
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = quotePart(p)
	}
	return strings.Join(names, ".")
}

// quotePart writes one part of a name, always quoted: a PostgreSQL name
// may be an SQLite keyword (default, key, ...).
func quotePart(p token) string {
	if p.kind == tokOp {
		return "*"
	}
	return sqliteIdent(p.text)
}

// isKeyword reports words that are SQL syntax rather than names, so they
// are written as keywords rather than quoted.
func isKeyword(w string) bool {
	switch w {
	case "select", "from", "where", "and", "or", "not", "as", "on", "join", "left", "right", "inner", "outer",
		"full", "cross", "natural", "group", "order", "by", "having", "limit", "offset", "union", "all",
		"distinct", "case", "when", "then", "else", "end", "in", "is", "null", "like", "between", "exists",
		"asc", "desc", "nulls", "first", "last", "with", "recursive", "using", "over", "partition", "filter",
		"intersect", "except", "escape", "values", "lateral", "window", "rows", "range", "preceding",
		"following", "unbounded", "current", "row", "for", "update", "share", "nowait", "of", "only",
		"isnull", "notnull", "interval", "ties", "exclude", "others", "groups", "no", "ordinality", "symmetric",
		"asymmetric", "tablesample", "at", "zone", "similar", "glob", "collate", "within":
		return true
	}
	return false
}
