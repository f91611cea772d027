package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/internal/fixture"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/jackc/pgx/v5/pgconn"
	_ "modernc.org/sqlite"
)

func loadPolicy(t testing.TB) *config.Policy { return fixture.Policy(t) }

func plan(t testing.TB, pol *config.Policy, query string) *rewrite.Plan {
	t.Helper()
	return planWith(t, pol, query, false)
}

// planWith is plan, with the bias report when reportBias is set.
func planWith(t testing.TB, pol *config.Policy, query string, reportBias bool) *rewrite.Plan {
	t.Helper()
	return planWithOptions(t, pol, query, rewrite.Options{ReportBias: reportBias})
}

// planWithOptions is plan with opts (their dialect and ε are set here).
func planWithOptions(t testing.TB, pol *config.Policy, query string, opts rewrite.Options) *rewrite.Plan {
	t.Helper()
	stmts, err := rewrite.Parse(query, rewrite.PostgresFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Dialect == nil {
		opts.Dialect = rewrite.SQLite
	}
	opts.Epsilon = pol.Defaults.Epsilon
	q, err := rewrite.Analyze(stmts[0], pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	return q.Plan
}

// The noise a released count carries must have the variance the plan's
// sensitivity and ε call for: Laplace with b = Δ/ε has variance 2b².
func TestReleasedNoiseMatchesPlan(t *testing.T) {
	pol := loadPolicy(t)
	p := plan(t, pol, "SELECT COUNT(*) FROM visits")
	m := p.Measurements[0]
	if m.Sensitivity != 3 || m.Epsilon != 0.5 { // Linf = 3 rows, one group
		t.Fatalf("plan: sensitivity %v epsilon %v; want 3 and 0.5", m.Sensitivity, m.Epsilon)
	}
	b := m.Sensitivity / m.Epsilon
	rows := &backend.Rows{Values: [][]any{{int64(1000)}}}
	r := mechanisms.Seeded(1)
	const n = 20000
	var sum, sumSq float64
	for i := 0; i < n; i++ {
		res, err := release(p, bounded{rows: rows}, r, measurementMechanism)
		if err != nil {
			t.Fatal(err)
		}
		d := float64(res.Rows[0][0].(int64)) - 1000
		sum += d
		sumSq += d * d
	}
	mean := sum / n
	variance := sumSq/n - mean*mean
	want := 2 * b * b
	if math.Abs(mean) > 4.4*math.Sqrt(want/n) {
		t.Errorf("noise mean %v, want 0 ± %v", mean, 4.4*math.Sqrt(want/n))
	}
	if math.Abs(variance-want)/want > 0.1 {
		t.Errorf("noise variance %v, want %v (2b², b=%v) within 10%%", variance, want, b)
	}
}

// GROUP BY releases exactly the public keys, in policy order, with noisy
// zeros for keys absent from the data, and drops keys not in the list.
func TestReleasePublicKeys(t *testing.T) {
	pol := loadPolicy(t)
	p := plan(t, pol, "SELECT kind, COUNT(*), AVG(cost) FROM visits GROUP BY kind")
	// backend columns: key, count(*), count(cost), sum(cost), units
	rows := &backend.Rows{Values: [][]any{
		{"b", int64(500), int64(500), sqltypes.Decimal("7500.00"), int64(200)},
		{"secret-key", int64(900), int64(900), sqltypes.Decimal("9000"), int64(1)},
		{"a", int64(40), int64(40), sqltypes.Decimal("600"), int64(20)},
	}}
	res, err := release(p, bounded{rows: rows}, mechanisms.Seeded(2), measurementMechanism)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 {
		t.Fatalf("got %d rows, want the 3 public keys: %v", len(res.Rows), res.Rows)
	}
	for i, want := range []string{"a", "b", "empty"} {
		row := res.Rows[i]
		if row[0] != want {
			t.Errorf("row %d key %v, want %q", i, row[0], want)
		}
		if c := row[1].(int64); c < 0 {
			t.Errorf("count %d is negative", c)
		}
		avg := row[2].(sqltypes.Decimal)
		if f := sqltypes.Float(avg); f < 10 || f > 20 {
			t.Errorf("AVG %v outside its bounds [10, 20]", avg)
		}
	}
	if got := res.Columns[1].Type; got != sqltypes.Int8 {
		t.Errorf("COUNT type %v, want bigint", got)
	}
	if got := res.Columns[2].Type; got != sqltypes.Numeric {
		t.Errorf("AVG(numeric) type %v, want numeric", got)
	}
}

// A failing randomness source stops the release: no rows, an error.
func TestReleaseFailsClosedWithoutRandomness(t *testing.T) {
	pol := loadPolicy(t)
	p := plan(t, pol, "SELECT SUM(cost) FROM visits")
	rows := &backend.Rows{Values: [][]any{{int64(3), sqltypes.Decimal("45")}}}
	res, err := release(p, bounded{rows: rows}, mechanisms.NewRand(failingReader{}), measurementMechanism)
	if err == nil || res != nil {
		t.Fatalf("release with a failing RNG returned %v, %v; want an error and nothing else", res, err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy source failed") }

// engineFixture is an engine over a small SQLite database and a ledger.
func engineFixture(t testing.TB) (*Engine, *budget.Accountant, backend.Backend) {
	t.Helper()
	be, acct := fixture.Open(t)
	e, err := New(Options{Policy: loadPolicy(t), Backend: be, Dialect: rewrite.SQLite, Accountant: acct})
	if err != nil {
		t.Fatal(err)
	}
	return e, acct, be
}

// asker asks the engine for answers as a session does for a PostgreSQL
// client: the statement parsed, analyzed at the asker's ε, a public-table
// query passed through, a DP plan keyed by its canonical text and released
// by Answer with the text recorded in the query log.
type asker struct {
	e       *Engine
	analyst string
	epsilon float64
}

// newAsker is an asker at the policy's default ε.
func newAsker(e *Engine, analyst string) *asker {
	return &asker{e: e, analyst: analyst, epsilon: e.Policy().Defaults.Epsilon}
}

func (a *asker) ask(ctx context.Context, sql string) (*sqltypes.Result, error) {
	parsed, err := rewrite.ParseStatement(sql, rewrite.PostgresFrontEnd)
	if err != nil {
		return nil, err
	}
	if len(parsed.Stmts) != 1 {
		return nil, fmt.Errorf("%q: %d statements, want 1", sql, len(parsed.Stmts))
	}
	var casts rewrite.CastLookup
	if parsed.Casts != nil {
		casts = parsed.CastOf
	}
	stmt := parsed.Stmts[0]
	q, err := rewrite.Analyze(stmt, a.e.Policy(), rewrite.Options{Dialect: a.e.Dialect(), Epsilon: a.epsilon, FrontEnd: rewrite.PostgresFrontEnd, Casts: casts})
	if err != nil {
		return nil, err
	}
	if q.Passthrough != nil {
		return a.e.Passthrough(ctx, q.Passthrough)
	}
	if q.Plan == nil {
		return nil, fmt.Errorf("%q is neither a DP query nor a public one", sql)
	}
	canonical, err := rewrite.Canonical(stmt)
	if err != nil {
		return nil, err
	}
	res, _, err := a.e.Answer(ctx, a.e.Release(a.analyst, q.Plan, canonical), sql)
	return res, err
}

// A backend that cannot be reached gives the reservation back; nothing
// about the data was learned.
func TestUnavailableBackendRefundsReservation(t *testing.T) {
	e, acct, be := engineFixture(t)
	be.Close()
	ana := newAsker(e, "ana")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := ana.ask(ctx, "SELECT COUNT(*) FROM visits")
	if sqlerr.As(err).Code != sqlerr.BackendUnavailable {
		t.Fatalf("got %v, want %s", err, sqlerr.BackendUnavailable)
	}
	st, _ := acct.Status("ana")
	if st.Spent.Epsilon != 0 || st.Reserved.Epsilon != 0 {
		t.Fatalf("budget after an unreachable backend: %+v", st)
	}
}

// sendingBackend is a backend that, like PostgreSQL's for a text it ran
// before, calls the query's sent hook before its result is in (hook set),
// then fails with err or answers from the backend it wraps.
type sendingBackend struct {
	backend.Backend
	hook bool
	err  error
}

func (b *sendingBackend) Query(ctx context.Context, sql string, args ...any) (*backend.Rows, error) {
	if sent := backend.SentHook(ctx); sent != nil && b.hook {
		sent()
		sent() // a second statement of the same plan, or a stray call: one charge
	}
	if b.err != nil {
		return nil, b.err
	}
	return b.Backend.Query(ctx, sql, args...)
}

// TestChargeStartsWhenSent: once the backend says the statement is sent,
// the charge is under way and stands, whatever the query returns; a
// query refused before that is refunded; either way one charge at most,
// and an answer only with its charge recorded.
func TestChargeStartsWhenSent(t *testing.T) {
	refused := &pgconn.PgError{Code: "42703", Message: "column does not exist"} // a statement error: before the data
	cases := []struct {
		name      string
		hook      bool
		err       error
		wantErr   bool
		wantSpent float64
	}{
		{"sent, answered", true, nil, false, 0.5},
		{"not sent, answered", false, nil, false, 0.5},
		{"sent, then refused", true, refused, true, 0.5},
		{"refused before it was sent", false, refused, true, 0},
		{"unavailable", false, fmt.Errorf("%w: no connection", backend.ErrUnavailable), true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			be, acct := fixture.Open(t)
			e, err := New(Options{Policy: loadPolicy(t), Backend: &sendingBackend{Backend: be, hook: c.hook, err: c.err}, Dialect: rewrite.SQLite, Accountant: acct})
			if err != nil {
				t.Fatal(err)
			}
			ana := newAsker(e, "ana")
			ana.epsilon = 0.5
			res, err := ana.ask(context.Background(), "SELECT COUNT(*) FROM visits")
			if (err != nil) != c.wantErr || (err == nil && len(res.Rows) != 1) {
				t.Fatalf("answer %v, error %v; want an error: %v", res, err, c.wantErr)
			}
			st, _ := acct.Status("ana")
			if st.Spent.Epsilon != c.wantSpent || st.Reserved.Epsilon != 0 {
				t.Errorf("spent %v, reserved %v; want %v spent, nothing reserved", st.Spent.Epsilon, st.Reserved.Epsilon, c.wantSpent)
			}
			charges, err := acct.Charges(context.Background(), "ana", 0)
			if err != nil || float64(len(charges))*0.5 != c.wantSpent {
				t.Errorf("%d charges in the ledger (%v), want %v ε of them", len(charges), err, c.wantSpent)
			}
		})
	}
}

// slowLedger holds each Append until release is closed or the append's
// context ends.
type slowLedger struct {
	*budget.SQLiteStore
	release chan struct{}
}

func (s *slowLedger) Append(ctx context.Context, c budget.Charge) (budget.Charge, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return budget.Charge{}, ctx.Err()
	}
	return s.SQLiteStore.Append(ctx, c)
}

// TestChargeWaitEndsWithTheStatement: while the ledger is slow, a DP
// query's wait for its charge ends with its context (a statement timeout,
// a cancel request), the answer withheld, whether the charge started when
// the statement was sent or after; one started early still lands.
func TestChargeWaitEndsWithTheStatement(t *testing.T) {
	for _, hook := range []bool{false, true} {
		t.Run(fmt.Sprintf("started when sent=%v", hook), func(t *testing.T) {
			be, _ := fixture.Open(t)
			store, err := budget.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			slow := &slowLedger{SQLiteStore: store, release: make(chan struct{})}
			acct, err := budget.NewAccountant(context.Background(), slow, map[string]budget.Cost{"ana": {Epsilon: 10}})
			if err != nil {
				t.Fatal(err)
			}
			e, err := New(Options{Policy: loadPolicy(t), Backend: &sendingBackend{Backend: be, hook: hook}, Dialect: rewrite.SQLite, Accountant: acct})
			if err != nil {
				t.Fatal(err)
			}
			ana := newAsker(e, "ana")
			var releaseOnce sync.Once
			release := func() { releaseOnce.Do(func() { close(slow.release) }) }
			defer time.AfterFunc(5*time.Second, release).Stop() // a wait that ignores its context fails, not hangs
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			res, err := ana.ask(ctx, "SELECT COUNT(*) FROM visits")
			if err == nil || time.Since(start) > 3*time.Second {
				t.Fatalf("with the ledger held: %v, %v after %v; want the answer withheld within the statement's time", res, err, time.Since(start))
			}
			release()
			if !hook {
				return
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if st, _ := acct.Status("ana"); st.Spent.Epsilon > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the charge started when the statement was sent never landed")
				}
			}
		})
	}
}
