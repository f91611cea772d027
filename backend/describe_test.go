package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// describeText prints a TableInfo compactly: name:type(length|p,s)[!] ... pk=a,b.
func describeText(info *TableInfo) string {
	var parts []string
	for _, c := range info.Columns {
		s := c.Name + ":" + c.Type.String()
		if c.Length > 0 {
			s += fmt.Sprintf("(%d)", c.Length)
		}
		if c.Precision > 0 {
			s += fmt.Sprintf("(%d,%d)", c.Precision, c.Scale)
		}
		if c.NotNull {
			s += "!"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ") + " pk=" + strings.Join(info.PrimaryKey, ",")
}

func TestDescribeTablePostgres(t *testing.T) {
	dsn := pgDSN(t)
	schema := pgSchema(t, dsn)
	p := openPostgresT(t, dsn, 2)
	info, err := p.DescribeTable(context.Background(), strings.Trim(schema, `"`), "t")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describeText(info), "id:integer! v:text d:date c:numeric(10,2) pk=id"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := p.DescribeTable(context.Background(), strings.Trim(schema, `"`), "nosuch"); !errors.Is(err, ErrNoSuchTable) {
		t.Errorf("unknown table: %v", err)
	}
}

func TestDescribeTableMySQL(t *testing.T) {
	_, dsn := mysqlDatabase(t, mysqlDSN(t))
	m := openMySQLT(t, dsn, 2)
	info, err := m.DescribeTable(context.Background(), "", "t")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describeText(info), "id:integer! v:character varying(10) d:date c:numeric(10,2) pk=id"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := m.DescribeTable(context.Background(), "", "nosuch"); !errors.Is(err, ErrNoSuchTable) {
		t.Errorf("unknown table: %v", err)
	}
}

func TestDescribeTableSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (a INTEGER NOT NULL, b VARCHAR(40), c NUMERIC(10,2), d TEXT, e BOOLEAN, PRIMARY KEY (b, a))`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := OpenSQLite(context.Background(), path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info, err := s.DescribeTable(context.Background(), "", "t")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describeText(info), "a:bigint! b:character varying(40) c:numeric(10,2) d:text e:boolean pk=b,a"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := s.DescribeTable(context.Background(), "", "nosuch"); !errors.Is(err, ErrNoSuchTable) {
		t.Errorf("unknown table: %v", err)
	}
}

// A table with inheritance children reads their rows too, which its
// primary key does not keep unique (KeyNotEnforced); a partitioned
// table's key covers its partitions, unless it was added to the parent
// ONLY (an invalid index, enforcing nothing). A key column is the one a
// query names exactly: "ID" is the key, id is not.
func TestDescribeKeysPostgres(t *testing.T) {
	dsn := pgDSN(t)
	schema := pgSchema(t, dsn)
	p := openPostgresT(t, dsn, 2)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		`CREATE TABLE ` + schema + `.parent (id integer PRIMARY KEY)`,
		`CREATE TABLE ` + schema + `.child (extra text) INHERITS (` + schema + `.parent)`,
		`CREATE TABLE ` + schema + `.orphaned (id integer PRIMARY KEY)`,
		`CREATE TABLE ` + schema + `.gone () INHERITS (` + schema + `.orphaned)`,
		`DROP TABLE ` + schema + `.gone`, // relhassubclass stays set until VACUUM
		`CREATE TABLE ` + schema + `.parted (id integer PRIMARY KEY) PARTITION BY RANGE (id)`,
		`CREATE TABLE ` + schema + `.parted_1 PARTITION OF ` + schema + `.parted FOR VALUES FROM (0) TO (100)`,
		`CREATE TABLE ` + schema + `.parted_only (id integer NOT NULL) PARTITION BY RANGE (id)`,
		`CREATE TABLE ` + schema + `.parted_only_1 PARTITION OF ` + schema + `.parted_only FOR VALUES FROM (0) TO (100)`,
		`ALTER TABLE ONLY ` + schema + `.parted_only ADD PRIMARY KEY (id)`,
		`CREATE TABLE ` + schema + `.mixed ("ID" integer PRIMARY KEY, id integer NOT NULL)`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, c := range []struct {
		table, column string
		keyed         bool
	}{
		{"t", "id", true},
		{"parent", "id", false},
		{"child", "id", false}, // no key of its own
		{"orphaned", "id", true},
		{"parted", "id", true},
		{"parted_only", "id", false},
		{"mixed", "ID", true},
		{"mixed", "id", false},
	} {
		info, err := p.DescribeTable(ctx, strings.Trim(schema, `"`), c.table)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.KeyedBy(c.column); got != c.keyed {
			t.Errorf("%s.%s: KeyedBy = %v, want %v (%s, key not enforced: %v)", c.table, c.column, got, c.keyed, describeText(info), info.KeyNotEnforced)
		}
	}
}

// A MERGE table's key does not keep its rows unique (each underlying
// table has its own): not keyed; InnoDB's is.
func TestDescribeKeysMySQL(t *testing.T) {
	_, dsn := mysqlDatabase(t, mysqlDSN(t))
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`CREATE TABLE part1 (id INT NOT NULL PRIMARY KEY) ENGINE=MyISAM`,
		`CREATE TABLE part2 (id INT NOT NULL PRIMARY KEY) ENGINE=MyISAM`,
		`CREATE TABLE merged (id INT NOT NULL PRIMARY KEY) ENGINE=MERGE UNION=(part1, part2)`,
		`INSERT INTO part1 VALUES (1)`,
		`INSERT INTO part2 VALUES (1)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	m := openMySQLT(t, dsn, 2)
	for table, keyed := range map[string]bool{"t": true, "part1": true, "merged": false} {
		info, err := m.DescribeTable(context.Background(), "", table)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.KeyedBy("id"); got != keyed {
			t.Errorf("%s: KeyedBy = %v, want %v (%s)", table, got, keyed, describeText(info))
		}
	}
}

// KeyedBy: the column read is the one named exactly, else the only one
// equal ignoring case; it must be the whole primary key, NOT NULL and
// enforced.
func TestKeyedBy(t *testing.T) {
	col := func(name string, notNull bool) ColumnInfo { return ColumnInfo{Name: name, NotNull: notNull} }
	for _, c := range []struct {
		name   string
		info   TableInfo
		column string
		want   bool
	}{
		{"key", TableInfo{Columns: []ColumnInfo{col("id", true)}, PrimaryKey: []string{"id"}}, "id", true},
		{"case folded", TableInfo{Columns: []ColumnInfo{col("ID", true)}, PrimaryKey: []string{"ID"}}, "id", true},
		{"exact name wins", TableInfo{Columns: []ColumnInfo{col("ID", true), col("id", true)}, PrimaryKey: []string{"ID"}}, "id", false},
		{"two folded matches", TableInfo{Columns: []ColumnInfo{col("ID", true), col("Id", true)}, PrimaryKey: []string{"ID"}}, "id", false},
		{"nullable", TableInfo{Columns: []ColumnInfo{col("id", false)}, PrimaryKey: []string{"id"}}, "id", false},
		{"part of the key", TableInfo{Columns: []ColumnInfo{col("id", true), col("day", true)}, PrimaryKey: []string{"id", "day"}}, "id", false},
		{"another key", TableInfo{Columns: []ColumnInfo{col("id", true), col("k", true)}, PrimaryKey: []string{"k"}}, "id", false},
		{"no key", TableInfo{Columns: []ColumnInfo{col("id", true)}}, "id", false},
		{"not enforced", TableInfo{Columns: []ColumnInfo{col("id", true)}, PrimaryKey: []string{"id"}, KeyNotEnforced: true}, "id", false},
		{"no such column", TableInfo{Columns: []ColumnInfo{col("id", true)}, PrimaryKey: []string{"id"}}, "uid", false},
	} {
		if got := c.info.KeyedBy(c.column); got != c.want {
			t.Errorf("%s: KeyedBy(%q) = %v, want %v", c.name, c.column, got, c.want)
		}
	}
}

// SQLite lets a primary key hold NULLs unless it is declared NOT NULL or
// is the rowid (INTEGER PRIMARY KEY, ascending).
func TestDescribeRowidSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE rowid_key (id INTEGER PRIMARY KEY, v TEXT)`,
		`CREATE TABLE int_key (id INT PRIMARY KEY, v TEXT)`,
		`CREATE TABLE desc_key (id INTEGER PRIMARY KEY DESC, v TEXT)`,
		`CREATE TABLE text_key (id TEXT NOT NULL PRIMARY KEY, v TEXT)`,
		`INSERT INTO int_key VALUES (NULL, 'a'), (NULL, 'b')`,
		`INSERT INTO desc_key VALUES (NULL, 'a'), (NULL, 'b')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	s, err := OpenSQLite(context.Background(), path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for table, want := range map[string]string{
		"rowid_key": "id:bigint! v:text pk=id",
		"int_key":   "id:integer v:text pk=id",
		"desc_key":  "id:bigint v:text pk=id",
		"text_key":  "id:text! v:text pk=id",
	} {
		info, err := s.DescribeTable(context.Background(), "", table)
		if err != nil {
			t.Fatal(err)
		}
		if got := describeText(info); got != want {
			t.Errorf("%s: got %s, want %s", table, got, want)
		}
	}
}
