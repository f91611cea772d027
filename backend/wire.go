package backend

import (
	"context"
	"encoding/binary"

	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/jackc/pgx/v5"
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
	return p.query(ctx, queryWire, sql, args)
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
	fds := rows.FieldDescriptions()
	cols := make([]Column, len(fds))
	for i, fd := range fds {
		t, _ := postgresDecoder(fd.DataTypeOID, c.TypeMap())
		cols[i] = Column{Name: fd.Name, Type: t}
		if fd.Format != pgx.TextFormatCode || !wireSafe(t) {
			res, err := readPostgresRows(ctx, rows, c.TypeMap())
			stopIfTooLarge(ctx, c, err)
			return res, err
		}
	}
	// Every row's body goes into one buffer, sliced at the end.
	meter := resultMeter{limit: resultLimitFrom(ctx)}
	var buf []byte
	var ends []int
	for rows.Next() {
		raw := rows.RawValues()
		start := len(buf)
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(raw)))
		for _, b := range raw {
			if b == nil {
				buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
				continue
			}
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
			buf = append(buf, b...)
		}
		if err := meter.addEncoded(len(buf) - start); err != nil {
			stopIfTooLarge(ctx, c, err)
			return nil, err
		}
		ends = append(ends, len(buf))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return &Rows{Columns: cols, PostgresText: splitRows(buf, ends)}, nil
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
