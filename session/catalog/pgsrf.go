package catalog

// Set-returning functions in a select list, as ORMs write them to list an
// index's columns:
//
//	SELECT unnest(ix.indkey) attnum, generate_subscripts(ix.indkey, 1) ord FROM pg_index ix WHERE ...
//
// PostgreSQL runs the functions in lockstep, one row per element. SQLite
// has no such thing, so every unnest(arr) and generate_subscripts(arr, 1)
// of one select list (they must share the array) becomes a column of the
// table-valued function json_each(arr) joined to the FROM clause:
//
//	SELECT _dpproxy_srf.value attnum, (_dpproxy_srf.key + array_lower(ix.indkey, 1)) ord
//	FROM pg_index ix, json_each(pg_array(ix.indkey)) AS _dpproxy_srf WHERE ...

// information_schema._pg_expandarray(arr), which pgjdbc uses, becomes a
// JSON object {"x": element, "n": position}, and a field of a
// parenthesized value, (v).x, reads it with json_extract.

// srfAlias names the joined json_each.
const srfAlias = "_dpproxy_srf"

// clauseEnds are the words that end a FROM clause at its level.
var clauseEnds = map[string]bool{
	"where": true, "group": true, "having": true, "window": true, "order": true, "limit": true,
	"offset": true, "fetch": true, "for": true, "union": true, "intersect": true, "except": true,
}

// selectListSRFs rewrites a SELECT's set-returning select-list calls.
func (t *pgTranslator) selectListSRFs(nodes []node) ([]node, error) {
	if len(nodes) == 0 || !nodes[0].isWord("select") {
		return nodes, nil
	}
	from := -1
	for i, n := range nodes {
		if n.isWord("from") {
			from = i
			break
		}
	}
	listEnd := from
	if listEnd < 0 {
		listEnd = len(nodes)
		for i, n := range nodes {
			if clauseEnds[n.tok.text] && n.group == 0 && n.tok.kind == tokIdent {
				listEnd = i
				break
			}
		}
	}
	st := &srfState{t: t}
	out, err := st.replace(nodes[:listEnd])
	if err != nil {
		return nil, err
	}
	found, arrayText := st.found, st.arrayText
	if !found {
		return nodes, nil
	}
	join := "json_each(pg_array(" + arrayText + ")) AS " + srfAlias
	if from < 0 {
		out = append(out, node{tok: token{tokIdent, "from"}}, node{raw: join})
		return append(out, nodes[listEnd:]...), nil
	}
	end := len(nodes)
	for i := from + 1; i < len(nodes); i++ {
		if n := nodes[i]; n.group == 0 && n.tok.kind == tokIdent && clauseEnds[n.tok.text] {
			end = i
			break
		}
	}
	out = append(out, nodes[listEnd:end]...)
	out = append(out, node{tok: token{tokPunct, ","}}, node{raw: join})
	return append(out, nodes[end:]...), nil
}

// srfState carries the rewrite of one select list's set-returning calls.
type srfState struct {
	t         *pgTranslator
	found     bool
	arrayText string
}

// replace rewrites the calls in nodes and in parenthesized expressions
// within them (not in subqueries, which have select lists of their own).
func (st *srfState) replace(nodes []node) ([]node, error) {
	out := append([]node(nil), nodes...)
	for i := 0; i < len(out); i++ {
		if g := out[i]; g.group == '(' && len(g.children) > 0 && !g.children[0].isWord("select") && !g.children[0].isWord("with") {
			children, err := st.replace(g.children)
			if err != nil {
				return nil, err
			}
			out[i] = node{group: '(', children: children}
			continue
		}
		if i+1 >= len(out) {
			break
		}
		name, call := out[i], out[i+1]
		if name.group != 0 || name.tok.kind != tokIdent || call.group != '(' {
			continue
		}
		if name.tok.text != "unnest" && name.tok.text != "generate_subscripts" && name.tok.text != "_pg_expandarray" {
			continue
		}
		start := i // information_schema._pg_expandarray: the qualifier goes too
		if i > 0 && out[i-1].isTok(tokPunct, ".") {
			if i < 2 || !out[i-2].isWord("information_schema") && !out[i-2].isWord("pg_catalog") {
				continue
			}
			start = i - 2
		}
		arg := call.children
		if name.tok.text == "generate_subscripts" {
			n := len(arg)
			if n < 3 || !arg[n-2].isTok(tokPunct, ",") || !arg[n-1].isTok(tokNumber, "1") {
				return nil, &notSupported{"generate_subscripts() of a dimension other than 1"}
			}
			arg = arg[:n-2]
		}
		text, err := st.t.translate(arg)
		if err != nil {
			return nil, err
		}
		if st.found && text != st.arrayText {
			return nil, &notSupported{"set-returning functions of different arrays in one select list"}
		}
		st.found, st.arrayText = true, text
		raw := srfAlias + ".value"
		switch name.tok.text {
		case "generate_subscripts":
			raw = "(" + srfAlias + ".key + array_lower(" + text + ", 1))"
		case "_pg_expandarray":
			// A composite (x, n), kept as a JSON object: (v).x and
			// (v).n read it (see the field access in units).
			raw = "json_object('x', " + srfAlias + ".value, 'n', " + srfAlias + ".key + 1)"
		}
		out = append(out[:start], append([]node{{raw: raw}}, out[i+2:]...)...)
		i = start
	}
	return out, nil
}
