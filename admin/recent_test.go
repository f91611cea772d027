package admin

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dpproxy/dpproxy/session"
	"github.com/dpproxy/dpproxy/sqlerr"
)

func TestRecentKeepsTheLastNewestFirst(t *testing.T) {
	texts := func(sts []session.Statement) []string {
		var out []string
		for _, st := range sts {
			out = append(out, st.Text)
		}
		return out
	}
	tests := []struct {
		name           string
		size, observed int
		wantAll        []string
		wantRefusals   []string
	}{
		{"none yet", 3, 0, nil, nil},
		{"fewer than kept", 3, 2, []string{"q1", "q0"}, []string{"q0"}},
		{"exactly as many", 3, 3, []string{"q2", "q1", "q0"}, []string{"q2", "q0"}},
		{"wrapped around", 3, 7, []string{"q6", "q5", "q4"}, []string{"q6", "q4", "q2"}},
		{"many times around", 3, 100, []string{"q99", "q98", "q97"}, []string{"q98", "q96", "q94"}},
		{"nothing kept", 0, 5, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecent(tt.size)
			for i := range tt.observed {
				st := session.Statement{Text: fmt.Sprintf("q%d", i)}
				if i%2 == 0 { // every other one is refused
					st.SQLState, st.Error = sqlerr.InsufficientPrivilege, "refused"
				}
				r.Observe(st)
			}
			all, refs := r.Snapshot()
			if got := texts(all); !slices.Equal(got, tt.wantAll) {
				t.Errorf("statements %v, want %v", got, tt.wantAll)
			}
			if got := texts(refs); !slices.Equal(got, tt.wantRefusals) {
				t.Errorf("refusals %v, want %v", got, tt.wantRefusals)
			}
		})
	}
}

// Every statement of every connection passes through Observe: it must not
// allocate.
func TestRecentObserveDoesNotAllocate(t *testing.T) {
	r := NewRecent(50)
	st := session.Statement{Text: "SELECT 1", SQLState: sqlerr.InsufficientPrivilege}
	if n := testing.AllocsPerRun(1000, func() { r.Observe(st) }); n != 0 {
		t.Fatalf("Observe allocates %v times per statement", n)
	}
}
