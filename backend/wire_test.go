package backend

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"strconv"
	"testing"
)

// Wire-safe columns come back as DataRow bodies whose values are the text
// the decoded rows print; any other column makes the whole result decoded.
// The result cap holds either way.
func TestQueryPostgresText(t *testing.T) {
	dsn := pgDSN(t)
	schema := pgSchema(t, dsn)
	p := openPostgresT(t, dsn, 1)
	ctx := context.Background()
	q := `SELECT id, v, id::bigint AS big, v IS NULL AS none, NULL::text AS nothing FROM ` + schema + `.t ORDER BY id`
	for run := 0; run < 2; run++ { // then as a prepared statement
		wire, err := p.QueryPostgresText(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		decoded := mustQuery(t, p, q)
		if wire.Values != nil || len(wire.PostgresText) != 3 || !reflect.DeepEqual(wire.Columns, decoded.Columns) {
			t.Fatalf("run %d: wire result %#v", run, wire)
		}
		for i, body := range wire.PostgresText {
			want := []byte{0, 5}
			for _, v := range decoded.Values[i] {
				var text string
				switch x := v.(type) {
				case nil:
					want = binary.BigEndian.AppendUint32(want, 0xFFFFFFFF)
					continue
				case int64:
					text = strconv.FormatInt(x, 10)
				case bool:
					text = map[bool]string{true: "t", false: "f"}[x]
				case string:
					text = x
				}
				want = binary.BigEndian.AppendUint32(want, uint32(len(text)))
				want = append(want, text...)
			}
			if !reflect.DeepEqual(body, want) {
				t.Errorf("run %d row %d: body %q, want %q", run, i, body, want)
			}
		}
	}
	// A date and a numeric column: decoded.
	res, err := p.QueryPostgresText(ctx, `SELECT id, d, c FROM `+schema+`.t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if res.PostgresText != nil || len(res.Values) != 3 {
		t.Errorf("a date and a numeric column were not decoded: %#v", res)
	}
	// The cap.
	_, err = p.QueryPostgresText(WithResultLimit(ctx, ResultLimit{Rows: 2}), q)
	var tl *ResultTooLargeError
	if !errors.As(err, &tl) || !tl.Rows {
		t.Errorf("3 rows at a cap of 2: %v", err)
	}
	if _, err := p.QueryPostgresText(ctx, q); err != nil {
		t.Errorf("the connection after the cap: %v", err)
	}
}

// TestSplitDataRows: the rows a builder added come back one for one, each
// capped so that appending to one cannot reach the next.
func TestSplitDataRows(t *testing.T) {
	for _, rows := range [][][][]byte{
		{},
		{{[]byte("1")}},
		{{[]byte("1"), nil, []byte("")}, {nil, nil, nil}, {[]byte("ab"), []byte("c"), nil}},
		{{}, {}},
	} {
		b := rowsBuilder{}
		for _, r := range rows {
			if err := b.add(r); err != nil {
				t.Fatal(err)
			}
		}
		got := splitDataRows(b.buf, b.rows)
		if len(got) != len(rows) {
			t.Fatalf("%q: %d rows, want %d", rows, len(got), len(rows))
		}
		for i, body := range got {
			want := make([]string, len(rows[i]))
			for j, v := range rows[i] {
				want[j] = string(v)
				if v == nil {
					want[j] = "<null>"
				}
			}
			if texts := dataRowTexts(t, body); !reflect.DeepEqual(texts, want) {
				t.Errorf("%q: row %d %q, want %q", rows, i, texts, want)
			}
			if cap(body) != len(body) {
				t.Errorf("%q: row %d not capped", rows, i)
			}
		}
	}
}
