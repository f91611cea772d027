package budget

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// memStore is an in-memory Store for accountant tests. Setting fail makes
// Append fail; setting block makes Append wait until the channel is closed.
type memStore struct {
	mu      sync.Mutex
	charges []Charge
	nextID  int64
	fail    error
	block   chan struct{}
	entered chan struct{} // if non-nil, receives a value when Append starts
}

var errInjected = errors.New("injected store failure")

func newMemStore() *memStore { return &memStore{nextID: 1} }

func (m *memStore) setFail(err error) {
	m.mu.Lock()
	m.fail = err
	m.mu.Unlock()
}

func (m *memStore) Append(ctx context.Context, c Charge) (Charge, error) {
	m.mu.Lock()
	block, entered := m.block, m.entered
	m.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return Charge{}, ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return Charge{}, m.fail
	}
	c.ID = m.nextID
	m.nextID++
	if c.At.IsZero() {
		c.At = time.Now().UTC()
	}
	m.charges = append(m.charges, c)
	return c, nil
}

func (m *memStore) Charges(_ context.Context, analyst string, limit int) ([]Charge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Charge
	for i := len(m.charges) - 1; i >= 0; i-- {
		if m.charges[i].Analyst == analyst {
			out = append(out, m.charges[i])
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// History gives every charge of the last MaxWindow as a span of its own.
func (m *memStore) History(context.Context) (History, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := History{Spent: map[string]Cost{}, TableSpent: map[string]Cost{}, Epsilons: map[string]map[float64]int64{}}
	for _, c := range m.charges {
		h.Spent[c.Analyst] = h.Spent[c.Analyst].Add(c.Cost)
		for _, t := range c.Tables {
			h.TableSpent[t] = h.TableSpent[t].Add(c.Cost)
		}
		if c.At.After(h.Latest) {
			h.Latest = c.At
		}
		if h.Epsilons[c.Analyst] == nil {
			h.Epsilons[c.Analyst] = map[float64]int64{}
		}
		h.Epsilons[c.Analyst][c.Cost.Epsilon]++
	}
	for _, c := range m.charges {
		if !c.At.Before(h.Latest.Add(-MaxWindow)) {
			h.Spans = append(h.Spans, ChargeSpan{Analyst: c.Analyst, Tables: c.Tables, From: c.At, To: c.At, Cost: c.Cost})
		}
	}
	return h, nil
}

func (m *memStore) Close() error { return nil }

func (m *memStore) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.charges)
}

// openTestStore opens a fresh SQLite ledger in a temporary directory and
// closes it at the end of the test.
func openTestStore(t testing.TB) (*SQLiteStore, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func newTestAccountant(t testing.TB, s Store, limits map[string]Cost) *Accountant {
	t.Helper()
	a, err := NewAccountant(context.Background(), s, limits)
	if err != nil {
		t.Fatalf("NewAccountant: %v", err)
	}
	return a
}

func approx(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func approxCost(a, b Cost) bool { return approx(a.Epsilon, b.Epsilon) && approx(a.Delta, b.Delta) }

func mustStatus(t *testing.T, a *Accountant, analyst string) Status {
	t.Helper()
	if err := a.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, ok := a.Status(analyst)
	if !ok {
		t.Fatalf("Status(%q): not found", analyst)
	}
	return st
}

func mustReserve(t *testing.T, a *Accountant, analyst string, c Cost) *Reservation {
	t.Helper()
	r, err := a.Reserve(context.Background(), analyst, c)
	if err != nil {
		t.Fatalf("Reserve(%q, %v): %v", analyst, c, err)
	}
	return r
}
