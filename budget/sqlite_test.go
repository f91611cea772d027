package budget

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	store, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	limits := map[string]Cost{"alice": {Epsilon: 100, Delta: 1e-3}, "bob": {Epsilon: 100}}
	a := newTestAccountant(t, store, limits)
	want := map[string]Cost{}
	var committed []Charge // alice's, in commit order
	for i := 0; i < 30; i++ {
		analyst, c := "alice", Cost{Epsilon: 0.1 * float64(i%4+1), Delta: 1e-6}
		if i%3 == 0 {
			analyst, c = "bob", Cost{Epsilon: 0.7}
		}
		r := mustReserve(t, a, analyst, c)
		ch, err := r.Commit(ctx, fmt.Sprintf("SELECT %d", i))
		if err != nil {
			t.Fatal(err)
		}
		want[analyst] = want[analyst].Add(c)
		if analyst == "alice" {
			committed = append(committed, ch)
		}
	}
	// A released reservation leaves no trace.
	mustReserve(t, a, "alice", Cost{Epsilon: 1}).Release()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil { // idempotent
		t.Fatalf("second Close: %v", err)
	}

	store, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := store.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if spent := h.Spent; len(spent) != 2 || !approxCost(spent["alice"], want["alice"]) || !approxCost(spent["bob"], want["bob"]) {
		t.Fatalf("Spent after reopen = %v, want %v", spent, want)
	}
	a = newTestAccountant(t, store, limits)
	if st := mustStatus(t, a, "alice"); !approxCost(st.Spent, want["alice"]) || !st.Reserved.IsZero() {
		t.Fatalf("alice after reopen: %+v", st)
	}

	cs, err := a.Charges(ctx, "alice", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 5 {
		t.Fatalf("Charges(alice, 5) returned %d", len(cs))
	}
	for i, c := range cs {
		w := committed[len(committed)-1-i]
		if !c.At.Equal(w.At) || c.ID != w.ID || c.Query != w.Query || c.Cost != w.Cost || c.Analyst != "alice" {
			t.Errorf("Charges[%d] = %+v, want %+v", i, c, w)
		}
	}
	all, err := a.Charges(ctx, "alice", 0)
	if err != nil || len(all) != len(committed) {
		t.Fatalf("Charges(alice, 0): %d, %v; want %d", len(all), err, len(committed))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].ID <= all[i].ID || all[i-1].At.Before(all[i].At) {
			t.Fatalf("Charges not newest first at %d: %+v then %+v", i, all[i-1], all[i])
		}
	}
	if none, err := a.Charges(ctx, "nobody", 10); err != nil || len(none) != 0 {
		t.Fatalf("Charges(nobody): %v, %v", none, err)
	}

	// New charges after reopen get larger IDs.
	r := mustReserve(t, a, "alice", Cost{Epsilon: 0.1})
	ch, err := r.Commit(ctx, "SELECT after reopen")
	if err != nil || ch.ID <= committed[len(committed)-1].ID {
		t.Fatalf("charge after reopen: %+v, %v", ch, err)
	}
}

func TestOpenSQLite(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenSQLite(ctx, filepath.Join(dir, "missing", "ledger.db")); err == nil {
		t.Fatal("OpenSQLite in a missing directory: no error")
	}
	// Awkward characters in the path must not be taken for URI syntax.
	path := filepath.Join(dir, "odd ?#%name.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("ledger not created at %q: %v", path, err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("ledger mode %v, want 0600", fi.Mode().Perm())
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	// One store per ledger.
	if _, err := OpenSQLite(ctx, path); !errors.Is(err, ErrLedgerLocked) {
		t.Fatalf("second OpenSQLite: got %v, want ErrLedgerLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, Charge{Analyst: "a", Cost: Cost{Epsilon: 1}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.History(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("History after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.Charges(ctx, "a", 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Charges after Close: got %v, want ErrClosed", err)
	}
	s, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	defer s.Close()

	// The durability settings as another connection sees them.
	db, err := sql.Open("sqlite", fileDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	var sync int
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Fatalf("writer synchronous = %d, %v; want 2 (FULL)", sync, err)
	}
	// The human-readable view works.
	if _, err := s.Append(ctx, Charge{Analyst: "a", Cost: Cost{Epsilon: 1}, Query: "q"}); err != nil {
		t.Fatal(err)
	}
	var at string
	if err := db.QueryRow("SELECT at FROM charge_log").Scan(&at); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, at); err != nil {
		t.Fatalf("charge_log.at = %q: %v", at, err)
	}

	// Invalid charges are refused.
	for _, c := range []Charge{{Cost: Cost{Epsilon: 1}}, {Analyst: "a", Cost: Cost{Epsilon: -1}}} {
		if _, err := s.Append(ctx, c); err == nil {
			t.Errorf("Append(%+v): no error", c)
		}
	}
}

func TestAppendCanceledContext(t *testing.T) {
	s, _ := openTestStore(t)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Append(cctx, Charge{Analyst: "a", Cost: Cost{Epsilon: 1}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with canceled ctx: got %v", err)
	}
	if cs, _ := s.Charges(ctx, "a", 0); len(cs) != 0 {
		t.Fatalf("canceled Append was written: %+v", cs)
	}
}

// fileDSN is a DSN for path that survives characters URIs give a meaning to.
func fileDSN(path string) string {
	return (&url.URL{Scheme: "file", Path: path}).String()
}

// blockWriter holds the ledger's write lock from another connection until
// the returned function is called.
func blockWriter(t *testing.T, path string) func() {
	t.Helper()
	db, err := sql.Open("sqlite", fileDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			t.Error(err)
		}
		conn.Close()
		db.Close()
	}
}

// waitQueued waits until n requests wait in the writer's queue.
func waitQueued(t *testing.T, s *SQLiteStore, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.reqs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d requests queued", len(s.reqs), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// startBlocked blocks the ledger's writer: it takes the write lock from
// another connection and sends one append, which the writer takes and then
// waits on the lock with. Appends made afterwards queue up. It returns the
// function that unblocks the writer and the first append's result.
func startBlocked(t *testing.T, s *SQLiteStore, path string) (unblock func(), first <-chan error) {
	t.Helper()
	unblock = blockWriter(t, path)
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, Charge{Analyst: "a", Cost: Cost{Epsilon: 0.1}, Query: "first"})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // the writer takes it and waits for the lock
	return unblock, done
}

// TestGroupCommit checks that charges arriving while a transaction is in
// progress share the next transaction.
func TestGroupCommit(t *testing.T) {
	s, path := openTestStore(t)
	unblock, first := startBlocked(t, s, path)
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Append(ctx, Charge{Analyst: "a", Cost: Cost{Epsilon: 0.1}, Query: "q"})
			errs <- err
		}()
	}
	waitQueued(t, s, n)
	unblock()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Charges != n+1 || st.Transactions > 2 {
		t.Fatalf("Stats = %+v, want %d charges in at most 2 transactions", st, n+1)
	}
}

// appendInOneTransaction appends charge(0), …, charge(n-1) while the
// writer is blocked, so that they share a transaction (checked), and
// returns what each Append returned. inOrder queues them in index order.
func appendInOneTransaction(t *testing.T, n int, charge func(int) Charge, inOrder bool) (*SQLiteStore, []Charge) {
	t.Helper()
	s, path := openTestStore(t)
	unblock, first := startBlocked(t, s, path)
	got := make([]Charge, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := s.Append(ctx, charge(i))
			got[i] = c
			errs <- err
		})
		if inOrder {
			waitQueued(t, s, i+1)
		}
	}
	waitQueued(t, s, n)
	unblock()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Transactions > 2 {
		t.Fatalf("Stats = %+v, want the %d charges in one transaction", st, n)
	}
	return s, got
}

// storedCharge reads the row of charge id: its analyst, cost, query and
// tables (as the JSON stored).
func storedCharge(t *testing.T, s *SQLiteStore, id int64) (Charge, string) {
	t.Helper()
	var c Charge
	var tables string
	err := s.db.QueryRowContext(ctx, `SELECT analyst, epsilon, delta, query, tables FROM charges WHERE id = ?`, id).
		Scan(&c.Analyst, &c.Cost.Epsilon, &c.Cost.Delta, &c.Query, &tables)
	if err != nil {
		t.Fatalf("charge ID %d: %v", id, err)
	}
	return c, tables
}

// TestGroupCommitIDs queues charges of different content, two of them
// equal, in one transaction (two statements of insertChunk charges and
// one of the 5 left): every caller gets the ID of the row that holds its
// charge.
func TestGroupCommitIDs(t *testing.T) {
	const n = 2*insertChunk + 5
	charge := func(i int) Charge {
		if i == n-1 {
			i = n - 2 // the last two charges are equal
		}
		return Charge{
			Analyst: fmt.Sprintf("a%d", i%3),
			Cost:    Cost{Epsilon: 0.1 * float64(i%4+1), Delta: 1e-9 * float64(i%2)},
			Query:   fmt.Sprintf("q%d", i%7),
			Tables:  []string{fmt.Sprintf("t%d", i%5)},
		}
	}
	s, got := appendInOneTransaction(t, n, charge, false)
	seen := map[int64]bool{}
	for i, c := range got {
		if seen[c.ID] {
			t.Fatalf("charge %d got ID %d, already given", i, c.ID)
		}
		seen[c.ID] = true
		stored, tables := storedCharge(t, s, c.ID)
		want := charge(i)
		if stored.Analyst != want.Analyst || stored.Cost != want.Cost || stored.Query != want.Query || tables != `["`+want.Tables[0]+`"]` {
			t.Errorf("charge %d (%+v) got ID %d, which holds %+v %s", i, want, c.ID, stored, tables)
		}
	}
}

// TestGroupCommitNeighbours queues, in a known order, charges whose
// analyst, cost and tables equal or differ from the previous charge's
// (the writer shares the arguments of equal neighbours), across two
// INSERT statements: every row holds its own charge.
func TestGroupCommitNeighbours(t *testing.T) {
	analysts := []string{"a", "a", "b", "a", "a"}
	costs := []Cost{{Epsilon: 0.5}, {Epsilon: 0.5}, {Epsilon: 0.5, Delta: 1e-9}, {Epsilon: 0.25, Delta: 1e-9}, {Epsilon: 0.25}}
	tables := [][]string{{"t"}, {"t"}, nil, {"t", "u"}, {"t", "u"}, {"u"}}
	const n = insertChunk + 7
	charge := func(i int) Charge {
		return Charge{Analyst: analysts[i%len(analysts)], Cost: costs[i%len(costs)], Query: fmt.Sprintf("q%d", i), Tables: tables[i%len(tables)]}
	}
	s, got := appendInOneTransaction(t, n, charge, true)
	for i, c := range got {
		want := charge(i)
		wantTables, _ := json.Marshal(append([]string{}, want.Tables...))
		stored, tabs := storedCharge(t, s, c.ID)
		if c.ID != got[0].ID+int64(i) || stored.Analyst != want.Analyst || stored.Cost != want.Cost || stored.Query != want.Query || tabs != string(wantTables) {
			t.Errorf("charge %d %+v: ID %d holds %+v %s", i, want, c.ID, stored, tabs)
		}
	}
}

// TestChargeArgsShareBoxes: the arguments of a transaction's charges that
// share their analyst, cost and tables allocate only for what differs
// (the ID and the query text) and the slice itself.
func TestChargeArgsShareBoxes(t *testing.T) {
	const n = insertChunk
	reqs := make([]*appendReq, n)
	tables := make([]string, n)
	for i := range reqs {
		reqs[i] = &appendReq{c: Charge{Analyst: "analyst", Cost: Cost{Epsilon: 0.5, Delta: 1e-9}, Query: fmt.Sprintf("q%d", i)}}
		tables[i] = `["patients"]`
	}
	at := any(int64(1_800_000_000_000_000_000))
	var args []any
	allocs := testing.AllocsPerRun(100, func() { args = chargeArgs(reqs, tables, at, 1000) })
	// The slice, each charge's ID (above 255, so boxed) and query text
	// (they differ), and the first charge's analyst, ε, δ and tables:
	// 37, where boxing every argument would make 97.
	if want := float64(1 + n + 4 + n); allocs > want {
		t.Errorf("chargeArgs allocates %.0f times for %d like charges, want at most %.0f", allocs, n, want)
	}
	for i, r := range reqs {
		row := args[7*i : 7*i+7]
		if row[0] != int64(1000+i) || row[1] != r.c.Analyst || row[2] != r.c.Cost.Epsilon || row[3] != r.c.Cost.Delta ||
			row[4] != r.c.Query || row[5] != at || row[6] != tables[i] {
			t.Errorf("charge %d: arguments %v", i, row)
		}
	}
}

// TestChargeIDsAfterFailedTransaction: the writer gives the IDs itself.
// A transaction that fails (here, the second of its statements, after the
// first inserted rows) gives no ID away for good: the next transaction's
// charges get IDs above every ID the ledger holds or has held, and each
// ID holds its own charge.
func TestChargeIDsAfterFailedTransaction(t *testing.T) {
	s, path := openTestStore(t)
	mustAppend := func(query string) Charge {
		t.Helper()
		c, err := s.Append(ctx, Charge{Analyst: "a", Cost: Cost{Epsilon: 0.1}, Query: query})
		if err != nil {
			t.Fatalf("Append(%s): %v", query, err)
		}
		return c
	}
	before := mustAppend("before")

	// A trigger, added from outside, makes any transaction holding a
	// charge named "fail" fail.
	other, err := sql.Open("sqlite", fileDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `CREATE TRIGGER refuse BEFORE INSERT ON charges
		WHEN NEW.query = 'fail' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}

	unblock, first := startBlocked(t, s, path)
	const n = insertChunk + 3 // two statements; the failing charge is in the second
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		query := fmt.Sprintf("doomed %d", i)
		if i == n-1 {
			query = "fail"
		}
		wg.Go(func() {
			_, err := s.Append(ctx, Charge{Analyst: "a", Cost: Cost{Epsilon: 0.1}, Query: query})
			errs <- err
		})
		waitQueued(t, s, i+1) // in this order
	}
	unblock()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil {
			t.Fatal("an append of the failed transaction succeeded")
		}
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, `DROP TRIGGER refuse`); err != nil {
		t.Fatal(err)
	}
	// The failed transaction dropped the writer's next ID: it is read
	// again, so a row written meanwhile (here from outside, with a high
	// ID) is above the ID the writer knew, and the next charge above it.
	if s.nextID != 0 {
		t.Fatalf("after a failed transaction the writer keeps next ID %d", s.nextID)
	}
	const high = 1_000_000
	if _, err := other.ExecContext(ctx, `INSERT INTO charges (id, analyst, epsilon, delta, query, at_ns) VALUES (?, 'x', 0, 0, 'outside', 1)`, high); err != nil {
		t.Fatal(err)
	}
	if c := mustAppend("after the failure"); c.ID <= high {
		t.Fatalf("charge after the failure got ID %d, below the row written meanwhile (%d)", c.ID, high)
	}
	var doomed int
	if err := other.QueryRowContext(ctx, `SELECT count(*) FROM charges WHERE query LIKE 'doomed%' OR query = 'fail'`).Scan(&doomed); err != nil || doomed != 0 {
		t.Fatalf("%d charges of the failed transaction in the ledger (%v)", doomed, err)
	}

	// The newest charge removed from outside: its ID is not given again.
	last := mustAppend("removed")
	if _, err := other.ExecContext(ctx, `DELETE FROM charges WHERE id = ?`, last.ID); err != nil {
		t.Fatal(err)
	}
	after := mustAppend("after")
	if after.ID <= last.ID || last.ID <= before.ID {
		t.Fatalf("IDs before %d, removed %d, after %d: want increasing", before.ID, last.ID, after.ID)
	}
	s.Close()
	s2, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := other.ExecContext(ctx, `DELETE FROM charges WHERE id = ?`, after.ID); err != nil {
		t.Fatal(err)
	}
	reopened, err := s2.Append(ctx, Charge{Analyst: "a", Cost: Cost{Epsilon: 0.1}, Query: "reopened"})
	if err != nil || reopened.ID <= after.ID {
		t.Fatalf("after reopening: ID %d (%v), want above %d", reopened.ID, err, after.ID)
	}
	for _, c := range []Charge{before, reopened} {
		var query string
		if err := other.QueryRowContext(ctx, `SELECT query FROM charges WHERE id = ?`, c.ID).Scan(&query); err != nil || query != c.Query {
			t.Errorf("ID %d holds %q (%v), want %q", c.ID, query, err, c.Query)
		}
	}
}

// TestCloseFlushes closes the store while appends are queued: every
// append that returned nil is in the ledger afterwards, every other one
// failed with ErrClosed.
func TestCloseFlushes(t *testing.T) {
	s, path := openTestStore(t)
	unblock, first := startBlocked(t, s, path)
	const n = 20
	var wg sync.WaitGroup
	var okIDs sync.Map
	var okCount, closedCount atomic.Int64
	appendOne := func() {
		defer wg.Done()
		c, err := s.Append(ctx, Charge{Analyst: "a", Cost: Cost{Epsilon: 0.1}, Query: "q"})
		switch {
		case err == nil:
			okIDs.Store(c.ID, true)
			okCount.Add(1)
		case errors.Is(err, ErrClosed):
			closedCount.Add(1)
		default:
			t.Errorf("Append: %v", err)
		}
	}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go appendOne()
	}
	waitQueued(t, s, n) // all queued behind the blocked writer
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	for i := 0; i < n; i++ { // racing with Close
		wg.Add(1)
		go appendOne()
	}
	time.Sleep(20 * time.Millisecond)
	unblock()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if okCount.Load() < n || okCount.Load()+closedCount.Load() != 2*n {
		t.Fatalf("%d appended, %d refused; want ≥ %d appended, %d in all", okCount.Load(), closedCount.Load(), n, 2*n)
	}
	s2, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	cs, err := s2.Charges(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(cs)) != okCount.Load()+1 {
		t.Fatalf("ledger has %d charges, %d appends succeeded", len(cs), okCount.Load()+1)
	}
	for _, c := range cs {
		if _, ok := okIDs.Load(c.ID); !ok && c.Query != "first" {
			t.Fatalf("charge %d in ledger but its Append did not succeed", c.ID)
		}
	}
}

// TestAppendAbandonedBeforeWrite: a request whose context ends while it is
// still queued is not written.
func TestAppendAbandonedBeforeWrite(t *testing.T) {
	s, path := openTestStore(t)
	unblock, first := startBlocked(t, s, path)
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := s.Append(cctx, Charge{Analyst: "a", Cost: Cost{Epsilon: 1}, Query: "abandoned"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append: got %v, want DeadlineExceeded", err)
	}
	unblock()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	cs, err := s.Charges(ctx, "a", 0)
	if err != nil || len(cs) != 1 || cs[0].Query != "first" {
		t.Fatalf("ledger = %+v, %v; want only the first charge", cs, err)
	}
}

func TestOpenNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", fileDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := OpenSQLite(ctx, path); err == nil {
		s.Close()
		t.Fatal("OpenSQLite accepted a ledger with a newer schema")
	}
	// The lock is released after a failed open.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("OpenSQLite after a failed open: %v", err)
	}
	s.Close()
}

// TestClosedLedgerKeepsBudgetReserved: the real store failing (closed)
// behaves like any store failure: the budget stays reserved.
func TestClosedLedgerKeepsBudgetReserved(t *testing.T) {
	s, _ := openTestStore(t)
	a := newTestAccountant(t, s, map[string]Cost{"alice": {Epsilon: 1}})
	r := mustReserve(t, a, "alice", Cost{Epsilon: 1})
	s.Close()
	if _, err := r.Commit(ctx, "q"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit on closed ledger: got %v, want ErrClosed", err)
	}
	r.Release()
	var ex *ExhaustedError
	if _, err := a.Reserve(context.Background(), "alice", Cost{Epsilon: 0.1}); !errors.As(err, &ex) {
		t.Fatalf("budget of a failed commit was given back: %v", err)
	}
}

func TestOpenSQLiteReadOnly(t *testing.T) {
	s, path := openTestStore(t)
	if _, err := OpenSQLiteReadOnly(ctx, filepath.Join(filepath.Dir(path), "missing.db")); err == nil {
		t.Fatal("OpenSQLiteReadOnly of a missing ledger: no error")
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Append(ctx, Charge{Analyst: "alice", Cost: Cost{Epsilon: 0.5}, Query: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	// Works while the writing store holds the lock.
	ro, err := OpenSQLiteReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	a := newTestAccountant(t, ro, map[string]Cost{"alice": {Epsilon: 2}})
	if st := mustStatus(t, a, "alice"); !approx(st.Spent.Epsilon, 1.5) || !approx(st.Remaining.Epsilon, 0.5) {
		t.Fatalf("read-only status: %+v", st)
	}
	if _, err := ro.Append(ctx, Charge{Analyst: "alice", Cost: Cost{Epsilon: 0.5}}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Append on read-only store: got %v", err)
	}
	// Charges committed later by the writer are visible.
	if _, err := s.Append(ctx, Charge{Analyst: "alice", Cost: Cost{Epsilon: 0.5}, Query: "later"}); err != nil {
		t.Fatal(err)
	}
	cs, err := ro.Charges(ctx, "alice", 1)
	if err != nil || len(cs) != 1 || cs[0].Query != "later" {
		t.Fatalf("read-only Charges: %+v, %v", cs, err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.History(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("History after Close: %v", err)
	}
}
