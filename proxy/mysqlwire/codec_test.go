package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

func TestLenEncInt(t *testing.T) {
	for _, n := range []uint64{0, 1, 250, 251, 0xffff, 0x10000, 0xffffff, 0x1000000, math.MaxUint64} {
		b := appendLenEncInt(nil, n)
		d := &decoder{b: b}
		got, null := d.lenEncInt()
		if got != n || null || d.err != nil || d.remaining() != 0 {
			t.Errorf("%d: encoded %x, decoded %d null=%v err=%v", n, b, got, null, d.err)
		}
	}
	if _, null := (&decoder{b: []byte{0xfb}}).lenEncInt(); !null {
		t.Error("0xfb is NULL")
	}
	for _, bad := range [][]byte{{}, {0xff}, {0xfc, 1}, {0xfd, 1, 2}, {0xfe, 1, 2, 3}} {
		d := &decoder{b: bad}
		d.lenEncInt()
		if d.err == nil {
			t.Errorf("%x: no error", bad)
		}
	}
	s := appendLenEncString(nil, "héllo")
	if d := (&decoder{b: s}); string(d.lenEncBytes()) != "héllo" || d.err != nil {
		t.Errorf("lenenc string %x", s)
	}
}

func TestPacketFraming(t *testing.T) {
	for _, n := range []int{0, 1, maxPayload - 1, maxPayload, maxPayload + 5, 2 * maxPayload} {
		payload := bytes.Repeat([]byte{7}, n)
		var seq uint8 = 3
		framed := appendPacket(nil, payload, &seq)
		var rseq uint8 = 3
		pr := &packetReader{r: bytes.NewReader(framed), max: 3 * maxPayload}
		got, err := pr.readPacket(&rseq)
		if err != nil || !bytes.Equal(got, payload) || rseq != seq {
			t.Errorf("%d bytes: err %v, len %d, seq %d/%d", n, err, len(got), rseq, seq)
		}
	}
	// Too large: refused from the header alone.
	var seq uint8
	pr := &packetReader{r: bytes.NewReader([]byte{0xff, 0xff, 0x0f, 0}), max: 1000}
	if _, err := pr.readPacket(&seq); err != errPacketTooLarge {
		t.Errorf("oversized: %v", err)
	}
	seq = 0
	pr = &packetReader{r: bytes.NewReader([]byte{1, 0, 0, 5, 0x0e}), max: 1000}
	if _, err := pr.readPacket(&seq); err == nil {
		t.Error("wrong sequence id accepted")
	}
}

func TestColumnDefinition(t *testing.T) {
	b := appendColumnDef(nil, "", "", sqltypes.Column{Name: "n", Type: sqltypes.Int8}, false)
	d := &decoder{b: b}
	for _, want := range []string{"def", "", "", "", "n", "n"} {
		if got := string(d.lenEncBytes()); got != want {
			t.Fatalf("field %q, want %q", got, want)
		}
	}
	if d.uint8() != 0x0c || d.uint16() != charsetBinary || d.uint32() != 20 || d.uint8() != typeLongLong {
		t.Errorf("fixed fields wrong: %x", b)
	}
	if flags := d.uint16(); flags&flagBinary == 0 || flags&flagNum == 0 {
		t.Errorf("flags %x", flags)
	}
	if ct := columnTypeOf(sqltypes.Text); ct.charset != charsetUTF8MB4 || ct.typ != typeVarString {
		t.Errorf("text: %+v", ct)
	}
}

func TestTextValues(t *testing.T) {
	ts := time.Date(2024, 3, 5, 6, 7, 8, 123456000, time.UTC)
	for _, c := range []struct {
		v    any
		t    sqltypes.Type
		want string
	}{
		{int64(-42), sqltypes.Int8, "-42"},
		{true, sqltypes.Bool, "1"},
		{int64(1), sqltypes.Bool, "1"},
		{1.5, sqltypes.Float8, "1.5"},
		{1e20, sqltypes.Float8, "1e20"},
		{sqltypes.Decimal("12.50"), sqltypes.Numeric, "12.50"},
		{"héllo", sqltypes.Text, "héllo"},
		{ts, sqltypes.Date, "2024-03-05"},
		{ts, sqltypes.Timestamp, "2024-03-05 06:07:08.123456"},
		{[]byte{0, 1}, sqltypes.Bytea, "\x00\x01"},
	} {
		b := appendTextValue(nil, c.v, c.t)
		d := &decoder{b: b}
		if got := string(d.lenEncBytes()); got != c.want || d.remaining() != 0 {
			t.Errorf("%v (%s): %q, want %q", c.v, c.t, got, c.want)
		}
	}
	if b := appendTextValue(nil, nil, sqltypes.Text); !bytes.Equal(b, []byte{0xfb}) {
		t.Errorf("NULL: %x", b)
	}
}

// A text value is formatted in place after a one-byte length and moved up
// when its length needs more: every length form, after what the row
// already holds.
func TestTextValueLengths(t *testing.T) {
	for _, n := range []int{0, 1, 250, 251, 252, 65535, 65536, 1<<24 - 1, 1 << 24} {
		text := strings.Repeat("x", n-min(n, 1)) + strings.Repeat("y", min(n, 1))
		got := appendTextValue([]byte("row"), text, sqltypes.Text)
		want := appendLenEncString([]byte("row"), text)
		if !bytes.Equal(got, want) {
			t.Errorf("length %d: %d bytes starting %x, want %d starting %x", n, len(got), got[:min(len(got), 12)], len(want), want[:min(len(want), 12)])
		}
	}
}

func TestBinaryRow(t *testing.T) {
	ts := time.Date(2024, 3, 5, 6, 7, 8, 0, time.UTC)
	cols := []sqltypes.Column{
		{Name: "b", Type: sqltypes.Bool}, {Name: "s", Type: sqltypes.Int2}, {Name: "i", Type: sqltypes.Int4},
		{Name: "l", Type: sqltypes.Int8}, {Name: "f", Type: sqltypes.Float4}, {Name: "d", Type: sqltypes.Float8},
		{Name: "n", Type: sqltypes.Numeric}, {Name: "t", Type: sqltypes.Text}, {Name: "date", Type: sqltypes.Date},
		{Name: "ts", Type: sqltypes.Timestamp}, {Name: "null", Type: sqltypes.Text}, {Name: "by", Type: sqltypes.Bytea},
	}
	row := []any{true, int64(-2), int64(70000), int64(-1 << 40), 1.5, 2.25, sqltypes.Decimal("3.10"), "x", ts, ts, nil, []byte{9}}
	b, err := appendBinaryRow(nil, row, cols)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x00}
	bitmap := make([]byte, binaryNullBitmapLen(len(cols)))
	bitmap[(10+2)/8] |= 1 << ((10 + 2) % 8)
	want = append(want, bitmap...)
	want = append(want, 1)
	want = binary.LittleEndian.AppendUint16(want, uint16(0xfffe))
	want = binary.LittleEndian.AppendUint32(want, 70000)
	want = binary.LittleEndian.AppendUint64(want, uint64(0xffffff0000000000))
	want = binary.LittleEndian.AppendUint32(want, math.Float32bits(1.5))
	want = binary.LittleEndian.AppendUint64(want, math.Float64bits(2.25))
	want = append(want, 4, '3', '.', '1', '0', 1, 'x')
	want = append(want, 4, 0xe8, 0x07, 3, 5)
	want = append(want, 7, 0xe8, 0x07, 3, 5, 6, 7, 8)
	want = append(want, 1, 9)
	if !bytes.Equal(b, want) {
		t.Errorf("binary row\n got %x\nwant %x", b, want)
	}
	if _, err := appendBinaryRow(nil, []any{"x"}, []sqltypes.Column{{Name: "i", Type: sqltypes.Int4}}); err == nil {
		t.Error("text in an integer column accepted")
	}
}

func TestDecodeBinaryParams(t *testing.T) {
	st := &statement{p: &sqltypes.Prepared{Params: make([]sqltypes.Type, 6)}}
	b := []byte{0, 1, 0, 0, 0}   // flags, iteration count
	b = append(b, 0b00100000, 1) // NULL bitmap: param 6 NULL; new params bound
	for _, typ := range []uint16{uint16(typeLongLong), uint16(typeTiny) | 0x8000, uint16(typeDouble), uint16(typeVarString), uint16(typeDatetime), uint16(typeNull)} {
		b = binary.LittleEndian.AppendUint16(b, typ)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(1<<63-1))
	b = append(b, 200)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(0.25))
	b = appendLenEncString(b, "F")
	b = append(b, 7, 0xe8, 0x07, 3, 5, 6, 7, 8)
	c := &conn{}
	got, err := c.decodeParams(st, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(1<<63 - 1), int64(200), 0.25, "F", time.Date(2024, 3, 5, 6, 7, 8, 0, time.UTC), nil}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("param %d: %#v, want %#v", i+1, got[i], want[i])
		}
	}
	// Types are kept for the next execution without new-params-bound.
	b2 := []byte{0, 1, 0, 0, 0, 0b00111111, 0}
	if got, err := c.decodeParams(st, b2); err != nil || got[0] != nil {
		t.Errorf("all NULL with kept types: %v %v", got, err)
	}
	for i := 0; i < len(b); i++ {
		st.types = nil
		if _, err := c.decodeParams(st, b[:i]); err == nil {
			t.Errorf("truncated at %d accepted", i)
		}
	}
}
