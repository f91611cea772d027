package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// openMySQLCombinedT opens a MySQL backend on a fresh database (see
// mysqlDatabase) whose public-table statements go through a combiner of
// the given lanes, every statement waiting for a lane.
func openMySQLCombinedT(t *testing.T, maxConns, lanes int) (*MySQL, string) {
	t.Helper()
	name, dbDSN := mysqlDatabase(t, mysqlDSN(t))
	m := openMySQLT(t, dbDSN, maxConns)
	if !m.pipelinable {
		t.Fatalf("the test server's DSN %q cannot be combined", dbDSN)
	}
	m.setPipelineLanes(lanes)
	m.combiner.holdoff = time.Minute
	m.combiner.shorterThan = time.Minute
	return m, name
}

// mysqlExec runs stmts, in order, on the test server as its admin.
func mysqlExec(t *testing.T, stmts ...string) {
	t.Helper()
	admin := mysqlAdmin(t, mysqlDSN(t))
	for _, s := range stmts {
		if _, err := admin.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// mysqlAdmin is an ordinary (writable) connection to the server of dsn,
// closed when the test ends.
func mysqlAdmin(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return admin
}

// trickyStrings are string arguments whose literal needs escaping.
var trickyStrings = []string{
	"", "plain", "it's", `back\slash`, `"dq"`, "nl\nand\rcr", "nul\x00byte", "ctrl-z\x1a",
	"question?mark", "-- not a comment", "/* nor this */", "#hash", "é☃ unicode", `\'`, `'; DROP TABLE t; --`,
	"percent%_under", "`tick`",
}

// TestMySQLCombinedMatchesAlone: every statement combined gives what it
// gives alone, value for value and type for type, decoded and in wire
// form, its arguments written as literals.
func TestMySQLCombinedMatchesAlone(t *testing.T) {
	m, name := openMySQLCombinedT(t, 2, 1)
	mysqlExec(t,
		"CREATE TABLE `"+name+"`.ty (k INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT, i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED,"+
			" f FLOAT, db DOUBLE, de DECIMAL(12,3), ch CHAR(3), vc VARCHAR(40), tx TEXT, en ENUM('a','b'), st SET('x','y'), bn BINARY(2), vb VARBINARY(4), bl BLOB,"+
			" bt BIT(5), js JSON, tm TIME, yr YEAR, bo BOOLEAN, zf INT(5) ZEROFILL)",
		"INSERT INTO `"+name+"`.ty VALUES (1, -128, 255, -32768, -8388608, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615,"+
			" 1.5, 2.25e300, -123456789.125, 'ab', 'it''s é', 'long text', 'b', 'x,y', 'z\\0', 0x00ff, 0x616263, b'10101', '{\"a\": [1, 2]}', '-838:59:59', 2024, TRUE, 42)",
		"INSERT INTO `"+name+"`.ty (k) VALUES (2)",
	)
	ctx := context.Background()
	type query struct {
		sql  string
		args []any
		// alone: the statement cannot be combined exactly, and says so
		// (errRunAlone) when it is tried.
		alone bool
	}
	queries := []query{
		{"SELECT ti, tu, si, mi, i, iu, bi, bu, f, db, de FROM ty ORDER BY k", nil, false},
		{"SELECT ch, vc, tx, en, st, bn, vb, bl, bt, js, tm, yr, bo, zf FROM ty ORDER BY k", nil, false},
		// MariaDB reads these as column positions, MySQL as constants.
		{"SELECT k, vc FROM ty ORDER BY ?, k DESC", []any{int64(2)}, true},
		{"SELECT COUNT(*), MIN(vc) FROM ty GROUP BY ?", []any{int64(2)}, true},
		{"SELECT k, COUNT(*) FROM ty WHERE k > ? GROUP BY k ORDER BY k + ?", []any{int64(0), int64(1)}, false},
		{"SELECT k FROM ty ORDER BY k LIMIT ?", []any{int64(1)}, false},
		{"SELECT k FROM ty ORDER BY k LIMIT ?, ?", []any{int64(1), int64(1)}, false},
		{"SELECT k FROM ty ORDER BY k LIMIT ? OFFSET ?", []any{int64(1), int64(1)}, false},
		{"SELECT ? AS x, ? - ? FROM ty WHERE k = 1", []any{int64(1), int64(1), int64(-1)}, false},
		{"SELECT zf, bu + ? FROM ty WHERE k = 1", []any{uint64(0)}, false},
		// Text forms of these differ from the binary protocol's values.
		{"SELECT f FROM ty WHERE k = ?", []any{int64(1)}, true},
		{"SELECT tm FROM ty WHERE k = ?", []any{int64(1)}, true},
		// An error with literals may be theirs: it is the alone run's to say.
		{"SELECT nosuch FROM ty WHERE k = ?", []any{int64(1)}, true},
		{"SELECT k, vc FROM ty WHERE k = ?", []any{int64(1)}, false},
		{"SELECT k, vc FROM ty WHERE vc LIKE ? OR k = ?", []any{"it's %", int64(-1)}, false},
		{"SELECT ?, ? FROM ty WHERE k = 1", []any{int64(-5), nil}, false},
		{"SELECT k FROM ty WHERE db > ? OR f < ?", []any{1.5, 1e-300}, false},
		{"SELECT ? FROM ty WHERE k = 1", []any{1.5}, true}, // a DOUBLE column
		{"SELECT COUNT(*), SUM(i), AVG(de) FROM ty", nil, false},
		{"SELECT 'a?b', `k` FROM ty WHERE k = ? AND 'it''s?' <> ?", []any{int64(2), "x"}, false},
		{"SELECT de * ? FROM ty WHERE k = 1", []any{"2.5"}, true}, // a DOUBLE (a decimal argument is bound as a string)
		{"SELECT de FROM ty WHERE de < ?", []any{"2.5"}, false},
	}
	for _, s := range trickyStrings {
		queries = append(queries, query{"SELECT ?, LENGTH(?), HEX(?) FROM ty WHERE k = 1", []any{s, s, s}, false})
	}
	for _, q := range queries {
		text, ok := interpolateMySQL(q.sql, mysqlArgs(q.args))
		if !ok {
			if !q.alone && q.args[0] != "é☃ unicode" {
				t.Errorf("%s %v: no literal text", q.sql, q.args)
			}
			continue
		}
		for _, wire := range []bool{false, true} {
			read := readMySQLDriverRows
			if wire {
				read = readMySQLTextRows
			}
			alone, aloneErr := m.query(ctx, read, q.sql, q.args)
			combined, _, err := m.combiner.run(ctx, text, q.args, wire)
			if q.alone {
				if !errors.Is(err, errRunAlone) {
					t.Errorf("%s %v: combined gave %v %v, want errRunAlone", q.sql, q.args, combined, err)
				}
				continue
			}
			if aloneErr != nil {
				t.Fatalf("%s alone: %v", q.sql, aloneErr)
			}
			if err != nil {
				t.Fatalf("%s combined (%s): %v", q.sql, text, err)
			}
			if !matchColumns(combined, alone.Columns) {
				t.Fatalf("%s: columns combined %v, alone %v", q.sql, combined.Columns, alone.Columns)
			}
			if !reflect.DeepEqual(alone, combined) {
				t.Errorf("%s %q (wire form %v):\nalone    %+v\ncombined %+v", q.sql, q.args, wire, alone, combined)
			}
		}
	}
}

// TestMySQLCombinedColumnsDiffer: a statement whose literal gives its
// column another type than its parameter (MariaDB's -? is a DECIMAL,
// - -2 a BIGINT) is found out, and runs alone from then on.
func TestMySQLCombinedColumnsDiffer(t *testing.T) {
	m, _ := openMySQLCombinedT(t, 2, 1)
	ctx := context.Background()
	const sql = "SELECT -? FROM t WHERE id = 1"
	for i := range 3 {
		res, err := m.QueryPublic(ctx, sql, int64(-2))
		if err != nil || len(res.Values) != 1 || res.Columns[0].Type != sqltypes.Numeric || res.Columns[0].Name != "-?" {
			t.Fatalf("run %d: %+v %v, want a numeric column -?", i, res, err)
		}
	}
	if last, _ := m.seen.Peek(sql); !last.alone {
		t.Error("the statement is still combined")
	}
	if n, _ := m.combiner.stats(); n != 1 {
		t.Errorf("%d statements combined, want the one that found the difference", n)
	}
}

// TestMySQLCombinerAnswersEachCaller: many callers at once on two lanes;
// every caller gets its own answer, an error stays with the statement
// that caused it, a statement whose result cannot be read combined runs
// alone, and statements were sent several to a batch.
func TestMySQLCombinerAnswersEachCaller(t *testing.T) {
	m, _ := openMySQLCombinedT(t, 4, 2)
	const callers, each = 24, 40
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range each {
				n := int64(g*1000 + i)
				s := trickyStrings[(g+i)%len(trickyStrings)]
				if s == "é☃ unicode" {
					s = "ascii" // CONCAT with the latin1 column below would fail
				}
				switch i % 5 {
				case 0: // an error of its own
					_, err := m.QueryPublic(ctx, "SELECT nosuch FROM t WHERE id = ?", n)
					var me *mysql.MySQLError
					if !errors.As(err, &me) || me.Number != 1054 {
						t.Errorf("caller %d: unknown column gave %v", g, err)
						return
					}
				case 1: // a date: runs alone
					res, err := m.QueryPublic(ctx, "SELECT d FROM t WHERE id = ?", int64(1))
					if err != nil || len(res.Values) != 1 || res.Values[0][0] != time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) {
						t.Errorf("caller %d: date: %v %v", g, res, err)
						return
					}
				case 2: // wire form
					res, err := m.QueryMySQLText(ctx, "SELECT id * ?, CONCAT(v, ?) FROM t WHERE id = 2", n, s)
					if err != nil {
						t.Errorf("caller %d: %v", g, err)
						return
					}
					want := appendLenEncBytes(appendLenEncBytes(nil, []byte(strconv.FormatInt(2*n, 10))), []byte("b"+s))
					if len(res.MySQLText) != 1 || string(res.MySQLText[0]) != string(want) {
						t.Errorf("caller %d: got %q, want %q", g, res.MySQLText, want)
					}
				default:
					res, err := m.QueryPublic(ctx, "SELECT ?, v, c, ? FROM t WHERE id = ?", n, s, int64(3))
					if err != nil {
						t.Errorf("caller %d: %v", g, err)
						return
					}
					if want := fmt.Sprint([][]any{{n, "c", "30.25", s}}); fmt.Sprint(res.Values) != want {
						t.Errorf("caller %d: got %v, want %v", g, res.Values, want)
					}
				}
			}
		})
	}
	wg.Wait()
	stmts, batches := m.combiner.stats()
	if stmts < callers*each/2 {
		t.Errorf("%d of %d statements went through the combiner", stmts, callers*each)
	}
	if batches >= stmts {
		t.Errorf("%d batches for %d statements: nothing was combined", batches, stmts)
	}
	if last, _ := m.seen.Peek("SELECT d FROM t WHERE id = ?"); !last.alone {
		t.Error("a statement with a date column is still combined")
	}
	t.Logf("%d statements in %d batches", stmts, batches)
	if s := m.db.Stats(); s.OpenConnections > 4 {
		t.Errorf("%d connections open, want at most 4", s.OpenConnections)
	}
}

// TestMySQLCombinerOnlySeenTexts: a text runs alone the first time, and
// combined afterwards; one whose arguments have no literal runs alone.
func TestMySQLCombinerOnlySeenTexts(t *testing.T) {
	m, _ := openMySQLCombinedT(t, 2, 1)
	ctx := context.Background()
	combined := func() int64 { n, _ := m.combiner.stats(); return n }
	for i, step := range []struct {
		sql      string
		args     []any
		combined int64
	}{
		{"SELECT v FROM t WHERE id = ?", []any{int64(1)}, 0},
		{"SELECT v FROM t WHERE id = ?", []any{int64(2)}, 1},
		{"SELECT v FROM t WHERE id = ?", []any{int64(3)}, 2},
		{"SELECT v FROM t WHERE v = ?", []any{[]byte("a")}, 2},
		{"SELECT v FROM t WHERE v = ?", []any{[]byte("a")}, 2}, // no literal for bytes
		{"SELECT v FROM t WHERE v = ?", []any{"a"}, 2},         // marked alone
		{"SELECT v /* a comment */ FROM t", nil, 2},
		{"SELECT v /* a comment */ FROM t", nil, 3}, // no arguments: sent as it is
	} {
		if _, err := m.QueryPublic(ctx, step.sql, step.args...); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := combined(); got != step.combined {
			t.Fatalf("step %d (%s): %d statements combined, want %d", i, step.sql, got, step.combined)
		}
	}
}

// TestMySQLCombinerBenchesSlowTexts: a text whose combined run was slow
// runs alone until readmitAfter runs alone shorter than leaveAt have
// followed, then twice as many after its next slow run.
func TestMySQLCombinerBenchesSlowTexts(t *testing.T) {
	m, _ := openMySQLCombinedT(t, 2, 1)
	m.combiner.shorterThan = 50 * time.Millisecond
	m.combiner.leaveAt = 300 * time.Millisecond
	m.combiner.readmitAfter = 2
	ctx := context.Background()
	combined := func() int64 { n, _ := m.combiner.stats(); return n }
	for i, step := range []struct {
		sleep    float64
		combined int64
	}{
		{0, 0},   // first run: alone
		{0, 1},   // seen and short: combined
		{0.4, 2}, // combined, and too long: leaves
		{0, 2},   // alone, short again: 1 of 2
		{0, 2},   // 2 of 2
		{0, 3},   // back in a batch
		{0.4, 4}, // too long again: leaves for 4 short runs alone
		{0, 4},
		{0, 4},
		{0, 4},
		{0, 4},
		{0, 5}, // back
	} {
		if _, err := m.QueryPublic(ctx, "SELECT SLEEP(?) AS s", step.sleep); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := combined(); got != step.combined {
			t.Errorf("step %d (%.1f s): %d combined, want %d", i+1, step.sleep, got, step.combined)
		}
	}
}

// TestMySQLCombinerCallerGivesUp: a caller that gives up gets its error at
// once; the batch's connection is closed, which ends the statement on the
// server, and the next statements run.
func TestMySQLCombinerCallerGivesUp(t *testing.T) {
	m, _ := openMySQLCombinedT(t, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := m.combiner.run(ctx, "SELECT SLEEP(5)", nil, false)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %v", d)
	}
	res, _, err := m.combiner.run(context.Background(), "SELECT 7", nil, false)
	if err != nil || fmt.Sprint(res.Values) != "[[7]]" {
		t.Fatalf("after the canceled batch: %v %v", res, err)
	}
}

// TestMySQLCombinerConnectionLost: a batch whose connection the server
// kills; its statements run again alone and answer.
func TestMySQLCombinerConnectionLost(t *testing.T) {
	m, _ := openMySQLCombinedT(t, 4, 1)
	admin := mysqlAdmin(t, mysqlDSN(t))
	go func() {
		for range 100 {
			time.Sleep(20 * time.Millisecond)
			var id int64
			if admin.QueryRow("SELECT id FROM information_schema.processlist WHERE info LIKE 'SELECT SLEEP(0.5), %'").Scan(&id) == nil {
				_, _ = admin.Exec("KILL CONNECTION " + strconv.FormatInt(id, 10))
				return
			}
		}
	}()
	ctx := context.Background()
	res, _, err := m.combiner.run(ctx, "SELECT SLEEP(0.5), 'first'", nil, false)
	if !errors.Is(err, errCombinerBusy) {
		t.Fatalf("the killed batch's statement: %v %v, want errCombinerBusy (run alone)", res, err)
	}
	res, err = m.QueryPublic(ctx, "SELECT 'after'")
	if err != nil || fmt.Sprint(res.Values) != "[[after]]" {
		t.Fatalf("after the kill: %v %v", res, err)
	}
}

// TestMySQLCombinerResultLimit: a combined result over the row cap fails
// alone, the next statement on the connection is read in step, and the
// connection is kept (its session is as it was).
func TestMySQLCombinerResultLimit(t *testing.T) {
	m, _ := openMySQLCombinedT(t, 1, 1)
	ctx := context.Background()
	big := "SELECT seq FROM seq_1_to_1000"
	if _, err := m.query(ctx, readMySQLDriverRows, big, nil); err != nil {
		t.Skipf("no Sequence engine: %v", err)
	}
	connectionID := func() any {
		t.Helper()
		res, _, err := m.combiner.run(ctx, "SELECT CONNECTION_ID()", nil, false)
		if err != nil {
			t.Fatal(err)
		}
		return res.Values[0][0]
	}
	before := connectionID()
	defer func() {
		if after := connectionID(); after != before {
			t.Errorf("connection %v before the capped results, %v after: it was dropped", before, after)
		}
	}()
	for _, wire := range []bool{false, true} {
		_, _, err := m.combiner.run(WithResultLimit(ctx, ResultLimit{Rows: 10}), big, nil, wire)
		var tooLarge *ResultTooLargeError
		if !errors.As(err, &tooLarge) || !tooLarge.Rows {
			t.Fatalf("wire form %v: got %v, want the row cap", wire, err)
		}
		res, _, err := m.combiner.run(ctx, "SELECT COUNT(*) FROM seq_1_to_1000", nil, wire)
		if err != nil || len(res.Values)+len(res.MySQLText) != 1 {
			t.Fatalf("after the capped result: %v %v", res, err)
		}
	}
}

func TestMySQLPipelinable(t *testing.T) {
	for _, c := range []struct {
		dsn  string
		want bool
	}{
		{"u:p@tcp(db:3306)/x", true},
		{"u:p@tcp(db:3306)/x?charset=utf8mb4,utf8", true},
		{"u:p@tcp(db:3306)/x?collation=latin1_swedish_ci", true},
		{"u:p@tcp(db:3306)/x?charset=gbk", false},
		{"u:p@tcp(db:3306)/x?collation=sjis_japanese_ci", false},
		{"u:p@tcp(db:3306)/x?compress=true", false},
		{"u:p@tcp(db:3306)/x?tls=skip-verify", false},
		{"u:p@tcp(db:3306)/x?tls=false", true},
	} {
		cfg, err := mysqlConfig(c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		if got := mysqlPipelinable(cfg); got != c.want {
			t.Errorf("%s: %v, want %v", c.dsn, got, c.want)
		}
	}
}

func TestInterpolateMySQL(t *testing.T) {
	for _, c := range []struct {
		sql  string
		args []any
		want string // "" when it cannot be written
	}{
		{"SELECT 1", nil, "SELECT 1"},
		{"SELECT ?", []any{int64(-3)}, "SELECT  -3 "},
		{"SELECT ?, ?", []any{uint64(18446744073709551615), nil}, "SELECT  18446744073709551615 ,  NULL "},
		{"SELECT ?", []any{0.1}, "SELECT  1e-01 "},
		{"SELECT ?", []any{"a'b\\c\"d\n\x00\x1a\r"}, `SELECT  'a\'b\\c\"d\n\0\Z\r' `},
		{"SELECT '?', \"?\", `?`, ?", []any{"x"}, "SELECT '?', \"?\", `?`,  'x' "},
		{`SELECT 'it''s \' ?', ?`, []any{"x"}, `SELECT 'it''s \' ?',  'x' `},
		{"SELECT `a``?`, ?", []any{"x"}, "SELECT `a``?`,  'x' "},
		{"SELECT 1-?", []any{1.0}, "SELECT 1- 1e+00 "},
		{"SELECT ?e1, X?, @?", []any{"a", "b", "c"}, "SELECT  'a' e1, X 'b' , @ 'c' "},
		{"SELECT a FROM t ORDER BY a LIMIT ?", []any{int64(3)}, "SELECT a FROM t ORDER BY a LIMIT  3 "},
		{"SELECT a FROM t ORDER BY ?", []any{int64(2)}, ""},
		{"SELECT a FROM t group\n by a, ?", []any{int64(2)}, ""},
		{"SELECT a FROM t ORDER BY a + ?", []any{int64(2)}, "SELECT a FROM t ORDER BY a +  2 "},
		{"SELECT a FROM t WHERE b IN (?) ORDER BY a", []any{int64(2)}, "SELECT a FROM t WHERE b IN ( 2 ) ORDER BY a"},
		{"SELECT a FROM t ORDERBY ?", []any{int64(2)}, "SELECT a FROM t ORDERBY  2 "},
		{"SELECT a FROM t limit ?,? ", []any{int64(2), int64(3)}, "SELECT a FROM t limit  2 , 3  "},
		{"SELECT a FROM t LIMIT ? OFFSET ?", []any{int64(2), int64(3)}, "SELECT a FROM t LIMIT  2  OFFSET  3 "},
		{"SELECT a FROM t WHERE b IN (?, ?) LIMIT 1", []any{int64(2), int64(3)}, "SELECT a FROM t WHERE b IN ( 2 ,  3 ) LIMIT 1"},
		{"SELECT 1 --?", []any{int64(1)}, ""},
		{"SELECT ? /* x */", []any{int64(1)}, ""},
		{"SELECT ? # x", []any{int64(1)}, ""},
		{"SELECT 'open ?", []any{int64(1)}, ""},
		{"SELECT ?", nil, "SELECT ?"}, // sent as it is: the server refuses it, as it would alone
		{"SELECT ?", []any{int64(1), int64(2)}, ""},
		{"SELECT ?", []any{[]byte("x")}, ""},
		{"SELECT ?", []any{time.Now()}, ""},
		{"SELECT ?", []any{true}, ""},
		{"SELECT ?", []any{"é"}, ""}, // a literal's character set is not a parameter's
		{"SELECT ?", []any{"\x7f\x00"}, "SELECT  '\x7f\\0' "},
	} {
		got, ok := interpolateMySQL(c.sql, c.args)
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("%s %v: got %q, want %q", c.sql, c.args, got, c.want)
		}
	}
}

// FuzzMySQLStringLiteral: a string's literal is one quoted token, which
// MySQL's unescaping (the rules of its lexer for '...' with backslash
// escapes) reads back as the string.
func FuzzMySQLStringLiteral(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit := string(appendMySQLString(nil, s))
		if end := quotedEnd(lit, 0); end != len(lit) {
			t.Fatalf("%q: the literal %q ends at %d of %d", s, lit, end, len(lit))
		}
		if got := unescapeMySQL(lit[1 : len(lit)-1]); got != s {
			t.Fatalf("%q: read back as %q", s, got)
		}
	})
}

// unescapeMySQL reads a single-quoted literal's body as MySQL does.
func unescapeMySQL(body string) string {
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '\'' { // a doubled quote
			i++
		} else if c == '\\' && i+1 < len(body) {
			i++
			switch c = body[i]; c {
			case '0':
				c = 0
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 'Z':
				c = 0x1a
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// TestMySQLCombinerLaneConnections: a lane keeps its connection from one
// batch to the next, and Close closes the connections kept.
func TestMySQLCombinerLaneConnections(t *testing.T) {
	m, name := openMySQLCombinedT(t, 4, 1)
	admin := mysqlAdmin(t, mysqlDSN(t))
	ctx := context.Background()
	ids := map[any]bool{}
	for range 5 {
		res, _, err := m.combiner.run(ctx, "SELECT CONNECTION_ID()", nil, false)
		if err != nil {
			t.Fatal(err)
		}
		ids[res.Values[0][0]] = true
	}
	if len(ids) != 1 {
		t.Errorf("five batches on one lane used %d connections", len(ids))
	}
	open := func() int {
		var n int
		if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.processlist WHERE db = ?", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := open(); n != 1 {
		t.Errorf("%d connections to the database before Close, want the lane's", n)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for open() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := open(); n > 0 {
		t.Errorf("%d connections still open after Close", n)
	}
}

// TestMatchColumnsCopiesSharedColumns: a union's branches share their
// columns, so matchColumns changes a result's columns on a copy of its
// own and leaves the other branches' as they were.
func TestMatchColumnsCopiesSharedColumns(t *testing.T) {
	shared := []Column{{Name: "k", Type: sqltypes.Int8}, {Name: "-?", Type: sqltypes.Int8}}
	a := &Rows{Columns: shared}
	b := &Rows{Columns: shared}
	alone := []Column{{Name: "k", Type: sqltypes.Int8}, {Name: "-?", Type: sqltypes.Int8}}
	if !matchColumns(a, alone) || &a.Columns[0] != &shared[0] {
		t.Fatal("columns as they were alone: copied or refused")
	}
	alone = []Column{{Name: "k", Type: sqltypes.Int8}, {Name: "- ?", Type: sqltypes.Int8}}
	if !matchColumns(a, alone) {
		t.Fatal("a renamed parameter column refused")
	}
	if a.Columns[1].Name != "- ?" || b.Columns[1].Name != "-?" || shared[1].Name != "-?" {
		t.Fatalf("changed %v; the other branch's %v, want it untouched", a.Columns, b.Columns)
	}
}
