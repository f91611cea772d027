package pgwire

import (
	"bytes"
	"testing"

	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/jackc/pgproto3/v2"
)

// appendRowDescription writes what pgproto3's RowDescription encodes for
// the same columns and formats, after whatever the buffer held.
func TestAppendRowDescription(t *testing.T) {
	cols := []sqltypes.Column{
		{Name: "region", Type: sqltypes.Text},
		{Name: "count", Type: sqltypes.Int8},
		{Name: "avg", Type: sqltypes.Numeric},
		{Name: "at", Type: sqltypes.Timestamptz},
		{Name: "bad\x00name", Type: sqltypes.Float8},
		{Name: "", Type: sqltypes.Bool},
	}
	for _, tc := range []struct {
		name    string
		cols    []sqltypes.Column
		formats []int16
	}{
		{"text", cols, nil},
		{"binary for some", cols, []int16{1, 0, 1}},
		{"binary for all", cols[:2], []int16{1, 1}},
		{"no columns", nil, nil},
	} {
		want := &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{}}
		for i, c := range tc.cols {
			f := pgproto3.FieldDescription{Name: []byte(noNUL(c.Name)), DataTypeOID: c.Type.PostgresOID(),
				DataTypeSize: c.Type.PostgresTypeSize(), TypeModifier: -1, Format: pgproto3.TextFormat}
			if i < len(tc.formats) {
				f.Format = tc.formats[i]
			}
			want.Fields = append(want.Fields, f)
		}
		prefix := []byte("queued")
		wantBytes, err := want.Encode(append([]byte(nil), prefix...))
		if err != nil {
			t.Fatal(err)
		}
		got := appendRowDescription(append([]byte(nil), prefix...), tc.cols, tc.formats)
		if !bytes.Equal(got, wantBytes) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, wantBytes)
		}
	}
}
