package pgwire

import (
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// The expected strings are what PostgreSQL 15 prints (extra_float_digits=1).
func TestAppendFloatMatchesPostgres(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		bits int
		want string
	}{
		{0.1, 64, "0.1"},
		{0, 64, "0"},
		{math.Copysign(0, -1), 64, "-0"},
		{100, 64, "100"},
		{2.5, 64, "2.5"},
		{-2.5, 64, "-2.5"},
		{0.30000000000000004, 64, "0.30000000000000004"},
		{3.141592653589793, 64, "3.141592653589793"},
		{1e14, 64, "100000000000000"},
		{123456789012345, 64, "123456789012345"},
		{1e15, 64, "1e+15"},
		{1234567890123456, 64, "1.234567890123456e+15"},
		{1e20, 64, "1e+20"},
		{-1e20, 64, "-1e+20"},
		{1e100, 64, "1e+100"},
		{1.7976931348623157e308, 64, "1.7976931348623157e+308"},
		{0.0001, 64, "0.0001"},
		{0.00012345, 64, "0.00012345"},
		{0.00001, 64, "1e-05"},
		{1.5e-7, 64, "1.5e-07"},
		{5e-324, 64, "5e-324"},
		{math.NaN(), 64, "NaN"},
		{math.Inf(1), 64, "Infinity"},
		{math.Inf(-1), 64, "-Infinity"},
		// Exactly halfway between two floats: PostgreSQL's Ryu refuses bounds.
		{4.615503253451e17, 64, "4.6155032534510003e+17"},
		{2.546285956603583e16, 64, "2.5462859566035832e+16"},
		{-2.546285956603583e16, 64, "-2.5462859566035832e+16"},
		{float64(float32(-7.23519e7)), 32, "-7.2351904e+07"},
		// An exact tie between two shortest candidates: to even.
		{math.Ldexp(1, -12), 32, "0.00024414062"},
		{math.Ldexp(1, -1074), 64, "5e-324"},
		{math.Ldexp(1, 60), 64, "1.152921504606847e+18"},
		{100000, 32, "100000"},
		{1e6, 32, "1e+06"},
		{float64(float32(0.1)), 32, "0.1"},
		{float64(float32(1.1)), 32, "1.1"},
		{float64(math.MaxFloat32), 32, "3.4028235e+38"},
		{123456, 32, "123456"},
		{1234567, 32, "1.234567e+06"},
	} {
		if got := string(appendFloat(nil, tc.f, tc.bits)); got != tc.want {
			t.Errorf("float%d %v: got %q, want %q", tc.bits, tc.f, got, tc.want)
		}
	}
}

func TestAppendTextValues(t *testing.T) {
	berlin := time.FixedZone("CEST", 2*3600)
	for _, tc := range []struct {
		typ  sqltypes.Type
		v    any
		want string
	}{
		{sqltypes.Int8, int64(-42), "-42"},
		{sqltypes.Int4, int32(7), "7"},
		{sqltypes.Int8, uint64(math.MaxUint64), "18446744073709551615"},
		{sqltypes.Float8, 0.1, "0.1"},
		{sqltypes.Float4, 0.1, "0.1"},
		{sqltypes.Float4, float32(1e6), "1e+06"},
		{sqltypes.Float8, float32(0.5), "0.5"},
		{sqltypes.Numeric, 1e20, "100000000000000000000"},
		{sqltypes.Numeric, sqltypes.Decimal("-12.50"), "-12.50"},
		{sqltypes.Numeric, math.NaN(), "NaN"},
		{sqltypes.Text, "héllo\x00x", "héllo\x00x"},
		{sqltypes.Bool, true, "t"},
		{sqltypes.Bool, false, "f"},
		{sqltypes.Bytea, []byte{0xde, 0xad, 0x00}, `\xdead00`},
		{sqltypes.Bytea, "ab", `\x6162`},
		{sqltypes.Text, []byte("raw"), "raw"},
		{sqltypes.Date, time.Date(2024, 3, 15, 23, 0, 0, 0, time.UTC), "2024-03-15"},
		{sqltypes.Date, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "10000-01-01"},
		{sqltypes.Date, time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC), "0044-03-15 BC"},
		{sqltypes.Date, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), "0001-01-01 BC"},
		{sqltypes.Timestamp, time.Date(2024, 3, 15, 1, 2, 3, 0, time.UTC), "2024-03-15 01:02:03"},
		{sqltypes.Timestamp, time.Date(2024, 3, 15, 1, 2, 3, 500000000, time.UTC), "2024-03-15 01:02:03.5"},
		{sqltypes.Timestamp, time.Date(2024, 3, 15, 1, 2, 3, 123456000, time.UTC), "2024-03-15 01:02:03.123456"},
		{sqltypes.Timestamp, time.Date(2024, 3, 15, 1, 2, 3, 1000, time.UTC), "2024-03-15 01:02:03.000001"},
		{sqltypes.Timestamp, time.Date(2024, 12, 31, 23, 59, 59, 999999600, time.UTC), "2025-01-01 00:00:00"},
		{sqltypes.Timestamp, time.Date(2024, 3, 15, 1, 2, 3, 0, berlin), "2024-03-15 01:02:03"},
		{sqltypes.Timestamptz, time.Date(2024, 3, 15, 1, 2, 3, 0, berlin), "2024-03-14 23:02:03+00"},
		{sqltypes.Timestamptz, time.Date(2024, 3, 15, 1, 2, 3, 250000000, time.UTC), "2024-03-15 01:02:03.25+00"},
		{sqltypes.Timestamptz, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), "0001-01-01 00:00:00+00 BC"},
	} {
		if got := string(appendText(nil, tc.typ, tc.v)); got != tc.want {
			t.Errorf("%v %T %v: got %q, want %q", tc.typ, tc.v, tc.v, got, tc.want)
		}
	}
}

func TestAppendDataRowNullVersusEmpty(t *testing.T) {
	cols := []sqltypes.Column{{Name: "a", Type: sqltypes.Text}, {Name: "b", Type: sqltypes.Text}, {Name: "c", Type: sqltypes.Int8}}
	buf := appendDataRow(nil, cols, []any{nil, "", int64(5)})
	var dr pgproto3.DataRow
	if buf[0] != 'D' {
		t.Fatalf("type %q", buf[0])
	}
	if err := dr.Decode(buf[5:]); err != nil {
		t.Fatal(err)
	}
	if len(dr.Values) != 3 || dr.Values[0] != nil || dr.Values[1] == nil || len(dr.Values[1]) != 0 || string(dr.Values[2]) != "5" {
		t.Errorf("decoded %q", dr.Values)
	}
}

func TestVersionNum(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want string
		ok   bool
	}{
		{"15.0 (dpproxy)", "150000", true},
		{"15.4", "150004", true},
		{"16", "160000", true},
		{"9.6.3", "90603", true},
		{"13.2-dpproxy", "130002", true},
		{"dpproxy", "", false},
		{"", "", false},
		{"15.100", "", false},
	} {
		got, ok := versionNum(tc.v)
		if got != tc.want || ok != tc.ok {
			t.Errorf("versionNum(%q) = %q, %v; want %q, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
	if s := NewServer(nil, Options{ServerVersion: "custom", Logger: slog.New(slog.DiscardHandler)}); s.versionNum != fallbackVersionNum {
		t.Errorf("fallback %q", s.versionNum)
	}
}

func TestErrorResponseSanitized(t *testing.T) {
	e := errorResponse("ERROR", &sqlerr.Error{Code: "bad", Message: "a\x00b", Position: -3})
	if e.Code != "XX000" || e.Message != "ab" || e.Position != 0 {
		t.Errorf("got %+v", e)
	}
	e = errorResponse("ERROR", &sqlerr.Error{Code: sqlerr.BudgetExhausted, Message: "m", Position: 7})
	if e.Code != "53DP1" || e.Position != 7 || e.SeverityUnlocalized != "ERROR" {
		t.Errorf("got %+v", e)
	}
}

func TestParseStartupParameters(t *testing.T) {
	good := map[string][]byte{
		"empty":  {0},
		"one":    []byte("user\x00bob\x00\x00"),
		"blank":  []byte("user\x00bob\x00options\x00\x00\x00"),
		"unicod": []byte("application_name\x00größe\x00\x00"),
	}
	for name, b := range good {
		if _, err := parseStartupParameters(b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, b := range [][]byte{nil, []byte("user"), []byte("user\x00bob"), []byte("user\x00bob\x00"), []byte("user\x00bob\x00\x00x")} {
		if p, err := parseStartupParameters(b); err == nil {
			t.Errorf("%q: parsed as %v", b, p)
		}
	}
}
