package admin

import (
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/session"
)

// What the metrics add to each statement when the admin listener is on.
func BenchmarkObserve(b *testing.B) {
	m := NewMetrics(Sources{})
	st := session.Statement{Protocol: "postgres", Kind: session.KindDP, Analyst: "ana", Charged: budget.Cost{Epsilon: 0.1}, Rows: 3, Duration: time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(st)
	}
}
