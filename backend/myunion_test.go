package backend

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// unionTable creates u(k, i, bi, vc, ch, tx, n, de) with rows 1..40 in the
// database name (a NULL in n for every third, no vc for k = 7).
func unionTable(t *testing.T, name string) {
	t.Helper()
	var values []string
	for k := 1; k <= 40; k++ {
		n := fmt.Sprint(k * 3)
		if k%3 == 0 {
			n = "NULL"
		}
		vc := fmt.Sprintf("'v%d it''s'", k)
		if k == 7 {
			vc = "''"
		}
		values = append(values, fmt.Sprintf("(%d, %d, %d, %s, 'c%d', 'text %d', %s, %d.25)", k, -k, int64(k)<<40, vc, k%10, k, n, k))
	}
	mysqlExec(t,
		"CREATE TABLE `"+name+"`.u (k INT PRIMARY KEY, i INT, bi BIGINT, vc VARCHAR(20), ch CHAR(3), tx TEXT, n INT NULL, de DECIMAL(8,2))",
		"INSERT INTO `"+name+"`.u VALUES "+strings.Join(values, ", "),
	)
}

// aloneStmt runs sql alone, as queryPublic does the first time, and
// returns a combined statement of it carrying shape and its columns.
func aloneStmt(t *testing.T, m *MySQL, sql, shape string, wire bool) (*combinedStmt, *Rows) {
	t.Helper()
	read := readMySQLDriverRows
	if wire {
		read = readMySQLTextRows
	}
	alone, err := m.query(context.Background(), read, sql, nil)
	if err != nil {
		t.Fatalf("%s alone: %v", sql, err)
	}
	s := newCombinedStmt(context.Background(), sql, nil, wire)
	s.shape, s.cols = shape, alone.Columns
	return s, alone
}

// checkAsAlone checks that each statement of a batch sent got want[i],
// its rows (in wire form or decoded) and columns when it ran alone.
func checkAsAlone(t *testing.T, batch []*combinedStmt, want []*Rows) {
	t.Helper()
	for i, s := range batch {
		if s.err != nil {
			t.Fatalf("wire %v: %s: %v", s.wire, s.sql, s.err)
		}
		if !reflect.DeepEqual(s.res.MySQLText, want[i].MySQLText) || fmt.Sprint(s.res.Values) != fmt.Sprint(want[i].Values) {
			t.Errorf("wire %v: %s: got %q %v, alone %q %v", s.wire, s.sql, s.res.MySQLText, s.res.Values, want[i].MySQLText, want[i].Values)
		}
		if !reflect.DeepEqual(s.res.Columns, want[i].Columns) {
			t.Errorf("wire %v: %s: columns %v, alone %v", s.wire, s.sql, s.res.Columns, want[i].Columns)
		}
	}
}

// TestMySQLUnionMatchesAlone: statements of one shape sent in one batch
// go as one UNION ALL, and each gets what it gets alone — its rows in
// their order, NULLs and empty strings, in wire form and decoded — while
// statements of other shapes in the batch go as commands of their own.
func TestMySQLUnionMatchesAlone(t *testing.T) {
	m, name := openMySQLCombinedT(t, 2, 1)
	unionTable(t, name)
	for _, wire := range []bool{true, false} {
		var batch []*combinedStmt
		var want []*Rows
		add := func(sql, shape string) {
			s, alone := aloneStmt(t, m, sql, shape, wire)
			batch, want = append(batch, s), append(want, alone)
		}
		for _, k := range []int{1, 7, 3, 99, 12} { // 99: no row
			add(fmt.Sprintf("SELECT k, i, bi, vc, ch, tx, n FROM u WHERE k = %d", k), "lookup")
			add(fmt.Sprintf("SELECT vc, k FROM u WHERE k > %d LIMIT %d", k, k%4+1), "range")
		}
		add("SELECT COUNT(*), MAX(vc) FROM u WHERE k < 30", "count")
		add("SELECT de FROM u WHERE k = 2", "") // no shape: alone
		before := m.unioned.Load()
		if err := m.sendBatch(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		if got := m.unioned.Load() - before; got != 10 {
			t.Errorf("wire %v: %d statements sent in a UNION ALL, want 10 (two shapes of 5)", wire, got)
		}
		checkAsAlone(t, batch, want)
	}
}

// TestMySQLUnionFailsOver: where a UNION ALL cannot give each statement
// its own result — a derived table with a name twice, a column whose
// text a union may change, columns not those of the statement's last run
// alone, a subquery with two rows in one branch — each statement gets
// errUnionFailed, and through queryPublic its own result all the same,
// after which its shape is not combined again.
func TestMySQLUnionFailsOver(t *testing.T) {
	m, name := openMySQLCombinedT(t, 2, 1)
	unionTable(t, name)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		sql  string // %d: the branch's constant
		want error
	}{
		{"a name twice", "SELECT k, k FROM u WHERE k = %d", errUnionFailed},
		{"an option refused in a derived table", "SELECT SQL_NO_CACHE k, vc FROM u WHERE k = %d", errUnionFailed},
		{"a decimal", "SELECT k, de FROM u WHERE k = %d", errUnionFailed},
		{"an error in one branch", "SELECT k, (SELECT k FROM u WHERE k > %d) FROM u WHERE k = 1", errUnionRetry},
	} {
		var batch []*combinedStmt
		for _, k := range []int{1, 39} {
			sql := fmt.Sprintf(c.sql, k)
			s := newCombinedStmt(ctx, sql, nil, true)
			s.shape, s.cols = c.name, []Column{{Name: "k"}, {Name: "x"}}
			if alone, err := m.query(ctx, readMySQLTextRows, sql, nil); err == nil {
				s.cols = alone.Columns
			}
			batch = append(batch, s)
		}
		if err := m.sendBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for _, s := range batch {
			if !errors.Is(s.err, c.want) {
				t.Errorf("%s: %s gave %v %v, want %v", c.name, s.sql, s.res, s.err, c.want)
			}
		}
	}

	// Columns not those of the last run alone (the table changed since).
	var batch []*combinedStmt
	for _, k := range []int{1, 2} {
		s, _ := aloneStmt(t, m, fmt.Sprintf("SELECT k, vc FROM u WHERE k = %d", k), "changed", true)
		s.cols = []Column{s.cols[0], {Name: "old", Type: s.cols[1].Type}}
		batch = append(batch, s)
	}
	if err := m.sendBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for _, s := range batch {
		if !errors.Is(s.err, errUnionFailed) {
			t.Errorf("renamed column: %s gave %v %v, want errUnionFailed", s.sql, s.res, s.err)
		}
	}

	// Through queryPublic: the right answer, and the shape marked.
	shaped := WithStatement(ctx, ResultLimit{}, "no cache", Lookup{})
	texts := []string{"SELECT SQL_NO_CACHE k, k + 0 FROM u WHERE k = 1", "SELECT SQL_NO_CACHE k, k + 0 FROM u WHERE k = 2"}
	for _, sql := range texts {
		if _, err := m.QueryMySQLText(shaped, sql); err != nil { // seen, alone
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for round := range 20 {
		for j := range 8 {
			i, sql := j%2, texts[j%2]
			wg.Go(func() {
				res, err := m.QueryMySQLText(shaped, sql)
				want := appendLenEncBytes(appendLenEncBytes(nil, []byte(fmt.Sprint(i+1))), []byte(fmt.Sprint(i+1)))
				if err != nil || len(res.MySQLText) != 1 || string(res.MySQLText[0]) != string(want) {
					t.Errorf("round %d: %s: %q %v", round, sql, res, err)
				}
			})
		}
		wg.Wait()
	}
	if !m.noUnion.Contains("no cache") {
		t.Error("a shape whose UNION ALL failed is still combined")
	}
}

// TestMySQLUnionConcurrentCallers: many callers of one shape through
// QueryMySQLText get their own rows while most of their statements go in
// UNION ALLs.
func TestMySQLUnionConcurrentCallers(t *testing.T) {
	m, name := openMySQLCombinedT(t, 4, 1)
	unionTable(t, name)
	ctx := WithStatement(context.Background(), ResultLimit{}, "SELECT k, vc, n FROM u WHERE k = ?", Lookup{})
	want := map[int]string{}
	for k := 1; k <= 40; k++ {
		res, err := m.QueryMySQLText(ctx, fmt.Sprintf("SELECT k, vc, n FROM u WHERE k = %d", k))
		if err != nil || len(res.MySQLText) != 1 {
			t.Fatalf("k = %d alone: %v %v", k, res, err)
		}
		want[k] = string(res.MySQLText[0])
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				k := (g*7+i)%40 + 1
				res, err := m.QueryMySQLText(ctx, fmt.Sprintf("SELECT k, vc, n FROM u WHERE k = %d", k))
				if err != nil || len(res.MySQLText) != 1 || string(res.MySQLText[0]) != want[k] {
					t.Errorf("k = %d: %v %v", k, res, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := m.unioned.Load(); n == 0 {
		t.Error("no statement went in a UNION ALL")
	} else {
		t.Logf("%d of %d statements in a UNION ALL", n, 16*50)
	}
	if m.Stats().Unioned != m.unioned.Load() {
		t.Error("Stats does not report the statements unioned")
	}
}

func TestMySQLCommands(t *testing.T) {
	stmt := func(sql, shape string, cols bool) *combinedStmt {
		s := &combinedStmt{sql: sql, shape: shape}
		if cols {
			s.cols = []Column{{Name: "a"}}
		}
		return s
	}
	long := strings.Repeat("x", mysqlCombinedMax/3)
	var many []*combinedStmt
	for range mysqlUnionMax + 3 {
		many = append(many, stmt("m", "M", true))
	}
	for _, c := range []struct {
		name  string
		batch []*combinedStmt
		want  string // each command: its statements' sql, joined
	}{
		{"one of each", []*combinedStmt{stmt("a", "A", true), stmt("b", "B", true)}, "a|b"},
		{"a shape's together where its first came", []*combinedStmt{stmt("a1", "A", true), stmt("b", "", false), stmt("a2", "A", true), stmt("c", "C", true), stmt("a3", "A", true)}, "a1+a2+a3|b|c"},
		{"no columns known: alone", []*combinedStmt{stmt("a1", "A", true), stmt("a2", "A", false)}, "a1|a2"},
		{"no shape: alone", []*combinedStmt{stmt("a1", "", true), stmt("a2", "", true)}, "a1|a2"},
		{"bytes", []*combinedStmt{stmt(long, "L", true), stmt(long, "L", true), stmt(long, "L", true)}, "L+L|L"},
		{"branches", many, strings.Repeat("m+", mysqlUnionMax-1) + "m|m+m+m"},
	} {
		var got []string
		for _, cmd := range mysqlCommands(c.batch, true) {
			var sqls []string
			for _, s := range cmd.stmts {
				sqls = append(sqls, strings.Replace(s.sql, long, "L", 1))
			}
			got = append(got, strings.Join(sqls, "+"))
			if (len(cmd.stmts) > 1) != (cmd.sql != "") {
				t.Errorf("%s: a command of %d statements with UNION %q", c.name, len(cmd.stmts), cmd.sql)
			}
		}
		if g := strings.Join(got, "|"); g != c.want {
			t.Errorf("%s: commands %s, want %s", c.name, g, c.want)
		}
	}
	u := unionSQL([]*combinedStmt{stmt("SELECT a FROM t WHERE b = 1", "", true), stmt("SELECT a FROM t WHERE b = 2", "", true)})
	if want := "SELECT 0 AS dpproxy_branch, dpproxy_b.* FROM (SELECT a FROM t WHERE b = 1) AS dpproxy_b UNION ALL SELECT 1, dpproxy_b.* FROM (SELECT a FROM t WHERE b = 2) AS dpproxy_b"; u != want {
		t.Errorf("unionSQL:\n%s\nwant\n%s", u, want)
	}
}

func TestUnionBranch(t *testing.T) {
	row := appendLenEncBytes(nil, []byte("rest"))
	for _, c := range []struct {
		p      []byte
		n      int
		branch int
		ok     bool
	}{
		{append([]byte{1, '0'}, row...), 2, 0, true},
		{append([]byte{2, '1', '2'}, row...), 13, 12, true},
		{append([]byte{2, '1', '2'}, row...), 12, 0, false}, // no such branch
		{append([]byte{1, '-'}, row...), 2, 0, false},
		{[]byte{mysqlNullValue}, 2, 0, false},
		{[]byte{3, '1'}, 2, 0, false}, // short
		{[]byte{}, 2, 0, false},
	} {
		branch, rest, ok := unionBranch(c.p, c.n)
		if ok != c.ok || ok && (branch != c.branch || string(rest) != string(row)) {
			t.Errorf("unionBranch(%q, %d) = %d %q %v, want %d %v", c.p, c.n, branch, rest, ok, c.branch, c.ok)
		}
	}
}

// mysqlPackets frames payloads as MySQL packets, sequence ids from 1.
func mysqlPackets(payloads ...[]byte) []byte {
	var out []byte
	for i, p := range payloads {
		out = append(out, byte(len(p)), byte(len(p)>>8), byte(len(p)>>16), byte(i+1))
		out = append(out, p...)
	}
	return out
}

// columnDef is a column definition packet of a name and a field type.
func columnDef(name string, fieldType byte) []byte {
	var p []byte
	for _, s := range []string{"def", "db", "t", "t", name, name} {
		p = appendLenEncBytes(p, []byte(s))
	}
	return append(p, 0x0c, 45, 0, 10, 0, 0, 0, fieldType, 0, 0, 0, 0, 0)
}

// FuzzMySQLUnionResult: whatever the server sends as a union's result,
// reading it never panics, and either fails the connection or gives each
// statement a result or an error.
func FuzzMySQLUnionResult(f *testing.F) {
	row := func(branch string, vals ...string) []byte {
		p := appendLenEncBytes(nil, []byte(branch))
		for _, v := range vals {
			p = appendLenEncBytes(p, []byte(v))
		}
		return p
	}
	eof := []byte{0xfe, 0, 0, 2, 0, 0, 0}
	f.Add(mysqlPackets([]byte{2}, columnDef("dpproxy_branch", 0x03), columnDef("vc", 0xfd), row("0", "a"), row("1", "b"), eof))
	f.Add(mysqlPackets([]byte{2}, columnDef("dpproxy_branch", 0x03), columnDef("vc", 0xfd), row("2", "a"), eof))
	f.Add(mysqlPackets([]byte{0xff, 0x3c, 0x04, '#', '4', '2', 'S', '2', '1', 'x'}))
	f.Add(mysqlPackets([]byte{0, 0, 0, 2, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, data []byte) {
		stmts := []*combinedStmt{
			{ctx: context.Background(), wire: true, cols: []Column{{Name: "vc", Type: sqltypes.Text}}},
			{ctx: context.Background(), cols: []Column{{Name: "vc", Type: sqltypes.Text}}},
		}
		cmd := &mysqlCommand{stmts: stmts, sql: "u"}
		r := &mysqlPacketReader{r: bufio.NewReader(bytes.NewReader(data))}
		if _, err := readMySQLUnionResult(r, cmd); err != nil {
			return
		}
		for _, s := range stmts {
			if (s.res == nil) == (s.err == nil) {
				t.Fatalf("a statement with result %v and error %v", s.res, s.err)
			}
		}
	})
}

// TestMySQLUnionResultSplits: a union's rows go to their branches'
// statements, without the branch number, in wire form or decoded; a
// branch number out of range fails the union.
func TestMySQLUnionResultSplits(t *testing.T) {
	row := func(branch, v string) []byte {
		return appendLenEncBytes(appendLenEncBytes(nil, []byte(branch)), []byte(v))
	}
	eof := []byte{0xfe, 0, 0, 2, 0, 0, 0}
	read := func(payloads ...[]byte) []*combinedStmt {
		stmts := []*combinedStmt{
			{ctx: context.Background(), wire: true, cols: []Column{{Name: "vc", Type: sqltypes.Text}}},
			{ctx: context.Background(), cols: []Column{{Name: "vc", Type: sqltypes.Text}}},
		}
		r := &mysqlPacketReader{r: bufio.NewReader(bytes.NewReader(mysqlPackets(payloads...)))}
		if keep, err := readMySQLUnionResult(r, &mysqlCommand{stmts: stmts, sql: "u"}); err != nil || !keep {
			t.Fatalf("keep %v, err %v", keep, err)
		}
		return stmts
	}
	cols := [][]byte{{2}, columnDef("dpproxy_branch", 0x03), columnDef("vc", 0xfd)}
	stmts := read(append(cols, row("1", "b1"), row("0", "a"), row("1", "b2"), eof)...)
	if s := stmts[0]; s.err != nil || len(s.res.MySQLText) != 1 || string(s.res.MySQLText[0]) != "\x01a" {
		t.Errorf("branch 0: %v %v", s.res, s.err)
	}
	if s := stmts[1]; s.err != nil || fmt.Sprint(s.res.Values) != "[[b1] [b2]]" {
		t.Errorf("branch 1: %v %v", s.res, s.err)
	}
	for _, s := range read(append(cols, row("0", "a"), row("2", "x"), eof)...) {
		if !errors.Is(s.err, errUnionFailed) {
			t.Errorf("branch 2 of 2: %v %v", s.res, s.err)
		}
	}
}

// TestMySQLUnionSelectLimit: a session whose sql_select_limit is its own
// (here the DSN's) limits each statement alone but a union as a whole, so
// its lanes send no union, and each statement gets its own limited rows.
func TestMySQLUnionSelectLimit(t *testing.T) {
	name, dbDSN := mysqlDatabase(t, mysqlDSN(t))
	unionTable(t, name)
	m := openMySQLT(t, dbDSN+"?sql_select_limit=3", 2)
	m.setPipelineLanes(1)
	var batch []*combinedStmt
	for _, k := range []int{0, 10} {
		s, alone := aloneStmt(t, m, fmt.Sprintf("SELECT k FROM u WHERE k > %d", k), "limited", true)
		if len(alone.MySQLText) != 3 {
			t.Fatalf("alone: %d rows, want sql_select_limit's 3", len(alone.MySQLText))
		}
		batch = append(batch, s)
	}
	if err := m.sendBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	for _, s := range batch {
		if s.err != nil || len(s.res.MySQLText) != 3 {
			t.Errorf("%s: %v %v, want 3 rows", s.sql, s.res, s.err)
		}
	}
	if n := m.unioned.Load(); n != 0 {
		t.Errorf("%d statements in a UNION ALL under sql_select_limit", n)
	}
}

func TestUnionableColumns(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  bool
	}{
		{nil, false},
		{[]string{"a", "b"}, true},
		{[]string{"a", "a"}, false},
		{[]string{"id", "ID"}, false},
	} {
		var cols []Column
		for _, n := range c.names {
			cols = append(cols, Column{Name: n})
		}
		if c.names == nil {
			cols = nil
		}
		if got := unionableColumns(cols); got != c.want {
			t.Errorf("unionableColumns(%v) = %v, want %v", c.names, got, c.want)
		}
	}
}
