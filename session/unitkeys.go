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
// through (config.UnitHops): it must be its table's primary key, alone.
// A row then references at most one row of that table and belongs to at
// most one person; with a key that is not unique, one row could belong to
// two people and bounding per person would no longer bound what one of
// them contributes.
func checkUnitKeys(ctx context.Context, pol *config.Policy, b backend.Backend) error {
	for i := range pol.ProtectedTables {
		t := &pol.ProtectedTables[i]
		for _, hop := range pol.UnitHops(t) {
			info, err := b.DescribeTable(ctx, hop.Table.Schema, hop.Table.Name)
			if errors.Is(err, backend.ErrNoSuchTable) {
				return fmt.Errorf("the privacy unit path of %s goes through %s.%s, but the database has no table %s", t.Name, hop.Table.Name, hop.Key, hop.Table.Name)
			}
			if err != nil {
				return fmt.Errorf("the privacy unit path of %s: describing %s: %w", t.Name, hop.Table.Name, err)
			}
			if len(info.PrimaryKey) != 1 || !strings.EqualFold(info.PrimaryKey[0], hop.Key) {
				has := "has no primary key"
				if len(info.PrimaryKey) > 0 {
					has = "has primary key (" + strings.Join(info.PrimaryKey, ", ") + ")"
				}
				return fmt.Errorf("the privacy unit path of %s goes through %s.%s, which must be the primary key of %s (it %s): otherwise a row of %s could reference rows of two people",
					t.Name, hop.Table.Name, hop.Key, hop.Table.Name, has, t.Name)
			}
		}
	}
	return nil
}
