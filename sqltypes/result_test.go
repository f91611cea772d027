package sqltypes

import (
	"strconv"
	"testing"
)

// SelectTag is "SELECT n" for every n, the kept tags and beyond them.
func TestSelectTag(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 999, 1023, 1024, 1025, 123456, -1} {
		if got, want := SelectTag(n), "SELECT "+strconv.Itoa(n); got != want {
			t.Errorf("SelectTag(%d) = %q, want %q", n, got, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = SelectTag(7) }); allocs != 0 {
		t.Errorf("SelectTag(7) allocates %v times", allocs)
	}
}
