package backend

import (
	"context"
	"errors"
	"fmt"
	"github.com/dpproxy/dpproxy/directio"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// DefaultMaxConns is the pool size used when a caller passes maxConns <= 0.
const DefaultMaxConns = 10

// defaultConnectTimeout bounds connection attempts when the DSN sets no
// connect_timeout, so that an unreachable server fails a query instead of
// holding it until the caller's deadline.
const defaultConnectTimeout = 10 * time.Second

// cleanupTimeout bounds the ROLLBACK sent after a failed statement.
const cleanupTimeout = 5 * time.Second

// Postgres is a Backend on a PostgreSQL server, reached through a pool of
// pgx connections.
//
// The pool's connections are opened with default_transaction_read_only =
// on, so every statement runs in a read-only transaction of its own. That
// is enough for the only SQL dpproxy sends: its own (rewritten DP queries
// and public-table queries re-emitted from an allowlisted AST, which cannot
// change session state); a client's text never reaches the backend.
// Statements use the extended protocol, a single
// statement per call, parameter types inferred by the server from the
// statement, results in text format, which the backend decodes itself so
// that numeric values keep their exact canonical text. A statement text
// runs first as the unnamed statement; once it has been seen before
// (dpproxy's repeated public-table queries and rewritten DP queries), each
// connection prepares it once and afterwards only binds and executes it,
// which spares the server a parse and a plan per query. One-off texts are
// never prepared.
type Postgres struct {
	pool *pgPool
	desc string // host:port/database, for logs
	// seen holds the statement texts run recently, each with how long its
	// last run alone took on the server's side, and its slow combined runs.
	seen *lru.Cache[string, pgSeen]
	// combiner batches concurrent short statements (combine.go,
	// pgcombine.go); keepPrepared bounds the statements each connection
	// keeps prepared for its batches (combinePrepared).
	combiner     *combiner
	keepPrepared int
}

// seenStatements bounds the texts Postgres remembers to decide which to
// prepare (pgx's statement cache per connection holds 512).
const seenStatements = 2048

var _ Backend = (*Postgres)(nil)

// OpenPostgres creates a pool of at most maxConns connections
// (DefaultMaxConns if maxConns <= 0) to the server named by dsn (a URL or
// keyword/value connection string), and checks that a connection can be
// made. A failure to connect wraps ErrUnavailable.
func OpenPostgres(ctx context.Context, dsn string, maxConns int) (*Postgres, error) {
	p, err := newPostgres(dsn, maxConns)
	if err != nil {
		return nil, err
	}
	if err := p.Ping(ctx); err != nil {
		p.pool.close()
		return nil, err
	}
	slog.InfoContext(ctx, "backend: postgres pool open", "server", p.desc, "max_conns", cap(p.pool.tokens))
	return p, nil
}

// newPostgres builds the pool without connecting.
func newPostgres(dsn string, maxConns int) (*Postgres, error) {
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("backend: parse postgres dsn: %w", err)
	}
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	cc.DefaultQueryExecMode = pgx.QueryExecModeExec
	dial := cc.DialFunc
	cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return directio.Wrap(conn), nil
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = defaultConnectTimeout
	}
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	// Sent in the startup packet, so they hold from the first statement:
	// backend connections never write, and the text forms decoded below
	// are the ISO date forms and exact (round-trip) floats.
	cc.RuntimeParams["default_transaction_read_only"] = "on"
	cc.RuntimeParams["DateStyle"] = "ISO, YMD"
	cc.RuntimeParams["extra_float_digits"] = "3"
	// When a caller gives up on a statement, ask the server to cancel it
	// rather than only dropping the socket, so that abandoned analytic
	// queries stop consuming the server.
	cc.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{
			Conn:          pc,
			DeadlineDelay: cleanupTimeout,
		}
	}
	// Belt and braces for connections that come through a pooler that
	// drops startup parameters.
	afterConnect := func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, "SET default_transaction_read_only = on"); err != nil {
			return fmt.Errorf("set default_transaction_read_only: %w", err)
		}
		return nil
	}
	desc := fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database)
	p := &Postgres{pool: newPgPool(cc, maxConns, afterConnect), desc: desc, keepPrepared: combinePrepared}
	p.seen, _ = lru.New[string, pgSeen](seenStatements)
	p.setPipelineLanes(defaultPipelineLanes(maxConns))
	return p, nil
}

// Ping checks that a connection to the server can be had and used. Its
// errors wrap ErrUnavailable.
func (p *Postgres) Ping(ctx context.Context) error {
	pc, err := p.pool.acquire(ctx)
	if err != nil {
		return fmt.Errorf("%w: postgres %s: %w", ErrUnavailable, p.desc, err)
	}
	defer p.pool.release(pc)
	if err := pc.conn.Ping(ctx); err != nil {
		return fmt.Errorf("%w: ping postgres %s: %w", ErrUnavailable, p.desc, err)
	}
	return nil
}

// Close closes the pool's idle connections; connections in use are closed
// as their statements finish. Queries after Close fail with ErrUnavailable.
func (p *Postgres) Close() error {
	p.pool.close()
	return nil
}

// Query runs sql, with args bound as $1, $2, ..., in a read-only
// transaction and returns the whole result, decoded. A short text seen
// before (a small DP query's bounded SQL) goes in a combined batch.
func (p *Postgres) Query(ctx context.Context, sql string, args ...any) (*Rows, error) {
	if res, ok, err := p.combined(ctx, sql, args, false); ok {
		return res, err
	}
	return p.query(ctx, queryText, sql, args)
}

// statementReader reads one statement's result on a connection: decoded
// (queryText) or in wire form (queryWire, wire.go).
type statementReader func(ctx context.Context, c *pgx.Conn, sql string, args []any, mode pgx.QueryExecMode) (*Rows, error)

// query runs sql on a pooled connection and reads its result with read.
func (p *Postgres) query(ctx context.Context, read statementReader, sql string, args []any) (*Rows, error) {
	start := time.Now()
	pc, err := p.pool.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres %s: %w", ErrUnavailable, p.desc, err)
	}
	defer p.pool.release(pc)

	mode := pgx.QueryExecModeExec
	rec, seen := p.seen.Peek(sql)
	if seen {
		mode = pgx.QueryExecModeCacheStatement
	}
	if sent := SentHook(ctx); sent != nil && rec.ran {
		sent()
	}
	ran := time.Now()
	res, err := runStatement(ctx, pc.conn, read, sql, args, mode)
	p.remember(sql, time.Since(ran), err == nil)
	if err != nil {
		cleanupConn(ctx, pc.conn)
		slog.DebugContext(ctx, "backend: postgres query failed", "err", err, "elapsed", time.Since(start))
		return nil, err
	}
	slog.DebugContext(ctx, "backend: postgres query", "rows", len(res.Values)+len(res.PostgresText), "elapsed", time.Since(start))
	return res, nil
}

// pgSeen is what Postgres remembers of a statement text.
type pgSeen struct {
	combining combineRecord // admitted, slow combined runs (combine.go)
	// ran is set once a run of the text alone succeeded (remember): only
	// then does its statement call WithSent's hook. A text whose runs alone
	// all failed and whose batches succeed never calls it, and its charge
	// starts after the result, as the others' did before the hook.
	ran bool
}

// remember records how long a run of sql alone took; only a successful
// one counts towards a benched text's return.
func (p *Postgres) remember(sql string, took time.Duration, ok bool) {
	rec, _ := p.seen.Peek(sql)
	rec.ran = rec.ran || ok
	if p.combiner != nil {
		p.combiner.ranAlone(&rec.combining, took, ok)
	}
	p.seen.Add(sql, rec)
}

var textResults = pgx.QueryResultFormats{pgx.TextFormatCode}

// runStatement runs one statement in the implicit transaction the
// connection's default_transaction_read_only makes read-only, as the
// unnamed statement (pgx.QueryExecModeExec) or prepared once per
// connection (pgx.QueryExecModeCacheStatement).
func runStatement(ctx context.Context, c *pgx.Conn, read statementReader, sql string, args []any, mode pgx.QueryExecMode) (*Rows, error) {
	res, err := read(ctx, c, sql, args, mode)
	if err != nil && mode == pgx.QueryExecModeCacheStatement && planChanged(err) {
		// A table changed under a prepared statement: pgx dropped the
		// statement on the error, and the statement did not run.
		res, err = read(ctx, c, sql, args, mode)
	}
	if err == nil {
		return res, nil
	}
	return nil, statementError(err)
}

// statementError wraps a failed statement's error: ErrUnavailable when it
// never reached the server.
func statementError(err error) error {
	if pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: postgres: %w", ErrUnavailable, err)
	}
	return fmt.Errorf("backend: postgres: %w", err)
}

// planChanged reports PostgreSQL's refusal to run a prepared statement
// whose result columns changed since it was prepared.
func planChanged(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "0A000" && strings.Contains(pgErr.Message, "cached plan must not change result type")
}

// queryText runs the statement with text-format results and reads them.
func queryText(ctx context.Context, c *pgx.Conn, sql string, args []any, mode pgx.QueryExecMode) (*Rows, error) {
	rows, err := c.Query(ctx, sql, append([]any{mode, textResults}, args...)...)
	if err == nil {
		var res *Rows
		res, err = readPostgresRows(ctx, rows, c.TypeMap())
		stopIfTooLarge(ctx, c, err)
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err == nil {
			return res, nil
		}
	}
	return nil, err
}

// stopIfTooLarge cancels the statement on the server when its result
// outgrew the ResultLimit, so that closing the rows does not wait for
// (and discard) the rest of a huge result.
func stopIfTooLarge(ctx context.Context, c *pgx.Conn, err error) {
	var tl *ResultTooLargeError
	if errors.As(err, &tl) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if cerr := c.PgConn().CancelRequest(cctx); cerr != nil {
			slog.WarnContext(ctx, "backend: postgres: cancelling an oversized result", "err", cerr)
		}
	}
}

// cleanupConn ends a transaction a failed statement left open, so the
// connection can go back to the pool (the pool discards connections that
// are released inside a transaction).
func cleanupConn(ctx context.Context, c *pgx.Conn) {
	if c.IsClosed() || c.PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := c.Exec(ctx, "ROLLBACK"); err != nil {
		slog.WarnContext(ctx, "backend: postgres rollback after failed statement", "err", err)
	}
}

// pgDecoder turns the text form of a value into its normalized Go value.
type pgDecoder func(raw []byte) (any, error)

func readPostgresRows(ctx context.Context, rows pgx.Rows, m *pgtype.Map) (*Rows, error) {
	b, err := newRowsBuilder(ctx, rows.FieldDescriptions(), m, false)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		if err := b.add(rows.RawValues()); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return b.result(), nil
}

// postgresDecoder returns the column type and decoder for a result column
// of the given type OID. Types without a normalized Go value are reported
// as Text and keep PostgreSQL's text form.
func postgresDecoder(oid uint32, m *pgtype.Map) (sqltypes.Type, pgDecoder) {
	t := sqltypes.FromPostgresOID(oid)
	switch t {
	case sqltypes.Bool:
		return t, func(raw []byte) (any, error) {
			switch string(raw) {
			case "t":
				return true, nil
			case "f":
				return false, nil
			}
			return nil, fmt.Errorf("invalid boolean %q", raw)
		}
	case sqltypes.Int2, sqltypes.Int4, sqltypes.Int8:
		return t, func(raw []byte) (any, error) {
			return strconv.ParseInt(string(raw), 10, 64)
		}
	case sqltypes.OID:
		return t, func(raw []byte) (any, error) {
			n, err := strconv.ParseUint(string(raw), 10, 32)
			return int64(n), err
		}
	case sqltypes.Float4, sqltypes.Float8:
		// Parsed straight to float64 from the exact text form: a real
		// printed as "0.1" becomes 0.1, not float64(float32(0.1)).
		return t, func(raw []byte) (any, error) {
			return strconv.ParseFloat(string(raw), 64)
		}
	case sqltypes.Numeric:
		// numeric_out prints the canonical form: no exponent, scale kept.
		// NaN and ±Infinity are no decimals; they stay strings, and
		// conform reports such a column as Text.
		return t, func(raw []byte) (any, error) {
			if d, ok := canonicalDecimal(string(raw)); ok {
				return d, nil
			}
			return string(raw), nil
		}
	case sqltypes.Text, sqltypes.Varchar, sqltypes.Bpchar, sqltypes.Name:
		return t, func(raw []byte) (any, error) { return string(raw), nil }
	case sqltypes.Date, sqltypes.Timestamp, sqltypes.Timestamptz:
		pt, ok := m.TypeForOID(oid)
		if !ok {
			break
		}
		return t, func(raw []byte) (any, error) {
			v, err := pt.Codec.DecodeValue(m, oid, pgx.TextFormatCode, raw)
			if err != nil {
				return nil, err
			}
			tm, ok := v.(time.Time)
			if !ok {
				// infinity, -infinity: no time.Time; conform reports
				// the column as Text.
				return string(raw), nil
			}
			if t == sqltypes.Timestamptz {
				tm = tm.UTC()
			}
			return tm, nil
		}
	}
	return sqltypes.Text, func(raw []byte) (any, error) { return string(raw), nil }
}

// Stats implements Backend.
func (p *Postgres) Stats() PoolStats {
	s := p.pool.stats()
	s.Pipelined, s.Batches = p.combiner.stats()
	return s
}
