package backend

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// TableInfo is what the database declares about a table: its columns and
// primary key. dpproxy reads it once at start, with its own credentials,
// to build the virtual catalog clients see.
type TableInfo struct {
	Columns    []ColumnInfo
	PrimaryKey []string
	// KeyNotEnforced is set when reading the table may return rows its
	// primary key does not keep unique: PostgreSQL inheritance children
	// (a partitioned table's key covers its partitions), a MySQL table
	// whose engine dpproxy does not know to enforce keys (MERGE, and
	// engines that read data kept elsewhere: FEDERATED, CONNECT, SPIDER).
	KeyNotEnforced bool
}

// mysqlKeyEngines are the MySQL/MariaDB storage engines known to keep a
// primary key unique in the rows a query of the table reads.
var mysqlKeyEngines = map[string]bool{"innodb": true, "myisam": true, "aria": true, "memory": true, "rocksdb": true}

// KeyedBy reports whether the column a query naming column reads is,
// alone, the table's primary key, never NULL, and enforced in all that
// reading the table returns: then no two rows share a value of it. The
// column read is the one spelled exactly so, or else the only one equal
// to it ignoring case (PostgreSQL's quoted names are case-sensitive).
func (info *TableInfo) KeyedBy(column string) bool {
	c, ok := info.column(column)
	return ok && !info.KeyNotEnforced && len(info.PrimaryKey) == 1 && info.PrimaryKey[0] == c.Name && c.NotNull
}

// column finds the column a reference to name reads: the one spelled
// exactly so, or else the only one equal to it ignoring case.
func (info *TableInfo) column(name string) (ColumnInfo, bool) {
	var folded []ColumnInfo
	for _, c := range info.Columns {
		if c.Name == name {
			return c, true
		}
		if strings.EqualFold(c.Name, name) {
			folded = append(folded, c)
		}
	}
	if len(folded) == 1 {
		return folded[0], true
	}
	return ColumnInfo{}, false
}

// ColumnInfo is one column as the database declares it.
type ColumnInfo struct {
	Name string
	Type sqltypes.Type
	// Length is a character column's declared length; Precision and
	// Scale a numeric column's (0: none).
	Length, Precision, Scale int
	NotNull                  bool
}

// ErrNoSuchTable is returned by DescribeTable for a table the database
// does not have.
var ErrNoSuchTable = fmt.Errorf("no such table")

func asInt(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case float64:
		return int(x)
	case sqltypes.Decimal:
		var n int
		fmt.Sscan(string(x), &n)
		return n
	case string:
		var n int
		fmt.Sscan(x, &n)
		return n
	}
	return 0
}

func asBool(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case int64:
		return x != 0
	case string:
		return x == "YES" || x == "t" || x == "1"
	}
	return false
}

// DescribeTable implements Backend.
func (p *Postgres) DescribeTable(ctx context.Context, schema, name string) (*TableInfo, error) {
	// int2vector subscripts start at 0: positions are counted from
	// array_lower.
	rows, err := p.Query(ctx, `SELECT a.attname::text, a.atttypid::int8, a.atttypmod::int8, a.attnotnull,
		COALESCE((SELECT array_position(i.indkey::int2[], a.attnum) - array_lower(i.indkey::int2[], 1) + 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary AND i.indisvalid), 0)::int8,
		c.relkind <> 'p' AND EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhparent = c.oid)
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relname = $1 AND n.nspname = COALESCE(NULLIF($2, ''), current_schema()) AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, name, schema)
	if err != nil {
		return nil, fmt.Errorf("backend: postgres: describing %s: %w", name, err)
	}
	info := &TableInfo{}
	keys := map[int]string{}
	for _, r := range rows.Values {
		c := ColumnInfo{Name: fmt.Sprint(r[0]), Type: sqltypes.FromPostgresOID(uint32(asInt(r[1]))), NotNull: asBool(r[3])}
		typmod := asInt(r[2])
		switch c.Type {
		case sqltypes.Varchar, sqltypes.Bpchar:
			if typmod >= 4 {
				c.Length = typmod - 4
			}
		case sqltypes.Numeric:
			if typmod >= 4 {
				c.Precision, c.Scale = (typmod-4)>>16, (typmod-4)&0xffff
			}
		}
		info.Columns = append(info.Columns, c)
		if k := asInt(r[4]); k > 0 {
			keys[k] = c.Name
		}
		info.KeyNotEnforced = asBool(r[5])
	}
	if len(info.Columns) == 0 {
		return nil, fmt.Errorf("backend: postgres: %s: %w", name, ErrNoSuchTable)
	}
	for i := 1; i <= len(keys); i++ {
		info.PrimaryKey = append(info.PrimaryKey, keys[i])
	}
	return info, nil
}

// DescribeTable implements Backend.
func (m *MySQL) DescribeTable(ctx context.Context, schema, name string) (*TableInfo, error) {
	rows, err := m.Query(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_MAXIMUM_LENGTH,
		NUMERIC_PRECISION, NUMERIC_SCALE,
		COALESCE((SELECT k.ORDINAL_POSITION FROM information_schema.KEY_COLUMN_USAGE k WHERE k.TABLE_SCHEMA = c.TABLE_SCHEMA
			AND k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = c.COLUMN_NAME AND k.CONSTRAINT_NAME = 'PRIMARY'), 0),
		COALESCE((SELECT t.ENGINE FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME), '')
		FROM information_schema.COLUMNS c
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, schema, name)
	if err != nil {
		return nil, fmt.Errorf("backend: mysql: describing %s: %w", name, err)
	}
	info := &TableInfo{}
	keys := map[int]string{}
	for _, r := range rows.Values {
		c := ColumnInfo{Name: fmt.Sprint(r[0]), Type: mysqlColumnType(fmt.Sprint(r[1]), fmt.Sprint(r[2])), NotNull: fmt.Sprint(r[3]) == "NO"}
		switch c.Type {
		case sqltypes.Varchar, sqltypes.Bpchar:
			c.Length = asInt(r[4])
		case sqltypes.Numeric:
			c.Precision, c.Scale = asInt(r[5]), asInt(r[6])
		}
		info.Columns = append(info.Columns, c)
		if k := asInt(r[7]); k > 0 {
			keys[k] = c.Name
		}
		info.KeyNotEnforced = !mysqlKeyEngines[strings.ToLower(asText(r[8]))]
	}
	if len(info.Columns) == 0 {
		return nil, fmt.Errorf("backend: mysql: %s: %w", name, ErrNoSuchTable)
	}
	for i := 1; i <= len(keys); i++ {
		info.PrimaryKey = append(info.PrimaryKey, keys[i])
	}
	return info, nil
}

// mysqlColumnType maps a MySQL DATA_TYPE (and COLUMN_TYPE) to a type.
func mysqlColumnType(dataType, columnType string) sqltypes.Type {
	switch strings.ToLower(dataType) {
	case "tinyint":
		if strings.HasPrefix(strings.ToLower(columnType), "tinyint(1)") {
			return sqltypes.Bool
		}
		return sqltypes.Int2
	case "bool", "boolean":
		return sqltypes.Bool
	case "smallint", "year":
		return sqltypes.Int2
	case "mediumint", "int", "integer":
		return sqltypes.Int4
	case "bigint":
		return sqltypes.Int8
	case "float":
		return sqltypes.Float4
	case "double", "real":
		return sqltypes.Float8
	case "decimal", "numeric":
		return sqltypes.Numeric
	case "varchar":
		return sqltypes.Varchar
	case "char":
		return sqltypes.Bpchar
	case "date":
		return sqltypes.Date
	case "datetime":
		return sqltypes.Timestamp
	case "timestamp":
		return sqltypes.Timestamptz
	case "blob", "tinyblob", "mediumblob", "longblob", "binary", "varbinary":
		return sqltypes.Bytea
	}
	return sqltypes.Text
}

// DescribeTable implements Backend.
func (s *SQLite) DescribeTable(ctx context.Context, schema, name string) (*TableInfo, error) {
	// pragma(f) is the table-valued pragma f of the table, in its schema.
	pragma := func(f string) string { return f + "(?)" }
	args := []any{name}
	if schema != "" && schema != "main" {
		pragma = func(f string) string { return f + "(?, ?)" }
		args = append(args, schema)
	}
	q := `SELECT name, type, "notnull", pk FROM ` + pragma("pragma_table_info")
	// SQLite lets a primary key column hold NULLs unless it is declared
	// NOT NULL, or is the rowid itself: "INTEGER PRIMARY KEY", which has
	// no index of its own (any other primary key has one, origin 'pk').
	keyIndexes, err := s.Query(ctx, `SELECT COUNT(*) FROM `+pragma("pragma_index_list")+` WHERE origin = 'pk'`, args...)
	if err != nil {
		return nil, fmt.Errorf("backend: sqlite: describing %s: %w", name, err)
	}
	rowidKey := len(keyIndexes.Values) == 1 && asInt(keyIndexes.Values[0][0]) == 0
	rows, err := s.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("backend: sqlite: describing %s: %w", name, err)
	}
	info := &TableInfo{}
	keys := map[int]string{}
	declared := make([]string, 0, len(rows.Values))
	for _, r := range rows.Values {
		declared = append(declared, fmt.Sprint(r[1]))
		c := ColumnInfo{Name: fmt.Sprint(r[0]), NotNull: asInt(r[2]) != 0}
		c.Type, c.Length, c.Precision, c.Scale = sqliteDeclaredType(fmt.Sprint(r[1]))
		info.Columns = append(info.Columns, c)
		if k := asInt(r[3]); k > 0 {
			keys[k] = c.Name
		}
	}
	if len(info.Columns) == 0 {
		return nil, fmt.Errorf("backend: sqlite: %s: %w", name, ErrNoSuchTable)
	}
	for i := 1; i <= len(keys); i++ {
		info.PrimaryKey = append(info.PrimaryKey, keys[i])
	}
	if len(info.PrimaryKey) == 1 && rowidKey {
		for i := range info.Columns {
			if info.Columns[i].Name == info.PrimaryKey[0] && strings.EqualFold(strings.TrimSpace(declared[i]), "INTEGER") {
				info.Columns[i].NotNull = true // the rowid
			}
		}
	}
	return info, nil
}

// sqliteDeclaredType reads a declared SQLite type ("VARCHAR(40)",
// "NUMERIC(10,2)", "INTEGER") as the type clients see.
func sqliteDeclaredType(decl string) (t sqltypes.Type, length, precision, scale int) {
	d := strings.ToUpper(strings.TrimSpace(decl))
	base, args, _ := strings.Cut(d, "(")
	args = strings.TrimSuffix(args, ")")
	base = strings.TrimSpace(base)
	nums := strings.Split(args, ",")
	first := 0
	if len(nums) > 0 {
		fmt.Sscan(strings.TrimSpace(nums[0]), &first)
	}
	switch {
	case base == "BOOLEAN" || base == "BOOL":
		return sqltypes.Bool, 0, 0, 0
	case base == "BIGINT" || base == "INT8":
		return sqltypes.Int8, 0, 0, 0
	case base == "SMALLINT" || base == "INT2":
		return sqltypes.Int2, 0, 0, 0
	case strings.Contains(base, "INT"):
		if base == "INTEGER" {
			return sqltypes.Int8, 0, 0, 0 // SQLite integers are 64-bit
		}
		return sqltypes.Int4, 0, 0, 0
	case base == "VARCHAR" || strings.Contains(base, "VARYING"):
		return sqltypes.Varchar, first, 0, 0
	case base == "CHAR" || base == "CHARACTER":
		return sqltypes.Bpchar, first, 0, 0
	case strings.Contains(base, "CHAR") || strings.Contains(base, "CLOB") || strings.Contains(base, "TEXT"):
		return sqltypes.Text, 0, 0, 0
	case base == "REAL" || strings.Contains(base, "FLOA") || strings.Contains(base, "DOUB"):
		return sqltypes.Float8, 0, 0, 0
	case base == "NUMERIC" || base == "DECIMAL":
		if len(nums) == 2 {
			var s int
			fmt.Sscan(strings.TrimSpace(nums[1]), &s)
			return sqltypes.Numeric, 0, first, s
		}
		return sqltypes.Numeric, 0, first, 0
	case base == "DATE":
		return sqltypes.Date, 0, 0, 0
	case strings.HasPrefix(base, "TIMESTAMP") || base == "DATETIME":
		return sqltypes.Timestamp, 0, 0, 0
	case strings.Contains(base, "BLOB"):
		return sqltypes.Bytea, 0, 0, 0
	}
	return sqltypes.Text, 0, 0, 0
}

// asText reads a text value as the drivers return it.
func asText(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}
