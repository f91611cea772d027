package budget

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultHoldLease is how long a shared ledger keeps a reservation of a
// process that stopped renewing it (crashed, or cut off from the ledger).
const DefaultHoldLease = 30 * time.Second

// PostgresOptions configure OpenPostgres.
type PostgresOptions struct {
	// Schema is the schema dpproxy's tables live in (default "dpproxy");
	// it is created if missing.
	Schema string
	// Lease is how long a hold lives unless renewed (DefaultHoldLease);
	// the store renews its own every Lease/3.
	Lease time.Duration
	// ReadOnly opens the ledger for status commands: no schema changes,
	// no writes.
	ReadOnly bool
}

// PostgresStore is a ledger in a PostgreSQL database that several dpproxy
// processes share. Besides the charges it keeps each scope's totals (an
// analyst's or a protected table's: what its charges sum to) and the holds
// of queries in progress. Every reservation and charge is a transaction
// that first locks the rows of the scopes it touches, in one order, then
// decides on what all processes have spent and hold: two processes can
// never both spend the last of a budget, and they cannot deadlock. A single
// writer goroutine per process group-commits: the reservations, charges
// and releases that arrive while a transaction runs go into the next one.
//
// A hold lives for the lease unless its process renews it; a process that
// dies gives its holds back when the lease ends. A charge is recorded only
// if its hold is still live at that moment, so a hold that expired (and
// whose budget others may have taken) cannot be charged: Commit fails with
// ErrHoldLost and the answer is withheld. When the database cannot be
// reached every reservation and charge fails with ErrLedgerUnavailable:
// queries are refused, never answered uncharged, until it is back.
type PostgresStore struct {
	pool     *pgxpool.Pool
	schema   string // quoted
	instance string
	lease    time.Duration
	readOnly bool

	mu      sync.Mutex // guards closed and senders.Add
	closed  bool
	senders sync.WaitGroup
	ops     chan *ledgerOp
	done    chan struct{}

	liveMu sync.Mutex
	live   map[int64]struct{} // this process's holds, renewed until settled or dropped

	// The scopes known to have a row, and the charges' id sequence.
	knownMu   sync.Mutex
	known     map[string]bool
	chargeSeq string

	closeOnce sync.Once
	txs       atomic.Uint64
	charges   atomic.Uint64
	txNanos   atomic.Int64 // wall time of the transactions txs counts
}

// pgSchemaVersion is recorded in the meta table once pgSchema has run:
// a process meeting an older version runs it again (every statement is
// IF NOT EXISTS), one meeting the current one runs no DDL.
const pgSchemaVersion = 3

// pgSchema creates the ledger's tables. Scopes are "analyst:<name>" and
// "table:<name>"; a hold has a row per scope it covers. A scope's row is
// updated by every reservation on it, and holds come and go: room in
// their pages for updates in place and prompt vacuuming keep a hot row's
// versions from piling up.
const pgSchema = `
CREATE TABLE IF NOT EXISTS %[1]s.scopes (
	scope   text PRIMARY KEY,
	epsilon double precision NOT NULL DEFAULT 0,
	delta   double precision NOT NULL DEFAULT 0,
	squares double precision NOT NULL DEFAULT 0, -- Σ ε², for advanced composition and zCDP
	excess  double precision NOT NULL DEFAULT 0, -- Σ ε(e^ε − 1)
	latest  timestamptz
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
CREATE TABLE IF NOT EXISTS %[1]s.charges (
	id      bigserial PRIMARY KEY,
	analyst text NOT NULL,
	epsilon double precision NOT NULL CHECK (epsilon >= 0),
	delta   double precision NOT NULL CHECK (delta >= 0),
	query   text NOT NULL,
	at      timestamptz NOT NULL,
	tables  jsonb NOT NULL DEFAULT '[]',
	hold_id bigint UNIQUE
);
CREATE INDEX IF NOT EXISTS charges_by_analyst ON %[1]s.charges (analyst, at);
CREATE INDEX IF NOT EXISTS charges_by_time ON %[1]s.charges (at); -- windows of tables' budgets
CREATE TABLE IF NOT EXISTS %[1]s.holds (
	hold_id    bigint NOT NULL,
	scope      text NOT NULL,
	epsilon    double precision NOT NULL,
	delta      double precision NOT NULL,
	squares    double precision NOT NULL,
	excess     double precision NOT NULL,
	instance   text NOT NULL,
	expires_at timestamptz NOT NULL,
	granted_at timestamptz, -- the ledger's time of the decision: its charge is never dated earlier
	PRIMARY KEY (hold_id, scope)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
CREATE INDEX IF NOT EXISTS holds_by_scope ON %[1]s.holds (scope, expires_at);
ALTER TABLE %[1]s.holds ADD COLUMN IF NOT EXISTS granted_at timestamptz;
CREATE TABLE IF NOT EXISTS %[1]s.releases (
	key        text PRIMARY KEY, -- digest of analyst, cost and canonical statement
	analyst    text NOT NULL,
	data       bytea NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS %[1]s.meta (
	key   text PRIMARY KEY,
	value text NOT NULL
);
`

// OpenPostgres opens (creating its schema if needed) the shared ledger in
// the database dsn names.
func OpenPostgres(ctx context.Context, dsn string, opt PostgresOptions) (*PostgresStore, error) {
	if opt.Schema == "" {
		opt.Schema = "dpproxy"
	}
	if opt.Lease <= 0 {
		opt.Lease = DefaultHoldLease
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("budget: ledger DSN: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)
	}
	host, _ := os.Hostname()
	s := &PostgresStore{
		pool:     pool,
		schema:   pgx.Identifier{opt.Schema}.Sanitize(),
		instance: fmt.Sprintf("%s/%d/%x", host, os.Getpid(), randomID()&0xffffff),
		lease:    opt.Lease,
		readOnly: opt.ReadOnly,
		ops:      make(chan *ledgerOp, 4*maxBatch),
		done:     make(chan struct{}),
		live:     map[int64]struct{}{},
		known:    map[string]bool{},
	}
	if err := s.checkSchema(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := pool.QueryRow(ctx, `SELECT pg_get_serial_sequence($1, 'id')`, s.schema+".charges").Scan(&s.chargeSeq); err != nil {
		pool.Close()
		return nil, fmt.Errorf("budget: the ledger's charge ids: %w", err)
	}
	if opt.ReadOnly {
		close(s.done)
	} else {
		go s.writer()
	}
	return s, nil
}

// checkSchema creates the ledger's tables, one process at a time (an
// advisory lock: concurrent CREATE IF NOT EXISTS can collide), or, read
// only, checks that they exist.
func (s *PostgresStore) checkSchema(ctx context.Context) error {
	var exists bool
	version := 0
	err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.schema+".charges").Scan(&exists)
	if err == nil && exists {
		err = s.pool.QueryRow(ctx, `SELECT coalesce((SELECT value::int FROM `+s.schema+`.meta WHERE key = 'schema_version'), 0)
			WHERE to_regclass($1) IS NOT NULL`, s.schema+".meta").Scan(&version)
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)
	case version >= pgSchemaVersion:
		// Up to date (or newer): no DDL, whose locks would wait on (and
		// could deadlock with) the transactions of running processes.
		return nil
	case s.readOnly && !exists:
		return fmt.Errorf("budget: no ledger in schema %s", s.schema)
	case s.readOnly:
		return nil // an older ledger: readable
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('dpproxy ledger schema'))`); err != nil {
		return fmt.Errorf("budget: creating the ledger schema: %w", err)
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+s.schema); err != nil {
		return fmt.Errorf("budget: creating the ledger schema: %w", err)
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(pgSchema, s.schema)); err != nil {
		return fmt.Errorf("budget: creating the ledger tables: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.schema+`.meta VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, strconv.Itoa(pgSchemaVersion)); err != nil {
		return fmt.Errorf("budget: recording the ledger schema's version: %w", err)
	}
	return tx.Commit(ctx)
}

// randomID is a random positive int64 (hold ids: unique across processes
// without a round trip).
func randomID() int64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("budget: crypto/rand: " + err.Error())
	}
	return int64(binary.BigEndian.Uint64(b[:])>>1) | 1
}

// Stats counts the charges this store committed and the transactions its
// writer ran (reservations, charges, releases and renewals together).
func (s *PostgresStore) Stats() StoreStats {
	return StoreStats{Charges: s.charges.Load(), Transactions: s.txs.Load(), TransactionTime: time.Duration(s.txNanos.Load())}
}

// Append records a charge without a hold (an import, or a test): the
// scopes' totals grow with it.
func (s *PostgresStore) Append(ctx context.Context, c Charge) (Charge, error) {
	return s.submitCharge(ctx, 0, c)
}

func (s *PostgresStore) settle(ctx context.Context, hold int64, c Charge) (Charge, error) {
	return s.submitCharge(ctx, hold, c)
}

func (s *PostgresStore) submitCharge(ctx context.Context, hold int64, c Charge) (Charge, error) {
	if err := c.Cost.Validate(); err != nil {
		return Charge{}, err
	}
	// PostgreSQL text holds neither NUL nor invalid UTF-8, which a query
	// may contain: one such text must not fail its batch.
	c.Query = strings.ToValidUTF8(strings.ReplaceAll(c.Query, "\x00", "\uFFFD"), "\uFFFD")
	res, err := s.submit(ctx, &ledgerOp{kind: opSettle, holdID: hold, charge: c})
	if err != nil && hold != 0 {
		// The answer is withheld: the hold is no longer renewed, so that
		// it expires and its budget comes back (a retried Commit still
		// finds a charge recorded in doubt, or a hold not yet reclaimed).
		s.forget(hold)
	}
	return res.charge, err
}

func (s *PostgresStore) hold(ctx context.Context, req *holdRequest) (int64, error) {
	res, err := s.submit(ctx, &ledgerOp{kind: opHold, hold: req})
	return res.holdID, err
}

func (s *PostgresStore) drop(hold int64) {
	s.forget(hold)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	op := &ledgerOp{kind: opDrop, holdID: hold, done: make(chan opResult, 1)}
	select {
	case s.ops <- op:
	default: // the queue is full: the hold expires with its lease
	}
}

func (s *PostgresStore) forget(hold int64) {
	s.liveMu.Lock()
	delete(s.live, hold)
	s.liveMu.Unlock()
}

// view reads the totals of scopes (committed charges, live holds, the
// current windows' spending) without locking them.
func (s *PostgresStore) view(ctx context.Context, scopes []string, windows []scopeWindow) (time.Time, map[string]*scopeTotals, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	now, view, err := s.readTotals(ctx, tx, scopes, windows)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)
	}
	return now, view, nil
}

// ServerSecret returns the 32-byte secret every instance on the ledger
// shares (what unknown user names see at login derives from it, so it
// must not differ between instances), creating it on first use.
func (s *PostgresStore) ServerSecret(ctx context.Context) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	var value string
	// DO UPDATE (to the same value) returns the row another instance
	// inserted concurrently, where DO NOTHING would return none.
	err := s.pool.QueryRow(ctx, `INSERT INTO `+s.schema+`.meta AS m VALUES ('server_secret', $1)
		ON CONFLICT (key) DO UPDATE SET value = m.value RETURNING value`, hex.EncodeToString(fresh)).Scan(&value)
	if err != nil {
		return nil, fmt.Errorf("%w: server secret: %w", ErrLedgerUnavailable, err)
	}
	secret, err := hex.DecodeString(value)
	if err != nil || len(secret) != 32 {
		return nil, fmt.Errorf("budget: the ledger's server secret is not 64 hex digits")
	}
	return secret, nil
}

// LoadRelease returns the release stored under key, if it has not
// expired (the engine's result cache, shared by the instances).
func (s *PostgresStore) LoadRelease(ctx context.Context, key string) ([]byte, bool, error) {
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM `+s.schema+`.releases WHERE key = $1 AND expires_at > clock_timestamp()`, key).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)
	}
	return data, true, nil
}

// SaveRelease stores a release under key for ttl, unless another
// instance's release of the same key is stored and live (the first one
// stays, so that every later asker gets the same answer).
func (s *PostgresStore) SaveRelease(ctx context.Context, key, analyst string, data []byte, ttl time.Duration) error {
	if s.readOnly {
		return errors.New("budget: the ledger was opened read-only")
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO `+s.schema+`.releases AS r VALUES ($1, $2, $3, clock_timestamp() + make_interval(secs => $4))
		ON CONFLICT (key) DO UPDATE SET analyst = excluded.analyst, data = excluded.data, expires_at = excluded.expires_at
		WHERE r.expires_at <= clock_timestamp()`, key, analyst, data, ttl.Seconds())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)
	}
	return nil
}

// Spent returns the total cost recorded per analyst.
func (s *PostgresStore) Spent(ctx context.Context) (map[string]Cost, error) {
	return s.scopeSpent(ctx, "analyst:")
}

// TableSpent returns the total cost recorded per protected table.
func (s *PostgresStore) TableSpent(ctx context.Context) (map[string]Cost, error) {
	return s.scopeSpent(ctx, "table:")
}

func (s *PostgresStore) scopeSpent(ctx context.Context, prefix string) (map[string]Cost, error) {
	// A row totals its charges and its holds.
	rows, err := s.pool.Query(ctx, `SELECT s.scope, s.epsilon - coalesce(h.e, 0), s.delta - coalesce(h.d, 0)
		FROM `+s.schema+`.scopes s LEFT JOIN (SELECT scope, sum(epsilon) AS e, sum(delta) AS d FROM `+s.schema+`.holds GROUP BY scope) h USING (scope)
		WHERE starts_with(s.scope, $1)`, prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)
	}
	out := map[string]Cost{}
	for rows.Next() {
		var scope string
		var c Cost
		if err := rows.Scan(&scope, &c.Epsilon, &c.Delta); err != nil {
			return nil, err
		}
		if c = nonNegative(c); !c.IsZero() {
			out[strings.TrimPrefix(scope, prefix)] = c
		}
	}
	return out, rows.Err()
}

// Charges returns up to limit of analyst's charges, newest first.
func (s *PostgresStore) Charges(ctx context.Context, analyst string, limit int) ([]Charge, error) {
	q := `SELECT id, epsilon, delta, query, at, tables FROM ` + s.schema + `.charges WHERE analyst = $1 ORDER BY id DESC`
	args := []any{analyst}
	if limit > 0 {
		q += ` LIMIT $2`
		args = append(args, limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)
	}
	var out []Charge
	for rows.Next() {
		c := Charge{Analyst: analyst}
		var tables []byte
		if err := rows.Scan(&c.ID, &c.Cost.Epsilon, &c.Cost.Delta, &c.Query, &c.At, &tables); err != nil {
			return nil, err
		}
		c.At = c.At.UTC()
		if err := json.Unmarshal(tables, &c.Tables); err != nil {
			return nil, fmt.Errorf("budget: charge %d: tables: %w", c.ID, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Close stops the writer after the queued operations, gives this
// process's remaining holds back (they are reclaimed by the next
// decision on their scopes) and closes the connections.
func (s *PostgresStore) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.senders.Wait()
		if !s.readOnly {
			close(s.ops)
		}
		<-s.done
		s.liveMu.Lock()
		ids := make([]int64, 0, len(s.live))
		for id := range s.live {
			ids = append(ids, id)
		}
		s.liveMu.Unlock()
		if len(ids) > 0 {
			// Marked expired, not deleted: the next decision on their
			// scopes reclaims them, taking their cost out of the totals.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = s.pool.Exec(ctx, `UPDATE `+s.schema+`.holds SET expires_at = '-infinity' WHERE hold_id = ANY($1)`, ids)
			cancel()
		}
		s.pool.Close()
	})
	return nil
}

// errClosed is returned for operations after Close.
var errClosed = errors.New("budget: ledger closed")
