package catalog

import (
	"fmt"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// pgBaseType is a row of pg_type for a built-in type.
type pgBaseType struct {
	oid      int64
	name     string
	length   int64
	byVal    bool
	category string
	kind     string // typtype: b base, p pseudo
	array    int64  // OID of its array type, 0 for none
}

// pgBaseTypes are the built-in types the catalog lists (PostgreSQL 15's
// OIDs, lengths and categories).
var pgBaseTypes = []pgBaseType{
	{16, "bool", 1, true, "B", "b", 1000}, {17, "bytea", -1, false, "U", "b", 1001},
	{18, "char", 1, true, "Z", "b", 1002}, {19, "name", 64, false, "S", "b", 1003},
	{20, "int8", 8, true, "N", "b", 1016}, {21, "int2", 2, true, "N", "b", 1005},
	{22, "int2vector", -1, false, "A", "b", 1006}, {23, "int4", 4, true, "N", "b", 1007},
	{24, "regproc", 4, true, "N", "b", 1008}, {25, "text", -1, false, "S", "b", 1009},
	{26, "oid", 4, true, "N", "b", 1028}, {27, "tid", 6, false, "U", "b", 1010},
	{28, "xid", 4, true, "U", "b", 1011}, {29, "cid", 4, true, "U", "b", 1012},
	{30, "oidvector", -1, false, "A", "b", 1013}, {114, "json", -1, false, "U", "b", 199},
	{142, "xml", -1, false, "U", "b", 143}, {194, "pg_node_tree", -1, false, "Z", "b", 0},
	{600, "point", 16, false, "G", "b", 1017}, {700, "float4", 4, true, "N", "b", 1021},
	{701, "float8", 8, true, "N", "b", 1022}, {705, "unknown", -2, false, "X", "p", 0},
	{790, "money", 8, true, "N", "b", 791}, {869, "inet", -1, false, "I", "b", 1041},
	{1033, "aclitem", 12, false, "U", "b", 1034}, {1042, "bpchar", -1, false, "S", "b", 1014},
	{1043, "varchar", -1, false, "S", "b", 1015}, {1082, "date", 4, true, "D", "b", 1182},
	{1083, "time", 8, true, "D", "b", 1183}, {1114, "timestamp", 8, true, "D", "b", 1115},
	{1184, "timestamptz", 8, true, "D", "b", 1185}, {1186, "interval", 16, false, "T", "b", 1187},
	{1266, "timetz", 12, false, "D", "b", 1270}, {1560, "bit", -1, false, "V", "b", 1561},
	{1562, "varbit", -1, false, "V", "b", 1563}, {1700, "numeric", -1, false, "N", "b", 1231},
	{2205, "regclass", 4, true, "N", "b", 2210}, {2206, "regtype", 4, true, "N", "b", 2211},
	{4089, "regnamespace", 4, true, "N", "b", 4090}, {4096, "regrole", 4, true, "N", "b", 4097},
	{2249, "record", -1, false, "P", "p", 2287}, {2275, "cstring", -2, false, "P", "p", 1263},
	{2277, "anyarray", -1, false, "P", "p", 0}, {2278, "void", 4, true, "P", "p", 0},
	{2279, "trigger", 4, true, "P", "p", 0}, {2283, "anyelement", 4, true, "P", "p", 0},
	{2950, "uuid", 16, false, "U", "b", 2951}, {3220, "pg_lsn", 8, true, "U", "b", 3221},
	{3802, "jsonb", -1, false, "U", "b", 3807},
}

// pgTypeOf is the PostgreSQL type of a column: its OID, internal name and
// type modifier (atttypmod), and its name as format_type writes it.
func pgTypeOf(c Column) (oid int64, udt string, typmod int64, formatted string) {
	typmod = -1
	switch c.Type {
	case sqltypes.Bool:
		return 16, "bool", -1, "boolean"
	case sqltypes.Int2:
		return 21, "int2", -1, "smallint"
	case sqltypes.Int4:
		return 23, "int4", -1, "integer"
	case sqltypes.Int8:
		return 20, "int8", -1, "bigint"
	case sqltypes.Float4:
		return 700, "float4", -1, "real"
	case sqltypes.Float8:
		return 701, "float8", -1, "double precision"
	case sqltypes.Numeric:
		if c.Precision > 0 {
			return 1700, "numeric", int64(c.Precision<<16|c.Scale) + 4, fmt.Sprintf("numeric(%d,%d)", c.Precision, c.Scale)
		}
		return 1700, "numeric", -1, "numeric"
	case sqltypes.Varchar:
		if c.Length > 0 {
			return 1043, "varchar", int64(c.Length) + 4, fmt.Sprintf("character varying(%d)", c.Length)
		}
		return 1043, "varchar", -1, "character varying"
	case sqltypes.Bpchar:
		n := max(c.Length, 1)
		return 1042, "bpchar", int64(n) + 4, fmt.Sprintf("character(%d)", n)
	case sqltypes.Date:
		return 1082, "date", -1, "date"
	case sqltypes.Timestamp:
		return 1114, "timestamp", -1, "timestamp without time zone"
	case sqltypes.Timestamptz:
		return 1184, "timestamptz", -1, "timestamp with time zone"
	case sqltypes.Bytea:
		return 17, "bytea", -1, "bytea"
	case sqltypes.Name:
		return 19, "name", -1, "name"
	case sqltypes.OID:
		return 26, "oid", -1, "oid"
	}
	return 25, "text", -1, "text"
}

// typeOfDecl maps the declared type of a catalog column (the PostgreSQL
// internal name) to a result type. Arrays and the catalog's special types
// are sent as text.
func typeOfDecl(decl string) sqltypes.Type {
	switch decl {
	case "bool":
		return sqltypes.Bool
	case "int2":
		return sqltypes.Int2
	case "int4":
		return sqltypes.Int4
	case "int8":
		return sqltypes.Int8
	case "oid", "xid", "cid":
		return sqltypes.OID
	case "float4":
		return sqltypes.Float4
	case "float8":
		return sqltypes.Float8
	case "name":
		return sqltypes.Name
	case "varchar":
		return sqltypes.Varchar
	case "timestamptz":
		return sqltypes.Timestamptz
	case "numeric":
		return sqltypes.Numeric
	}
	return sqltypes.Text
}

// formatType is format_type(oid, typmod) for the types the catalog knows.
func formatType(oid, typmod int64, names *objectNames) string {
	switch oid {
	case 16:
		return "boolean"
	case 21:
		return "smallint"
	case 23:
		return "integer"
	case 20:
		return "bigint"
	case 700:
		return "real"
	case 701:
		return "double precision"
	case 1700:
		if typmod >= 4 {
			return fmt.Sprintf("numeric(%d,%d)", (typmod-4)>>16, (typmod-4)&0xffff)
		}
		return "numeric"
	case 1043:
		if typmod >= 4 {
			return fmt.Sprintf("character varying(%d)", typmod-4)
		}
		return "character varying"
	case 1042:
		if typmod >= 4 {
			return fmt.Sprintf("character(%d)", typmod-4)
		}
		return "character"
	case 1114:
		return "timestamp without time zone"
	case 1184:
		return "timestamp with time zone"
	case 1083:
		return "time without time zone"
	case 18:
		return `"char"`
	}
	if n, ok := names.name("regtype", oid); ok {
		if len(n) > 1 && n[0] == '_' {
			return n[1:] + "[]"
		}
		return n
	}
	return "???"
}
