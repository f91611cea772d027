package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// builder creates and fills a flavor's tables, in one transaction with
// each INSERT prepared once; the first error sticks.
type builder struct {
	ctx   context.Context
	db    *sql.DB
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
	names *objectNames
	// columns of each created table, by lower-case SQLite name; known
	// the same as sets of lower-case column names, for insert.
	columns map[string][]columnDef
	known   map[string]map[string]bool
	err     error
}

// create makes the SQLite table for def under the given name. System
// tables (not views) default their numeric and boolean columns to 0, as
// PostgreSQL's are NOT NULL.
func (b *builder) create(name string, def relationDef, zeroDefaults bool) {
	b.createTable(name, def, zeroDefaults, false)
}

// createCollated makes a table whose text columns compare
// case-insensitively (MySQL's information_schema).
func (b *builder) createCollated(name string, def relationDef) {
	b.createTable(name, def, false, true)
}

func (b *builder) createTable(name string, def relationDef, zeroDefaults, nocase bool) {
	if b.err != nil {
		return
	}
	if b.columns == nil {
		b.columns = map[string][]columnDef{}
	}
	var cols []string
	for _, c := range def.columns {
		decl := sqliteIdent(c.name) + " " + sqliteIdent(c.typ)
		if zeroDefaults && zeroDefaultType(c.typ) {
			decl += " DEFAULT 0"
		}
		if nocase && (strings.Contains(c.typ, "char") || strings.Contains(c.typ, "text")) {
			decl += " COLLATE NOCASE"
		}
		cols = append(cols, decl)
	}
	_, b.err = b.exec1("CREATE TABLE " + sqliteIdent(name) + " (" + strings.Join(cols, ", ") + ")")
	b.columns[strings.ToLower(name)] = def.columns
	if b.known == nil {
		b.known = map[string]map[string]bool{}
	}
	known := make(map[string]bool, len(def.columns))
	for _, c := range def.columns {
		known[strings.ToLower(c.name)] = true
	}
	b.known[strings.ToLower(name)] = known
}

func zeroDefaultType(t string) bool {
	switch t {
	case "bool", "int2", "int4", "int8", "oid", "float4", "float8", "regproc", "xid", "char":
		return t != "char"
	}
	return false
}

// row is one row to insert: column name → value.
type row map[string]any

// insert adds rows to a created table; unknown column names are an error.
func (b *builder) insert(table string, rows ...row) {
	if b.err != nil || len(rows) == 0 {
		return
	}
	known := b.known[strings.ToLower(table)]
	if known == nil {
		b.err = fmt.Errorf("insert into unknown catalog table %s", table)
		return
	}
	for _, r := range rows {
		names := make([]string, 0, len(r))
		marks := make([]string, 0, len(r))
		args := make([]any, 0, len(r))
		for _, k := range slices.Sorted(maps.Keys(r)) { // one statement text per column set
			v := r[k]
			if !known[strings.ToLower(k)] {
				b.err = fmt.Errorf("catalog table %s has no column %s", table, k)
				return
			}
			names = append(names, sqliteIdent(k))
			marks = append(marks, "?")
			args = append(args, v)
		}
		q := "INSERT INTO " + sqliteIdent(table) + " (" + strings.Join(names, ", ") + ") VALUES (" + strings.Join(marks, ", ") + ")"
		if _, err := b.exec1(q, args...); err != nil {
			b.err = fmt.Errorf("%s: %w", q, err)
			return
		}
	}
}

func (b *builder) exec(q string) {
	if b.err == nil {
		_, b.err = b.exec1(q)
	}
}

// exec1 runs one statement in the build's transaction, prepared once.
func (b *builder) exec1(q string, args ...any) (sql.Result, error) {
	if b.tx == nil {
		tx, err := b.db.BeginTx(b.ctx, nil)
		if err != nil {
			return nil, err
		}
		b.tx, b.stmts = tx, map[string]*sql.Stmt{}
	}
	st, ok := b.stmts[q]
	if !ok {
		var err error
		if st, err = b.tx.PrepareContext(b.ctx, q); err != nil {
			return nil, err
		}
		b.stmts[q] = st
	}
	return st.ExecContext(b.ctx, args...)
}

// commit ends the build's transaction.
func (b *builder) commit() error {
	if b.tx == nil {
		return b.err
	}
	if b.err != nil {
		b.tx.Rollback()
		return b.err
	}
	return b.tx.Commit()
}

// objectNames resolves the names reg* casts look up ("regclass" +
// "visits" → OID) and back.
type objectNames struct {
	mu     sync.RWMutex
	byName map[string]int64
	byOID  map[string]string
}

func newObjectNames() *objectNames {
	return &objectNames{byName: map[string]int64{}, byOID: map[string]string{}}
}

func (o *objectNames) add(kind, name string, oid int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.byName[kind+":"+name] = oid
	if _, ok := o.byOID[fmt.Sprintf("%s:%d", kind, oid)]; !ok {
		o.byOID[fmt.Sprintf("%s:%d", kind, oid)] = name
	}
}

func (o *objectNames) oid(kind, name string) (int64, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	v, ok := o.byName[kind+":"+name]
	return v, ok
}

func (o *objectNames) name(kind string, oid int64) (string, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	v, ok := o.byOID[fmt.Sprintf("%s:%d", kind, oid)]
	return v, ok
}
