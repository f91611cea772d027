package pgwire

import (
	"bytes"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// Row encoding of a 1,000-row result (a public-table passthrough of the
// demo's visits shape) into DataRow messages, text and binary formats, as
// writeResults and the extended protocol's Execute do. One op is the whole
// result; rows/s is reported too.

func benchResult() *sqltypes.Result {
	res := &sqltypes.Result{Columns: []sqltypes.Column{
		{Name: "visit_id", Type: sqltypes.Int4},
		{Name: "patient_id", Type: sqltypes.Int4},
		{Name: "visit_date", Type: sqltypes.Date},
		{Name: "diagnosis", Type: sqltypes.Text},
		{Name: "cost", Type: sqltypes.Numeric},
		{Name: "ratio", Type: sqltypes.Float8},
	}}
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		res.Rows = append(res.Rows, []any{
			int64(i + 1), int64(i/13 + 1), day.AddDate(0, 0, i%700), "J06",
			sqltypes.Decimal("1234.56"), float64(i) / 7,
		})
	}
	return res
}

func benchmarkEncode(b *testing.B, formats []int16) {
	res := benchResult()
	if err := validateResults([]*sqltypes.Result{res}); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = buf[:0]
		for _, row := range res.Rows {
			var err error
			if buf, err = appendDataRowFormats(buf, res.Columns, formats, row); err != nil {
				b.Fatal(err)
			}
			if len(buf) >= flushThreshold { // what writeResults does: flush and reuse
				buf = buf[:0]
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*len(res.Rows))/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkDataRowText1000(b *testing.B) { benchmarkEncode(b, nil) }

func BenchmarkDataRowBinary1000(b *testing.B) {
	benchmarkEncode(b, []int16{formatBinary, formatBinary, formatBinary, formatBinary, formatBinary, formatBinary})
}

// BenchmarkDataRowWire1000 writes the same number of rows of the
// wire-safe columns (the integers and the text) forwarded as the backend's
// DataRow bodies (sqltypes.Result.PostgresText), checked and copied as
// writeResults does; BenchmarkDataRowTextSafe1000 encodes those columns
// from values, the path it replaces.
func BenchmarkDataRowWire1000(b *testing.B) {
	res := benchResult()
	safe := &sqltypes.Result{Columns: res.Columns[:2:2]}
	safe.Columns = append(safe.Columns, res.Columns[3])
	for _, row := range res.Rows {
		body := appendDataRow(nil, safe.Columns, []any{row[0], row[1], row[3]})
		safe.PostgresText = append(safe.PostgresText, body[5:]) // without 'D' and the length
	}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := checkWireRows(safe); err != nil {
			b.Fatal(err)
		}
		buf = buf[:0]
		for _, body := range safe.PostgresText {
			if buf = appendWireRow(buf, body); len(buf) >= flushThreshold {
				buf = buf[:0]
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*len(safe.PostgresText))/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkDataRowTextSafe1000(b *testing.B) {
	res := benchResult()
	cols := []sqltypes.Column{res.Columns[0], res.Columns[1], res.Columns[3]}
	rows := make([][]any, len(res.Rows))
	for i, row := range res.Rows {
		rows[i] = []any{row[0], row[1], row[3]}
	}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := validateResults([]*sqltypes.Result{{Columns: cols, Rows: rows}}); err != nil {
			b.Fatal(err)
		}
		buf = buf[:0]
		for _, row := range rows {
			if buf = appendDataRow(buf, cols, row); len(buf) >= flushThreshold {
				buf = buf[:0]
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*len(rows))/b.Elapsed().Seconds(), "rows/s")
}

// The messages written straight into the buffer are pgproto3's encodings.
func TestDirectMessagesMatchPgproto3(t *testing.T) {
	for _, tag := range []string{"SELECT 0", "SELECT 1024", "BEGIN", "SET", ""} {
		want, err := (&pgproto3.CommandComplete{CommandTag: []byte(tag)}).Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendCommandComplete([]byte("x"), tag); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Errorf("CommandComplete %q: % x, want % x after the buffer's byte", tag, got, want)
		}
	}
	for _, status := range []byte{txIdle, txInBlock, txFailed} {
		want, err := (&pgproto3.ReadyForQuery{TxStatus: status}).Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		c := &conn{txStatus: status}
		if c.sendReadyForQuery(); !bytes.Equal(c.wbuf, want) {
			t.Errorf("ReadyForQuery %c: % x, want % x", status, c.wbuf, want)
		}
	}
}
