package session

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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
			table := d.QuoteIdent(src.Table)
			if src.Schema != "" {
				table = d.QuoteIdent(src.Schema) + "." + table
			}
			c := d.QuoteIdent(src.Column)
			rows, err := b.Query(ctx, fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE %s IS NOT NULL LIMIT %d", c, table, c, maxKeysFrom+1))
			if err != nil {
				return fmt.Errorf("reading the keys of %s.%s from %s: %w", pol.ProtectedTables[i].Name, col.Name, src, err)
			}
			if len(rows.Values) > maxKeysFrom {
				return fmt.Errorf("the keys of %s.%s from %s: more than %d distinct values", pol.ProtectedTables[i].Name, col.Name, src, maxKeysFrom)
			}
			keys := make([]string, 0, len(rows.Values))
			for _, row := range rows.Values {
				keys = append(keys, keyText(row[0], col.Type))
			}
			slices.Sort(keys)
			keys = slices.Compact(keys)
			if len(keys) == 0 {
				return fmt.Errorf("the keys of %s.%s from %s: the table has no values", pol.ProtectedTables[i].Name, col.Name, src)
			}
			col.Keys = keys
		}
	}
	return nil
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
