package admin

import (
	"sync"

	"github.com/dpproxy/dpproxy/session"
)

// Recent keeps the last statements and the last refusals, for the budget
// page. It is safe for concurrent use.
type Recent struct {
	mu        sync.Mutex
	size      int
	all, refs []session.Statement
}

// NewRecent keeps the last size statements and size refusals.
func NewRecent(size int) *Recent { return &Recent{size: size} }

// Observe keeps st (session.Server.Observe).
func (r *Recent) Observe(st session.Statement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = keepLast(append(r.all, st), r.size)
	if st.Outcome() != session.OutcomeAnswered {
		r.refs = keepLast(append(r.refs, st), r.size)
	}
}

// Snapshot returns the statements and the refusals kept, newest first.
func (r *Recent) Snapshot() (statements, refusals []session.Statement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return newestFirst(r.all, r.size), newestFirst(r.refs, r.size)
}

func keepLast(s []session.Statement, n int) []session.Statement {
	if len(s) > 2*n { // trim now and then, not at every statement
		s = append(s[:0:0], s[len(s)-n:]...)
	}
	return s
}

func newestFirst(s []session.Statement, n int) []session.Statement {
	out := make([]session.Statement, 0, min(n, len(s)))
	for i := len(s) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, s[i])
	}
	return out
}
