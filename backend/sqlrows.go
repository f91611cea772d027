package backend

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// This file holds what the database/sql backends (MySQL, SQLite) share.

// bindArgs converts query arguments for a database/sql driver: time.Time
// values through bindTime, sqltypes.Decimal as its text, anything else
// unchanged.
func bindArgs(args []any, bindTime func(time.Time) any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case time.Time:
			out[i] = bindTime(v)
		case sqltypes.Decimal:
			out[i] = string(v)
		default:
			out[i] = a
		}
	}
	return out
}

// scanRows reads the remaining rows of rows, each of n columns scanned
// into any, and replaces every value v of column j with conv(j, v), up to
// ctx's ResultLimit. The result is never nil. Scan failures are wrapped as "scan: ..."; the
// error of rows.Err is returned as is.
func scanRows(ctx context.Context, rows *sql.Rows, n int, conv func(j int, v any) any) ([][]any, error) {
	values := [][]any{}
	meter := resultMeter{limit: resultLimitFrom(ctx)}
	for rows.Next() {
		row := make([]any, n)
		ptrs := make([]any, n)
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		for j, v := range row {
			row[j] = conv(j, v)
		}
		if err := meter.add(row); err != nil {
			return nil, err
		}
		values = append(values, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return values, nil
}
