package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
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
