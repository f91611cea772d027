package sqltypes

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
}

// Interval is a closed interval [Lo, Hi].
type Interval struct{ Lo, Hi float64 }
