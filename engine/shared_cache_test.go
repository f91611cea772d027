package engine

import (
	"bytes"
	"encoding/gob"
	"reflect"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// A release survives the trip through a shared store with every value's
// type, NULLs and missing intervals included, and its columns' noise (for
// sums over its keys).
func TestReleaseCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 123, time.UTC)
	in := &sqltypes.Result{
		Columns:   []sqltypes.Column{{Name: "a", Type: sqltypes.Int8}, {Name: "b", Type: sqltypes.Float8}, {Name: "c", Type: sqltypes.Text}},
		Rows:      [][]any{{int64(3), 2.5, "x"}, {nil, true, at}, {sqltypes.Decimal("1.20"), nil, ""}},
		Tag:       "SELECT 3",
		Intervals: [][]*sqltypes.Interval{{{Lo: 1, Hi: 5, Excess: 2.5}, nil, nil}, {nil, {Lo: -1, Hi: 0.5}, nil}, nil},
		Notices:   []string{"noise: Laplace"},
		Noise: []*sqltypes.Noise{
			{Mechanism: sqltypes.NoiseMechanism{Epsilon: 0.4, Sensitivity: 3}, Sign: 1, Count: true, Excess: &sqltypes.NoiseMechanism{Epsilon: 0.05, Sensitivity: 3}},
			{Mechanism: sqltypes.NoiseMechanism{Gaussian: true, Epsilon: 0.4, Delta: 1e-6, Sensitivity: 30, L2: 12}, Rounding: 0.5, Sign: -1},
			nil,
		},
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

// Shared releases are keyed by everything that makes the answer: the
// analyst, the cost, the statement, and the bounding the policy gives it
// (instances on different policy versions do not share).
func TestSharedKey(t *testing.T) {
	base := &rewrite.Plan{Epsilon: 0.5, BackendSQL: "SELECT ... LEAST(cost, 100)", MaxGroupsPerUnit: 1, MaxRowsPerUnit: 1}
	key := func(analyst string, p *rewrite.Plan, q string) string { return keyOf(analyst, p, q).sharedKey() }
	k := key("ana", base, "SELECT SUM(cost) FROM visits")
	if k != key("ana", base, "SELECT SUM(cost) FROM visits") {
		t.Error("the same release has two keys")
	}
	other := *base
	other.BackendSQL = "SELECT ... LEAST(cost, 200)"
	cheaper := *base
	cheaper.Epsilon = 0.25
	for name, k2 := range map[string]string{
		"another analyst":   key("bob", base, "SELECT SUM(cost) FROM visits"),
		"another statement": key("ana", base, "SELECT SUM(cost) FROM visits WHERE cost > 1"),
		"other bounds":      key("ana", &other, "SELECT SUM(cost) FROM visits"),
		"another ε":         key("ana", &cheaper, "SELECT SUM(cost) FROM visits"),
	} {
		if k2 == k {
			t.Errorf("%s shares the key", name)
		}
	}
}

// Found in review: an instance of the first shared-cache version (flat
// Lo, Hi, Set intervals) reads a newer entry's intervals, and the newer
// reads its entries.
func TestReleaseCodecCompatibility(t *testing.T) {
	type oldInterval struct {
		Lo, Hi float64
		Set    bool
	}
	type oldRelease struct {
		Columns   []sqltypes.Column
		Rows      [][]any
		Tag       string
		Intervals [][]oldInterval
		Notices   []string
	}
	cols, rows := []sqltypes.Column{{Name: "count", Type: sqltypes.Int8}}, [][]any{{int64(40)}}
	data, err := encodeRelease(&sqltypes.Result{Columns: cols, Rows: rows, Intervals: [][]*sqltypes.Interval{{{Lo: 31, Hi: 49, Excess: 2}}}})
	if err != nil {
		t.Fatal(err)
	}
	var old oldRelease
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&old); err != nil {
		t.Fatal(err)
	}
	if iv := old.Intervals[0][0]; iv != (oldInterval{Lo: 31, Hi: 49, Set: true}) {
		t.Errorf("the first version reads a new entry's interval as %+v", iv)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(oldRelease{Columns: cols, Rows: rows, Intervals: [][]oldInterval{{{Lo: 31, Hi: 49, Set: true}}}}); err != nil {
		t.Fatal(err)
	}
	r, err := decodeRelease(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if iv := r.Intervals[0][0]; iv == nil || *iv != (sqltypes.Interval{Lo: 31, Hi: 49}) {
		t.Errorf("a first-version entry's interval reads as %+v", iv)
	}
}
