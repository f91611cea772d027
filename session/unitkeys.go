package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
)

// checkUnitKeys checks, at start, every key a privacy unit path goes
// through (config.UnitHops): it must be its table's primary key, alone,
// and of the same kind (integer, text, ...) as the column that references
// it. A row then references at most one row of that table and belongs to
// at most one person; with a key that is not unique, or compared across
// types (SQLite and MySQL equate the integer 1 with the texts '1', '01'
// and '1.0', found in review), one row could belong to two people and
// bounding per person would no longer bound what one of them contributes.
func checkUnitKeys(ctx context.Context, pol *config.Policy, b backend.Backend) error {
	describe := func(table *config.ProtectedTable) (*backend.TableInfo, error) {
		info, err := b.DescribeTable(ctx, table.Schema, table.Name)
		if errors.Is(err, backend.ErrNoSuchTable) {
			return nil, fmt.Errorf("the database has no table %s", table.Name)
		}
		return info, err
	}
	for i := range pol.ProtectedTables {
		t := &pol.ProtectedTables[i]
		from, fromColumn := t, t.PrivacyUnit
		for _, hop := range pol.UnitHops(t) {
			info, err := describe(hop.Table)
			if err != nil {
				return fmt.Errorf("the privacy unit path of %s goes through %s.%s, but %w", t.Name, hop.Table.Name, hop.Key, err)
			}
			if info.KeyNotEnforced {
				return fmt.Errorf("the privacy unit path of %s goes through %s.%s, but the database does not keep %s's primary key unique in what a query of it reads (PostgreSQL inheritance children, or a MySQL engine such as MERGE or FEDERATED): a row of %s could reference rows of two people",
					t.Name, hop.Table.Name, hop.Key, hop.Table.Name, t.Name)
			}
			if len(info.PrimaryKey) != 1 || !strings.EqualFold(info.PrimaryKey[0], hop.Key) {
				has := "has no primary key"
				if len(info.PrimaryKey) > 0 {
					has = "has primary key (" + strings.Join(info.PrimaryKey, ", ") + ")"
				}
				return fmt.Errorf("the privacy unit path of %s goes through %s.%s, which must be the primary key of %s (it %s): otherwise a row of %s could reference rows of two people",
					t.Name, hop.Table.Name, hop.Key, hop.Table.Name, has, t.Name)
			}
			fromInfo, err := describe(from)
			if err != nil {
				return fmt.Errorf("the privacy unit path of %s: %w", t.Name, err)
			}
			keyType, refType := columnKind(info, hop.Key), columnKind(fromInfo, fromColumn)
			if keyType == "" || refType == "" || keyType != refType {
				return fmt.Errorf("the privacy unit path of %s joins %s.%s (%s) to %s.%s (%s): a key must be referenced by a column of its own kind, or one row could match several",
					t.Name, from.Name, fromColumn, orMissing(refType), hop.Table.Name, hop.Key, orMissing(keyType))
			}
			from, fromColumn = hop.Table, hop.Table.PrivacyUnit
		}
	}
	return nil
}

// markDeclarations sets on the policy what the database declares of each
// protected table: UnitIsKey where the privacy unit column is its primary
// key, alone, never NULL and enforced in all a query of the table reads
// (backend.TableInfo's KeyedBy), so that each unit is one row of the
// table; UnitNotNull where the unit column is declared NOT NULL; and
// NotNull on each of its columns declared NOT NULL. The
// database is trusted to keep them so while dpproxy runs, as for the unit
// paths' keys: a declaration dropped later is noticed at the next reload
// or restart (a column that became nullable is then counted as if its
// NULLs were values: a bias, never more than one unit's bounded share
// per row). It runs at start, like checkUnitKeys; a table the database
// does not have is left unmarked.
func markDeclarations(ctx context.Context, pol *config.Policy, b backend.Backend) error {
	for i := range pol.ProtectedTables {
		t := &pol.ProtectedTables[i]
		t.UnitIsKey, t.UnitNotNull = false, false
		for j := range t.Columns {
			t.Columns[j].NotNull = false
		}
		info, err := b.DescribeTable(ctx, t.Schema, t.Name)
		if errors.Is(err, backend.ErrNoSuchTable) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the declaration of %s: %w", t.Name, err)
		}
		for _, c := range info.Columns {
			if col, ok := t.Column(c.Name); ok {
				col.NotNull = c.NotNull
			}
			if !t.IsRowPrivacy() && strings.EqualFold(c.Name, t.PrivacyUnit) {
				t.UnitNotNull = c.NotNull
			}
		}
		if !t.IsRowPrivacy() && t.UnitPath == nil {
			t.UnitIsKey = info.KeyedBy(t.PrivacyUnit)
		}
	}
	return nil
}

// columnKind is the kind of a table's column as the database declares it
// (integers of every width alike), or "" when it has no such column.
func columnKind(info *backend.TableInfo, name string) string {
	for _, c := range info.Columns {
		if strings.EqualFold(c.Name, name) {
			t := config.ColumnTypeOf(c.Type)
			if t.Integer() {
				return "integer"
			}
			return string(t)
		}
	}
	return ""
}

func orMissing(kind string) string {
	if kind == "" {
		return "no such column"
	}
	return kind
}
