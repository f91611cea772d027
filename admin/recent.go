package admin

import (
	"sync"

	"github.com/dpproxy/dpproxy/session"
)

// Recent keeps the last statements and the last refusals, for the budget
// page. It is safe for concurrent use. Every statement passes through
// Observe, so keeping one allocates nothing: each list is a ring.
type Recent struct {
	mu        sync.Mutex
	all, refs ring
}

// NewRecent keeps the last size statements and size refusals.
func NewRecent(size int) *Recent {
	return &Recent{all: newRing(size), refs: newRing(size)}
}

// Observe keeps st (session.Server.Observe).
func (r *Recent) Observe(st session.Statement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all.add(st)
	if st.Outcome() != session.OutcomeAnswered {
		r.refs.add(st)
	}
}

// Snapshot returns the statements and the refusals kept, newest first.
func (r *Recent) Snapshot() (statements, refusals []session.Statement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all.newestFirst(), r.refs.newestFirst()
}

// ring holds the last len(slots) statements added; next is where the
// next one goes, and n how many it holds.
type ring struct {
	slots []session.Statement
	next  int
	n     int
}

func newRing(size int) ring { return ring{slots: make([]session.Statement, max(size, 0))} }

func (r *ring) add(st session.Statement) {
	if len(r.slots) == 0 {
		return
	}
	r.slots[r.next] = st
	r.next = (r.next + 1) % len(r.slots)
	r.n = min(r.n+1, len(r.slots))
}

func (r *ring) newestFirst() []session.Statement {
	out := make([]session.Statement, 0, r.n)
	for i := 1; i <= r.n; i++ {
		out = append(out, r.slots[(r.next-i+len(r.slots))%len(r.slots)])
	}
	return out
}
