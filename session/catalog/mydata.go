package catalog

import (
	"fmt"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// The MySQL catalog's contents: MariaDB's information_schema with the
// policy's tables. Row counts, lengths and index cardinalities are NULL
// (as for a table whose statistics were never collected).

// myTable is where information_schema.X lives in SQLite.
func myTable(name string) string { return "information_schema." + strings.ToUpper(name) }

func buildMySQL(b *builder, s Schema) error {
	defs, err := parseDefs(mariadbDefs, "information_schema")
	if err != nil {
		return err
	}
	for _, d := range defs {
		// MySQL compares information_schema strings case-insensitively.
		b.createCollated(myStored(d.name), d)
	}
	// FROM DUAL, which the TiDB parser restores for SELECT ... WHERE
	// without a table: one row.
	b.exec(`CREATE TABLE "DUAL" ("DUMMY" TEXT)`)
	b.exec(`INSERT INTO "DUAL" VALUES ('X')`)
	b.insert(myStored("SCHEMATA"), row{"CATALOG_NAME": "def", "SCHEMA_NAME": "information_schema",
		"DEFAULT_CHARACTER_SET_NAME": "utf8mb3", "DEFAULT_COLLATION_NAME": "utf8mb3_general_ci"})
	schemas := map[string]bool{}
	for _, t := range s.Tables {
		sch := mySchema(s, t)
		if !schemas[sch] {
			schemas[sch] = true
			b.insert(myStored("SCHEMATA"), row{"CATALOG_NAME": "def", "SCHEMA_NAME": sch,
				"DEFAULT_CHARACTER_SET_NAME": "utf8mb4", "DEFAULT_COLLATION_NAME": "utf8mb4_general_ci"})
		}
	}
	for _, d := range defs {
		b.insert(myStored("TABLES"), row{"TABLE_CATALOG": "def", "TABLE_SCHEMA": "information_schema", "TABLE_NAME": d.name,
			"TABLE_TYPE": "SYSTEM VIEW", "ENGINE": "MEMORY", "VERSION": 11, "ROW_FORMAT": "Fixed", "TABLE_COLLATION": "utf8mb3_general_ci",
			"TABLE_COMMENT": "", "CREATE_OPTIONS": ""})
		for i, c := range d.columns {
			dataType, _, _ := strings.Cut(c.typ, "(")
			b.insert(myStored("COLUMNS"), row{"TABLE_CATALOG": "def", "TABLE_SCHEMA": "information_schema", "TABLE_NAME": d.name,
				"COLUMN_NAME": c.name, "ORDINAL_POSITION": i + 1, "IS_NULLABLE": "YES", "DATA_TYPE": dataType,
				"COLUMN_TYPE": c.typ, "COLUMN_KEY": "", "EXTRA": "", "PRIVILEGES": "select", "COLUMN_COMMENT": ""})
		}
	}
	for _, t := range s.Tables {
		sch := mySchema(s, t)
		tableType, engine := "BASE TABLE", any("InnoDB")
		if t.Kind == View {
			tableType, engine = "VIEW", nil
		}
		b.insert(myStored("TABLES"), row{"TABLE_CATALOG": "def", "TABLE_SCHEMA": sch, "TABLE_NAME": t.Name,
			"TABLE_TYPE": tableType, "ENGINE": engine, "VERSION": 10, "ROW_FORMAT": "Dynamic",
			"TABLE_COLLATION": "utf8mb4_general_ci", "TABLE_COMMENT": "", "CREATE_OPTIONS": "", "TEMPORARY": "N"})
		pk := map[string]int{}
		for i, k := range t.PrimaryKey {
			pk[strings.ToLower(k)] = i + 1
		}
		for i, c := range t.Columns {
			colType, dataType := myTypeOf(c)
			ic := row{"TABLE_CATALOG": "def", "TABLE_SCHEMA": sch, "TABLE_NAME": t.Name, "COLUMN_NAME": c.Name,
				"ORDINAL_POSITION": i + 1, "IS_NULLABLE": map[bool]string{true: "NO", false: "YES"}[c.NotNull],
				"DATA_TYPE": dataType, "COLUMN_TYPE": colType, "COLUMN_KEY": "", "EXTRA": "", "PRIVILEGES": "select",
				"COLUMN_COMMENT": "", "IS_GENERATED": "NEVER"}
			if pk[strings.ToLower(c.Name)] > 0 {
				ic["COLUMN_KEY"] = "PRI"
			}
			switch c.Type {
			case sqltypes.Text, sqltypes.Varchar, sqltypes.Bpchar:
				n := int64(65535)
				if c.Length > 0 {
					n = int64(c.Length)
				}
				ic["CHARACTER_MAXIMUM_LENGTH"], ic["CHARACTER_OCTET_LENGTH"] = n, 4*n
				ic["CHARACTER_SET_NAME"], ic["COLLATION_NAME"] = "utf8mb4", "utf8mb4_general_ci"
			case sqltypes.Bool:
				ic["NUMERIC_PRECISION"], ic["NUMERIC_SCALE"] = 3, 0
			case sqltypes.Int2:
				ic["NUMERIC_PRECISION"], ic["NUMERIC_SCALE"] = 5, 0
			case sqltypes.Int4:
				ic["NUMERIC_PRECISION"], ic["NUMERIC_SCALE"] = 10, 0
			case sqltypes.Int8:
				ic["NUMERIC_PRECISION"], ic["NUMERIC_SCALE"] = 19, 0
			case sqltypes.Float4:
				ic["NUMERIC_PRECISION"] = 12
			case sqltypes.Float8:
				ic["NUMERIC_PRECISION"] = 22
			case sqltypes.Numeric:
				p, sc := c.Precision, c.Scale
				if p == 0 {
					p, sc = 65, 30
				}
				ic["NUMERIC_PRECISION"], ic["NUMERIC_SCALE"] = p, sc
			case sqltypes.Timestamp, sqltypes.Timestamptz:
				ic["DATETIME_PRECISION"] = 0
			}
			b.insert(myStored("COLUMNS"), ic)
		}
		if t.Kind == Public && len(t.PrimaryKey) > 0 {
			b.insert(myStored("TABLE_CONSTRAINTS"), row{"CONSTRAINT_CATALOG": "def", "CONSTRAINT_SCHEMA": sch,
				"CONSTRAINT_NAME": "PRIMARY", "TABLE_SCHEMA": sch, "TABLE_NAME": t.Name, "CONSTRAINT_TYPE": "PRIMARY KEY"})
			for i, k := range t.PrimaryKey {
				b.insert(myStored("KEY_COLUMN_USAGE"), row{"CONSTRAINT_CATALOG": "def", "CONSTRAINT_SCHEMA": sch,
					"CONSTRAINT_NAME": "PRIMARY", "TABLE_CATALOG": "def", "TABLE_SCHEMA": sch, "TABLE_NAME": t.Name,
					"COLUMN_NAME": k, "ORDINAL_POSITION": i + 1})
				b.insert(myStored("STATISTICS"), row{"TABLE_CATALOG": "def", "TABLE_SCHEMA": sch, "TABLE_NAME": t.Name,
					"NON_UNIQUE": 0, "INDEX_SCHEMA": sch, "INDEX_NAME": "PRIMARY", "SEQ_IN_INDEX": i + 1, "COLUMN_NAME": k,
					"COLLATION": "A", "CARDINALITY": nil, "NULLABLE": "", "INDEX_TYPE": "BTREE", "COMMENT": "",
					"INDEX_COMMENT": "", "IGNORED": "NO"})
			}
		}
	}
	for _, ix := range []string{"COLUMNS (TABLE_SCHEMA, TABLE_NAME)", "TABLES (TABLE_SCHEMA, TABLE_NAME)", "STATISTICS (TABLE_NAME)"} {
		name, cols, _ := strings.Cut(ix, " ")
		b.exec("CREATE INDEX " + sqliteIdent("ix_"+ix) + " ON " + sqliteIdent(myStored(name)) + " " + cols)
	}
	b.insert(myStored("ENGINES"), row{"ENGINE": "InnoDB", "SUPPORT": "DEFAULT", "COMMENT": "Supports transactions, row-level locking, foreign keys and encryption for tables",
		"TRANSACTIONS": "YES", "XA": "YES", "SAVEPOINTS": "YES"})
	b.insert(myStored("CHARACTER_SETS"),
		row{"CHARACTER_SET_NAME": "utf8mb4", "DEFAULT_COLLATE_NAME": "utf8mb4_general_ci", "DESCRIPTION": "UTF-8 Unicode", "MAXLEN": 4},
		row{"CHARACTER_SET_NAME": "utf8mb3", "DEFAULT_COLLATE_NAME": "utf8mb3_general_ci", "DESCRIPTION": "UTF-8 Unicode", "MAXLEN": 3},
		row{"CHARACTER_SET_NAME": "latin1", "DEFAULT_COLLATE_NAME": "latin1_swedish_ci", "DESCRIPTION": "cp1252 West European", "MAXLEN": 1},
		row{"CHARACTER_SET_NAME": "binary", "DEFAULT_COLLATE_NAME": "binary", "DESCRIPTION": "Binary pseudo charset", "MAXLEN": 1})
	b.insert(myStored("COLLATIONS"),
		row{"COLLATION_NAME": "utf8mb4_general_ci", "CHARACTER_SET_NAME": "utf8mb4", "ID": 45, "IS_DEFAULT": "Yes", "IS_COMPILED": "Yes", "SORTLEN": 1},
		row{"COLLATION_NAME": "utf8mb4_bin", "CHARACTER_SET_NAME": "utf8mb4", "ID": 46, "IS_DEFAULT": "", "IS_COMPILED": "Yes", "SORTLEN": 1},
		row{"COLLATION_NAME": "utf8mb3_general_ci", "CHARACTER_SET_NAME": "utf8mb3", "ID": 33, "IS_DEFAULT": "Yes", "IS_COMPILED": "Yes", "SORTLEN": 1},
		row{"COLLATION_NAME": "latin1_swedish_ci", "CHARACTER_SET_NAME": "latin1", "ID": 8, "IS_DEFAULT": "Yes", "IS_COMPILED": "Yes", "SORTLEN": 1},
		row{"COLLATION_NAME": "binary", "CHARACTER_SET_NAME": "binary", "ID": 63, "IS_DEFAULT": "Yes", "IS_COMPILED": "Yes", "SORTLEN": 1})
	return nil
}

// mySchema is the schema MySQL clients see a table in.
func mySchema(s Schema, t Table) string {
	if t.Schema != "" {
		return t.Schema
	}
	if s.MySQLDatabase != "" {
		return s.MySQLDatabase
	}
	return sessionDatabase
}

// sessionDatabase stands, in the stored rows, for the session's current
// database; mySessionViews put the session's name in its place.
const sessionDatabase = "\x01session database\x01"

// mySessionViews are the information_schema views whose schema columns
// may hold sessionDatabase. They are stored as "_dpproxy_information_schema.X"
// and read through a common table expression per statement.
var mySessionViews = map[string][]string{
	"SCHEMATA": {"SCHEMA_NAME"}, "TABLES": {"TABLE_SCHEMA"}, "COLUMNS": {"TABLE_SCHEMA"},
	"STATISTICS": {"TABLE_SCHEMA", "INDEX_SCHEMA"}, "KEY_COLUMN_USAGE": {"CONSTRAINT_SCHEMA", "TABLE_SCHEMA"},
	"TABLE_CONSTRAINTS": {"CONSTRAINT_SCHEMA", "TABLE_SCHEMA"},
}

// myStored is where information_schema.X's rows are stored.
func myStored(name string) string {
	if mySessionViews[strings.ToUpper(name)] != nil {
		return "_dpproxy_" + myTable(name)
	}
	return myTable(name)
}

// myTypeOf is a column's MySQL COLUMN_TYPE and DATA_TYPE.
func myTypeOf(c Column) (columnType, dataType string) {
	switch c.Type {
	case sqltypes.Bool:
		return "tinyint(1)", "tinyint"
	case sqltypes.Int2:
		return "smallint(6)", "smallint"
	case sqltypes.Int4, sqltypes.OID:
		return "int(11)", "int"
	case sqltypes.Int8:
		return "bigint(20)", "bigint"
	case sqltypes.Float4:
		return "float", "float"
	case sqltypes.Float8:
		return "double", "double"
	case sqltypes.Numeric:
		if c.Precision > 0 {
			return fmt.Sprintf("decimal(%d,%d)", c.Precision, c.Scale), "decimal"
		}
		return "decimal(65,30)", "decimal"
	case sqltypes.Varchar, sqltypes.Name:
		if c.Length > 0 {
			return fmt.Sprintf("varchar(%d)", c.Length), "varchar"
		}
		return "text", "text"
	case sqltypes.Bpchar:
		return fmt.Sprintf("char(%d)", max(c.Length, 1)), "char"
	case sqltypes.Date:
		return "date", "date"
	case sqltypes.Timestamp:
		return "datetime", "datetime"
	case sqltypes.Timestamptz:
		return "timestamp", "timestamp"
	case sqltypes.Bytea:
		return "blob", "blob"
	}
	return "text", "text"
}

// myTypeOfDecl maps a MariaDB column type of information_schema to a
// result type.
func myTypeOfDecl(decl string) sqltypes.Type {
	switch {
	case strings.HasPrefix(decl, "bigint"), strings.HasPrefix(decl, "int"), strings.HasPrefix(decl, "smallint"),
		strings.HasPrefix(decl, "tinyint"), strings.HasPrefix(decl, "mediumint"):
		return sqltypes.Int8
	case strings.HasPrefix(decl, "double"), strings.HasPrefix(decl, "float"), strings.HasPrefix(decl, "decimal"):
		return sqltypes.Float8
	case strings.HasPrefix(decl, "datetime"), strings.HasPrefix(decl, "timestamp"):
		return sqltypes.Timestamp
	}
	return sqltypes.Varchar
}
