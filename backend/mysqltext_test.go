package backend

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// textRowPayload is the text-protocol row a MySQL client is sent for
// decoded values: each a length-encoded string in the front end's text
// (an integer in decimal, a string's bytes), 0xfb for NULL.
func textRowPayload(t *testing.T, row []any) []byte {
	t.Helper()
	var b []byte
	for _, v := range row {
		var text string
		switch x := v.(type) {
		case nil:
			b = append(b, 0xfb)
			continue
		case int64:
			text = strconv.FormatInt(x, 10)
		case string:
			text = x
		default:
			t.Fatalf("value %#v (%T) is not wire-safe", v, v)
		}
		b = appendLenEncBytes(b, []byte(text))
	}
	return b
}

// Wire-safe results come back as the rows a MySQL client is sent for the
// decoded values, byte for byte, through the text protocol (no
// parameters) and the binary one (parameters: a prepared statement on the
// backend); other columns are decoded.
func TestQueryMySQLText(t *testing.T) {
	name, dsn := mysqlDatabase(t, mysqlDSN(t))
	m := openMySQLT(t, dsn, 1)
	ctx := context.Background()
	long := strings.Repeat("é", 200)     // 400 bytes: a 3-byte length
	longer := strings.Repeat("x", 1<<16) // a 4-byte length
	q := "SELECT id, v, CAST(id AS SIGNED) * 1000000000000 AS big, " +
		"CAST(id AS SIGNED) - 5 AS neg, v IS NULL AS none, CAST(NULL AS CHAR) AS nothing, " +
		"CASE id WHEN 2 THEN '" + long + "' WHEN 3 THEN REPEAT('x', 65536) ELSE '' END AS text_len, " +
		"CAST('héllo' AS CHAR(10)) AS vc FROM `" + name + "`.t WHERE id >= ? ORDER BY id"
	if _, err := m.Query(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]any{nil, {int64(1)}} {
		query := q
		if args == nil {
			query = strings.Replace(q, "?", "1", 1)
		}
		wire, err := m.QueryMySQLText(ctx, query, args...)
		if err != nil {
			t.Fatal(err)
		}
		decoded := mustQuery(t, m, query, args...)
		if wire.Values != nil || len(wire.MySQLText) != 3 || !reflect.DeepEqual(wire.Columns, decoded.Columns) {
			t.Fatalf("args %v: wire result columns %v, %d values, %d wire rows; decoded columns %v",
				args, wire.Columns, len(wire.Values), len(wire.MySQLText), decoded.Columns)
		}
		for i, payload := range wire.MySQLText {
			if want := textRowPayload(t, decoded.Values[i]); !reflect.DeepEqual(payload, want) {
				t.Errorf("args %v row %d: payload %.80q, want %.80q", args, i, payload, want)
			}
		}
		if got := decoded.Values[1][6]; got != long {
			t.Errorf("row 2's long text decoded as %.20q", got)
		}
		if got := decoded.Values[2][6]; got != longer {
			t.Errorf("row 3's longer text has %d bytes", len(got.(string)))
		}
	}
	// A date, a decimal, a double and a binary string: decoded.
	for _, col := range []string{"d", "c", "c * 1e0", "CAST(v AS BINARY)"} {
		res, err := m.QueryMySQLText(ctx, "SELECT id, "+col+" FROM `"+name+"`.t ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		if res.MySQLText != nil || len(res.Values) != 3 {
			t.Errorf("%s was not decoded: %#v", col, res)
		}
	}
	// The caps on rows and bytes.
	_, err := m.QueryMySQLText(WithResultLimit(ctx, ResultLimit{Rows: 2}), "SELECT id FROM `"+name+"`.t")
	var tl *ResultTooLargeError
	if !errors.As(err, &tl) || !tl.Rows {
		t.Errorf("3 rows at a cap of 2: %v", err)
	}
	_, err = m.QueryMySQLText(WithResultLimit(ctx, ResultLimit{Bytes: 1000}), "SELECT REPEAT('x', 2000) FROM `"+name+"`.t")
	if !errors.As(err, &tl) || tl.Rows {
		t.Errorf("2,000 bytes at a cap of 1,000: %v", err)
	}
	if _, err := m.QueryMySQLText(ctx, "SELECT id FROM `"+name+"`.t"); err != nil {
		t.Errorf("the connection after the caps: %v", err)
	}
}

// A value the driver gives in a form its column's type cannot hold is
// written in its text form and its column reported as Text, as conform
// reports it for decoded rows.
func TestAppendMySQLTextValue(t *testing.T) {
	for _, c := range []struct {
		v      any
		t      sqltypes.Type
		want   string
		asText bool
	}{
		{nil, sqltypes.Int4, "\xfb", false},
		{int64(-42), sqltypes.Int8, "\x03-42", false},
		{uint64(7), sqltypes.Int8, "\x017", false},
		{[]byte("12"), sqltypes.Int4, "\x0212", false},
		{[]byte("abc"), sqltypes.Text, "\x03abc", false},
		{[]byte{}, sqltypes.Text, "\x00", false},
		{[]byte("1x"), sqltypes.Int4, "\x021x", true},
		{uint64(1 << 63), sqltypes.Int8, "\x139223372036854775808", true},
	} {
		var asText bool
		got := appendMySQLTextValue(nil, c.v, c.t, &asText)
		if string(got) != c.want || asText != c.asText {
			t.Errorf("%#v as %v: %q (as text %v), want %q (%v)", c.v, c.t, got, asText, c.want, c.asText)
		}
	}
	for _, n := range []int{0, 250, 251, 1<<16 - 1, 1 << 16, 1<<24 - 1, 1 << 24} {
		b := appendLenEncBytes(nil, make([]byte, n))
		if prefix := len(b) - n; prefix != map[bool]int{true: 1}[n < 251]+map[bool]int{true: 3}[n >= 251 && n < 1<<16]+map[bool]int{true: 4}[n >= 1<<16 && n < 1<<24]+map[bool]int{true: 9}[n >= 1<<24] {
			t.Errorf("length %d: %d bytes of prefix", n, prefix)
		}
	}
}
