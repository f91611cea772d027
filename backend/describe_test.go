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
// primary key does not cover (Inherited); a partitioned table's key
// covers its partitions.
func TestDescribeInheritancePostgres(t *testing.T) {
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
		`CREATE TABLE ` + schema + `.parted (id integer PRIMARY KEY) PARTITION BY RANGE (id)`,
		`CREATE TABLE ` + schema + `.parted_1 PARTITION OF ` + schema + `.parted FOR VALUES FROM (0) TO (100)`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for table, want := range map[string]bool{"t": false, "parent": true, "child": false, "parted": false} {
		info, err := p.DescribeTable(ctx, strings.Trim(schema, `"`), table)
		if err != nil {
			t.Fatal(err)
		}
		if info.Inherited != want {
			t.Errorf("%s: Inherited = %v, want %v", table, info.Inherited, want)
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
