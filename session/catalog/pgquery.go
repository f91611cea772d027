package catalog

import (
	"context"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// TranslatePostgres translates a PostgreSQL catalog query into the
// catalog database's SQL, for sess. It returns the number of parameters
// ($n) the query uses.
func (c *Catalog) TranslatePostgres(sql string, sess *Session) (string, int, error) {
	// The memo is shared by the sessions of one analyst and database; a
	// translation that reads the session's own values (its settings, its
	// process id) is not kept.
	key := strings.Join([]string{sql, sess.User, sess.Database, sess.ServerVersion}, "\x00")
	if tr, ok := c.translations.Get(key); ok {
		return tr.sql, tr.params, nil
	}
	q, params, cacheable, err := c.translatePostgres(sql, sess)
	if err == nil && cacheable {
		c.translations.Add(key, translation{q, params})
	}
	return q, params, err
}

// translation is a cached PostgreSQL translation.
type translation struct {
	sql    string
	params int
}

func (c *Catalog) translatePostgres(sql string, sess *Session) (string, int, bool, error) {
	toks, err := lexPostgres(sql)
	if err != nil {
		return "", 0, false, classify(&notSupported{"this statement (" + err.Error() + ")"})
	}
	if len(toks) == 0 {
		return "", 0, false, classify(&notSupported{"an empty statement"})
	}
	if first := toks[0]; !(first.isWord("select") || first.isWord("with") || first.isWord("values") || first.is(tokPunct, "(")) {
		return "", 0, false, classify(&notSupported{"the statement " + strings.ToUpper(first.text)})
	}
	tree, err := buildTree(toks)
	if err != nil {
		return "", 0, false, classify(&notSupported{"this statement (" + err.Error() + ")"})
	}
	t := &pgTranslator{sess: sess, sessionViews: map[string]bool{}}
	out, err := t.translate(tree)
	if err != nil {
		return "", 0, false, classify(err)
	}
	return c.withSessionViews(c.pg, out, t.sessionViews, sess), t.maxParam, !t.usesSettings, nil
}

// withSessionViews prefixes query with the session views it reads, as
// common table expressions over their stored rows.
func (c *Catalog) withSessionViews(f *flavor, query string, views map[string]bool, sess *Session) string {
	if len(views) == 0 {
		return query
	}
	var ctes []string
	for _, name := range sortedKeys(views) {
		filled := map[string]bool{}
		for _, col := range sessionViews[name] {
			filled[col] = true
		}
		var cols []string
		for _, col := range f.columns["_dpproxy_"+name] {
			if filled[col.name] {
				cols = append(cols, sqliteString(sess.User)+" AS "+sqliteIdent(col.name))
			} else {
				cols = append(cols, sqliteIdent(col.name))
			}
		}
		ctes = append(ctes, sqliteIdent(name)+" AS (SELECT "+strings.Join(cols, ", ")+" FROM "+sqliteIdent("_dpproxy_"+name)+")")
	}
	return prependCTEs(query, strings.Join(ctes, ", "))
}

// prependCTEs adds common table expressions before a query, merging
// them into its own WITH clause if it has one.
func prependCTEs(query, prefix string) string {
	trimmed := strings.TrimSpace(query)
	upper := strings.ToUpper(trimmed)
	switch {
	case strings.HasPrefix(upper, "WITH RECURSIVE "):
		return "WITH RECURSIVE " + prefix + ", " + trimmed[len("WITH RECURSIVE "):]
	case strings.HasPrefix(upper, "WITH "):
		return "WITH " + prefix + ", " + trimmed[len("WITH "):]
	}
	return "WITH " + prefix + " " + trimmed
}

// QueryPostgres answers a PostgreSQL catalog query.
func (c *Catalog) QueryPostgres(ctx context.Context, sql string, args []any, sess *Session) (*sqltypes.Result, error) {
	q, _, err := c.TranslatePostgres(sql, sess)
	if err != nil {
		return nil, err
	}
	res, err := c.pg.run(ctx, q, args, typeOfDecl)
	if err != nil {
		return nil, classify(err)
	}
	return res, nil
}
