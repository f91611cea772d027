// Package sqltypes names the SQL types dpproxy returns to clients and the Go
// values that carry them between the backends, the engine and the wire
// front ends, and holds the leaf types those layers exchange: a statement's
// Result (its Columns and rows) and a Prepared statement's description.
// The wire front ends depend on these types only, never on the engine.
//
// Values in result rows are one of: nil (SQL NULL), int64, float64, string,
// bool, time.Time, or Decimal (an exact decimal kept as text).
package sqltypes
