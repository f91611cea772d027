package backend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// WireQuerier is a backend that can return a public-table result in its
// clients' wire form, skipping the decoding of each value and its
// re-encoding by the front end: PostgreSQL's text DataRows.
type WireQuerier interface {
	// QueryPostgresText runs sql like Query. When every result column has
	// a wire-safe type (see wireSafe) the rows come back in
	// Rows.PostgresText and Rows.Values is nil; otherwise they are
	// decoded as Query decodes them.
	QueryPostgresText(ctx context.Context, sql string, args ...any) (*Rows, error)
}

var _ WireQuerier = (*Postgres)(nil)

// wireSafe are the column types whose text form PostgreSQL prints exactly
// as dpproxy's front end would print the decoded value, and which conform
// never retypes: forwarding the backend's bytes changes nothing the client
// sees. Floats (digits), numeric (NaN), dates and times (time zones,
// infinity) and bytea are decoded as before.
func wireSafe(t sqltypes.Type) bool {
	switch t {
	case sqltypes.Bool, sqltypes.Int2, sqltypes.Int4, sqltypes.Int8, sqltypes.OID,
		sqltypes.Text, sqltypes.Varchar, sqltypes.Bpchar, sqltypes.Name:
		return true
	}
	return false
}

// QueryPostgresText runs sql and returns its rows as DataRow bodies when
// every column is wire-safe.
func (p *Postgres) QueryPostgresText(ctx context.Context, sql string, args ...any) (*Rows, error) {
	if res, ok, err := p.combined(ctx, sql, args, true); ok {
		return res, err
	}
	return p.query(ctx, queryWire, sql, args)
}

// combined runs sql in a combined batch (wire form when wire is set and
// every column is wire-safe, decoded otherwise) when it is a text seen
// before, admitted and not benched (combineRecord):
// it runs prepared, and a long one would hold up its batch. ok is false
// when the statement should run alone.
func (p *Postgres) combined(ctx context.Context, sql string, args []any, wire bool) (res *Rows, ok bool, err error) {
	if p.combiner == nil {
		return nil, false, nil
	}
	last, seen := p.seen.Get(sql)
	if !seen || !p.combiner.combines(last.combining) {
		return nil, false, nil
	}
	s := newCombinedStmt(ctx, sql, args, wire)
	if last.ran {
		s.onSent = SentHook(ctx)
	}
	res, took, err := p.combiner.runStmt(s)
	if took >= p.combiner.leaveAt {
		// Runs alone until readmitted. The record as it is now, not as
		// read before the run, so that what other runs wrote meanwhile
		// stays (combineRecord).
		cur, _ := p.seen.Peek(sql)
		if rec, changed := struck(cur.combining, last.combining); changed {
			cur.combining = rec
			p.seen.Add(sql, cur)
		}
	}
	switch {
	case err == nil:
		return res, true, nil
	case errors.Is(err, errCombinerBusy):
	case planChanged(err):
		// A table changed under the connection's prepared statement
		// (closed in its next batch): run it alone.
	default:
		return nil, true, err
	}
	return nil, false, nil
}

// queryWire runs one statement with text results and keeps each row's
// values as a DataRow body, or decodes them when a column is not
// wire-safe.
func queryWire(ctx context.Context, c *pgx.Conn, sql string, args []any, mode pgx.QueryExecMode) (*Rows, error) {
	rows, err := c.Query(ctx, sql, append([]any{mode, textResults}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	b, err := newRowsBuilder(ctx, rows.FieldDescriptions(), c.TypeMap(), true)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		if err := b.add(rows.RawValues()); err != nil {
			stopIfTooLarge(ctx, c, err)
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return b.result(), nil
}

// rowShape is what reading a result's rows needs of its columns: their
// names and types, each one's decoder, and whether every column is
// wire-safe. A combined text's shape is made once, when it is prepared
// (pgcombine.go), and read by every execution.
type rowShape struct {
	fds      []pgconn.FieldDescription
	cols     []Column
	decoders []pgDecoder
	wireSafe bool
}

func newRowShape(fds []pgconn.FieldDescription, m *pgtype.Map) (*rowShape, error) {
	sh := &rowShape{fds: fds, cols: make([]Column, len(fds)), decoders: make([]pgDecoder, len(fds)), wireSafe: true}
	for i, fd := range fds {
		if fd.Format != pgx.TextFormatCode {
			return nil, fmt.Errorf("column %q: unexpected result format %d", fd.Name, fd.Format)
		}
		t, dec := postgresDecoder(fd.DataTypeOID, m)
		sh.cols[i] = Column{Name: fd.Name, Type: t}
		sh.decoders[i] = dec
		if !wireSafe(t) {
			sh.wireSafe = false
		}
	}
	return sh, nil
}

// rowsBuilder collects a result's rows from their text values: as
// DataRow bodies when asked and every column is wire-safe, decoded
// otherwise.
type rowsBuilder struct {
	meter   resultMeter
	shape   *rowShape
	decoded bool
	// DataRow bodies: rows of them, one after another in buf.
	buf  []byte
	rows int
	// Decoded rows.
	values [][]any
}

func newRowsBuilder(ctx context.Context, fds []pgconn.FieldDescription, m *pgtype.Map, wire bool) (*rowsBuilder, error) {
	sh, err := newRowShape(fds, m)
	if err != nil {
		return nil, err
	}
	b := &rowsBuilder{}
	b.init(ctx, sh, wire)
	return b, nil
}

// init readies b for a result of the given shape.
func (b *rowsBuilder) init(ctx context.Context, sh *rowShape, wire bool) {
	*b = rowsBuilder{meter: resultMeter{limit: resultLimitFrom(ctx)}, shape: sh}
	if !wire || !sh.wireSafe {
		b.decoded = true
		b.values = [][]any{}
	}
}

// add adds one row, its values in text form (nil for NULL).
func (b *rowsBuilder) add(raw [][]byte) error {
	if !b.decoded {
		if b.buf == nil {
			size := 2
			for _, v := range raw {
				size += 4 + len(v)
			}
			b.buf = make([]byte, 0, size)
		}
		start := len(b.buf)
		b.buf = binary.BigEndian.AppendUint16(b.buf, uint16(len(raw)))
		for _, v := range raw {
			if v == nil {
				b.buf = binary.BigEndian.AppendUint32(b.buf, 0xFFFFFFFF)
				continue
			}
			b.buf = binary.BigEndian.AppendUint32(b.buf, uint32(len(v)))
			b.buf = append(b.buf, v...)
		}
		if err := b.meter.addEncoded(len(b.buf) - start); err != nil {
			return err
		}
		b.rows++
		return nil
	}
	row := make([]any, len(raw))
	for i, v := range raw {
		if v == nil {
			continue
		}
		d, err := b.shape.decoders[i](v)
		if err != nil {
			return fmt.Errorf("decode column %q (%s): %w", b.shape.fds[i].Name, b.shape.cols[i].Type, err)
		}
		row[i] = d
	}
	if err := b.meter.add(row); err != nil {
		return err
	}
	b.values = append(b.values, row)
	return nil
}

// result is the rows added. DataRow bodies come with the shape's columns
// (shared, like every Rows' columns, read-only); decoded rows with columns
// of their own, which conform may retype.
func (b *rowsBuilder) result() *Rows {
	if !b.decoded {
		return &Rows{Columns: b.shape.cols, PostgresText: splitDataRows(b.buf, b.rows)}
	}
	cols := slices.Clone(b.shape.cols)
	conform(cols, b.values)
	return &Rows{Columns: cols, Values: b.values}
}

// splitDataRows cuts buf, n DataRow bodies one after another, into its
// rows, each capped as splitRows caps them: one allocation, where keeping
// each row's end as it was added took one more.
func splitDataRows(buf []byte, n int) [][]byte {
	rows := make([][]byte, n)
	pos := 0
	for i := range rows {
		start := pos
		cols := int(binary.BigEndian.Uint16(buf[pos:]))
		pos += 2
		for range cols {
			size := int32(binary.BigEndian.Uint32(buf[pos:]))
			pos += 4
			if size > 0 {
				pos += int(size)
			}
		}
		rows[i] = buf[start:pos:pos]
	}
	return rows
}

// splitRows cuts buf, every row's wire form one after another, at ends
// (each row's end): one allocation for the rows' bytes, each row capped so
// that nothing appended to one can reach the next.
func splitRows(buf []byte, ends []int) [][]byte {
	rows := make([][]byte, len(ends))
	start := 0
	for i, end := range ends {
		rows[i] = buf[start:end:end]
		start = end
	}
	return rows
}
