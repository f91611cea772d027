package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// maxKeysFrom bounds a key list read from a public table.
const maxKeysFrom = 100000

// loadKeyLists reads the key list of every column with keys_from: the
// distinct non-NULL values of the public table's column, in text form,
// sorted. It runs once, at start, before any plan is made. A public
// table's contents are public, so the list is too: released groups are
// exactly its keys, with no partition selection.
func loadKeyLists(ctx context.Context, pol *config.Policy, b backend.Backend, d rewrite.Dialect) error {
	for i := range pol.ProtectedTables {
		for j := range pol.ProtectedTables[i].Columns {
			col := &pol.ProtectedTables[i].Columns[j]
			if col.KeysFrom == nil {
				continue
			}
			src := col.KeysFrom
			keys, err := readKeys(ctx, b, d, src.Schema, src.Table, src.Column, col.Type)
			if err != nil {
				return fmt.Errorf("the keys of %s.%s from %s: %w", pol.ProtectedTables[i].Name, col.Name, src, err)
			}
			col.Keys = keys
		}
	}
	return nil
}

// loadPublicKeyLists reads the key list of every column a public table
// declares in group_keys (after describePublicTables has its columns).
func loadPublicKeyLists(ctx context.Context, pol *config.Policy, b backend.Backend, d rewrite.Dialect) error {
	for i := range pol.PublicTables {
		pub := &pol.PublicTables[i]
		if len(pub.GroupKeys) == 0 {
			if err := loadAutoKeyLists(ctx, pub, b, d); err != nil {
				return err
			}
			continue
		}
		for _, name := range pub.GroupKeys {
			pc, ok := pub.Column(name)
			if !ok {
				return fmt.Errorf("public table %s: group_keys names %q, which is not one of its columns", pub.Name, name)
			}
			keys, err := readKeys(ctx, b, d, pub.Schema, pub.Name, pc.Name, pc.Type)
			if err != nil {
				return fmt.Errorf("the group keys of %s.%s: %w", pub.Name, pc.Name, err)
			}
			if pub.Keys == nil {
				pub.Keys = map[string][]string{}
			}
			pub.Keys[strings.ToLower(pc.Name)] = keys
		}
	}
	return nil
}

// Automatic key lists (a public table without group_keys): a table of at
// most autoKeyRows rows — a dimension table — has each text and integer
// column's distinct values, when at most autoKeys, as a public key list.
const (
	autoKeyRows = 100000
	autoKeys    = 1000
)

// loadAutoKeyLists reads the automatic key lists of a public table that
// names no group_keys. Its contents are public, so its keys are too.
func loadAutoKeyLists(ctx context.Context, pub *config.PublicTable, b backend.Backend, d rewrite.Dialect) error {
	ref := d.QuoteIdent(pub.Name)
	if pub.Schema != "" {
		ref = d.QuoteIdent(pub.Schema) + "." + ref
	}
	rows, err := b.Query(ctx, fmt.Sprintf("SELECT COUNT(*) FROM (SELECT 1 FROM %s LIMIT %d) AS dp_rows", ref, autoKeyRows+1))
	if err != nil {
		return fmt.Errorf("counting the rows of public table %s: %w", pub.Name, err)
	}
	if len(rows.Values) != 1 || sqltypes.Float(rows.Values[0][0]) > autoKeyRows {
		return nil // a large table: its keys go through partition selection
	}
	for _, pc := range pub.Columns {
		if pc.Type != config.TypeText && !pc.Type.Integer() {
			continue
		}
		keys, err := readKeysUpTo(ctx, b, d, pub.Schema, pub.Name, pc.Name, pc.Type, autoKeys)
		if errors.Is(err, errTooManyKeys) || errors.Is(err, errNoKeys) {
			continue
		}
		if err != nil {
			return fmt.Errorf("the group keys of %s.%s: %w", pub.Name, pc.Name, err)
		}
		if pub.Keys == nil {
			pub.Keys, pub.AutoKeys = map[string][]string{}, map[string]bool{}
		}
		pub.Keys[strings.ToLower(pc.Name)] = keys
		pub.AutoKeys[strings.ToLower(pc.Name)] = true
	}
	return nil
}

var (
	errTooManyKeys = errors.New("too many distinct values")
	errNoKeys      = errors.New("the table has no values")
)

// readKeys reads the distinct non-NULL values of a public table's column,
// in text form, sorted.
func readKeys(ctx context.Context, b backend.Backend, d rewrite.Dialect, schema, table, column string, t config.ColumnType) ([]string, error) {
	return readKeysUpTo(ctx, b, d, schema, table, column, t, maxKeysFrom)
}

// readKeysUpTo is readKeys for at most limit keys (errTooManyKeys beyond).
func readKeysUpTo(ctx context.Context, b backend.Backend, d rewrite.Dialect, schema, table, column string, t config.ColumnType, limit int) ([]string, error) {
	ref := d.QuoteIdent(table)
	if schema != "" {
		ref = d.QuoteIdent(schema) + "." + ref
	}
	c := d.QuoteIdent(column)
	rows, err := b.Query(ctx, fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE %s IS NOT NULL LIMIT %d", c, ref, c, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading them: %w", err)
	}
	if len(rows.Values) > limit {
		return nil, fmt.Errorf("%w: more than %d", errTooManyKeys, limit)
	}
	keys := make([]string, 0, len(rows.Values))
	for _, row := range rows.Values {
		keys = append(keys, keyText(row[0], t))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) == 0 {
		return nil, errNoKeys
	}
	return keys, nil
}

// keyText writes a backend value as a policy key of a column type.
func keyText(v any, t config.ColumnType) string {
	switch x := v.(type) {
	case int64:
		if t == config.TypeBool {
			return strconv.FormatBool(x != 0)
		}
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		if t == config.TypeDate {
			return x.Format("2006-01-02")
		}
		return x.Format("2006-01-02 15:04:05")
	case []byte:
		return string(x)
	case sqltypes.Decimal:
		return string(x)
	}
	return fmt.Sprint(v)
}
