package rewrite

import (
	"testing"

	"github.com/dpproxy/dpproxy/config"
)

// Date and time constants as every backend reads them for the column
// they meet (found in review: a time on a date column must be cut to its
// date as PostgreSQL does, a midnight on a timestamp column kept whole
// for SQLite's text comparison).
func TestNormalizeDate(t *testing.T) {
	for _, c := range []struct {
		in   string
		t    config.ColumnType
		want string
	}{
		{"2024-01-01T00:00:00+02:00", config.TypeDate, "2023-12-31"},
		{"2024-01-01T00:00:00+02:00", config.TypeTimestamp, "2023-12-31 22:00:00"},
		{"2024-01-01T00:00:00+02:00", "", "2023-12-31 22:00:00"},
		{"2024-01-01 10:30:00", config.TypeDate, "2024-01-01"},
		{"2024-01-01", config.TypeTimestamp, "2024-01-01 00:00:00"},
		{"2024-01-01T00:00:00Z", "", "2024-01-01"},
		{"2024-01-01 08:30:00.25", "", "2024-01-01 08:30:00.25"},
		{"2024-13-01", "", ""},
		{"yesterday", "", ""},
	} {
		got, ok := normalizeDate(c.in, c.t)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("normalizeDate(%q, %q) = %q, %v; want %q", c.in, c.t, got, ok, c.want)
		}
	}
}
