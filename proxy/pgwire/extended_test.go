package pgwire

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"

	"github.com/dpproxy/dpproxy/sqltypes"
)

func TestRawNodePostgresPipeline(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	// node-postgres: Parse, Bind, Describe('P'), Execute, Sync in one write,
	// untyped text parameters.
	c.sendAll(
		&pgproto3.Parse{Query: "echo int8,text"},
		&pgproto3.Bind{Parameters: [][]byte{[]byte("42"), []byte("hi")}},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
	)
	r := c.untilReady()
	if r.seq != "12TDCZ" || r.tags[0] != "SELECT 1" || string(r.rows[0][0]) != "42" || string(r.rows[0][1]) != "hi" || r.status != 'I' {
		t.Fatalf("got %s %q %q", r.seq, r.tags, r.rows)
	}
	if f := r.fields[0]; len(f) != 2 || f[0].DataTypeOID != 20 || f[1].DataTypeOID != 25 || f[0].Format != 0 || string(f[0].Name) != "c1" {
		t.Errorf("fields %+v", f)
	}
	if got := ts.sessions.lastExecuted().params; len(got) != 2 || got[0] != int64(42) || got[1] != "hi" {
		t.Errorf("engine got %#v", got)
	}
}

func TestRawDescribeMatchesExecute(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.sendAll(
		&pgproto3.Parse{Name: "s", Query: "select canned", ParameterOIDs: nil},
		&pgproto3.Describe{ObjectType: 'S', Name: "s"},
		&pgproto3.Bind{PreparedStatement: "s", DestinationPortal: "p", ResultFormatCodes: []int16{1, 1, 1, 0, 1, 1, 0, 1}},
		&pgproto3.Describe{ObjectType: 'P', Name: "p"},
		&pgproto3.Execute{Portal: "p"},
		&pgproto3.Sync{},
	)
	r := c.untilReady()
	if r.seq != "1tT2TDDCZ" {
		t.Fatalf("got %s", r.seq)
	}
	if len(r.paramOIDs[0]) != 0 {
		t.Errorf("parameters %v", r.paramOIDs[0])
	}
	stmtFields, portalFields := r.fields[0], r.fields[1]
	wantOIDs := []uint32{20, 1700, 701, 25, 1082, 16, 25, 1184}
	wantSizes := []int16{8, -1, 8, -1, 4, 1, -1, 8}
	for i := range wantOIDs {
		s, p := stmtFields[i], portalFields[i]
		if s.DataTypeOID != wantOIDs[i] || p.DataTypeOID != wantOIDs[i] || s.DataTypeSize != wantSizes[i] ||
			string(s.Name) != string(p.Name) || s.TypeModifier != -1 || s.Format != 0 {
			t.Errorf("column %d: statement %+v portal %+v", i, s, p)
		}
		if want := []int16{1, 1, 1, 0, 1, 1, 0, 1}[i]; p.Format != want {
			t.Errorf("column %d: portal format %d", i, p.Format)
		}
	}
	row := r.rows[0]
	if binary.BigEndian.Uint64(row[0]) != 1 {
		t.Errorf("int8 %x", row[0])
	}
	// 12.50: 2 digits, weight 0, positive, scale 2: 0012 5000.
	if want := []byte{0, 2, 0, 0, 0, 0, 0, 2, 0, 12, 0x13, 0x88}; string(row[1]) != string(want) {
		t.Errorf("numeric %x, want %x", row[1], want)
	}
	if math.Float64frombits(binary.BigEndian.Uint64(row[2])) != 0.1 {
		t.Errorf("float8 %x", row[2])
	}
	if string(row[3]) != "ünïcode 'quoted'" {
		t.Errorf("text %q", row[3])
	}
	if days := int32(binary.BigEndian.Uint32(row[4])); days != 8840 { // 2024-03-15
		t.Errorf("date %d", days)
	}
	if string(row[5]) != "\x01" || row[6] != nil {
		t.Errorf("bool %x, null %x", row[5], row[6])
	}
	if us := int64(binary.BigEndian.Uint64(row[7])); us != cannedTime.Sub(pgEpoch).Microseconds() {
		t.Errorf("timestamptz %d", us)
	}
}

func TestRawRowLimitsSuspendAndResume(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.sendAll(
		&pgproto3.Parse{Query: "rows 5"},
		&pgproto3.Bind{},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Sync{},
	)
	r := c.untilReady()
	if r.seq != "12DDsDDsDCCZ" {
		t.Fatalf("got %s", r.seq)
	}
	for i, row := range r.rows {
		if string(row[0]) != string('0'+rune(i)) {
			t.Errorf("row %d: %q", i, row[0])
		}
	}
	// The rest, then nothing: a finished portal returns no rows.
	if r.tags[0] != "SELECT 1" || r.tags[1] != "SELECT 0" {
		t.Errorf("tags %q", r.tags)
	}
	if n := len(ts.sessions.executed); n != 1 {
		t.Errorf("statement executed %d times", n)
	}

	// Exactly as many rows as asked for: suspended (as in PostgreSQL), then
	// completed with none. A limit of 0 or a negative one means all rows.
	c.sendAll(&pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 5}, &pgproto3.Execute{}, &pgproto3.Sync{},
		&pgproto3.Bind{}, &pgproto3.Execute{MaxRows: math.MaxUint32}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "2DDDDDsCZ" || r.tags[0] != "SELECT 0" {
		t.Errorf("got %s %q", r.seq, r.tags)
	}
	if r := c.untilReady(); r.seq != "2DDDDDCZ" || r.tags[0] != "SELECT 5" {
		t.Errorf("got %s %q", r.seq, r.tags)
	}
}

func TestRawPortalsLiveUntilTransactionEnds(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.send(&pgproto3.Query{String: "begin"})
	if r := c.untilReady(); r.seq != "CZ" || r.status != 'T' {
		t.Fatalf("begin: %s %c", r.seq, r.status)
	}
	c.sendAll(&pgproto3.Parse{Name: "s", Query: "rows 3"}, &pgproto3.Bind{PreparedStatement: "s", DestinationPortal: "cur"},
		&pgproto3.Execute{Portal: "cur", MaxRows: 2}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "12DDsZ" || r.status != 'T' {
		t.Fatalf("got %s %c", r.seq, r.status)
	}
	// The portal survives Sync inside a transaction block.
	c.sendAll(&pgproto3.Execute{Portal: "cur", MaxRows: 2}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "DCZ" || string(r.rows[0][0]) != "2" {
		t.Fatalf("got %s %q", r.seq, r.rows)
	}
	// A portal name in use.
	c.sendAll(&pgproto3.Bind{PreparedStatement: "s", DestinationPortal: "cur"}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "EZ" || r.errs[0].Code != "42P03" || r.status != 'E' {
		t.Fatalf("got %s %+v %c", r.seq, r.errs, r.status)
	}
	c.send(&pgproto3.Query{String: "rollback"})
	if r := c.untilReady(); r.seq != "CZ" || r.status != 'I' {
		t.Fatalf("rollback: %s %c", r.seq, r.status)
	}
	// The transaction's portals are gone; its statements are not.
	c.sendAll(&pgproto3.Execute{Portal: "cur"}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "EZ" || r.errs[0].Code != "34000" {
		t.Fatalf("got %s %+v", r.seq, r.errs)
	}
	c.sendAll(&pgproto3.Bind{PreparedStatement: "s", DestinationPortal: "cur"}, &pgproto3.Execute{Portal: "cur"}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "2DDDCZ" {
		t.Fatalf("got %s", r.seq)
	}
	// Outside a block, Sync ends the implicit transaction and its portals.
	c.sendAll(&pgproto3.Bind{PreparedStatement: "s", DestinationPortal: "cur"}, &pgproto3.Sync{},
		&pgproto3.Execute{Portal: "cur"}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "2Z" {
		t.Fatalf("got %s", r.seq)
	}
	if r := c.untilReady(); r.seq != "EZ" || r.errs[0].Code != "34000" {
		t.Fatalf("got %s %+v", r.seq, r.errs)
	}
}

func TestRawNamedStatementsCloseAndRedefine(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	step := func(want string, msgs ...pgproto3.FrontendMessage) record {
		t.Helper()
		c.sendAll(append(msgs, &pgproto3.Sync{})...)
		r := c.untilReady()
		if r.seq != want {
			t.Fatalf("got %s, want %s (errors %+v)", r.seq, want, r.errs)
		}
		return r
	}
	step("1Z", &pgproto3.Parse{Name: "s1", Query: "select canned"})
	r := step("EZ", &pgproto3.Parse{Name: "s1", Query: "rows 1"})
	if e := r.errs[0]; e.Code != "42P05" || e.Message != `prepared statement "s1" already exists` {
		t.Errorf("got %s %q", e.Code, e.Message)
	}
	// The old definition is intact.
	if r := step("tTZ", &pgproto3.Describe{ObjectType: 'S', Name: "s1"}); len(r.fields[0]) != 8 {
		t.Errorf("fields %+v", r.fields)
	}
	// Close, then define again.
	step("31Z", &pgproto3.Close{ObjectType: 'S', Name: "s1"}, &pgproto3.Parse{Name: "s1", Query: "rows 1"})
	if r := step("tTZ", &pgproto3.Describe{ObjectType: 'S', Name: "s1"}); len(r.fields[0]) != 2 {
		t.Errorf("fields %+v", r.fields)
	}
	// The unnamed statement is replaced by each Parse.
	step("11Z", &pgproto3.Parse{Query: "select canned"}, &pgproto3.Parse{Query: "set x"})
	step("tnZ", &pgproto3.Describe{ObjectType: 'S'})

	// Unknown names.
	for _, tc := range []struct {
		msg  pgproto3.FrontendMessage
		code string
		text string
	}{
		{&pgproto3.Describe{ObjectType: 'S', Name: "nope"}, "26000", `prepared statement "nope" does not exist`},
		{&pgproto3.Bind{PreparedStatement: "nope"}, "26000", `prepared statement "nope" does not exist`},
		{&pgproto3.Describe{ObjectType: 'P', Name: "nope"}, "34000", `portal "nope" does not exist`},
		{&pgproto3.Execute{Portal: "nope"}, "34000", `portal "nope" does not exist`},
		{&pgproto3.Execute{}, "34000", `portal "" does not exist`},
		{&pgproto3.Describe{ObjectType: 'X'}, "08P01", "invalid DESCRIBE message subtype 88"},
		{&pgproto3.Close{ObjectType: 'X'}, "08P01", "invalid CLOSE message subtype 88"},
	} {
		r := step("EZ", tc.msg)
		if e := r.errs[0]; e.Code != tc.code || e.Message != tc.text || e.Severity != "ERROR" {
			t.Errorf("%T: got %s %q", tc.msg, e.Code, e.Message)
		}
	}
	step("3EZ", &pgproto3.Close{ObjectType: 'S'}, &pgproto3.Bind{}) // the unnamed statement is gone
	// Closing what does not exist is fine.
	step("33Z", &pgproto3.Close{ObjectType: 'S', Name: "nope"}, &pgproto3.Close{ObjectType: 'P', Name: "nope"})
	// A portal outlives its statement's Close.
	step("123DCZ", &pgproto3.Parse{Name: "s2", Query: "rows 1"}, &pgproto3.Bind{PreparedStatement: "s2"},
		&pgproto3.Close{ObjectType: 'S', Name: "s2"}, &pgproto3.Execute{})
	// A simple query replaces the unnamed statement.
	step("1Z", &pgproto3.Parse{Query: "rows 1"})
	c.send(&pgproto3.Query{String: "set x"})
	c.untilReady()
	step("EZ", &pgproto3.Bind{})
}

func TestRawFlushWithoutSync(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.sendAll(&pgproto3.Parse{Name: "s", Query: "rows 2"}, &pgproto3.Bind{PreparedStatement: "s"})
	// Without Flush or Sync, the answers stay buffered.
	c.expectNothing(200 * time.Millisecond)
	c.sendAll(&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{MaxRows: 1}, &pgproto3.Flush{})
	if r := c.readN(5); r.seq != "12TDs" {
		t.Fatalf("got %s", r.seq)
	}
	c.expectNothing(100 * time.Millisecond)
	c.sendAll(&pgproto3.Execute{}, &pgproto3.Flush{})
	if r := c.readN(2); r.seq != "DC" {
		t.Fatalf("got %s", r.seq)
	}
	// An error is sent at once, and skipping lasts until Sync.
	c.sendAll(&pgproto3.Bind{PreparedStatement: "nope"})
	if r := c.readN(1); r.seq != "E" {
		t.Fatalf("got %s", r.seq)
	}
	c.sendAll(&pgproto3.Bind{PreparedStatement: "s"}, &pgproto3.Execute{}, &pgproto3.Flush{})
	c.expectNothing(100 * time.Millisecond)
	c.sendAll(&pgproto3.Sync{}, &pgproto3.Sync{})
	if r := c.readN(2); r.seq != "ZZ" {
		t.Fatalf("got %s", r.seq)
	}
}

func TestRawEmptyQuery(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	for _, q := range []string{"", "-- ping"} {
		c.sendAll(&pgproto3.Parse{Query: q}, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Bind{},
			&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Execute{}, &pgproto3.Sync{})
		if r := c.untilReady(); r.seq != "1tn2nIIZ" {
			t.Errorf("%q: got %s", q, r.seq)
		}
	}
}

func TestRawStatementsWithoutRows(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.sendAll(&pgproto3.Parse{Query: "set x"}, &pgproto3.Bind{ResultFormatCodes: []int16{1}}, &pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{MaxRows: 1}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "12nCZ" || r.tags[0] != "SET" {
		t.Errorf("got %s %q", r.seq, r.tags)
	}
	// A finished statement without rows cannot run again, as in PostgreSQL.
	c.sendAll(&pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "2CEZ" || r.errs[0].Code != "55000" {
		t.Errorf("got %s %+v", r.seq, r.errs)
	}
}

func TestRawBindErrors(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.sendAll(&pgproto3.Parse{Name: "i", Query: "echo int4"}, &pgproto3.Parse{Name: "n", Query: "echo numeric"},
		&pgproto3.Parse{Name: "t", Query: "echo text"}, &pgproto3.Parse{Name: "two", Query: "echo int8,text"}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "1111Z" {
		t.Fatalf("got %s", r.seq)
	}
	bin := func(b ...byte) [][]byte { return [][]byte{b} }
	for _, tc := range []struct {
		name string
		bind pgproto3.Bind
		code string
		msg  string
	}{
		{"too few", pgproto3.Bind{PreparedStatement: "two", Parameters: [][]byte{[]byte("1")}}, "08P01",
			`bind message supplies 1 parameters, but prepared statement "two" requires 2`},
		{"too many", pgproto3.Bind{PreparedStatement: "i", Parameters: [][]byte{[]byte("1"), []byte("2")}}, "08P01",
			`bind message supplies 2 parameters, but prepared statement "i" requires 1`},
		{"format count", pgproto3.Bind{PreparedStatement: "two", ParameterFormatCodes: []int16{0, 0, 0}, Parameters: [][]byte{[]byte("1"), []byte("x")}}, "08P01",
			"bind message has 3 parameter formats but 2 parameters"},
		{"format code", pgproto3.Bind{PreparedStatement: "i", ParameterFormatCodes: []int16{2}, Parameters: [][]byte{[]byte("1")}}, "22023",
			"unsupported format code: 2"},
		{"result format code", pgproto3.Bind{PreparedStatement: "i", Parameters: [][]byte{[]byte("1")}, ResultFormatCodes: []int16{7}}, "22023",
			"unsupported format code: 7"},
		{"result format count", pgproto3.Bind{PreparedStatement: "i", Parameters: [][]byte{[]byte("1")}, ResultFormatCodes: []int16{0, 1}}, "08P01",
			"bind message has 2 result formats but query has 1 columns"},
		{"text int", pgproto3.Bind{PreparedStatement: "i", Parameters: [][]byte{[]byte("12abc")}}, "22P02",
			`invalid input syntax for type integer: "12abc"`},
		{"int range", pgproto3.Bind{PreparedStatement: "i", Parameters: [][]byte{[]byte("3000000000")}}, "22003",
			`value "3000000000" is out of range for type integer`},
		{"binary int length", pgproto3.Bind{PreparedStatement: "i", ParameterFormatCodes: []int16{1}, Parameters: bin(1, 2, 3)}, "22P03",
			"incorrect binary data format for type integer (3 bytes)"},
		{"binary int range", pgproto3.Bind{PreparedStatement: "i", ParameterFormatCodes: []int16{1}, Parameters: bin(0, 0, 0, 1, 0, 0, 0, 0)}, "22003",
			"integer out of range"},
		{"numeric NaN", pgproto3.Bind{PreparedStatement: "n", Parameters: [][]byte{[]byte("NaN")}}, "22P02",
			"numeric parameter value NaN is not supported: NaN and infinity have no exact decimal value"},
		{"binary numeric NaN", pgproto3.Bind{PreparedStatement: "n", ParameterFormatCodes: []int16{1}, Parameters: bin(0, 0, 0, 0, 0xC0, 0, 0, 0)}, "22P02",
			"numeric parameter value NaN is not supported: NaN and infinity have no exact decimal value"},
		{"binary numeric digit", pgproto3.Bind{PreparedStatement: "n", ParameterFormatCodes: []int16{1}, Parameters: bin(0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10)}, "22P03",
			"incorrect binary data format for type numeric (10 bytes)"},
		{"numeric syntax", pgproto3.Bind{PreparedStatement: "n", Parameters: [][]byte{[]byte("1.2.3")}}, "22P02",
			`invalid input syntax for type numeric: "1.2.3"`},
		{"numeric too long", pgproto3.Bind{PreparedStatement: "n", Parameters: [][]byte{[]byte("1e1001")}}, "22003", ""},
		{"invalid UTF-8", pgproto3.Bind{PreparedStatement: "t", Parameters: [][]byte{{'a', 0xff}}}, "22021",
			`invalid byte sequence for encoding "UTF8": 0xff`},
		{"truncated UTF-8", pgproto3.Bind{PreparedStatement: "t", Parameters: [][]byte{{'a', 0xe2, 0x82}}}, "22021",
			`invalid byte sequence for encoding "UTF8": 0xe2 0x82`},
		{"NUL", pgproto3.Bind{PreparedStatement: "t", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{'a', 0}}}, "22021",
			`invalid byte sequence for encoding "UTF8": 0x00`},
	} {
		c.sendAll(&tc.bind, &pgproto3.Execute{}, &pgproto3.Sync{})
		r := c.untilReady()
		if r.seq != "EZ" {
			t.Errorf("%s: got %s", tc.name, r.seq)
			continue
		}
		if e := r.errs[0]; e.Code != tc.code || (tc.msg != "" && e.Message != tc.msg) {
			t.Errorf("%s: got %s %q, want %s %q", tc.name, e.Code, e.Message, tc.code, tc.msg)
		}
	}
	// The detail names the parameter.
	c.sendAll(&pgproto3.Bind{PreparedStatement: "two", Parameters: [][]byte{[]byte("1"), {0xff}}}, &pgproto3.Sync{})
	if r := c.untilReady(); r.errs[0].Detail != "In bind parameter $2." {
		t.Errorf("detail %q", r.errs[0].Detail)
	}
	// A long bad value is shortened in the message.
	c.sendAll(&pgproto3.Bind{PreparedStatement: "i", Parameters: [][]byte{[]byte(strings.Repeat("9x", 1000))}}, &pgproto3.Sync{})
	if r := c.untilReady(); len(r.errs[0].Message) > 150 {
		t.Errorf("message of %d bytes", len(r.errs[0].Message))
	}
	// NULL is fine for any type and format.
	c.sendAll(&pgproto3.Bind{PreparedStatement: "two", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{nil, nil}},
		&pgproto3.Execute{}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "2DCZ" || r.rows[0][0] != nil || r.rows[0][1] != nil {
		t.Errorf("got %s %q", r.seq, r.rows)
	}
}

func TestRawParameterDescription(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.sendAll(&pgproto3.Parse{Query: "echo unknown,int8,numeric,date,timestamptz,bool,float8,text,varchar,bytea,oid,int2,int4,float4,timestamp,bpchar,name"},
		&pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Sync{})
	r := c.untilReady()
	want := []uint32{0, 20, 1700, 1082, 1184, 16, 701, 25, 1043, 17, 26, 21, 23, 700, 1114, 1042, 19}
	if r.seq != "1tTZ" || len(r.paramOIDs[0]) != len(want) {
		t.Fatalf("got %s %v", r.seq, r.paramOIDs)
	}
	for i, oid := range r.paramOIDs[0] {
		if oid != want[i] {
			t.Errorf("parameter %d: OID %d, want %d", i+1, oid, want[i])
		}
	}
	// Declared types reach the engine; 0 and unknown (705) are undeclared.
	c.sendAll(&pgproto3.Parse{Query: "echo text,text,text,text", ParameterOIDs: []uint32{20, 0, 705, 2950}},
		&pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Sync{})
	r = c.untilReady()
	calls := ts.sessions.preparedCalls()
	got := calls[len(calls)-1].paramTypes
	if len(got) != 4 || got[0] != sqltypes.Int8 || got[1] != sqltypes.Unknown || got[2] != sqltypes.Unknown || got[3] != sqltypes.Text {
		t.Errorf("declared types %v", got)
	}
	if oids := r.paramOIDs[0]; oids[0] != 20 || oids[1] != 25 || oids[3] != 25 {
		t.Errorf("described %v", oids)
	}
}

func TestRawResultChecks(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	// A result that does not match the description, and a value without a
	// binary form: internal errors, before any row.
	c.sendAll(&pgproto3.Parse{Query: "mismatch"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "12EZ" || r.errs[0].Code != "XX000" {
		t.Errorf("got %s %+v", r.seq, r.errs)
	}
	c.sendAll(&pgproto3.Parse{Query: "huge int4"}, &pgproto3.Bind{ResultFormatCodes: []int16{1}}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "12EZ" || r.errs[0].Code != "XX000" {
		t.Errorf("got %s %+v", r.seq, r.errs)
	}
	// In text it is fine.
	c.sendAll(&pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "2DDCZ" || string(r.rows[1][0]) != "1099511627776" {
		t.Errorf("got %s %q", r.seq, r.rows)
	}
	// Errors from Prepare and ExecutePrepared; internal ones are not shown.
	c.sendAll(&pgproto3.Parse{Query: "boom"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "12EZ" || r.errs[0].Code != "XX000" || strings.Contains(r.errs[0].Message, "salary") {
		t.Errorf("got %s %+v", r.seq, r.errs)
	}
	c.sendAll(&pgproto3.Parse{Query: "fail"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if r := c.untilReady(); r.seq != "12EZ" || r.errs[0].Code != "22012" {
		t.Errorf("got %s %+v", r.seq, r.errs)
	}
}

func TestRawExtendedMessageTooLarge(t *testing.T) {
	ts := startServer(t, Options{MaxMessageSize: 4096})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.sendAll(&pgproto3.Parse{Query: "echo text"}, &pgproto3.Bind{Parameters: [][]byte{make([]byte, 5000)}})
	r := c.readN(2)
	if r.seq != "1E" || r.errs[0].Code != "54000" || r.errs[0].Severity != "FATAL" {
		t.Errorf("got %s %+v", r.seq, r.errs)
	}
	c.expectClosed()
}

func TestRawTransactionStatus(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	query := func(q string) record {
		t.Helper()
		c.send(&pgproto3.Query{String: q})
		return c.untilReady()
	}
	extended := func(q string) record {
		t.Helper()
		c.sendAll(&pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
		return c.untilReady()
	}
	describe := func(q string) record {
		t.Helper()
		c.sendAll(&pgproto3.Parse{Query: q}, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Sync{})
		return c.untilReady()
	}
	for _, tc := range []struct {
		run     func(string) record
		q       string
		seq     string
		status  byte
		tag     string
		errCode string
		notice  string
	}{
		{query, "commit", "NCZ", 'I', "COMMIT", "", "25P01"},
		{query, "begin", "CZ", 'T', "BEGIN", "", ""},
		{query, "begin", "NCZ", 'T', "BEGIN", "", "25001"},
		{extended, "select canned", "12DDCZ", 'T', "SELECT 2", "", ""},
		{query, "bad", "EZ", 'E', "", "42601", ""},
		{query, "select canned", "EZ", 'E', "", "25P02", ""},
		{extended, "select canned", "EZ", 'E', "", "25P02", ""},
		{describe, "select canned", "EZ", 'E', "", "25P02", ""},
		{describe, "rollback", "1tnZ", 'E', "", "", ""},
		{query, "-- ping", "IZ", 'E', "", "", ""},
		{query, "/* a comment */ commit", "CZ", 'I', "ROLLBACK", "", ""},
		{extended, "begin", "12CZ", 'T', "BEGIN", "", ""},
		{extended, "fail", "12EZ", 'E', "", "22012", ""},
		{extended, "  Rollback", "12CZ", 'I', "ROLLBACK", "", ""},
		{query, "rollback", "NCZ", 'I', "ROLLBACK", "", "25P01"},
		{query, "bad", "EZ", 'I', "", "42601", ""},
		{query, "start transaction", "CZ", 'T', "BEGIN", "", ""},
		{query, "end", "CZ", 'I', "COMMIT", "", ""},
	} {
		r := tc.run(tc.q)
		if r.seq != tc.seq || r.status != tc.status {
			t.Errorf("%q: got %s %c, want %s %c (%+v)", tc.q, r.seq, r.status, tc.seq, tc.status, r.errs)
			continue
		}
		if tc.tag != "" && r.tags[len(r.tags)-1] != tc.tag {
			t.Errorf("%q: tag %q, want %q", tc.q, r.tags, tc.tag)
		}
		if tc.errCode != "" && r.errs[0].Code != tc.errCode {
			t.Errorf("%q: error %s %q, want %s", tc.q, r.errs[0].Code, r.errs[0].Message, tc.errCode)
		}
		if tc.notice != "" && r.notices[0] != tc.notice {
			t.Errorf("%q: notice %v, want %s", tc.q, r.notices, tc.notice)
		}
	}
}
