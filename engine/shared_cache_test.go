package engine

import (
	"reflect"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// A release survives the trip through a shared store with every value's
// type, NULLs and missing intervals included.
func TestReleaseCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 123, time.UTC)
	in := &sqltypes.Result{
		Columns:   []sqltypes.Column{{Name: "a", Type: sqltypes.Int8}, {Name: "b", Type: sqltypes.Float8}, {Name: "c", Type: sqltypes.Text}},
		Rows:      [][]any{{int64(3), 2.5, "x"}, {nil, true, at}, {sqltypes.Decimal("1.20"), nil, ""}},
		Tag:       "SELECT 3",
		Intervals: [][]*sqltypes.Interval{{{Lo: 1, Hi: 5}, nil, nil}, {nil, {Lo: -1, Hi: 0.5}, nil}, nil},
		Notices:   []string{"noise: Laplace"},
	}
	data, err := encodeRelease(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeRelease(data)
	if err != nil {
		t.Fatal(err)
	}
	in.Intervals[2] = []*sqltypes.Interval{} // an absent row of intervals comes back empty
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %#v\nwant %#v", out, in)
	}
	if _, err := decodeRelease([]byte("not gob")); err == nil {
		t.Error("decoding garbage succeeded")
	}
}
