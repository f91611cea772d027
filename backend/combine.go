package backend

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Combining concurrent short statements into pipelines.
//
// A public-table statement from one client is usually short: a lookup by
// key, a BI tool's small query; so is the bounded SQL of a small DP query
// (a count by key; on PostgreSQL combined too, Postgres.Query). Sent on a
// connection of its own, each costs a write and a read on dpproxy's side
// and a wake-up, a read and a write on the server's, for a few
// microseconds of work; on a busy machine those system calls and context
// switches are most of the CPU both processes spend on it. Here statements
// that arrive while others are in flight are sent together: the first
// caller that finds a lane free leads a batch (every statement waiting at
// that moment, its own included), sends them on one pooled connection,
// each its own statement as when sent alone (so one statement's error
// touches no other), flushes once, reads the results in order and hands
// each to its caller. How a batch goes on the wire is the backend's (a
// batchSender: pgcombine.go for PostgreSQL's pipeline mode, mycombine.go
// for MySQL's commands sent back to back). The callers that found every
// lane busy wait; when a batch is done, its leader hands the lane to the
// first of them, which leads the next batch with everything that arrived
// meanwhile. A caller that takes a free lane first yields the processor
// once (runtime.Gosched), so that the statements other goroutines are
// about to send join its batch: with 16 clients on the development
// machine's two lanes, batches went from 2.5 to about 4 statements and
// dpproxy's CPU per query fell by a tenth. With one client nothing waits:
// the yield finds nothing else to run, and the caller leads a batch of one
// on its own goroutine.
//
// A slow statement delays the statements sent after it in its batch. So
// only a text seen before, one of whose runs alone took the server less
// than combineShorterThan, is combined (a text runs alone the first
// time), and a combined run of it that takes combineLeaveAt or more
// benches it: it runs alone until combineReadmitAfter runs alone shorter
// than combineLeaveAt have followed in a row, twice as many each time it
// is benched again, up to combineReadmitMost (combineRecord). One text's
// runs can differ widely (a DP query's bounded SQL with its constants as
// parameters: a lookup by key, then a scan of the table), and a short
// run alone must not bring a long one straight back: over n runs, a text
// holds up a batch about log2(n/combineReadmitAfter) times, and once in
// combineReadmitMost runs at most.
//
// And so that lanes held by statements that turned slow do not hold
// everyone, a statement that finds every lane busy, none taken and no
// batch finished for a while (stallAfter: four times the recent batches'
// duration, from combineHoldoff to combineLeaveAt), opens a spare lane:
// it leads a batch of what waits on a connection of its own, as the
// first on a free lane does; statements that began to wait just before
// (when a lane had just been taken or finished, a spare one closing say)
// are given one by a timer once that time has passed again
// (checkStall). Spare lanes are
// handed on as lanes are, and close when nothing waits; there are as
// many as lanes at most, and a statement that finds them all taken too
// runs alone. Every lane and spare lane may then hold a pooled
// connection: by default twice the lanes are at most the pool.
//
// The bar for leaving is 20 ms, not 2: a text admitted whose combined
// runs take 2–20 ms stays combined, each such run holding up the rest of
// its batch that long, and 64 runs alone under 20 ms bring a benched text
// back. Why so lenient: on an overloaded machine every run is slow for no fault
// of its statement, since its time includes the wait for a processor to
// read each answer; a stall of the machine (a paused virtual CPU, the
// server's checkpoint, a collection) makes any statement slow once in a
// while. When a run alone had to be shorter than combineShorterThan to
// keep or bring back a text's combining, or a stalled lane sent each
// statement alone, one such stall stopped combining for good: each run
// after it was alone, and alone on a busy machine slow too, the overload
// feeding itself. With 128 clients on the development machine's two
// cores, workload 5 sent all but 1,000–6,000 of its 65,000–70,000
// statements alone; in turns with these rules, 50,000–100,000 of
// 85,000–106,000 went in batches, at 10,600–13,200 charged queries/s
// against 8,200–8,800, and dpproxy's CPU per charged query fell from
// 108–119 to 73–91 µs. The lanes counted as stalled after a fixed 2 ms
// then, which batches of 20 statements on that machine often took: on a
// day it ran twice as slow, 6,400–35,700 of 53,000–89,000 statements
// still went alone, each waiting for a pooled connection; with the
// stall measured against the batches' own duration, 1,300 at most did
// (8,251–13,064 charged queries/s against 6,657–11,168, five rounds in
// turns).

// combineHoldoff is how long the lanes, all busy, may go at least
// without one being taken or finishing a batch before a new statement
// opens a spare lane (or runs alone, when the spare lanes are taken too);
// stallFactor times the recent batches' duration when that is longer,
// up to combineLeaveAt (stallAfter).
const combineHoldoff = 2 * time.Millisecond

// stallFactor scales the recent batches' duration into the time the
// lanes may go without progress before they count as stalled: a machine
// so loaded that batches take 3 ms is not stalled when one is at 2 ms,
// and sending statements alone then only adds to the load (a round trip
// and a pooled connection each, where a batch shares one).
const stallFactor = 4

// A text is combined once a run of it alone took less than
// combineShorterThan, and until a combined run takes combineLeaveAt or
// more (it is then benched: combineRecord): how long a statement takes at
// the head of a batch includes the server's own queue, which a busy
// server makes long for any statement.
const (
	combineShorterThan = 2 * time.Millisecond
	combineLeaveAt     = 20 * time.Millisecond
)

// A text benched once comes back into batches after combineReadmitAfter
// runs alone shorter than combineLeaveAt in a row, twice as many each time
// it is benched again, up to combineReadmitMost (see combineRecord).
const (
	combineReadmitAfter = 64
	combineReadmitMost  = 64 << 6
)

// combineRecord is what a backend remembers of a text for combining:
// whether a run of it alone was ever shorter than shorterThan (admitted),
// how many of its combined runs took leaveAt or more (strikes), and how
// many runs alone shorter than leaveAt followed the last (fitAlone). A
// text is combined once admitted, for good: a long run alone does not take
// that back. With strikes it runs alone until
// min(readmitAfter·2^(strikes−1), readmitMost) runs alone that fit have
// followed; a run alone that does not fit starts that count again, so a
// text whose runs are slow on the server stays alone.
//
// Records are read and written back without a lock: concurrent runs of
// one text may lose a count, which only delays its return (it waits at
// least that many runs). A strike is written on the record as it is when
// the slow run ends, unless another run has struck it since the slow one
// began: runs that turned slow together (several of one text in a
// stalled batch) count once.
type combineRecord struct {
	admitted          bool
	strikes, fitAlone int
}

// combines reports whether a text with record r is combined now.
func (c *combiner) combines(r combineRecord) bool {
	return r.admitted && !c.benched(r)
}

// benched reports whether a text must run alone for now.
func (c *combiner) benched(r combineRecord) bool {
	return r.strikes > 0 && r.fitAlone < min(c.readmitAfter<<min(r.strikes-1, 24), c.readmitMost)
}

// strike records a combined run that took leaveAt or more.
func (r *combineRecord) strike() { r.strikes, r.fitAlone = r.strikes+1, 0 }

// struck is the record now, cur, after a slow combined run that began when
// the record was before: cur struck, or cur as it is (changed false) when
// another run has struck it since.
func struck(cur, before combineRecord) (after combineRecord, changed bool) {
	if cur.strikes != before.strikes {
		return cur, false
	}
	cur.strike()
	return cur, true
}

// ranAlone records a run alone of the given duration; only a successful
// one (ok) counts towards a benched text's return.
func (c *combiner) ranAlone(r *combineRecord, took time.Duration, ok bool) {
	r.admitted = r.admitted || took < c.shorterThan
	switch {
	case r.strikes == 0 || !ok:
	case took < c.leaveAt:
		r.fitAlone++
	default:
		r.fitAlone = 0
	}
}

// batchSender runs batch on one connection of its backend, setting each
// statement's res or err (and took) and then calling its answer; ctx ends
// when the last caller still waiting gives up. An error it returns
// ends the statements left without a result.
type batchSender func(ctx context.Context, batch []*combinedStmt) error

// combiner batches concurrent statements onto the connections of a
// backend.
type combiner struct {
	send  batchSender
	lanes int // lanes; as many spare lanes again at most

	mu      sync.Mutex
	pending []*combinedStmt
	leading int // lanes and spare lanes in use
	// stallCheck, armed while statements wait, opens a spare lane for
	// them when every lane has stalled (checkStall).
	stallCheck *time.Timer
	armed      bool

	// progress is when a lane (or a spare one) was last taken or a batch
	// last finished (UnixNano).
	progress atomic.Int64
	// batchTime is the recent batches' duration (nanoseconds, a moving
	// average: timeBatch), which stallAfter scales.
	batchTime atomic.Int64
	// holdoff is combineHoldoff, shorterThan combineShorterThan,
	// leaveAt combineLeaveAt, readmitAfter combineReadmitAfter and
	// readmitMost combineReadmitMost.
	holdoff, shorterThan, leaveAt time.Duration
	readmitAfter, readmitMost     int

	// batches and statements count what was sent.
	batches, statements atomic.Int64
}

// combinedStmt is one caller's statement and, once done, its result.
type combinedStmt struct {
	ctx  context.Context
	sql  string
	args []any
	// wire asks for the rows in the client's wire form where the backend
	// can give them (Rows.MySQLText; PostgreSQL's are always).
	wire bool
	// onSent, when set, is called once the statement is sent (WithSent).
	onSent func()
	// shape, on MySQL, lets statements of one shape be answered by one
	// UNION ALL (myunion.go), whose columns must be cols, the statement's
	// when it last ran alone.
	shape string
	cols  []Column
	// lookup and key, where set, make it a lookup by key (mylookup.go):
	// lookups of one prefix (lookup) are answered by one statement
	// listing their keys, key this one's in decimal.
	lookup, key string

	// done is closed when res and err are set (answer), or when lead is
	// set (the caller then leads the next batch).
	done chan struct{}
	lead bool
	// answered is set by the batch's leader once done is closed for the
	// result; the leader then writes none of its result fields again.
	answered bool
	// leads marks the statement of the caller that runs its batch, whose
	// context the batch watches (the other callers wait in runStmt and
	// tell the batch when they give up).
	leads bool
	// settled is set once, by the answer or by the caller giving up,
	// whichever comes first: that one takes the statement off its
	// batch's count (batchWatch).
	settled atomic.Bool
	// watch is the batch's count of callers still waiting, set under the
	// combiner's lock once the statement's batch runs (nil when the batch
	// cannot end early); unwatch stops watching a leader's context.
	watch   *batchWatch
	unwatch func() bool
	res     *Rows
	err     error
	// took is how long the server took to answer it, from the previous
	// result of its batch (or the batch's sending) to its own.
	took time.Duration
}

// defaultPipelineLanes is the number of batches in flight at most when
// the policy does not say: one per processor dpproxy starts on (one
// where it sizes its processors to the load, package procs; more where
// listen.processors fixes more), at most half the pool.
func defaultPipelineLanes(maxConns int) int {
	return max(1, min(runtime.GOMAXPROCS(0), maxConns/2))
}

// newCombiner returns a combiner of lanes lanes (nil when lanes is 0 or
// less: combining off) sending its batches with send.
func newCombiner(lanes int, send batchSender) *combiner {
	if lanes <= 0 {
		return nil
	}
	c := &combiner{send: send, lanes: lanes, holdoff: combineHoldoff, shorterThan: combineShorterThan, leaveAt: combineLeaveAt, readmitAfter: combineReadmitAfter, readmitMost: combineReadmitMost}
	c.progress.Store(time.Now().UnixNano())
	return c
}

// stats returns the statements combined and the batches they went in.
func (c *combiner) stats() (statements, batches int64) {
	if c == nil {
		return 0, 0
	}
	return c.statements.Load(), c.batches.Load()
}

// errCombinerBusy tells the caller to run its statement alone: every lane
// is busy (see combineHoldoff), or the batch could not run it.
var errCombinerBusy = errors.New("every combining lane is busy")

// newCombinedStmt is a caller's statement, to run (runStmt).
func newCombinedStmt(ctx context.Context, sql string, args []any, wire bool) *combinedStmt {
	return &combinedStmt{ctx: ctx, sql: sql, args: args, wire: wire, done: make(chan struct{})}
}

// runStmt runs s in a batch and returns its result and how long the
// server took (0 when unknown), or errCombinerBusy when it should run
// alone (see combineHoldoff).
func (c *combiner) runStmt(s *combinedStmt) (*Rows, time.Duration, error) {
	ctx := s.ctx
	c.mu.Lock()
	stalled := time.Since(time.Unix(0, c.progress.Load())) > c.stallAfter()
	if c.leading < c.lanes || stalled && c.leading < 2*c.lanes {
		// A free lane, or a spare one when every lane has stalled.
		c.leading++
		c.progress.Store(time.Now().UnixNano())
		// Yield the processor once before gathering the batch: the
		// goroutines about to send a statement (other clients' queries
		// read in the meantime) then join it instead of taking the next
		// lane with a batch of one.
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
		s.leads = true
		batch := append(c.pending, s)
		c.pending = nil
		c.mu.Unlock()
		c.lead(batch)
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		return s.res, s.took, s.err
	}
	if stalled {
		c.mu.Unlock()
		return nil, 0, errCombinerBusy
	}
	c.pending = append(c.pending, s)
	c.armStallCheck(c.stallAfter())
	c.mu.Unlock()

	select {
	case <-s.done:
	case <-ctx.Done():
		c.mu.Lock()
		for i, p := range c.pending {
			if p == s {
				// Never sent. The context's error as it is (not
				// ErrUnavailable, as when waiting for a pooled
				// connection): the client is told its statement was
				// canceled, and a DP query stays charged, which errs on
				// the safe side.
				c.pending = append(c.pending[:i], c.pending[i+1:]...)
				c.mu.Unlock()
				return nil, 0, ctx.Err()
			}
		}
		lead := s.lead
		if !lead {
			// In a batch already: its leader sets the result, unread.
			c.giveUp(s)
			c.mu.Unlock()
			return nil, 0, ctx.Err()
		}
		c.mu.Unlock()
	}
	if s.lead {
		// Handed the lane: lead what has arrived since, this statement
		// first (unless its caller has gone).
		c.mu.Lock()
		batch := c.pending
		c.pending = nil
		c.mu.Unlock()
		if ctx.Err() == nil {
			s.leads = true
			batch = append([]*combinedStmt{s}, batch...)
		}
		c.lead(batch)
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
	}
	return s.res, s.took, s.err
}

// armStallCheck makes checkStall run after d, unless it is armed
// already. c.mu is held.
func (c *combiner) armStallCheck(d time.Duration) {
	if c.armed {
		return
	}
	c.armed = true
	if c.stallCheck == nil {
		c.stallCheck = time.AfterFunc(d, c.checkStall)
		return
	}
	c.stallCheck.Reset(d)
}

// checkStall gives the statements waiting a spare lane when every lane
// has gone the holdoff without progress: without it, statements that
// began to wait while a lane had just been taken or finished (a spare one
// closing, say) would wait for the stalled lanes however long they take,
// since only statements arriving later look at the stall. With every
// spare lane taken too, they wait for the next lane to finish.
func (c *combiner) checkStall() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = false
	if len(c.pending) == 0 {
		return
	}
	since, after := time.Since(time.Unix(0, c.progress.Load())), c.stallAfter()
	switch {
	case since <= after:
		c.armStallCheck(after - since)
	case c.leading < 2*c.lanes:
		c.leading++
		c.progress.Store(time.Now().UnixNano())
		next := c.pending[0]
		c.pending = c.pending[1:]
		next.lead = true
		close(next.done)
		if len(c.pending) > 0 {
			c.armStallCheck(after)
		}
	default:
		c.armStallCheck(after)
	}
}

// lead runs batch, then hands the lane to the first waiting statement or
// frees it.
func (c *combiner) lead(batch []*combinedStmt) {
	defer c.handOff()
	if len(batch) > 0 {
		start := time.Now()
		c.runBatch(batch)
		c.timeBatch(time.Since(start))
	}
}

// stallAfter is how long every lane may go without one being taken or
// finishing a batch before the lanes count as stalled: stallFactor times
// the recent batches' duration, at least the holdoff and at most leaveAt.
func (c *combiner) stallAfter() time.Duration {
	return max(c.holdoff, min(stallFactor*time.Duration(c.batchTime.Load()), c.leaveAt))
}

// timeBatch adds a batch's duration, at most leaveAt, to the moving
// average stallAfter reads (a weight of 1/8). Lanes finishing at the same
// moment may lose one of their samples; the average stays one.
func (c *combiner) timeBatch(d time.Duration) {
	avg := c.batchTime.Load()
	c.batchTime.Store(avg + (int64(min(d, c.leaveAt))-avg)/8)
}

// handOff ends a batch: the lane goes to the first waiting statement's
// caller, or is freed.
func (c *combiner) handOff() {
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

// answer hands s's result (res, err and took, all set) to its caller,
// which may then return while the rest of its batch is still being read.
// A leader's own statement has no one waiting on done: a handed-off
// leader's (lead set) is left alone, since handOff closed done already;
// a leader that found a lane free has its done closed unread.
func (s *combinedStmt) answer() {
	s.stopWatching()
	if s.settled.CompareAndSwap(false, true) && s.watch != nil {
		// Answered before giving up: when all are, nothing is cancelled.
		s.watch.waiting.Add(-1)
	}
	if s.answered || s.lead {
		return
	}
	s.answered = true
	close(s.done)
}

// runBatch sends batch and sets each statement's result.
func (c *combiner) runBatch(batch []*combinedStmt) {
	defer func() {
		// Every caller is answered, whatever happened to the batch.
		failAll(batch, errBatchEnded)
		for _, s := range batch {
			s.answer()
		}
	}()
	// The batch outlives any one caller: a caller that gives up leaves
	// its statement to finish unread (the batch ends when the last caller
	// still waiting gives up; see pipelineContext).
	pctx, stop := c.pipelineContext(batch)
	defer stop()
	c.batches.Add(1)
	c.statements.Add(int64(len(batch)))
	if err := c.send(pctx, batch); err != nil {
		failAll(batch, err)
	}
}

var errBatchEnded = errors.New("pipeline: the batch ended without this statement's result")

// failAll sets err as the result of every statement not answered and
// without a result.
func failAll(batch []*combinedStmt, err error) {
	for _, s := range batch {
		if !s.answered && s.res == nil && s.err == nil {
			s.err = err
		}
	}
}

// batchWatch ends a batch's context when the last caller still waiting
// for its answer gives up: the connection then cancels what runs on the
// server. When the last one is answered instead, the batch is read to its
// end (what is left is the results of callers gone, and reading them
// keeps the connection).
type batchWatch struct {
	cancel  context.CancelFunc
	waiting atomic.Int64 // callers neither answered nor given up
}

// pipelineContext is a context that ends when the last statement's
// caller still waiting gives up (batchWatch). An answered statement's
// caller ends its context when its command ends, while the batch may
// still be read for the others: that counts as nothing (settled). The
// callers waiting in runStmt report giving up themselves (giveUp); only
// the leader's own context, whose caller is busy running the batch, is
// watched, so a batch costs one watch however many statements it holds.
func (c *combiner) pipelineContext(batch []*combinedStmt) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	for _, s := range batch {
		if s.ctx.Done() == nil {
			// One caller that cannot give up keeps the batch going.
			return ctx, cancel
		}
	}
	w := &batchWatch{cancel: cancel}
	c.mu.Lock()
	for _, s := range batch {
		if s.settled.Load() {
			continue // gave up while the batch was gathered
		}
		s.watch = w
		w.waiting.Add(1)
	}
	c.mu.Unlock()
	if w.waiting.Load() == 0 {
		cancel()
	}
	for _, s := range batch {
		if s.leads && s.watch != nil {
			s.unwatch = context.AfterFunc(s.ctx, func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.giveUp(s)
			})
		}
	}
	return ctx, func() {
		unwatchAll(batch)
		cancel()
	}
}

// giveUp takes s, whose caller gave up before its answer, off its batch's
// count, ending the batch when no caller is left waiting; a batch not yet
// running leaves s out of its count. c.mu is held.
func (c *combiner) giveUp(s *combinedStmt) {
	if !s.settled.CompareAndSwap(false, true) {
		return // answered first
	}
	if w := s.watch; w != nil && w.waiting.Add(-1) == 0 {
		w.cancel()
	}
}

// unwatchAll stops watching the callers' contexts.
func unwatchAll(batch []*combinedStmt) {
	for _, s := range batch {
		s.stopWatching()
	}
}

// stopWatching stops watching the caller's context, if watched.
func (s *combinedStmt) stopWatching() {
	if s.unwatch != nil {
		s.unwatch()
		s.unwatch = nil
	}
}
