package pgwire

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

func numericBytes(ndigits, weight int16, sign, dscale uint16, digits ...uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(ndigits))
	b = binary.BigEndian.AppendUint16(b, uint16(weight))
	b = binary.BigEndian.AppendUint16(b, sign)
	b = binary.BigEndian.AppendUint16(b, dscale)
	for _, d := range digits {
		b = binary.BigEndian.AppendUint16(b, d)
	}
	return b
}

// The expected bytes are what PostgreSQL's numeric_send gives for the input.
func TestNumericBinaryEncoding(t *testing.T) {
	for _, tc := range []struct {
		in, canonical string
		want          []byte
	}{
		{"0", "0", numericBytes(0, 0, 0, 0)},
		{"0.00", "0.00", numericBytes(0, 0, 0, 2)},
		{"-0.00", "0.00", numericBytes(0, 0, 0, 2)},
		{"-0", "0", numericBytes(0, 0, 0, 0)},
		{"1", "1", numericBytes(1, 0, 0, 0, 1)},
		{"-1", "-1", numericBytes(1, 0, 0x4000, 0, 1)},
		{"12.50", "12.50", numericBytes(2, 0, 0, 2, 12, 5000)},
		{"-12.50", "-12.50", numericBytes(2, 0, 0x4000, 2, 12, 5000)},
		{"0.001", "0.001", numericBytes(1, -1, 0, 3, 10)},
		{"0.0001", "0.0001", numericBytes(1, -1, 0, 4, 1)},
		{"0.00001", "0.00001", numericBytes(1, -2, 0, 5, 1000)},
		{"10000", "10000", numericBytes(1, 1, 0, 0, 1)},
		{"9999", "9999", numericBytes(1, 0, 0, 0, 9999)},
		{"100000000", "100000000", numericBytes(1, 2, 0, 0, 1)},
		{"123456789.123456789", "123456789.123456789", numericBytes(6, 2, 0, 9, 1, 2345, 6789, 1234, 5678, 9000)},
		{"  +007.50  ", "7.50", numericBytes(2, 0, 0, 2, 7, 5000)},
		{".5", "0.5", numericBytes(1, -1, 0, 1, 5000)},
		{"5.", "5", numericBytes(1, 0, 0, 0, 5)},
		{"1.5e3", "1500", numericBytes(1, 0, 0, 0, 1500)},
		{"1.5E-3", "0.0015", numericBytes(1, -1, 0, 4, 15)},
		{"-2e+4", "-20000", numericBytes(1, 1, 0x4000, 0, 2)},
		{"NaN", "NaN", numericBytes(0, 0, 0xC000, 0)},
		{"-Infinity", "-Infinity", numericBytes(0, 0, 0xF000, 32)},
		{"inf", "Infinity", numericBytes(0, 0, 0xD000, 32)},
	} {
		n, err := parseNumericText(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := n.String(); got != tc.canonical {
			t.Errorf("%q: text %q, want %q", tc.in, got, tc.canonical)
		}
		got := n.appendBinary(nil)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%q: binary %x, want %x", tc.in, got, tc.want)
		}
		back, err := decodeNumericBinary(got)
		if err != nil || back.String() != tc.canonical {
			t.Errorf("%q: decoded %q, %v", tc.in, back.String(), err)
		}
	}
}

func TestNumericRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	for range 5000 {
		s := digits(rng.IntN(30))
		if rng.IntN(2) == 0 {
			s += "." + digits(rng.IntN(30))
		}
		if s == "" || s == "." {
			s = "0"
		}
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		n, err := parseNumericText(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		back, err := decodeNumericBinary(n.appendBinary(nil))
		if err != nil || back != n {
			t.Fatalf("%q: %+v -> %+v, %v", s, n, back, err)
		}
	}
	// Large scales, at the bound.
	for _, s := range []string{"0." + strings.Repeat("0", 999) + "1", strings.Repeat("9", 1000) + "." + strings.Repeat("9", 1000), "1e-1000", "-1e999"} {
		n, err := parseNumericText(s)
		if err != nil {
			t.Fatalf("%.20q: %v", s, err)
		}
		back, err := decodeNumericBinary(n.appendBinary(nil))
		if err != nil || back != n {
			t.Errorf("%.20q: %v", s, err)
		}
	}
}

func TestNumericBinaryDecodingErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", []byte{0, 0, 0, 0, 0, 0}, errNumericSyntax},
		{"length mismatch", numericBytes(2, 0, 0, 0, 1), errNumericSyntax},
		{"negative ndigits", numericBytes(-1, 0, 0, 0), errNumericSyntax},
		{"digit too big", numericBytes(1, 0, 0, 0, 10000), errNumericSyntax},
		{"bad sign", numericBytes(1, 0, 0x1234, 0, 1), errNumericSyntax},
		{"scale too big", numericBytes(0, 0, 0, 0x4000), errNumericSyntax},
		{"too many integer digits", numericBytes(1, 250, 0, 0, 1), errNumericRange},
		{"too many fraction digits", numericBytes(1, 0, 0, 1001, 1), errNumericRange},
	} {
		if _, err := decodeNumericBinary(tc.b); err != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// Digits hidden by the scale are cut, as numeric_recv does; leading
	// zero digits and a weight beyond the digits are fine.
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{numericBytes(2, 0, 0, 1, 12, 3456), "12.3"},
		{numericBytes(2, 0, 0x4000, 0, 12, 3456), "-12"},
		{numericBytes(2, 1, 0, 0, 0, 5), "5"},
		{numericBytes(1, 3, 0, 2, 7), "7000000000000.00"},
		{numericBytes(1, -3, 0, 3, 7), "0.000"},
		{numericBytes(1, 249, 0, 0, 9999), "9999" + strings.Repeat("0", 996)},
	} {
		n, err := decodeNumericBinary(tc.b)
		if err != nil || n.String() != tc.want {
			t.Errorf("%x: got %q %v, want %q", tc.b, n.String(), err, tc.want)
		}
	}
	for _, s := range []string{"", "-", ".", "1.2.3", "1e", "1e+", "e5", "1 2", "0x10", "1,5", "++1", "1e1001", "1e-1001", strings.Repeat("1", 1001)} {
		if n, err := parseNumericText(s); err == nil {
			t.Errorf("%.30q parsed as %s", s, n)
		}
	}
}

func TestDecodeParamText(t *testing.T) {
	utc := func(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
	}
	for _, tc := range []struct {
		typ  sqltypes.Type
		in   string
		want any
	}{
		{sqltypes.Int2, " -32768 ", int64(-32768)},
		{sqltypes.Int4, "+2147483647", int64(math.MaxInt32)},
		{sqltypes.Int8, "-9223372036854775808", int64(math.MinInt64)},
		{sqltypes.OID, "4294967295", int64(math.MaxUint32)},
		{sqltypes.Float8, "0.1", 0.1},
		{sqltypes.Float8, " -1.5e-7 ", -1.5e-7},
		{sqltypes.Float8, "Infinity", math.Inf(1)},
		{sqltypes.Float8, "-inf", math.Inf(-1)},
		{sqltypes.Float4, "0.1", float64(float32(0.1))},
		{sqltypes.Numeric, "-012.3400", sqltypes.Decimal("-12.3400")},
		{sqltypes.Numeric, "1e3", sqltypes.Decimal("1000")},
		{sqltypes.Bool, "t", true},
		{sqltypes.Bool, " TRUE ", true},
		{sqltypes.Bool, "ye", true},
		{sqltypes.Bool, "on", true},
		{sqltypes.Bool, "1", true},
		{sqltypes.Bool, "f", false},
		{sqltypes.Bool, "no", false},
		{sqltypes.Bool, "OFF", false},
		{sqltypes.Bool, "0", false},
		{sqltypes.Text, "héllo", "héllo"},
		{sqltypes.Varchar, "", ""},
		{sqltypes.Unknown, "12", "12"},
		{sqltypes.Bytea, `\x00ff 10`, "\x00\xff\x10"},
		{sqltypes.Bytea, `a\\b\001`, "a\\b\x01"},
		{sqltypes.Date, "2024-03-15", utc(2024, 3, 15, 0, 0, 0, 0)},
		{sqltypes.Date, "2024-3-5", utc(2024, 3, 5, 0, 0, 0, 0)},
		{sqltypes.Date, "2024-03-15 23:59:59+05", utc(2024, 3, 15, 0, 0, 0, 0)},
		{sqltypes.Date, "2024-03-15T12:00:00.000+01:00", utc(2024, 3, 15, 0, 0, 0, 0)}, // node-postgres
		{sqltypes.Date, "0044-03-15 BC", utc(-43, 3, 15, 0, 0, 0, 0)},
		{sqltypes.Date, "10000-01-01", utc(10000, 1, 1, 0, 0, 0, 0)},
		{sqltypes.Date, "epoch", utc(1970, 1, 1, 0, 0, 0, 0)},
		{sqltypes.Timestamp, "2024-03-15 12:30:45.123456", utc(2024, 3, 15, 12, 30, 45, 123456000)},
		{sqltypes.Timestamp, "2024-03-15 12:30:45.1234565", utc(2024, 3, 15, 12, 30, 45, 123456000)}, // as a double, below .5
		{sqltypes.Timestamp, "2024-03-15 12:30:45.0000015", utc(2024, 3, 15, 12, 30, 45, 2000)},
		{sqltypes.Timestamptz, "0044-03-15 12:00:00 BC +01", utc(-43, 3, 15, 11, 0, 0, 0)},
		{sqltypes.Timestamp, "2024-03-15 12:30:45+05", utc(2024, 3, 15, 12, 30, 45, 0)},
		{sqltypes.Timestamp, "2024-03-15 12:30", utc(2024, 3, 15, 12, 30, 0, 0)},
		{sqltypes.Timestamp, "2024-03-15", utc(2024, 3, 15, 0, 0, 0, 0)},
		{sqltypes.Timestamp, "2024-12-31 24:00:00", utc(2025, 1, 1, 0, 0, 0, 0)},
		{sqltypes.Timestamp, "2024-03-15 23:59:59.9999999", utc(2024, 3, 16, 0, 0, 0, 0)},
		{sqltypes.Timestamptz, "2024-03-15 12:30:45+01", utc(2024, 3, 15, 11, 30, 45, 0)},
		{sqltypes.Timestamptz, "2024-03-15 12:30:45.5-07:30", utc(2024, 3, 15, 20, 0, 45, 500000000)},
		{sqltypes.Timestamptz, "2024-03-15 12:30:45 +0530", utc(2024, 3, 15, 7, 0, 45, 0)},
		{sqltypes.Timestamptz, "2024-03-15T12:30:45Z", utc(2024, 3, 15, 12, 30, 45, 0)},
		{sqltypes.Timestamptz, "2024-03-15 12:30:45 UTC", utc(2024, 3, 15, 12, 30, 45, 0)},
		{sqltypes.Timestamptz, "2024-03-15 12:30:45", utc(2024, 3, 15, 12, 30, 45, 0)},
		{sqltypes.Timestamptz, "2024-03-15 12:30:45+00 BC", utc(-2023, 3, 15, 12, 30, 45, 0)},
	} {
		got, e := decodeParam(tc.typ, formatText, []byte(tc.in), 1)
		if e != nil {
			t.Errorf("%v %q: %s %s", tc.typ, tc.in, e.Code, e.Message)
			continue
		}
		if tw, ok := tc.want.(time.Time); ok {
			if tg, ok := got.(time.Time); !ok || !tg.Equal(tw) || tg.Location() != time.UTC {
				t.Errorf("%v %q: got %v, want %v", tc.typ, tc.in, got, tw)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%v %q: got %#v, want %#v", tc.typ, tc.in, got, tc.want)
		}
	}
	if v, e := decodeParam(sqltypes.Int8, formatText, nil, 1); v != nil || e != nil {
		t.Errorf("NULL: %v %v", v, e)
	}
}

func TestDecodeParamTextErrors(t *testing.T) {
	for _, tc := range []struct {
		typ  sqltypes.Type
		in   string
		code sqlerr.Code
	}{
		{sqltypes.Int4, "", "22P02"},
		{sqltypes.Int4, "1.0", "22P02"},
		{sqltypes.Int4, "1_000", "22P02"},
		{sqltypes.Int2, "32768", "22003"},
		{sqltypes.Int8, "9223372036854775808", "22003"},
		{sqltypes.OID, "-1", "22P02"},
		{sqltypes.Float8, "1e400", "22003"},
		{sqltypes.Float4, "1e39", "22003"},
		{sqltypes.Float8, "0x1p3", "22P02"},
		{sqltypes.Float8, "abc", "22P02"},
		{sqltypes.Numeric, "Infinity", "22P02"},
		{sqltypes.Numeric, "abc", "22P02"},
		{sqltypes.Bool, "o", "22P02"},
		{sqltypes.Bool, "maybe", "22P02"},
		{sqltypes.Bool, "", "22P02"},
		{sqltypes.Text, "a\x00b", "22021"},
		{sqltypes.Name, "\xc3", "22021"},
		{sqltypes.Text, "ok \xe2\x82", "22021"},
		{sqltypes.Bytea, `\x0`, "22023"},
		{sqltypes.Bytea, `\xzz`, "22023"},
		{sqltypes.Bytea, `a\b`, "22P02"},
		{sqltypes.Date, "2024-02-30", "22008"},
		{sqltypes.Date, "0000-01-01", "22008"},
		{sqltypes.Date, "2024-13-01", "22008"},
		{sqltypes.Date, "15.03.2024", "22007"},
		{sqltypes.Date, "2024-03-15x", "22007"},
		{sqltypes.Timestamp, "2024-03-15 25:00", "22008"},
		{sqltypes.Timestamp, "2024-03-15 24:00:01", "22008"},
		{sqltypes.Timestamp, "2024-03-15 12:60", "22008"},
		{sqltypes.Timestamp, "2024-03-15 12", "22007"},
		{sqltypes.Timestamp, "2024-03-15T", "22007"},
		{sqltypes.Timestamptz, "2024-03-15 12:00+16", "22008"},
		{sqltypes.Timestamptz, "2024-03-15 12:00 Europe/Berlin", "22007"},
		{sqltypes.Timestamptz, "infinity", "22P02"},
		{sqltypes.Timestamptz, "now", "22P02"},
		{sqltypes.Date, "9999999-01-01", "22008"},
	} {
		v, e := decodeParam(tc.typ, formatText, []byte(tc.in), 3)
		if e == nil {
			t.Errorf("%v %q: accepted as %#v", tc.typ, tc.in, v)
			continue
		}
		if e.Code != tc.code || e.Detail != "In bind parameter $3." {
			t.Errorf("%v %q: got %s %q (%s), want %s", tc.typ, tc.in, e.Code, e.Message, e.Detail, tc.code)
		}
	}
}

func TestDecodeParamBinary(t *testing.T) {
	be16 := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	be32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	be64 := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	for _, tc := range []struct {
		typ  sqltypes.Type
		in   []byte
		want any
	}{
		{sqltypes.Int2, be16(0xffff), int64(-1)},
		{sqltypes.Int4, be32(0x80000000), int64(math.MinInt32)},
		{sqltypes.Int8, be64(1 << 40), int64(1 << 40)},
		{sqltypes.Int8, be32(7), int64(7)}, // a narrower width is fine
		{sqltypes.Int2, be64(12), int64(12)},
		{sqltypes.OID, be32(math.MaxUint32), int64(math.MaxUint32)},
		{sqltypes.Float8, be64(math.Float64bits(0.1)), 0.1},
		{sqltypes.Float8, be32(math.Float32bits(0.5)), 0.5},
		{sqltypes.Float4, be32(math.Float32bits(1.25)), 1.25},
		{sqltypes.Numeric, numericBytes(2, 0, 0x4000, 2, 12, 5000), sqltypes.Decimal("-12.50")},
		{sqltypes.Bool, []byte{1}, true},
		{sqltypes.Bool, []byte{0}, false},
		{sqltypes.Text, []byte("ünï"), "ünï"},
		{sqltypes.Unknown, []byte("x"), "x"},
		{sqltypes.Bytea, []byte{0, 0xff}, "\x00\xff"},
		{sqltypes.Date, be32(8840), time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC)},
		{sqltypes.Date, be32(uint32(0xffffffff)), time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)},
		{sqltypes.Timestamptz, be64(uint64(cannedTime.Sub(pgEpoch).Microseconds())), cannedTime},
		{sqltypes.Timestamp, be64(math.MaxUint64), time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)},
	} {
		got, e := decodeParam(tc.typ, formatBinary, tc.in, 1)
		if e != nil {
			t.Errorf("%v %x: %s %s", tc.typ, tc.in, e.Code, e.Message)
			continue
		}
		if tw, ok := tc.want.(time.Time); ok {
			if tg, ok := got.(time.Time); !ok || !tg.Equal(tw) {
				t.Errorf("%v %x: got %v, want %v", tc.typ, tc.in, got, tw)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%v %x: got %#v, want %#v", tc.typ, tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		typ  sqltypes.Type
		in   []byte
		code sqlerr.Code
	}{
		{sqltypes.Int4, []byte{1}, "22P03"},
		{sqltypes.Int2, be32(40000), "22003"},
		{sqltypes.Int4, be64(1 << 40), "22003"},
		{sqltypes.OID, be64(1), "22P03"},
		{sqltypes.Float8, []byte{1, 2}, "22P03"},
		{sqltypes.Float4, be64(math.Float64bits(1e300)), "22003"},
		{sqltypes.Bool, []byte{1, 0}, "22P03"},
		{sqltypes.Numeric, numericBytes(0, 0, 0xD000, 0), "22P02"},
		{sqltypes.Numeric, []byte{0}, "22P03"},
		{sqltypes.Date, be32(math.MaxInt32), "22023"},
		{sqltypes.Date, be64(1), "22P03"},
		{sqltypes.Timestamptz, be64(math.MaxInt64), "22023"},
		{sqltypes.Timestamp, be64(1 << 63), "22023"},
		{sqltypes.Timestamp, be32(1), "22P03"},
		{sqltypes.Varchar, []byte{0xff}, "22021"},
	} {
		if v, e := decodeParam(tc.typ, formatBinary, tc.in, 1); e == nil || e.Code != tc.code {
			t.Errorf("%v %x: got %#v %+v, want %s", tc.typ, tc.in, v, e, tc.code)
		}
	}
}

// appendBinary must give what PostgreSQL's typsend functions give.
func TestAppendBinaryValues(t *testing.T) {
	for _, tc := range []struct {
		typ  sqltypes.Type
		v    any
		want []byte
	}{
		{sqltypes.Bool, true, []byte{1}},
		{sqltypes.Bool, "f", []byte{0}},
		{sqltypes.Int2, int64(-2), []byte{0xff, 0xfe}},
		{sqltypes.Int4, int64(1), []byte{0, 0, 0, 1}},
		{sqltypes.Int8, int64(-1), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{sqltypes.Int8, 3.0, []byte{0, 0, 0, 0, 0, 0, 0, 3}},
		{sqltypes.Int8, sqltypes.Decimal("12"), []byte{0, 0, 0, 0, 0, 0, 0, 12}},
		{sqltypes.OID, int64(26), []byte{0, 0, 0, 26}},
		{sqltypes.Float4, 1.5, []byte{0x3f, 0xc0, 0, 0}},
		{sqltypes.Float8, int64(2), []byte{0x40, 0, 0, 0, 0, 0, 0, 0}},
		{sqltypes.Float8, sqltypes.Decimal("0.5"), []byte{0x3f, 0xe0, 0, 0, 0, 0, 0, 0}},
		{sqltypes.Numeric, sqltypes.Decimal("-0.001"), numericBytes(1, -1, 0x4000, 3, 10)},
		{sqltypes.Numeric, int64(10000), numericBytes(1, 1, 0, 0, 1)},
		{sqltypes.Numeric, 0.25, numericBytes(1, -1, 0, 2, 2500)},
		{sqltypes.Numeric, math.NaN(), numericBytes(0, 0, 0xC000, 0)},
		{sqltypes.Numeric, sqltypes.Decimal("Infinity"), numericBytes(0, 0, 0xD000, 32)},
		{sqltypes.Text, "héllo", []byte("héllo")},
		{sqltypes.Varchar, int64(5), []byte("5")},
		{sqltypes.Unknown, "u", []byte("u")},
		{sqltypes.Name, "n", []byte("n")},
		{sqltypes.Bpchar, "b ", []byte("b ")},
		{sqltypes.Bytea, "\x00\x01", []byte{0, 1}},
		{sqltypes.Bytea, []byte{2}, []byte{2}},
		{sqltypes.Date, time.Date(2024, 3, 15, 23, 0, 0, 0, time.FixedZone("x", -3600)), []byte{0, 0, 0x22, 0x88}},
		{sqltypes.Date, time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), []byte{0xff, 0xff, 0xff, 0xff}},
		{sqltypes.Date, "2000-01-02", []byte{0, 0, 0, 1}},
		{sqltypes.Timestamp, time.Date(2000, 1, 1, 0, 0, 1, 500, time.FixedZone("x", 3600)), []byte{0, 0, 0, 0, 0, 0x0f, 0x42, 0x41}},
		{sqltypes.Timestamptz, time.Date(2000, 1, 1, 1, 0, 0, 0, time.FixedZone("x", 3600)), []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{sqltypes.Timestamptz, time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	} {
		got, err := appendBinary(nil, tc.typ, tc.v)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%v %#v: got %x %v, want %x", tc.typ, tc.v, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		typ sqltypes.Type
		v   any
	}{
		{sqltypes.Int2, int64(40000)},
		{sqltypes.Int4, int64(1) << 40},
		{sqltypes.Int8, uint64(math.MaxUint64)},
		{sqltypes.Int8, 1.5},
		{sqltypes.Int8, "x"},
		{sqltypes.OID, int64(-1)},
		{sqltypes.Float8, true},
		{sqltypes.Numeric, "abc"},
		{sqltypes.Bool, int64(2)},
		{sqltypes.Date, "soon"},
		{sqltypes.Timestamptz, time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if got, err := appendBinary(nil, tc.typ, tc.v); err == nil {
			t.Errorf("%v %#v: encoded as %x", tc.typ, tc.v, got)
		}
	}
}

func TestAppendDataRowFormats(t *testing.T) {
	cols := []sqltypes.Column{{Name: "a", Type: sqltypes.Int4}, {Name: "b", Type: sqltypes.Text}, {Name: "c", Type: sqltypes.Int8}}
	buf, err := appendDataRowFormats([]byte("prefix"), cols, []int16{1, 0, 1}, []any{int64(7), "x", nil})
	if err != nil {
		t.Fatal(err)
	}
	want := "prefix" + "D\x00\x00\x00\x17\x00\x03" + "\x00\x00\x00\x04\x00\x00\x00\x07" + "\x00\x00\x00\x01x" + "\xff\xff\xff\xff"
	if string(buf) != want {
		t.Errorf("got %q\nwant %q", buf, want)
	}
	// A value without a binary form leaves dst as it was.
	buf, err = appendDataRowFormats([]byte("prefix"), cols, []int16{1, 1, 1}, []any{int64(1) << 40, "x", nil})
	if err == nil || string(buf) != "prefix" {
		t.Errorf("got %q %v", buf, err)
	}
}

func TestResultFormats(t *testing.T) {
	for _, tc := range []struct {
		codes []int16
		ncols int
		want  []int16
		code  sqlerr.Code
	}{
		{nil, 3, nil, ""},
		{[]int16{0}, 3, nil, ""},
		{[]int16{1}, 3, []int16{1, 1, 1}, ""},
		{[]int16{0, 1, 0}, 3, []int16{0, 1, 0}, ""},
		{[]int16{0, 0, 0}, 3, nil, ""},
		{[]int16{1}, 0, nil, ""},
		{[]int16{0, 1}, 3, nil, "08P01"},
		{[]int16{0, 1}, 0, nil, "08P01"},
		{[]int16{2}, 3, nil, "22023"},
		{[]int16{-1}, 0, nil, "22023"},
	} {
		got, e := resultFormats(tc.codes, tc.ncols)
		switch {
		case tc.code != "":
			if e == nil || e.Code != tc.code {
				t.Errorf("%v/%d: got %v %+v, want %s", tc.codes, tc.ncols, got, e, tc.code)
			}
		case e != nil || !slicesEqual(got, tc.want):
			t.Errorf("%v/%d: got %v %+v, want %v", tc.codes, tc.ncols, got, e, tc.want)
		}
	}
}

func slicesEqual(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFirstKeyword(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		word  string
		empty bool
	}{
		{"", "", true},
		{" ;; \n", "", true},
		{"-- ping", "", true},
		{"/* a /* nested */ comment */", "", true},
		{"/* unterminated", "", true},
		{"rollback", "ROLLBACK", false},
		{"  -- c\n/* d */ Commit;", "COMMIT", false},
		{"ROLLBACK TO SAVEPOINT x", "ROLLBACK", false},
		{"(select 1)", "", false},
		{"end_of_time", "END_OF_TIME", false},
		{"abort", "ABORT", false},
	} {
		word, empty := firstKeyword(tc.sql)
		if word != tc.word || empty != tc.empty {
			t.Errorf("%q: got %q %v, want %q %v", tc.sql, word, empty, tc.word, tc.empty)
		}
	}
}

func TestRowCountTag(t *testing.T) {
	for _, tc := range []struct {
		tag  string
		n    int
		want string
	}{
		{"SELECT 5", 2, "SELECT 2"},
		{"SELECT 0", 0, "SELECT 0"},
		{"SHOW", 1, "SHOW"},
		{"SELECT x", 1, "SELECT x"},
		{"EXPLAIN", 3, "EXPLAIN"},
	} {
		if got := rowCountTag(tc.tag, tc.n); got != tc.want {
			t.Errorf("%q %d: got %q", tc.tag, tc.n, got)
		}
	}
}
