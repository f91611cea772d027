package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// ResultLimit caps one materialized result: Rows rows and Bytes bytes of
// values (0: no cap). A backend that reaches either stops reading and
// returns a *ResultTooLargeError, so memory stays bounded whatever a
// query returns.
type ResultLimit struct {
	Rows  int
	Bytes int64
}

// statement is what a query's context tells the backend about it (one
// context value for all, the cost of a public-table query being a few
// allocations).
type statement struct {
	limit ResultLimit
	// shape, on MySQL, lets statements of one shape be answered together
	// by one UNION ALL (myunion.go), and lookup lookups by key of one
	// shape by one statement with their keys in a list.
	shape  string
	lookup Lookup
}

// Lookup is a MySQL lookup by one integer key (rewrite.Lookup, shape.go
// there): Prefix is the statement answering lookups of its shape up to
// its list of keys, Key the lookup's key (digits), "" when it is the
// statement's one parameter. The zero Lookup is none.
type Lookup struct {
	Prefix string
	Key    string
}

type statementKey struct{}

// WithResultLimit returns a context whose queries are held to l (and keep
// the shape and lookup ctx gave them).
func WithResultLimit(ctx context.Context, l ResultLimit) context.Context {
	st := statementFrom(ctx)
	return WithStatement(ctx, l, st.shape, st.lookup)
}

// WithStatement returns a context whose queries are held to l and whose
// statement has the given shape (rewrite.Passthrough.Shape, "" for none)
// and lookup (rewrite.Passthrough.Lookup): on MySQL, statements of one
// shape may be answered together by one UNION ALL, and lookups of one
// shape by one statement.
func WithStatement(ctx context.Context, l ResultLimit, shape string, lookup Lookup) context.Context {
	return &statementContext{Context: ctx, st: statement{limit: l, shape: shape, lookup: lookup}}
}

// statementContext is a context carrying a statement (WithStatement): one
// allocation per query, where context.WithValue and its value took two.
type statementContext struct {
	context.Context
	st statement
}

// Value is the statement for statementKey, the parent's value otherwise
// (cancellation included: the context package finds its parent's
// cancelCtx through Value).
func (c *statementContext) Value(key any) any {
	if _, ok := key.(statementKey); ok {
		return &c.st
	}
	return c.Context.Value(key)
}

func statementFrom(ctx context.Context) statement {
	if s, ok := ctx.Value(statementKey{}).(*statement); ok {
		return *s
	}
	return statement{}
}

func resultLimitFrom(ctx context.Context) ResultLimit { return statementFrom(ctx).limit }

// ResultTooLargeError reports a result that outgrew its ResultLimit.
type ResultTooLargeError struct {
	// Rows is true when the row cap was reached, false for the byte cap;
	// Limit is that cap.
	Rows  bool
	Limit int64
}

func (e *ResultTooLargeError) Error() string {
	if e.Rows {
		return fmt.Sprintf("the result has more than %d rows", e.Limit)
	}
	return fmt.Sprintf("the result is larger than %d bytes", e.Limit)
}

// resultMeter counts a result's rows and bytes against a ResultLimit.
type resultMeter struct {
	limit       ResultLimit
	rows, bytes int64
}

// add counts one row and reports whether the result is still within the
// limit.
func (m *resultMeter) add(row []any) error {
	m.rows++
	if m.limit.Rows > 0 && m.rows > int64(m.limit.Rows) {
		return &ResultTooLargeError{Rows: true, Limit: int64(m.limit.Rows)}
	}
	if m.limit.Bytes <= 0 {
		return nil
	}
	for _, v := range row {
		m.bytes += valueSize(v)
	}
	if m.bytes > m.limit.Bytes {
		return &ResultTooLargeError{Limit: m.limit.Bytes}
	}
	return nil
}

// addEncoded counts one row of size bytes in wire form.
func (m *resultMeter) addEncoded(size int) error {
	m.rows++
	if m.limit.Rows > 0 && m.rows > int64(m.limit.Rows) {
		return &ResultTooLargeError{Rows: true, Limit: int64(m.limit.Rows)}
	}
	m.bytes += int64(size) + 24
	if m.limit.Bytes > 0 && m.bytes > m.limit.Bytes {
		return &ResultTooLargeError{Limit: m.limit.Bytes}
	}
	return nil
}

// valueSize approximates the memory a value holds: its text for strings
// and byte slices, a word or two for the rest.
func valueSize(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x)) + 16
	case []byte:
		return int64(len(x)) + 24
	case sqltypes.Decimal:
		return int64(len(x)) + 16
	case time.Time:
		return 24
	}
	return 16
}
