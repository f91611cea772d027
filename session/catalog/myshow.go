package catalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
)

// SHOW statements about tables, answered from the MySQL catalog as MySQL
// answers them: SHOW CREATE TABLE, SHOW [FULL] COLUMNS, SHOW INDEX and
// SHOW TABLE STATUS, with LIKE and WHERE. Rows, lengths and cardinalities
// are NULL.

// ShowMySQL answers a SHOW statement; ok is false for kinds the catalog
// does not answer (the session answers those).
func (c *Catalog) ShowMySQL(ctx context.Context, x *ast.ShowStmt, sess *Session) (res *sqltypes.Result, ok bool, err error) {
	db := sess.Database
	if x.DBName != "" {
		db = x.DBName
	}
	if x.Table != nil && x.Table.Schema.O != "" {
		db = x.Table.Schema.O
	}
	var q string
	var args []any
	switch x.Tp {
	case ast.ShowCreateTable:
		return c.showCreateTable(ctx, db, x.Table.Name.O, sess)
	case ast.ShowColumns:
		q = `SELECT COLUMN_NAME AS "Field", COLUMN_TYPE AS "Type", ` +
			`CASE WHEN ? THEN COLLATION_NAME END AS "Collation", IS_NULLABLE AS "Null", COLUMN_KEY AS "Key", ` +
			`COLUMN_DEFAULT AS "Default", EXTRA AS "Extra", PRIVILEGES AS "Privileges", COLUMN_COMMENT AS "Comment" ` +
			`FROM ` + "`information_schema.COLUMNS`" + ` WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`
		args = []any{x.Full, db, x.Table.Name.O}
		if !x.Full {
			q = `SELECT "Field", "Type", "Null", "Key", "Default", "Extra" FROM (` + q + `)`
		}
		if err := c.requireTable(ctx, db, x.Table.Name.O, sess); err != nil {
			return nil, true, err
		}
	case ast.ShowIndex:
		q = `SELECT TABLE_NAME AS "Table", NON_UNIQUE AS "Non_unique", INDEX_NAME AS "Key_name", SEQ_IN_INDEX AS "Seq_in_index", ` +
			`COLUMN_NAME AS "Column_name", COLLATION AS "Collation", CARDINALITY AS "Cardinality", SUB_PART AS "Sub_part", ` +
			`PACKED AS "Packed", NULLABLE AS "Null", INDEX_TYPE AS "Index_type", COMMENT AS "Comment", INDEX_COMMENT AS "Index_comment", ` +
			`IGNORED AS "Ignored" FROM ` + "`information_schema.STATISTICS`" + ` WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX`
		args = []any{db, x.Table.Name.O}
		if err := c.requireTable(ctx, db, x.Table.Name.O, sess); err != nil {
			return nil, true, err
		}
	case ast.ShowTableStatus:
		q = `SELECT TABLE_NAME AS "Name", ENGINE AS "Engine", VERSION AS "Version", ROW_FORMAT AS "Row_format", ` +
			`TABLE_ROWS AS "Rows", AVG_ROW_LENGTH AS "Avg_row_length", DATA_LENGTH AS "Data_length", ` +
			`MAX_DATA_LENGTH AS "Max_data_length", INDEX_LENGTH AS "Index_length", DATA_FREE AS "Data_free", ` +
			`AUTO_INCREMENT AS "Auto_increment", CREATE_TIME AS "Create_time", UPDATE_TIME AS "Update_time", ` +
			`CHECK_TIME AS "Check_time", TABLE_COLLATION AS "Collation", CHECKSUM AS "Checksum", ` +
			`CREATE_OPTIONS AS "Create_options", TABLE_COMMENT AS "Comment", MAX_INDEX_LENGTH AS "Max_index_length", ` +
			`TEMPORARY AS "Temporary" FROM ` + "`information_schema.TABLES`" + ` WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME`
		args = []any{db}
	default:
		return nil, false, nil
	}
	first := map[ast.ShowStmtType]string{ast.ShowColumns: "Field", ast.ShowIndex: "Key_name", ast.ShowTableStatus: "Name"}[x.Tp]
	if x.Pattern != nil {
		pattern, ok := x.Pattern.Pattern.(ast.ValueExpr)
		if !ok {
			return nil, true, classify(&notSupported{"SHOW ... LIKE with anything but a constant pattern"})
		}
		q = `SELECT * FROM (` + q + `) WHERE "` + first + `" LIKE ?`
		args = append(args, pattern.GetValue())
	}
	if x.Where != nil {
		var b strings.Builder
		rc := format.NewRestoreCtx(format.RestoreStringSingleQuotes|format.RestoreKeyWordUppercase|format.RestoreNameBackQuotes|format.RestoreStringWithoutCharset, &b)
		if err := x.Where.Restore(rc); err != nil {
			return nil, true, classify(&notSupported{"this WHERE clause"})
		}
		q = `SELECT * FROM (` + q + `) WHERE ` + b.String()
	}
	res, err = c.my.run(ctx, c.withMySQLViews(q, sess), args, myTypeOfDecl)
	if err != nil {
		return nil, true, classify(err)
	}
	res.Tag = fmt.Sprintf("SELECT %d", len(res.Rows))
	return res, true, nil
}

// TableMissingError is a SHOW about a table the catalog does not have
// (MySQL's 1146).
type TableMissingError struct{ Schema, Table string }

func (e *TableMissingError) Error() string {
	return fmt.Sprintf("Table '%s.%s' doesn't exist", e.Schema, e.Table)
}

func (c *Catalog) requireTable(ctx context.Context, db, table string, sess *Session) error {
	var n int
	q := c.withMySQLViews(`SELECT COUNT(*) FROM `+"`information_schema.TABLES`"+` WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, sess)
	if err := c.my.db.QueryRowContext(ctx, q, db, table).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return &TableMissingError{db, table}
	}
	return nil
}

func (c *Catalog) showCreateTable(ctx context.Context, db, table string, sess *Session) (*sqltypes.Result, bool, error) {
	if err := c.requireTable(ctx, db, table, sess); err != nil {
		return nil, true, err
	}
	rows, err := c.my.db.QueryContext(ctx, c.withMySQLViews(`SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY FROM `+"`information_schema.COLUMNS`"+` `+
		`WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, sess), db, table)
	if err != nil {
		return nil, true, classify(err)
	}
	defer rows.Close()
	// Names are quoted as the session's sql_mode says (MySQL's rule).
	quote := "`"
	if mode, ok := sess.setting("sql_mode"); ok && strings.Contains(strings.ToUpper(mode), "ANSI_QUOTES") {
		quote = `"`
	}
	var lines, keys []string
	name := table
	for rows.Next() {
		var col, typ, nullable, key string
		if err := rows.Scan(&name, &col, &typ, &nullable, &key); err != nil {
			return nil, true, err
		}
		line := "  " + quote + col + quote + " " + typ
		if nullable == "NO" {
			line += " NOT NULL"
		} else {
			line += " DEFAULT NULL"
		}
		lines = append(lines, line)
		if key == "PRI" {
			keys = append(keys, quote+col+quote)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, true, err
	}
	if len(keys) > 0 {
		lines = append(lines, "  PRIMARY KEY ("+strings.Join(keys, ",")+")")
	}
	ddl := "CREATE TABLE " + quote + name + quote + " (\n" + strings.Join(lines, ",\n") + "\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
	return &sqltypes.Result{
		Columns: []sqltypes.Column{{Name: "Table", Type: sqltypes.Varchar}, {Name: "Create Table", Type: sqltypes.Varchar}},
		Rows:    [][]any{{name, ddl}},
		Tag:     "SELECT 1",
	}, true, nil
}
