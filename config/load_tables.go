package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// Decoding of the tables of a policy: protected tables with their privacy
// unit (a column, "row", or a foreign key to another table's unit) and
// public tables with their optional columns and group keys.

// unitPath reads privacy_unit: {via: column, references: table.column}.
func (d *decoder) unitPath(n *yaml.Node, path string, t *ProtectedTable) {
	ref := &UnitReference{}
	malformed := false
	d.mapping(n, path, []string{"via", "references"}, func(key string, v *yaml.Node, path string) {
		switch key {
		case "via":
			d.str(v, path, &t.PrivacyUnit)
		case "references":
			var s string
			d.str(v, path, &s)
			parts := strings.Split(s, ".")
			switch {
			case len(parts) == 2 && parts[0] != "" && parts[1] != "":
				ref.Table, ref.Column = parts[0], parts[1]
			case len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] != "":
				ref.Schema, ref.Table, ref.Column = parts[0], parts[1], parts[2]
			default:
				malformed = true
				d.failAt(v, path, "%q is not a column reference; expected table.column, such as patients.patient_id", s)
			}
		}
	})
	if t.PrivacyUnit == "" {
		d.failAt(n, path, "expected via: the column of this table that references the person")
	}
	if ref.Table == "" {
		if !malformed {
			d.failAt(n, path, "expected references: the table and column the via column points to, such as patients.patient_id")
		}
		return
	}
	t.UnitPath = ref
}

func (d *decoder) protectedTable(n *yaml.Node, path string, t *ProtectedTable) {
	d.mapping(n, path, protectedKeys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "schema":
			d.str(v, path, &t.Schema)
		case "name":
			d.str(v, path, &t.Name)
		case "privacy_unit":
			if v.Kind == yaml.MappingNode {
				d.unitPath(v, path, t)
				return
			}
			d.str(v, path, &t.PrivacyUnit)
		case "max_groups_per_unit":
			d.int(v, path, &t.MaxGroupsPerUnit)
		case "max_rows_per_unit":
			d.rowsPerUnit(v, path, &t.MaxRowsPerUnit)
		case "max_total_rows_per_unit":
			d.int(v, path, &t.MaxTotalRowsPerUnit)
		case "budget":
			t.Budget = &Budget{}
			d.budget(v, path, t.Budget)
		case "columns":
			d.sequence(v, path, "columns", func(i int, v *yaml.Node, path string) {
				t.Columns = append(t.Columns, Column{})
				d.column(v, path, &t.Columns[len(t.Columns)-1])
			})
		}
	})
}

func (d *decoder) publicTable(n *yaml.Node, path string, t *PublicTable) {
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		name := n.Value
		if schema, table, qualified := strings.Cut(name, "."); qualified {
			if schema == "" || table == "" || strings.Contains(table, ".") {
				d.failAt(n, path, "%q is not a table name; expected \"table\" or \"schema.table\"", name)
				return
			}
			t.Schema, t.Name = schema, table
			return
		}
		t.Name = name
		return
	}
	d.mapping(n, path, publicKeys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "schema":
			d.str(v, path, &t.Schema)
		case "name":
			d.str(v, path, &t.Name)
		case "group_keys":
			d.sequence(v, path, "a list of column names", func(_ int, item *yaml.Node, path string) {
				var name string
				d.str(item, path, &name)
				t.GroupKeys = append(t.GroupKeys, name)
			})
		case "columns":
			d.sequence(v, path, "a list of columns", func(_ int, item *yaml.Node, path string) {
				t.Columns = append(t.Columns, PublicColumn{})
				c := &t.Columns[len(t.Columns)-1]
				d.mapping(item, path, publicColumnKeys, func(key string, v *yaml.Node, path string) {
					switch key {
					case "name":
						d.str(v, path, &c.Name)
					case "type":
						d.str(v, path, (*string)(&c.Type))
					}
				})
			})
		}
	})
}

var publicColumnKeys = []string{"name", "type"}
