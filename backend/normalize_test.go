package backend

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

func TestCanonicalDecimal(t *testing.T) {
	for in, want := range map[string]string{
		"0": "0", "1234.50": "1234.50", "-1234.50": "-1234.50", "+7": "7", "007.10": "7.10",
		".5": "0.5", "-.5": "-0.5", "5.": "5", "-0": "0", "-0.00": "0.00", "0.000001": "0.000001",
		"123456789012345678901234567890.123": "123456789012345678901234567890.123",
	} {
		got, ok := canonicalDecimal(in)
		if !ok || string(got) != want {
			t.Errorf("canonicalDecimal(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "-", ".", "1e5", "NaN", "Infinity", "1.2.3", " 1", "1,5", "--1", "abc"} {
		if got, ok := canonicalDecimal(in); ok {
			t.Errorf("canonicalDecimal(%q) = %q, want rejection", in, got)
		}
	}
}

func TestDecimalFromFloat(t *testing.T) {
	for in, want := range map[float64]string{
		0: "0", math.Copysign(0, -1): "0", 1.5: "1.5", 123.45: "123.45", 1e21: "1000000000000000000000",
		1e-7: "0.0000001", -2.25: "-2.25",
	} {
		got, ok := decimalFromFloat(in)
		if !ok || string(got) != want {
			t.Errorf("decimalFromFloat(%v) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, ok := decimalFromFloat(in); ok {
			t.Errorf("decimalFromFloat(%v) accepted", in)
		}
	}
}

func TestConform(t *testing.T) {
	d := time.Date(2024, 2, 3, 0, 0, 0, 0, time.UTC)
	cols := []Column{
		{Name: "ok", Type: sqltypes.Int8}, {Name: "date", Type: sqltypes.Date}, {Name: "num", Type: sqltypes.Numeric},
		{Name: "ts", Type: sqltypes.Timestamptz}, {Name: "f", Type: sqltypes.Float8},
	}
	values := [][]any{
		{int64(1), d, sqltypes.Decimal("1.50"), time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC), 1e6},
		{nil, "infinity", "NaN", nil, "x"},
	}
	conform(cols, values)
	wantCols := []Column{
		{Name: "ok", Type: sqltypes.Int8}, {Name: "date", Type: sqltypes.Text}, {Name: "num", Type: sqltypes.Text},
		{Name: "ts", Type: sqltypes.Timestamptz}, {Name: "f", Type: sqltypes.Text},
	}
	if !reflect.DeepEqual(cols, wantCols) {
		t.Errorf("columns %v, want %v", cols, wantCols)
	}
	want := [][]any{
		{int64(1), "2024-02-03", "1.50", time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC), "1e+06"},
		{nil, "infinity", "NaN", nil, "x"},
	}
	if !reflect.DeepEqual(values, want) {
		t.Errorf("values %#v, want %#v", values, want)
	}
}
