package backend

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Combining concurrent public-table statements into pipelines.
//
// A public-table statement (QueryPostgresText) from one client is usually
// short: a lookup by key, a BI tool's small query. Sent on a connection of
// its own, each costs a write and a read on dpproxy's side and a wake-up,
// a read and a write on the server's, for a few microseconds of work; on a
// busy machine those system calls and context switches are most of the
// CPU both processes spend on it. Here statements that arrive while
// others are in flight are sent together: the first caller that finds a
// lane free leads a batch (every statement waiting at that moment, its
// own included), sends them on one pooled connection in pipeline mode,
// each with its own Sync (its own implicit transaction, as when sent
// alone, so one statement's error touches no other), flushes once, reads
// the results in order and hands each to its caller. The callers that
// found every lane busy wait; when a batch is done, its leader hands the
// lane to the first of them, which leads the next batch with everything
// that arrived meanwhile. A caller that takes a free lane first yields
// the processor once (runtime.Gosched), so that the statements other
// goroutines are about to send join its batch: with 16 clients on the
// development machine's two lanes, batches went from 2.5 to about 4
// statements and dpproxy's CPU per query fell by a tenth. With one client
// nothing waits: the yield finds nothing else to run, and the caller
// leads a batch of one on its own goroutine.
//
// A slow statement delays the statements sent after it in its batch. So
// only a text seen before whose last run took the server less than
// combineShorterThan is combined (a public-table text runs alone the
// first time), until a combined run of it takes combineLeaveAt or more;
// and so that lanes held by statements that turned slow do not hold
// everyone, a statement that finds every lane busy, none taken and no
// batch finished for combineHoldoff, runs on a pooled connection of its
// own. A combined text is prepared on the connection that runs it, once
// (each connection keeps combinePrepared of them, closing the least
// recently used).

// combineHoldoff is how long the lanes, all busy, may go without one
// being taken or finishing a batch before new statements stop waiting.
const combineHoldoff = 2 * time.Millisecond

// A text is combined once a run of it took the server less than
// combineShorterThan, and until a combined run takes combineLeaveAt or
// more: how long a statement takes at the head of a batch includes the
// server's own queue, which a busy server makes long for any statement.
const (
	combineShorterThan = 2 * time.Millisecond
	combineLeaveAt     = 20 * time.Millisecond
)

// combinePrepared bounds the statements one connection keeps prepared for
// combined batches.
const combinePrepared = 256

// pgCombiner batches concurrent statements onto pipelined connections of
// a pgPool.
type pgCombiner struct {
	pool  *pgPool
	lanes int // batches in flight at most

	mu      sync.Mutex
	pending []*combinedStmt
	leading int // lanes in use

	// progress is when a lane was last taken or a batch last finished
	// (UnixNano).
	progress atomic.Int64
	// keep bounds the statements one connection keeps prepared for
	// batches (combinePrepared); holdoff is combineHoldoff, shorterThan
	// combineShorterThan and leaveAt combineLeaveAt.
	keep                          int
	holdoff, shorterThan, leaveAt time.Duration

	// batches and statements count what was sent.
	batches, statements atomic.Int64
}

// combinedStmt is one caller's statement and, once done, its result.
type combinedStmt struct {
	ctx  context.Context
	sql  string
	args []any

	// done is closed when res and err are set, or when lead is set (the
	// caller then leads the next batch).
	done chan struct{}
	lead bool
	res  *Rows
	err  error
	// took is how long the server took to answer it, from the previous
	// result of its batch (or the batch's sending) to its own.
	took time.Duration
}

// defaultPipelineLanes is the number of batches in flight at most when
// the policy does not say: one per processor dpproxy runs on, at most
// half the pool.
func defaultPipelineLanes(maxConns int) int {
	return max(1, min(runtime.GOMAXPROCS(0), maxConns/2))
}

// setPipelineLanes sets how many combined batches run at once; 0 turns
// combining off.
func (p *Postgres) setPipelineLanes(lanes int) {
	p.combiner = nil
	if lanes > 0 {
		p.combiner = newPgCombiner(p.pool, lanes)
	}
}

func newPgCombiner(pool *pgPool, lanes int) *pgCombiner {
	c := &pgCombiner{pool: pool, lanes: max(lanes, 1), keep: combinePrepared, holdoff: combineHoldoff, shorterThan: combineShorterThan, leaveAt: combineLeaveAt}
	c.progress.Store(time.Now().UnixNano())
	return c
}

// errCombinerBusy tells the caller to run its statement alone.
var errCombinerBusy = errors.New("every combining lane is busy")

// run runs one statement in a batch and returns its result and how long
// the server took (0 when unknown), or errCombinerBusy when it should run
// alone (see combineHoldoff).
func (c *pgCombiner) run(ctx context.Context, sql string, args []any) (*Rows, time.Duration, error) {
	s := &combinedStmt{ctx: ctx, sql: sql, args: args, done: make(chan struct{})}
	c.mu.Lock()
	if c.leading < c.lanes {
		c.leading++
		c.progress.Store(time.Now().UnixNano())
		// Yield the processor once before gathering the batch: the
		// goroutines about to send a statement (other clients' queries
		// read in the meantime) then join it instead of taking the next
		// lane with a batch of one.
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
		batch := append(c.pending, s)
		c.pending = nil
		c.mu.Unlock()
		c.lead(batch)
		return s.res, s.took, s.err
	}
	if time.Since(time.Unix(0, c.progress.Load())) > c.holdoff {
		c.mu.Unlock()
		return nil, 0, errCombinerBusy
	}
	c.pending = append(c.pending, s)
	c.mu.Unlock()

	select {
	case <-s.done:
	case <-ctx.Done():
		c.mu.Lock()
		for i, p := range c.pending {
			if p == s {
				c.pending = append(c.pending[:i], c.pending[i+1:]...)
				c.mu.Unlock()
				return nil, 0, ctx.Err()
			}
		}
		lead := s.lead
		c.mu.Unlock()
		if !lead {
			// In a batch already: its leader sets the result, unread.
			return nil, 0, ctx.Err()
		}
	}
	if s.lead {
		// Handed the lane: lead what has arrived since, this statement
		// first (unless its caller has gone).
		c.mu.Lock()
		batch := c.pending
		c.pending = nil
		c.mu.Unlock()
		if ctx.Err() == nil {
			batch = append([]*combinedStmt{s}, batch...)
		}
		c.lead(batch)
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
	}
	return s.res, s.took, s.err
}

// lead runs batch, then hands the lane to the first waiting statement or
// frees it.
func (c *pgCombiner) lead(batch []*combinedStmt) {
	defer c.handOff()
	if len(batch) > 0 {
		c.runBatch(batch)
	}
}

// handOff ends a batch: the lane goes to the first waiting statement's
// caller, or is freed.
func (c *pgCombiner) handOff() {
	c.progress.Store(time.Now().UnixNano())
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.leading--
		c.mu.Unlock()
		return
	}
	next := c.pending[0]
	c.pending = c.pending[1:]
	next.lead = true
	c.mu.Unlock()
	close(next.done)
}

// runBatch sends batch on one pooled connection in pipeline mode and sets
// each statement's result.
func (c *pgCombiner) runBatch(batch []*combinedStmt) {
	defer func() {
		// Every caller is answered, whatever happened to the batch.
		failAll(batch, errBatchEnded)
		for _, s := range batch {
			if !s.lead {
				close(s.done)
			}
		}
	}()
	// The batch outlives any one caller: a caller that gives up leaves
	// its statement to finish unread (the batch ends when every caller
	// has given up; see pipelineContext).
	pctx, stop := pipelineContext(batch)
	defer stop()
	pc, err := c.pool.acquire(pctx)
	if err != nil {
		failAll(batch, fmt.Errorf("%w: postgres: %w", ErrUnavailable, err))
		return
	}
	defer c.pool.release(pc)
	c.batches.Add(1)
	c.statements.Add(int64(len(batch)))
	if err := sendPipelined(pctx, pc, c.keep, batch); err != nil {
		failAll(batch, err)
	}
}

var errBatchEnded = errors.New("postgres: pipeline: the batch ended without this statement's result")

// failAll sets err as the result of every statement without one.
func failAll(batch []*combinedStmt, err error) {
	for _, s := range batch {
		if s.res == nil && s.err == nil {
			s.err = err
		}
	}
}

// pipelineContext is a context that ends when every statement's context
// has ended: the connection then cancels what runs on the server.
func pipelineContext(batch []*combinedStmt) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, 0, len(batch))
	for _, s := range batch {
		if s.ctx.Done() == nil {
			// One caller that cannot give up keeps the batch going.
			for _, stop := range stops {
				stop()
			}
			return ctx, cancel
		}
		stops = append(stops, context.AfterFunc(s.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// pipelineConn is what a pooled connection keeps for combined batches:
// the statements it prepared, by text, and the names of those evicted,
// to close in its next batch.
type pipelineConn struct {
	prepared *lru.Cache[string, string]
	evicted  []string
	next     int
}

func (pc *pgPoolConn) pipelineState(keep int) *pipelineConn {
	if pc.pipeline == nil {
		st := &pipelineConn{}
		st.prepared, _ = lru.NewWithEvict(keep, func(_ string, name string) {
			st.evicted = append(st.evicted, name)
		})
		pc.pipeline = st
	}
	return pc.pipeline
}

// sentStmt is what was sent for one statement of a batch.
type sentStmt struct {
	s *combinedStmt
	// prepared is the name of the statement this batch prepares for it
	// ("" when none).
	prepared string
	// encodeErr is set when its arguments could not be encoded: nothing
	// was sent for it.
	encodeErr error
}

// sendPipelined sends batch on pc and reads every result. An error it
// returns ends the statements without a result.
func sendPipelined(ctx context.Context, pc *pgPoolConn, keep int, batch []*combinedStmt) error {
	conn := pc.conn
	st := pc.pipelineState(keep)
	m := conn.TypeMap()
	var eqb pgx.ExtendedQueryBuilder
	sent := make([]sentStmt, len(batch))

	pipe := conn.PgConn().StartPipeline(ctx)
	closed := false
	defer func() {
		if !closed {
			_ = pipe.Close()
		}
	}()
	evicted := st.evicted
	st.evicted = nil
	for _, name := range evicted {
		pipe.SendDeallocate(name)
		pipe.SendPipelineSync()
	}
	for i, s := range batch {
		sent[i].s = s
		if err := eqb.Build(m, nil, s.args); err != nil {
			sent[i].encodeErr = err
			continue
		}
		name, ok := st.prepared.Get(s.sql)
		if !ok {
			st.next++
			name = "dpproxy_c" + strconv.Itoa(st.next)
			st.prepared.Add(s.sql, name)
			sent[i].prepared = name
			pipe.SendPrepare(name, s.sql, nil)
			pipe.SendPipelineSync()
		}
		pipe.SendQueryPrepared(name, eqb.ParamValues, eqb.ParamFormats, nil)
		pipe.SendPipelineSync()
	}
	if err := pipe.Flush(); err != nil {
		return statementError(err)
	}
	last := time.Now()

	for range evicted {
		// A statement that never prepared is not there to close: the
		// server's error changes nothing.
		if _, err := pipe.GetResults(); err != nil && !isPgError(err) {
			return statementError(err)
		}
		if err := readSync(pipe); err != nil {
			return err
		}
	}
	for i := range sent {
		ss := &sent[i]
		s := ss.s
		if ss.encodeErr != nil {
			s.err = fmt.Errorf("postgres: encode arguments: %w", ss.encodeErr)
			continue
		}
		if ss.prepared != "" {
			_, err := pipe.GetResults()
			if err != nil && !isPgError(err) {
				return statementError(err)
			}
			if err := readSync(pipe); err != nil {
				return err
			}
			if err != nil {
				// The statement did not prepare; its execution failed
				// for that reason alone. Nothing is on the server to close.
				st.prepared.Remove(s.sql)
				st.evicted = slices.DeleteFunc(st.evicted, func(n string) bool { return n == ss.prepared })
				s.err = statementError(err)
			}
		}
		res, err := pipe.GetResults()
		if err != nil && !isPgError(err) {
			return statementError(err)
		}
		if err != nil && planChanged(err) {
			st.prepared.Remove(s.sql) // closed in the next batch
		}
		if err == nil {
			rr, ok := res.(*pgconn.ResultReader)
			if !ok {
				return fmt.Errorf("postgres: pipeline: unexpected %T for a query", res)
			}
			var rows *Rows
			rows, err = readResultReader(s.ctx, rr, m)
			if err == nil && s.err == nil {
				s.res = rows
			}
		}
		if err != nil && s.err == nil {
			s.err = statementError(err)
		}
		if err := readSync(pipe); err != nil {
			return err
		}
		now := time.Now()
		s.took, last = now.Sub(last), now
	}
	closed = true
	if err := pipe.Close(); err != nil {
		return statementError(err)
	}
	return nil
}

// readSync reads the result of a Sync in a pipeline.
func readSync(pipe *pgconn.Pipeline) error {
	res, err := pipe.GetResults()
	if err != nil {
		return statementError(err)
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fmt.Errorf("postgres: pipeline: expected a Sync result, got %T", res)
	}
	return nil
}

// isPgError reports an error the server sent for one statement, after
// which the pipeline goes on.
func isPgError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}
