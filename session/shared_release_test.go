package session

import (
	"reflect"
	"testing"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// A cache hit is the cached release itself, shared by every session
// (engine.Answer): whatever reads it — cursors, intervals as columns or
// notices, answers derived from it, another analyst's session — the
// release asked for again is what was first released.
func TestCachedReleaseUnchangedByItsReaders(t *testing.T) {
	e, s, acct, _ := sessionFixture(t, nil)
	const q = "SELECT kind, COUNT(*) AS n, SUM(cost) FROM visits GROUP BY kind ORDER BY kind"
	first := snapshot(exec(t, s, q))
	spent := func() float64 { st, _ := acct.Status("ana"); return st.Spent.Epsilon }

	readers := []string{
		"SET dpproxy.intervals = 'columns'",
		q,
		"SET dpproxy.intervals = 'notice'",
		q,
		"SET dpproxy.intervals = 'off'",
		"SELECT kind, COUNT(*) AS n, SUM(cost) FROM visits WHERE kind IN ('a', 'b') GROUP BY kind ORDER BY kind",
		"BEGIN",
		"DECLARE c CURSOR FOR " + q,
		"FETCH 1 FROM c",
		"FETCH ALL FROM c",
		"COMMIT",
	}
	for _, sql := range readers {
		exec(t, s, sql)
	}
	other := newSession(t, e, "ana")
	before := spent()
	again := exec(t, other, q)
	if got := snapshot(again); !reflect.DeepEqual(got, first) {
		t.Errorf("the release asked again:\n got %+v\nwant %+v", got, first)
	}
	if after := spent(); after != before {
		t.Errorf("the release asked again spent ε %v: not a cache hit", after-before)
	}
}

// conform converts the values of a result whose column types differ from
// its statement's description into a copy: the result itself may be a
// shared release.
func TestConformCopies(t *testing.T) {
	in := &sqltypes.Result{
		Columns: []sqltypes.Column{{Name: "k", Type: sqltypes.Text}, {Name: "n", Type: sqltypes.Int8}},
		Rows:    [][]any{{"a", int64(3)}, {"b", int64(4)}},
		Tag:     "SELECT 2",
	}
	before := snapshot(in)
	want := []sqltypes.Column{{Name: "k", Type: sqltypes.Text}, {Name: "n", Type: sqltypes.Float8}}
	out := conform(in, want)
	if got := snapshot(in); !reflect.DeepEqual(got, before) {
		t.Errorf("conform changed its input: %+v, was %+v", got, before)
	}
	if !reflect.DeepEqual(out.Columns, want) || !reflect.DeepEqual(out.Rows, [][]any{{"a", 3.0}, {"b", 4.0}}) || out.Tag != "SELECT 2" {
		t.Errorf("conform: columns %v rows %v tag %q", out.Columns, out.Rows, out.Tag)
	}
	if same := conform(in, in.Columns); same != in {
		t.Error("conform copied a result that needed no conversion")
	}
}

// releaseSnapshot is a deep copy of what a client sees of a result.
type releaseSnapshot struct {
	Columns   []sqltypes.Column
	Rows      [][]any
	Intervals [][]sqltypes.Interval
	Tag       string
	Notices   []string
}

func snapshot(r *sqltypes.Result) releaseSnapshot {
	s := releaseSnapshot{Columns: append([]sqltypes.Column(nil), r.Columns...), Tag: r.Tag, Notices: append([]string(nil), r.Notices...)}
	for _, row := range r.Rows {
		s.Rows = append(s.Rows, append([]any(nil), row...))
	}
	for _, row := range r.Intervals {
		var ivs []sqltypes.Interval
		for _, iv := range row {
			if iv != nil {
				ivs = append(ivs, *iv)
			} else {
				ivs = append(ivs, sqltypes.Interval{})
			}
		}
		s.Intervals = append(s.Intervals, ivs)
	}
	return s
}
