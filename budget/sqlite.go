package budget

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/dpproxy/dpproxy/procs"
)

// schemaVersion is stored in PRAGMA user_version. Version 2 added the
// tables column (the protected tables each charge read, for table
// budgets); a version 1 ledger is upgraded when opened for writing, its
// earlier charges counting for no table.
const schemaVersion = 2

// schema creates the ledger. The charge_log view is for people reading the
// file with other tools.
const schema = `
CREATE TABLE IF NOT EXISTS charges (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	analyst TEXT    NOT NULL,
	epsilon REAL    NOT NULL CHECK (epsilon >= 0),
	delta   REAL    NOT NULL CHECK (delta >= 0),
	query   TEXT    NOT NULL,
	at_ns   INTEGER NOT NULL, -- Unix time in nanoseconds, UTC
	tables  TEXT    NOT NULL DEFAULT '[]' -- JSON array of the protected tables read
) STRICT;
CREATE INDEX IF NOT EXISTS charges_by_analyst ON charges (analyst, id);
CREATE VIEW IF NOT EXISTS charge_log AS
	SELECT id, analyst, epsilon, delta, query,
	       strftime('%Y-%m-%dT%H:%M:%fZ', at_ns / 1e9, 'unixepoch') AS at
	FROM charges;
`

// maxBatch bounds how many charges one transaction carries.
const maxBatch = 256

// SQLiteStore is a Store in a SQLite file (WAL mode, synchronous=FULL).
// Appends are group-committed by a single writer goroutine: charges that
// arrive while a transaction is being written and synced go into the next
// one, so concurrent commits share an fsync.
type SQLiteStore struct {
	path     string
	db       *sql.DB
	readOnly bool
	// version is the schema version of a read-only ledger (0: current);
	// a version 1 ledger records no tables.
	version int
	// wconn is the writer goroutine's own connection; the statements
	// below are prepared on it and used by the writer alone.
	wconn           *sql.Conn
	begin, commitTx *sql.Stmt
	// inserts[n-1] inserts n charges with one statement, for n up to
	// insertChunk; prepared when first needed (insertStmt).
	inserts [insertChunk]*sql.Stmt
	lock    *os.File

	mu      sync.Mutex // guards closed and senders.Add
	closed  bool
	senders sync.WaitGroup // Appends between the closed check and the send
	reqs    chan *appendReq
	done    chan struct{} // closed when the writer goroutine exits

	closeOnce sync.Once
	closeErr  error

	// nextID is the ID the writer gives the next charge; 0 when it must
	// be read from the ledger (at first, and once a transaction that had
	// begun has failed). The writer owns the IDs: the ledger lock keeps
	// other dpproxy processes out, and nothing else may write the file
	// while dpproxy runs (a row inserted behind its back fails the
	// transaction that collides with it, and the ID is read again).
	nextID int64

	txs     atomic.Uint64
	charges atomic.Uint64
	txNanos atomic.Int64 // wall time of the transactions txs counts
}

// StoreStats are counters of a ledger store since it was opened.
type StoreStats struct {
	// Charges is the number of charges committed.
	Charges uint64
	// Transactions is the number of transactions the store committed. On
	// the embedded ledger they are the charges' group commits, one WAL
	// sync each: Charges ÷ Transactions is the mean batch. The shared
	// ledger also counts those that hold, release or renew budget.
	Transactions uint64
	// TransactionTime is the wall time those transactions took, their
	// durable commit included. On the embedded ledger, ÷ Transactions is
	// how long a charge's own transaction kept it waiting on average; the
	// shared ledger runs charges and holds in concurrent transactions,
	// whose times add up.
	TransactionTime time.Duration
}

type appendReq struct {
	c     Charge
	state atomic.Int32
	done  chan appendResult // buffered: the writer never blocks on it
}

type appendResult struct {
	c   Charge
	err error
}

// OpenSQLite opens the ledger at path, creating the file and schema if
// needed; the directory must exist. It fails with ErrLedgerLocked if another
// store holds the ledger.
func OpenSQLite(ctx context.Context, path string) (*SQLiteStore, error) {
	if path == "" {
		return nil, errors.New("budget: OpenSQLite: empty ledger path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("budget: ledger path: %w", err)
	}
	dir := filepath.Dir(abs)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("budget: ledger directory: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("budget: ledger directory %s is not a directory", dir)
	}
	lock, err := lockLedger(abs + ".lock")
	if err != nil {
		return nil, err
	}
	s, err := openSQLite(ctx, abs, dir)
	if err != nil {
		lock.Close()
		return nil, err
	}
	s.lock = lock
	go s.writer()
	return s, nil
}

func openSQLite(ctx context.Context, abs, dir string) (_ *SQLiteStore, err error) {
	// Create the file ourselves so that it is private to the proxy (it holds
	// query texts); SQLite gives the -wal and -shm files the same mode.
	created := false
	if f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		created = true
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("budget: creating ledger: %w", err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("budget: creating ledger: %w", err)
	}

	db, err := sql.Open("sqlite", ledgerDSN(abs, false))
	if err != nil {
		return nil, fmt.Errorf("budget: opening ledger %s: %w", abs, err)
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	db.SetMaxIdleConns(4)

	wconn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("budget: opening ledger %s: %w", abs, err)
	}
	defer func() {
		if err != nil {
			wconn.Close()
		}
	}()
	if err := checkPragmas(ctx, wconn); err != nil {
		return nil, fmt.Errorf("budget: ledger %s: %w", abs, err)
	}
	if err := migrate(ctx, wconn); err != nil {
		return nil, fmt.Errorf("budget: ledger %s: %w", abs, err)
	}
	if created {
		if err := syncDir(dir); err != nil {
			return nil, fmt.Errorf("budget: syncing ledger directory: %w", err)
		}
	}
	s := &SQLiteStore{
		path:  abs,
		db:    db,
		wconn: wconn,
		reqs:  make(chan *appendReq, maxBatch),
		done:  make(chan struct{}),
	}
	defer func() {
		if err != nil {
			s.closeStatements()
		}
	}()
	if s.begin, err = wconn.PrepareContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return nil, fmt.Errorf("budget: ledger %s: preparing BEGIN: %w", abs, err)
	}
	if s.commitTx, err = wconn.PrepareContext(ctx, "COMMIT"); err != nil {
		return nil, fmt.Errorf("budget: ledger %s: preparing COMMIT: %w", abs, err)
	}
	// Prepared now, so that an insert the schema rejects fails here.
	if _, err = s.insertStmt(ctx, insertChunk); err != nil {
		return nil, fmt.Errorf("budget: ledger %s: preparing insert: %w", abs, err)
	}
	return s, nil
}

// insertStmt returns the statement that inserts n charges (1 ≤ n ≤
// insertChunk), preparing it on the writer's connection the first time.
// Only the writer goroutine (and the opening, before it runs) calls it.
func (s *SQLiteStore) insertStmt(ctx context.Context, n int) (*sql.Stmt, error) {
	if st := s.inserts[n-1]; st != nil {
		return st, nil
	}
	st, err := s.wconn.PrepareContext(ctx, insertChargesSQL(n))
	if err != nil {
		return nil, err
	}
	s.inserts[n-1] = st
	return st, nil
}

// closeStatements closes the writer's prepared statements.
func (s *SQLiteStore) closeStatements() error {
	var errs []error
	for _, st := range append([]*sql.Stmt{s.begin, s.commitTx}, s.inserts[:]...) {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// ledgerDSN returns the modernc.org/sqlite DSN for the ledger at abs. The
// path goes in a file: URI, escaped, so that characters such as '?' and '#'
// in it are not taken for URI syntax. The pragmas run on every connection
// the pool opens; synchronous is a per-connection setting, journal_mode is
// persistent.
func ledgerDSN(abs string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
	}
	return (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
}

// OpenSQLiteReadOnly opens an existing ledger for reading only, without
// taking the ledger lock, so that tools such as `dpproxy budget` can show
// spending while the proxy runs. Append fails with ErrReadOnly. An
// Accountant over a read-only store can report Status but not Commit.
func OpenSQLiteReadOnly(ctx context.Context, path string) (*SQLiteStore, error) {
	if path == "" {
		return nil, errors.New("budget: OpenSQLiteReadOnly: empty ledger path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("budget: ledger path: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("budget: ledger: %w", err)
	}
	db, err := sql.Open("sqlite", ledgerDSN(abs, true))
	if err != nil {
		return nil, fmt.Errorf("budget: opening ledger %s: %w", abs, err)
	}
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		db.Close()
		return nil, fmt.Errorf("budget: ledger %s: reading schema version: %w", abs, err)
	}
	if v != schemaVersion && v != 1 {
		db.Close()
		return nil, fmt.Errorf("budget: ledger %s: schema version %d, want %d", abs, v, schemaVersion)
	}
	return &SQLiteStore{path: abs, db: db, readOnly: true, version: v}, nil
}

// checkPragmas verifies that the durability settings took effect: WAL can
// be refused (some network filesystems) and would silently fall back.
func checkPragmas(ctx context.Context, c *sql.Conn) error {
	var mode string
	if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("reading journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	var sync int
	if err := c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return fmt.Errorf("reading synchronous: %w", err)
	}
	if sync < 2 { // 2 = FULL, 3 = EXTRA
		return fmt.Errorf("synchronous is %d, want FULL (2)", sync)
	}
	return nil
}

// migrate creates the schema, or checks that an existing one is a version
// this code understands.
func migrate(ctx context.Context, c *sql.Conn) error {
	var v int
	if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	if v > schemaVersion {
		return fmt.Errorf("schema version %d is newer than this dpproxy understands (%d)", v, schemaVersion)
	}
	if v == schemaVersion {
		return nil
	}
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("creating schema: %w", err)
	}
	create := schema
	if v == 1 {
		create = `ALTER TABLE charges ADD COLUMN tables TEXT NOT NULL DEFAULT '[]';`
	}
	if _, err := c.ExecContext(ctx, create+fmt.Sprintf("PRAGMA user_version = %d;", schemaVersion)); err != nil {
		rollback(c)
		return fmt.Errorf("creating schema: %w", err)
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		rollback(c)
		return fmt.Errorf("creating schema: %w", err)
	}
	return nil
}

// rollback ends a transaction after an error. SQLite may already have
// rolled it back, so the error ("no transaction is active") is ignored.
func rollback(c *sql.Conn) {
	_, _ = c.ExecContext(context.Background(), "ROLLBACK")
}

// Path returns the absolute path of the ledger file.
func (s *SQLiteStore) Path() string { return s.path }

// Stats returns counters since the store was opened.
func (s *SQLiteStore) Stats() StoreStats {
	return StoreStats{Charges: s.charges.Load(), Transactions: s.txs.Load(), TransactionTime: time.Duration(s.txNanos.Load())}
}

// Append records c durably; see Store. The charge joins the writer's next
// transaction. If ctx ends before the writer has taken the charge, Append
// returns ctx's error and the charge is not written; if the charge is
// already in a transaction, Append waits for that transaction (one sync) and
// reports its outcome.
func (s *SQLiteStore) Append(ctx context.Context, c Charge) (Charge, error) {
	if c.Analyst == "" {
		return Charge{}, errors.New("budget: append: empty analyst")
	}
	if err := c.Cost.Validate(); err != nil {
		return Charge{}, fmt.Errorf("budget: append: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Charge{}, fmt.Errorf("budget: append: %w", err)
	}
	if s.readOnly {
		return Charge{}, ErrReadOnly
	}
	c.ID = 0
	req := &appendReq{c: c, done: make(chan appendResult, 1)}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Charge{}, ErrClosed
	}
	s.senders.Add(1)
	s.mu.Unlock()
	select {
	case s.reqs <- req:
		s.senders.Done()
	case <-ctx.Done():
		s.senders.Done()
		return Charge{}, fmt.Errorf("budget: append: %w", ctx.Err())
	}

	select {
	case res := <-req.done:
		return res.c, res.err
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqPending, reqAbandoned) {
			return Charge{}, fmt.Errorf("budget: append: %w", ctx.Err())
		}
		res := <-req.done
		return res.c, res.err
	}
}

// commitDelay bounds how long the writer lets a transaction gather more
// charges when the previous one carried several (PostgreSQL's commit_delay
// with commit_siblings): under concurrent load each fsync, about 0.2 ms of
// CPU in the kernel and 0.2 to 0.7 ms of waiting on this kind of disk,
// then carries more charges; a lone analyst's charge never waits. The
// writer stops waiting as soon as as many charges as the previous
// transaction carried are queued: the committers of a busy ledger come
// back in step with its transactions. (A plain sleep would not do: Go's
// timers wake an idle process at millisecond granularity, so 250 µs
// became 1.1 ms and capped 32 committers at about 16,000 charges/s.)
const commitDelay = 250 * time.Microsecond

// writer is the single goroutine that writes charges. It takes whatever is
// queued (up to maxBatch) and commits it as one transaction; while that
// transaction syncs, new requests queue up for the next one. After a
// transaction of several charges it waits up to commitDelay for as many
// again before the next. It exits when Close has closed reqs and
// everything queued is committed.
func (s *SQLiteStore) writer() {
	defer close(s.done)
	batch := make([]*appendReq, 0, maxBatch)
	last := 0 // charges in the previous transaction
	for req := range s.reqs {
		batch = append(batch[:0], req)
		open := s.drain(&batch)
		if open && last > 1 && len(batch) < min(last, maxBatch) {
			s.gather(&batch, min(last, maxBatch))
		}
		last = len(batch)
		s.commit(batch)
		clear(batch)
	}
}

// gather adds queued requests to batch until it holds want, commitDelay
// has passed or reqs is closed (the writer's loop then ends by itself). It
// yields the processor between looks instead of sleeping: the committers
// it waits for need it, and a timer would wake it a millisecond late.
func (s *SQLiteStore) gather(batch *[]*appendReq, want int) {
	start := time.Now()
	for len(*batch) < want && time.Since(start) < commitDelay {
		runtime.Gosched()
		if !s.drain(batch) {
			return
		}
	}
}

// drain adds what is queued to batch, up to maxBatch; it reports false
// once reqs is closed.
func (s *SQLiteStore) drain(batch *[]*appendReq) bool {
	for len(*batch) < maxBatch {
		select {
		case r, ok := <-s.reqs:
			if !ok {
				return false
			}
			*batch = append(*batch, r)
		default:
			return true
		}
	}
	return true
}

// commit writes batch in one transaction and reports the outcome to every
// request in it.
func (s *SQLiteStore) commit(batch []*appendReq) {
	live := batch[:0]
	for _, r := range batch {
		if r.state.CompareAndSwap(reqPending, reqTaken) {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	start := time.Now()
	err := s.write(live)
	if err != nil {
		slog.Error("budget: ledger transaction failed", "path", s.path, "charges", len(live), "err", err)
		err = fmt.Errorf("budget: writing ledger %s: %w", s.path, err)
		for _, r := range live {
			r.done <- appendResult{err: err}
		}
		return
	}
	s.txs.Add(1)
	s.txNanos.Add(int64(time.Since(start)))
	s.charges.Add(uint64(len(live)))
	for _, r := range live {
		r.done <- appendResult{c: r.c}
	}
}

// write inserts the charges in one transaction, setting their IDs and
// timestamps. The transaction is not tied to any caller's context: once
// started it runs to its end so every caller learns the real outcome.
func (s *SQLiteStore) write(reqs []*appendReq) error {
	ctx := context.Background()
	if _, err := s.begin.ExecContext(ctx); err != nil {
		return err
	}
	// One time for the transaction: the latest its charges were given
	// (never earlier than any of them, so no window can reopen), or now.
	// Distinct times then count the ledger's transactions (bench/loadgen).
	var ns int64
	for _, r := range reqs {
		if !r.c.At.IsZero() {
			ns = max(ns, r.c.At.UnixNano())
		}
	}
	if ns == 0 {
		ns = time.Now().UnixNano()
	}
	tables := make([]string, len(reqs))
	for i, r := range reqs {
		if i > 0 && slices.Equal(r.c.Tables, reqs[i-1].c.Tables) {
			tables[i] = tables[i-1] // a transaction's charges mostly read the same tables
			continue
		}
		t, err := json.Marshal(append([]string{}, r.c.Tables...))
		if err != nil {
			rollback(s.wconn)
			return err
		}
		tables[i] = string(t)
	}
	at := any(ns) // boxed once: every charge of the transaction has it
	// The writer gives the IDs itself. It knows the next one after each
	// commit; after a failed transaction (whose outcome may be unknown) it
	// reads it again, inside the next transaction.
	first := s.nextID
	s.nextID = 0
	if first == 0 {
		var err error
		if first, err = s.nextChargeID(ctx); err != nil {
			rollback(s.wconn)
			return err
		}
	}
	id := first
	for rest, tabs := reqs, tables; len(rest) > 0; {
		n := min(len(rest), insertChunk)
		if err := s.insertChunk(ctx, rest[:n], tabs[:n], at, id); err != nil {
			rollback(s.wconn)
			return err
		}
		rest, tabs, id = rest[n:], tabs[n:], id+int64(n)
	}
	for i, r := range reqs {
		r.c.ID = first + int64(i)
		r.c.At = time.Unix(0, ns).UTC()
	}
	// The commit waits for the WAL's fsync: a wait procs must see in
	// full to give the process more than one processor (procs.Waited).
	// The time declared is the whole commit's, SQLite's own work in it
	// included: an overstatement that errs towards every processor.
	committing := time.Now()
	_, err := s.commitTx.ExecContext(ctx)
	procs.Waited(time.Since(committing))
	if err != nil {
		rollback(s.wconn)
		return err
	}
	s.nextID = id
	return nil
}

// insertChunk is the most charges one INSERT statement of the writer
// carries: a transaction of many charges costs a fraction of one
// statement per charge, and one of a few charges (what 32 clients
// gather) a single statement.
const insertChunk = 16

// insertChargesSQL inserts n charges with the IDs the writer gives them.
// Nothing is read back: a RETURNING clause, read through database/sql,
// cost about a third of the ledger's CPU per charge.
func insertChargesSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO charges (id, analyst, epsilon, delta, query, at_ns, tables) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?)")
	}
	return b.String()
}

// insertChunk inserts the charges of reqs (at most insertChunk; tables[i]
// is the JSON of reqs[i]'s tables) with one statement, giving them the IDs
// from first on, in order, and the time at (Unix nanoseconds).
func (s *SQLiteStore) insertChunk(ctx context.Context, reqs []*appendReq, tables []string, at any, first int64) error {
	st, err := s.insertStmt(ctx, len(reqs))
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, chargeArgs(reqs, tables, at, first)...)
	return err
}

// chargeArgs are insertChunk's arguments, seven per charge in the order
// of insertChargesSQL. Boxing a string or a float allocates: a charge
// whose analyst, cost or tables equal the previous charge's shares its
// boxes.
func chargeArgs(reqs []*appendReq, tables []string, at any, first int64) []any {
	args := make([]any, 0, 7*len(reqs))
	for i, r := range reqs {
		c := r.c
		if i == 0 {
			args = append(args, first, c.Analyst, c.Cost.Epsilon, c.Cost.Delta, c.Query, at, tables[0])
			continue
		}
		p, prev := reqs[i-1].c, args[len(args)-7:]
		args = append(args, first+int64(i),
			boxedOnce(c.Analyst, p.Analyst, prev[1]),
			boxedOnce(c.Cost.Epsilon, p.Cost.Epsilon, prev[2]),
			boxedOnce(c.Cost.Delta, p.Cost.Delta, prev[3]),
			c.Query, at,
			boxedOnce(tables[i], tables[i-1], prev[6]))
	}
	return args
}

// boxedOnce returns boxed (the previous charge's argument) when v equals
// previous, else v boxed anew.
func boxedOnce[T comparable](v, previous T, boxed any) any {
	if v == previous {
		return boxed
	}
	return v
}

// nextChargeID is the ID of the ledger's next charge: above every ID the
// table holds or has held (AUTOINCREMENT's sqlite_sequence). Read inside
// the writer's transaction, it cannot change before the commit.
func (s *SQLiteStore) nextChargeID(ctx context.Context) (int64, error) {
	var next int64
	err := s.wconn.QueryRowContext(ctx, `SELECT max(
		coalesce((SELECT max(id) FROM charges), 0),
		coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'charges'), 0)) + 1`).Scan(&next)
	if err != nil {
		return 0, fmt.Errorf("reading the next charge ID: %w", err)
	}
	return next, nil
}

// Charges returns up to limit of analyst's charges, newest first (limit ≤ 0:
// all).
func (s *SQLiteStore) Charges(ctx context.Context, analyst string, limit int) ([]Charge, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT id, analyst, epsilon, delta, query, at_ns FROM charges
		 WHERE analyst = ? ORDER BY id DESC LIMIT ?`, analyst, limit)
	if err != nil {
		return nil, fmt.Errorf("budget: reading charges: %w", err)
	}
	defer rows.Close()
	var out []Charge
	for rows.Next() {
		var c Charge
		var ns int64
		if err := rows.Scan(&c.ID, &c.Analyst, &c.Cost.Epsilon, &c.Cost.Delta, &c.Query, &ns); err != nil {
			return nil, fmt.Errorf("budget: reading charges: %w", err)
		}
		c.At = time.Unix(0, ns).UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("budget: reading charges: %w", err)
	}
	return out, nil
}

func (s *SQLiteStore) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops accepting appends, commits every append already queued,
// waits for the writer, and closes the database and the ledger lock. It is
// safe to call more than once.
func (s *SQLiteStore) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		if s.readOnly {
			if err := s.db.Close(); err != nil {
				s.closeErr = fmt.Errorf("budget: closing ledger %s: %w", s.path, err)
			}
			return
		}
		s.senders.Wait()
		close(s.reqs)
		<-s.done
		s.closeErr = errors.Join(s.closeStatements(), s.wconn.Close(), s.db.Close(), s.lock.Close())
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("budget: closing ledger %s: %w", s.path, s.closeErr)
		}
	})
	return s.closeErr
}
