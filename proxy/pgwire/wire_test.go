package pgwire

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/sqltypes"
)

func wireBody(vals ...any) []byte {
	b := []byte{0, byte(len(vals))}
	for _, v := range vals {
		if v == nil {
			b = append(b, 0xFF, 0xFF, 0xFF, 0xFF)
			continue
		}
		s := v.(string)
		b = append(b, 0, 0, 0, byte(len(s)))
		b = append(b, s...)
	}
	return b
}

// Rows in wire form are written as they are, checked for their shape, and
// decoded for a portal that wants binary columns.
func TestWireRows(t *testing.T) {
	cols := []sqltypes.Column{{Name: "id", Type: sqltypes.Int4}, {Name: "ok", Type: sqltypes.Bool}, {Name: "label", Type: sqltypes.Text}}
	res := &sqltypes.Result{Columns: cols, PostgresText: [][]byte{wireBody("7", "t", "x y"), wireBody("-2", nil, "")}}
	if err := checkWireRows(res); err != nil {
		t.Fatal(err)
	}
	dec, err := decodeWireRows(res)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]any{{int64(7), true, "x y"}, {int64(-2), nil, ""}}; !reflect.DeepEqual(dec.Rows, want) || dec.PostgresText != nil {
		t.Errorf("decoded %#v, want %#v", dec.Rows, want)
	}
	// Written rows are the DataRow the text encoder writes for the values.
	for i, body := range res.PostgresText {
		if got, want := appendWireRow(nil, body), appendDataRow(nil, cols, dec.Rows[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("row %d: %q, the encoder writes %q", i, got, want)
		}
	}
	for _, bad := range []struct {
		name string
		body []byte
	}{
		{"too few values", wireBody("1", "t")},
		{"cut short", wireBody("1", "t", "abc")[:12]},
		{"bytes after", append(wireBody("1", "t", "a"), 0)},
		{"empty", nil},
	} {
		r := &sqltypes.Result{Columns: cols, PostgresText: [][]byte{bad.body}}
		if err := checkWireRows(r); err == nil || !strings.Contains(err.Error(), "row 0") {
			t.Errorf("%s: %v", bad.name, err)
		}
		if err := validateResults([]*sqltypes.Result{r}); err == nil {
			t.Errorf("%s: validateResults passed it", bad.name)
		}
	}
	if anyBinary(nil) || anyBinary([]int16{0, 0}) || !anyBinary([]int16{0, 1}) {
		t.Error("anyBinary")
	}
}
