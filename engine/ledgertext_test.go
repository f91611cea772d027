package engine

import (
	"strings"
	"testing"
)

// ledgerText collapses white space as strings.Fields does, Unicode's
// included, and returns an already collapsed text without copying it.
func TestLedgerText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"SELECT COUNT(*) FROM patients", "SELECT COUNT(*) FROM patients"},
		{" SELECT 1", "SELECT 1"},
		{"SELECT 1 ", "SELECT 1"},
		{"SELECT  1", "SELECT 1"},
		{"SELECT\n\tCOUNT(*)\r\nFROM t", "SELECT COUNT(*) FROM t"},
		{"SELECT\v1\f", "SELECT 1"},
		{"SELECT\u00a01", "SELECT 1"}, // no-break space
		{"SELECT\u20281", "SELECT 1"}, // line separator
		{"SELECT 'é' FROM t", "SELECT 'é' FROM t"},
		{" ", ""},
		{"x", "x"},
	} {
		got := ledgerText(c.in)
		if got != c.want {
			t.Errorf("ledgerText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	sql := "SELECT COUNT(*) FROM patients WHERE patient_id = 42"
	if n := testing.AllocsPerRun(100, func() { _ = ledgerText(sql) }); n != 0 {
		t.Errorf("ledgerText of a collapsed text allocates %v times", n)
	}
}

// Whatever the text, ledgerText is strings.Fields joined by spaces.
func FuzzLedgerText(f *testing.F) {
	for _, s := range []string{"", " ", "SELECT 1", " a  b ", "a\tb", "a\u00a0b", "\u0085x", "a\xffb", "a \xc2\xa0b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ledgerText(s), strings.Join(strings.Fields(s), " "); got != want {
			t.Fatalf("ledgerText(%q) = %q, want %q", s, got, want)
		}
	})
}
