package backend

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// lookupTable creates g(id, grp, vc) in the database name: 30 rows, grp
// = id % 4 (several rows per key), vc NULL for every fifth.
func lookupTable(t *testing.T, name string) {
	t.Helper()
	var values string
	for id := 1; id <= 30; id++ {
		vc := fmt.Sprintf("'g%d'", id)
		if id%5 == 0 {
			vc = "NULL"
		}
		if values != "" {
			values += ", "
		}
		values += fmt.Sprintf("(%d, %d, %s)", id, id%4, vc)
	}
	mysqlExec(t,
		"CREATE TABLE `"+name+"`.g (id INT PRIMARY KEY, grp INT, vc VARCHAR(20) NULL)",
		"INSERT INTO `"+name+"`.g VALUES "+values,
	)
}

// lookupStmt runs sql alone and returns it as a combined lookup of the
// given prefix and literal key (see aloneStmt).
func lookupStmt(t *testing.T, m *MySQL, sql, prefix, literal string, wire bool) (*combinedStmt, *Rows) {
	t.Helper()
	s, alone := aloneStmt(t, m, sql, "shape of "+prefix, wire)
	key, ok := lookupKey(Lookup{Prefix: prefix, Key: literal}, nil)
	if !ok {
		t.Fatalf("no key for %q", literal)
	}
	s.lookup, s.key = prefix, key
	return s, alone
}

// TestMySQLLookupsMatchAlone: lookups of one prefix in one batch go as
// one statement with their keys in a list, and each gets what it gets
// alone — no row, one row, several rows in their order, NULLs, the same
// key twice, a key written with leading zeros — in wire form and
// decoded, while the batch's other statements go as before.
func TestMySQLLookupsMatchAlone(t *testing.T) {
	m, name := openMySQLCombinedT(t, 2, 1)
	unionTable(t, name)
	lookupTable(t, name)
	byKey := "SELECT k, i, vc, n,`k` AS `dpproxy_key` FROM u WHERE `k` IN ("
	byGroup := "SELECT *,`grp` AS `dpproxy_key` FROM g WHERE `grp` IN ("
	for _, wire := range []bool{true, false} {
		var batch []*combinedStmt
		var want []*Rows
		add := func(s *combinedStmt, alone *Rows) { batch, want = append(batch, s), append(want, alone) }
		for _, k := range []string{"1", "7", "3", "99", "3", "012"} { // 99: no row; 3 twice
			add(lookupStmt(t, m, "SELECT k, i, vc, n FROM u WHERE k = "+k, byKey, k, wire))
			add(aloneStmt(t, m, "SELECT vc, k FROM u WHERE k > "+k+" LIMIT 2", "range", wire))
		}
		for _, g := range []string{"0", "2", "3"} { // 7 or 8 rows each
			add(lookupStmt(t, m, "SELECT * FROM g WHERE grp = "+g, byGroup, g, wire))
		}
		add(aloneStmt(t, m, "SELECT de FROM u WHERE k = 2", "", wire)) // no shape: alone
		before, unionedBefore := m.lookups.Load(), m.unioned.Load()
		if err := m.sendBatch(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		if got := m.lookups.Load() - before; got != 9 {
			t.Errorf("wire %v: %d lookups answered together, want 9 (6 by key, 3 by group)", wire, got)
		}
		if got := m.unioned.Load() - unionedBefore; got != 6 {
			t.Errorf("wire %v: %d statements in a UNION ALL, want the 6 ranges", wire, got)
		}
		checkAsAlone(t, batch, want) // myunion_test.go
		if n := len(want[len(want)-2].MySQLText) + len(want[len(want)-2].Values); n < 2 {
			t.Fatalf("the test's last group lookup has %d rows, want several", n)
		}
	}
}

// TestMySQLLookupKeyColumnChecked: where the key column does not compare
// with integers as integers (a character string: '05' = 5; YEAR; ENUM,
// whose = compares its index; BIT; a decimal) or does not give its key
// as the integer's text (ZEROFILL), the lookups fail over
// (errUnionFailed), and through queryPublic each still gets its own
// rows, the prefix then no longer sent and the shape answered by UNION
// ALLs instead.
func TestMySQLLookupKeyColumnChecked(t *testing.T) {
	m, name := openMySQLCombinedT(t, 2, 1)
	mysqlExec(t,
		"CREATE TABLE `"+name+"`.w (id INT PRIMARY KEY, s VARCHAR(10), y YEAR, d DECIMAL(5,0), z INT(4) ZEROFILL, e ENUM('a','b','c','d','e','f','g'), b BIT(8))",
		"INSERT INTO `"+name+"`.w VALUES (1, '05', 2024, 5, 5, 'e', 5), (2, '5x', 1999, 7, 7, 'g', 7)",
	)
	ctx := context.Background()
	for _, col := range []string{"s", "y", "d", "z", "e", "b"} {
		prefix := "SELECT id,`" + col + "` AS `dpproxy_key` FROM w WHERE `" + col + "` IN ("
		var batch []*combinedStmt
		for _, k := range []string{"5", "24", "7"} {
			s, _ := lookupStmt(t, m, "SELECT id FROM w WHERE "+col+" = "+k, prefix, k, true)
			batch = append(batch, s)
		}
		if err := m.sendBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for _, s := range batch {
			if !errors.Is(s.err, errUnionFailed) {
				t.Errorf("%s: %q %v, want errUnionFailed", s.sql, s.res.MySQLText, s.err)
			}
		}
	}

	// Through queryPublic: '05' = 5 and '5x' = 5 both hold, each lookup
	// gets its own rows, and the shape is marked.
	prefix := "SELECT id,`s` AS `dpproxy_key` FROM w WHERE `s` IN ("
	want := map[string]string{}
	for _, k := range []string{"5", "6"} {
		sql := "SELECT id FROM w WHERE s = " + k
		res, err := m.QueryMySQLText(WithStatement(ctx, ResultLimit{}, "by s", Lookup{Prefix: prefix, Key: k}), sql)
		if err != nil {
			t.Fatal(err)
		}
		want[k] = fmt.Sprintf("%q", res.MySQLText)
	}
	if want["5"] != `["\x011" "\x012"]` {
		t.Fatalf("the test's string column: s = 5 alone gave %s, want ids 1 and 2", want["5"])
	}
	var wg sync.WaitGroup
	for j := range 8 {
		k := []string{"5", "6"}[j%2]
		wg.Go(func() {
			for range 10 {
				lctx := WithStatement(ctx, ResultLimit{}, "by s", Lookup{Prefix: prefix, Key: k})
				res, err := m.QueryMySQLText(lctx, "SELECT id FROM w WHERE s = "+k)
				if got := fmt.Sprintf("%q", res.MySQLText); err != nil || got != want[k] {
					t.Errorf("s = %s: %s %v, want %s", k, got, err, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
	if !m.noLookup.Contains(prefix) || m.noUnion.Contains("by s") {
		t.Errorf("after the lookups failed over: prefix left out %v, shape left out of unions %v; want true, false",
			m.noLookup.Contains(prefix), m.noUnion.Contains("by s"))
	}
	if m.unioned.Load() == 0 {
		t.Error("the shape's statements were not answered by UNION ALLs once its lookups failed over")
	}
}

// TestMySQLLookupColumnsOfAnyType: a lookup's statement selects the
// lookup's own columns, so columns a UNION ALL could change (decimals,
// floats, binary strings, unsigned BIGINTs) are answered together too,
// each lookup getting what it gets alone; keys are compared exactly up
// to 2^64 - 1 and below zero, literal and parameter alike.
func TestMySQLLookupColumnsOfAnyType(t *testing.T) {
	m, name := openMySQLCombinedT(t, 2, 1)
	mysqlExec(t,
		"CREATE TABLE `"+name+"`.ub (id BIGINT UNSIGNED PRIMARY KEY, d DECIMAL(8,3), f DOUBLE, vb VARBINARY(8), n INT NULL)",
		"INSERT INTO `"+name+"`.ub VALUES (18446744073709551615, 1.5, 0.25, 'x', NULL), (5, -2.125, 1e300, '', 3), (9223372036854775808, 0, -0.5, NULL, 4)",
		"CREATE TABLE `"+name+"`.sg (id BIGINT PRIMARY KEY, d DECIMAL(8,3))",
		"INSERT INTO `"+name+"`.sg VALUES (-3, 7.5), (5, 1.25)",
	)
	ctx := context.Background()
	for _, wire := range []bool{true, false} {
		var batch []*combinedStmt
		var want []*Rows
		prefix := "SELECT id, d, f, vb, n,`id` AS `dpproxy_key` FROM ub WHERE `id` IN ("
		for _, k := range []string{"18446744073709551615", "5", "9223372036854775808", "6"} {
			s, alone := lookupStmt(t, m, "SELECT id, d, f, vb, n FROM ub WHERE id = "+k, prefix, k, wire)
			batch, want = append(batch, s), append(want, alone)
		}
		signed := "SELECT id, d,`id` AS `dpproxy_key` FROM sg WHERE `id` IN ("
		for _, k := range []int64{-3, 5, -4} {
			sql := "SELECT id, d FROM sg WHERE id = ?"
			alone, err := m.query(ctx, readMySQLDriverRows, sql, []any{k})
			if err != nil {
				t.Fatal(err)
			}
			s := newCombinedStmt(ctx, fmt.Sprintf("SELECT id, d FROM sg WHERE id = %d", k), []any{k}, false)
			s.shape, s.cols = "signed", alone.Columns
			s.lookup, s.key = signed, fmt.Sprint(k)
			batch, want = append(batch, s), append(want, alone)
		}
		before := m.lookups.Load()
		if err := m.sendBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if got := m.lookups.Load() - before; got != 7 {
			t.Errorf("wire %v: %d lookups answered together, want 7", wire, got)
		}
		checkAsAlone(t, batch, want)
	}
}

// TestMySQLLookupConcurrentCallers: many callers looking rows up by key
// through QueryMySQLText and QueryPublic (the key a parameter) get their
// own rows while most of their lookups are answered together.
func TestMySQLLookupConcurrentCallers(t *testing.T) {
	m, name := openMySQLCombinedT(t, 4, 1)
	unionTable(t, name)
	const prefix = "SELECT k, vc, n,`k` AS `dpproxy_key` FROM u WHERE `k` IN ("
	text := func(k int) context.Context {
		return WithStatement(context.Background(), ResultLimit{}, "SELECT k, vc, n FROM u WHERE k = ?", Lookup{Prefix: prefix, Key: fmt.Sprint(k)})
	}
	param := WithStatement(context.Background(), ResultLimit{}, "SELECT k, vc, n FROM u WHERE k = ?", Lookup{Prefix: prefix})
	want := map[int]string{}
	for k := 1; k <= 40; k++ {
		res, err := m.QueryMySQLText(text(k), fmt.Sprintf("SELECT k, vc, n FROM u WHERE k = %d", k))
		if err != nil || len(res.MySQLText) != 1 {
			t.Fatalf("k = %d alone: %v %v", k, res, err)
		}
		want[k] = string(res.MySQLText[0])
	}
	if _, err := m.QueryPublic(param, "SELECT k, vc, n FROM u WHERE k = ?", int64(1)); err != nil {
		t.Fatal(err) // seen, alone
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				k := (g*7+i)%40 + 1
				if g%2 == 0 {
					res, err := m.QueryMySQLText(text(k), fmt.Sprintf("SELECT k, vc, n FROM u WHERE k = %d", k))
					if err != nil || len(res.MySQLText) != 1 || string(res.MySQLText[0]) != want[k] {
						t.Errorf("k = %d: %v %v", k, res, err)
						return
					}
					continue
				}
				res, err := m.QueryPublic(param, "SELECT k, vc, n FROM u WHERE k = ?", int64(k))
				if err != nil || len(res.Values) != 1 || fmt.Sprint(res.Values[0][0]) != fmt.Sprint(k) {
					t.Errorf("k = ? (%d): %v %v", k, res, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := m.Stats().Lookups; n < 16*50/2 {
		t.Errorf("%d of %d lookups answered together, want most", n, 16*50)
	} else {
		t.Logf("%d of %d lookups answered together", n, 16*50)
	}
}

func TestLookupKey(t *testing.T) {
	const p = "SELECT a,`k` AS `dpproxy_key` FROM t WHERE `k` IN ("
	for _, c := range []struct {
		l    Lookup
		args []any
		key  string
		ok   bool
	}{
		{Lookup{Prefix: p, Key: "42"}, nil, "42", true},
		{Lookup{Prefix: p, Key: "0042"}, nil, "42", true},
		{Lookup{Prefix: p, Key: "000"}, nil, "0", true},
		{Lookup{Prefix: p, Key: "42"}, []any{int64(1)}, "", false}, // a literal and a parameter
		{Lookup{Prefix: p}, []any{int64(-7)}, "-7", true},
		{Lookup{Prefix: p}, []any{uint64(18446744073709551615)}, "18446744073709551615", true},
		{Lookup{Prefix: p}, []any{int32(5)}, "", false}, // no front end gives one
		{Lookup{Prefix: p}, []any{"5"}, "", false},      // a string: '5x' = 5
		{Lookup{Prefix: p}, []any{5.0}, "", false},
		{Lookup{Prefix: p}, []any{[]byte("5")}, "", false},
		{Lookup{Prefix: p}, []any{int64(1), int64(2)}, "", false},
		{Lookup{Prefix: p}, nil, "", false},
		{Lookup{}, nil, "", false},
		{Lookup{Key: "5"}, nil, "", false},
	} {
		key, ok := lookupKey(c.l, c.args)
		if key != c.key || ok != c.ok {
			t.Errorf("lookupKey(%+v, %v) = %q %v, want %q %v", c.l, c.args, key, ok, c.key, c.ok)
		}
	}
}

func TestLookupRow(t *testing.T) {
	enc := func(vals ...string) []byte {
		var p []byte
		for _, v := range vals {
			if v == "NULL" {
				p = append(p, mysqlNullValue)
				continue
			}
			p = appendLenEncBytes(p, []byte(v))
		}
		return p
	}
	for _, c := range []struct {
		name string
		p    []byte
		n    int
		row  []byte
		key  string
		ok   bool
	}{
		{"values and a key", enc("a", "", "7"), 3, enc("a", ""), "7", true},
		{"NULLs before the key", enc("NULL", "b", "NULL", "-12"), 4, enc("NULL", "b", "NULL"), "-12", true},
		{"the key alone", enc("3"), 1, nil, "3", true},
		{"a NULL key", enc("a", "NULL"), 2, nil, "", false},
		{"an empty key", enc("a", ""), 2, nil, "", false},
		{"more columns than said", enc("a", "b", "7"), 2, nil, "", false},
		{"fewer columns than said", enc("7"), 2, nil, "", false},
		{"cut short", enc("abc", "7")[:3], 2, nil, "", false},
		{"empty", nil, 2, nil, "", false},
	} {
		row, key, ok := lookupRow(c.p, c.n)
		if ok != c.ok || ok && (!bytes.Equal(row, c.row) || key != c.key) {
			t.Errorf("%s: lookupRow = %q %q %v, want %q %q %v", c.name, row, key, ok, c.row, c.key, c.ok)
		}
	}
}

// TestMySQLLookupResultSplits: a lookup statement's rows go to the
// lookups of their key, without it, in wire form or decoded; a row of a
// key none asked for, or a key column not an integer, fails them over.
func TestMySQLLookupResultSplits(t *testing.T) {
	row := func(v, key string) []byte { return appendLenEncBytes(appendLenEncBytes(nil, []byte(v)), []byte(key)) }
	eof := []byte{0xfe, 0, 0, 2, 0, 0, 0}
	read := func(payloads ...[]byte) []*combinedStmt {
		stmts := []*combinedStmt{
			{ctx: context.Background(), wire: true, key: "5", cols: []Column{{Name: "vc", Type: sqltypes.Text}}},
			{ctx: context.Background(), key: "9", cols: []Column{{Name: "vc", Type: sqltypes.Text}}},
			{ctx: context.Background(), wire: true, key: "5", cols: []Column{{Name: "vc", Type: sqltypes.Text}}},
		}
		cmd := &mysqlCommand{stmts: stmts, sql: "l", keys: map[string][]int{"5": {0, 2}, "9": {1}}}
		r := &mysqlPacketReader{r: bufio.NewReader(bytes.NewReader(mysqlPackets(payloads...)))}
		if keep, err := readMySQLUnionResult(r, cmd); err != nil || !keep {
			t.Fatalf("keep %v, err %v", keep, err)
		}
		return stmts
	}
	cols := [][]byte{{2}, columnDef("vc", 0xfd), columnDef("dpproxy_key", 0x03)}
	stmts := read(append(cols, row("a", "5"), row("b1", "9"), row("c", "5"), row("b2", "9"), eof)...)
	for _, i := range []int{0, 2} {
		if s := stmts[i]; s.err != nil || fmt.Sprintf("%q", s.res.MySQLText) != `["\x01a" "\x01c"]` {
			t.Errorf("key 5, lookup %d: %q %v", i, s.res.MySQLText, s.err)
		}
	}
	if s := stmts[1]; s.err != nil || fmt.Sprint(s.res.Values) != "[[b1] [b2]]" {
		t.Errorf("key 9: %v %v", s.res, s.err)
	}
	for _, s := range read(append(cols, row("a", "5"), row("x", "6"), eof)...) {
		if !errors.Is(s.err, errUnionFailed) {
			t.Errorf("a key none asked for: %v %v", s.res, s.err)
		}
	}
	textKey := [][]byte{{2}, columnDef("vc", 0xfd), columnDef("dpproxy_key", 0xfd)}
	for _, s := range read(append(textKey, row("a", "5"), eof)...) {
		if !errors.Is(s.err, errUnionFailed) {
			t.Errorf("a character key column: %v %v", s.res, s.err)
		}
	}
}

// FuzzMySQLLookupResult: whatever the server sends as a lookup
// statement's result, reading it never panics, and either fails the
// connection or gives each lookup a result or an error.
func FuzzMySQLLookupResult(f *testing.F) {
	row := func(v, key string) []byte { return appendLenEncBytes(appendLenEncBytes(nil, []byte(v)), []byte(key)) }
	eof := []byte{0xfe, 0, 0, 2, 0, 0, 0}
	f.Add(mysqlPackets([]byte{2}, columnDef("vc", 0xfd), columnDef("dpproxy_key", 0x03), row("a", "5"), row("b", "9"), eof))
	f.Add(mysqlPackets([]byte{2}, columnDef("vc", 0xfd), columnDef("dpproxy_key", 0x08), row("a", "7"), eof))
	f.Add(mysqlPackets([]byte{2}, columnDef("vc", 0xfd), columnDef("dpproxy_key", 0x03), []byte{mysqlNullValue, 1, '5'}, eof))
	f.Add(mysqlPackets([]byte{0xff, 0x3c, 0x04, '#', '4', '2', 'S', '2', '1', 'x'}))
	f.Fuzz(func(t *testing.T, data []byte) {
		stmts := []*combinedStmt{
			{ctx: context.Background(), wire: true, key: "5", cols: []Column{{Name: "vc", Type: sqltypes.Text}}},
			{ctx: context.Background(), key: "9", cols: []Column{{Name: "vc", Type: sqltypes.Text}}},
		}
		cmd := &mysqlCommand{stmts: stmts, sql: "l", keys: map[string][]int{"5": {0}, "9": {1}}}
		r := &mysqlPacketReader{r: bufio.NewReader(bytes.NewReader(data))}
		if _, err := readMySQLUnionResult(r, cmd); err != nil {
			return
		}
		for _, s := range stmts {
			if (s.res == nil) == (s.err == nil) {
				t.Fatalf("a lookup with result %v and error %v", s.res, s.err)
			}
		}
	})
}
