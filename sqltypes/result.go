package sqltypes

import "strconv"

// Column describes one result column.
type Column struct {
	Name string
	Type Type
}

// Result is what one statement returns to a client. Rows are fully
// materialized: protected results are small (one row per released group),
// and public passthrough results are bounded by the backend's row limit.
type Result struct {
	Columns []Column
	// Rows hold values of the types listed in this package's documentation.
	Rows [][]any
	// Tag is the command tag ("SELECT 3", "SET", "BEGIN").
	Tag string
	// Intervals, when set, hold for each row and column the 95 %
	// confidence interval of a DP value (nil where there is none); the
	// session shows them on request.
	Intervals [][]*Interval
	// Notices are messages sent with the result: a PostgreSQL NOTICE each,
	// MySQL warnings.
	Notices []string
	// Noise, when set, describes for each column (nil where it does not
	// apply) the noise its values carry, so that the error of a sum of
	// several of them can be stated later (answers derived from a
	// release).
	Noise []*Noise
	// PostgresText, when set, holds the rows already in PostgreSQL's wire
	// form, forwarded to PostgreSQL clients without decoding: each the
	// body of a DataRow message (the column count, then each value's
	// length, -1 for NULL, and its text form). Rows is then nil. Only
	// public-table rows whose text form is the same whether the backend
	// or dpproxy prints it come this way (backend.WireQuerier).
	PostgresText [][]byte
	// MySQLText, when set, holds the rows already in a MySQL client's
	// text-protocol form, each the payload of a row packet
	// (Protocol::ResultsetRow: each value a length-encoded string, 0xfb
	// for NULL), under the same conditions as PostgresText
	// (backend.MySQLWireQuerier). Rows is then nil.
	MySQLText [][]byte
}

// Noise describes a column each of whose values is one noisy
// measurement: the bounded true value plus independent noise of one
// calibrated Mechanism, then rounded to the nearest whole number when
// Rounding is 0.5 (an integer column released from a measurement that is
// not whole) and clamped to Sign (+1: the true value is never negative
// and the released one is clamped at 0; −1 the opposite; 0 neither),
// which never moves it away from the true value.
type Noise struct {
	Mechanism NoiseMechanism
	Rounding  float64
	Sign      int
	// Excess, when set, is the mechanism of the column's excess
	// measurement: what contribution bounding removed from the values,
	// which the column's intervals cover. Each row's noisy excess is its
	// Interval's Excess; Count says the excess only ever adds (bounding
	// drops rows from a count).
	Excess *NoiseMechanism
	Count  bool
}

// NoiseMechanism is a calibrated additive mechanism: Gaussian at (Epsilon,
// Delta) over L2 sensitivity L2, or Laplace at Epsilon over L1 sensitivity
// Sensitivity.
type NoiseMechanism struct {
	Gaussian        bool
	Epsilon, Delta  float64
	Sensitivity, L2 float64
}

// Interval is a closed interval [Lo, Hi]. Excess, for a column whose
// Noise has an Excess mechanism, is the row's noisy excess measurement.
type Interval struct {
	Lo, Hi float64
	Excess float64
}

// NumRows is the number of rows of r, decoded or in wire form.
func (r *Result) NumRows() int {
	switch {
	case r.PostgresText != nil:
		return len(r.PostgresText)
	case r.MySQLText != nil:
		return len(r.MySQLText)
	}
	return len(r.Rows)
}

// InWireForm reports whether r's rows are in a front end's wire form
// (PostgresText or MySQLText) rather than in Rows.
func (r *Result) InWireForm() bool { return r.PostgresText != nil || r.MySQLText != nil }

// selectTags are the tags of results of fewer than 1024 rows, made once:
// a short query's answer then costs no allocation for its tag.
var selectTags = func() (tags [1024]string) {
	for n := range tags {
		tags[n] = "SELECT " + strconv.Itoa(n)
	}
	return tags
}()

// SelectTag is the command tag of a query that returned n rows,
// "SELECT n".
func SelectTag(n int) string {
	if n >= 0 && n < len(selectTags) {
		return selectTags[n]
	}
	return "SELECT " + strconv.Itoa(n)
}
