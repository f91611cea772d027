package rewrite

// LIMIT, OFFSET and FETCH of NormalizePostgres: PostgreSQL's forms of the
// row-limiting clauses, unified into MySQL's LIMIT n OFFSET m.

import "github.com/dpproxy/dpproxy/sqlerr"

// limitClause reads the LIMIT/OFFSET/FETCH clauses starting at toks[i]. A
// plain "LIMIT n [OFFSET m]" is left for the main loop (done is false);
// anything else is rewritten into MySQL's "LIMIT n OFFSET m".
func (n *normalizer) limitClause(i int) (next int, done bool, err error) {
	var (
		limitSeen, offsetSeen, fetchSeen bool
		needRewrite                      bool
		count, offset                    *token
		countDefault                     bool // FETCH FIRST ROW ONLY: one row
		offsetPos                        int
	)
	value := func(j int) (*token, bool) {
		if j < len(n.toks) && (n.toks[j].kind == tkNumber || n.toks[j].kind == tkParam) {
			v := n.sig(j + 1)
			if v < len(n.toks) && n.toks[v].kind == tkTypecast {
				return nil, false
			}
			return &n.toks[j], true
		}
		return nil, false
	}
	// complexValue handles a value other than a number or a parameter:
	// the parser decides about clauses that need no rewriting (LIMIT -1 is
	// a syntax error to it); others cannot be rewritten.
	complexValue := func(j int, needRewrite bool) (int, bool, error) {
		if !needRewrite {
			n.plainLimitEnd = j
			return 0, false, nil
		}
		return 0, false, posError(n.sql, n.toks[i].pos, sqlerr.FeatureNotSupported, "LIMIT, OFFSET and FETCH accept only a number or a parameter here").
			WithHint("write LIMIT n OFFSET m with constants or $n parameters")
	}
	j := i
scan:
	for {
		k := n.sig(j)
		if k >= len(n.toks) || n.toks[k].kind != tkWord {
			break
		}
		switch n.toks[k].val {
		case "limit":
			if limitSeen || fetchSeen {
				return 0, false, posError(n.sql, n.toks[k].pos, sqlerr.SyntaxError, "multiple LIMIT clauses not allowed")
			}
			limitSeen = true
			needRewrite = needRewrite || offsetSeen
			v := n.sig(k + 1)
			if n.isWord(v, "all") {
				// LIMIT ALL: no limit.
				needRewrite, j = true, v+1
				continue
			}
			tok, ok := value(v)
			if !ok {
				return complexValue(v, needRewrite)
			}
			count, j = tok, v+1
			if c := n.sig(j); n.isPunct(c, ",") {
				return 0, false, posError(n.sql, n.toks[k].pos, sqlerr.FeatureNotSupported, "LIMIT #,# syntax is not supported").
					WithHint("use separate LIMIT and OFFSET clauses")
			}
		case "offset":
			if offsetSeen {
				return 0, false, posError(n.sql, n.toks[k].pos, sqlerr.SyntaxError, "multiple OFFSET clauses not allowed")
			}
			offsetSeen, offsetPos = true, n.toks[k].pos
			v := n.sig(k + 1)
			tok, ok := value(v)
			if !ok {
				return complexValue(v, needRewrite || !limitSeen && !fetchSeen) // OFFSET alone needs a LIMIT
			}
			offset, j = tok, v+1
			if r := n.sig(j); n.isWord(r, "row", "rows") {
				needRewrite, j = true, r+1
			}
		case "fetch":
			if limitSeen || fetchSeen {
				return 0, false, posError(n.sql, n.toks[k].pos, sqlerr.SyntaxError, "multiple LIMIT clauses not allowed")
			}
			fetchSeen, needRewrite = true, true
			f := n.sig(k + 1)
			if !n.isWord(f, "first", "next") {
				return 0, false, n.errAt(f)
			}
			v := n.sig(f + 1)
			if tok, ok := value(v); ok {
				count, v = tok, n.sig(v+1)
			} else if n.isWord(v, "row", "rows") {
				countDefault = true
			} else {
				return complexValue(v, true)
			}
			if !n.isWord(v, "row", "rows") {
				return 0, false, n.errAt(v)
			}
			o := n.sig(v + 1)
			switch {
			case n.isWord(o, "only"):
				j = o + 1
			case n.isWord(o, "with"):
				return 0, false, posError(n.sql, n.toks[k].pos, sqlerr.FeatureNotSupported, "FETCH ... WITH TIES is not supported")
			default:
				return 0, false, n.errAt(o)
			}
		default:
			break scan
		}
	}
	if offsetSeen && !limitSeen && !fetchSeen {
		needRewrite = true
	}
	if !needRewrite {
		// Valid MySQL as written: copy the clauses as they are.
		n.plainLimitEnd = j
		return 0, false, nil
	}
	start := n.toks[i].pos
	valueSeg := func(t *token) segment {
		if t.kind == tkParam {
			return segment{text: "?", orig: t.pos, param: t.num}
		}
		return n.verbatim(*t)
	}
	var segs []segment
	switch {
	case count != nil:
		segs = append(segs, synth("LIMIT ", start), valueSeg(count))
	case countDefault:
		segs = append(segs, synth("LIMIT 1", start))
	case offset != nil:
		segs = append(segs, synth("LIMIT "+noLimit, start))
	}
	if offset != nil {
		segs = append(segs, synth(" OFFSET ", offsetPos), valueSeg(offset))
	}
	if len(segs) == 0 {
		segs = append(segs, synth(" ", start))
	}
	n.push(item{kind: itOther, pos: start}, segs...)
	return j, true, nil
}
