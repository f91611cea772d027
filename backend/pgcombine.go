package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// PostgreSQL's side of combining (combine.go): a batch goes on one pooled
// connection, its statements sent together (pgpipe.go), each with its own
// Sync (its own implicit transaction, as when sent alone, so one
// statement's error touches no other), written at once (in chunks when
// large). A combined text is prepared on the
// connection that runs it, once (each connection keeps combinePrepared of
// them, closing the least recently used), and runs from then on with the
// result description its preparation gave: no Describe per execution, so
// the server sends no RowDescription for it, nor is one decoded here (a
// table changed since is the server's to refuse: "cached plan must not
// change result type", and the text is prepared again).

// combinePrepared bounds the statements one connection keeps prepared for
// combined batches.
const combinePrepared = 256

// setPipelineLanes sets how many combined batches run at once; 0 turns
// combining off.
func (p *Postgres) setPipelineLanes(lanes int) {
	p.combiner = newCombiner(lanes, p.sendBatch)
}

// sendBatch runs batch on one pooled connection in pipeline mode
// (a batchSender).
func (p *Postgres) sendBatch(ctx context.Context, batch []*combinedStmt) error {
	pc, err := p.pool.acquire(ctx)
	if err != nil {
		return fmt.Errorf("%w: postgres: %w", ErrUnavailable, err)
	}
	defer p.pool.release(pc)
	return sendPipelined(ctx, pc, p.keepPrepared, batch)
}

// pipelineConn is what a pooled connection keeps for combined batches:
// the statements it prepared, by text, the names of those evicted, to
// close in its next batch, and its pipe (pgpipe.go).
type pipelineConn struct {
	prepared *lru.Cache[string, *preparedText]
	evicted  []string
	next     int
	pipe     *pgPipe
	sent     []sentStmt // reused
}

// preparedText is a text prepared on a connection: its statement's name
// and, once its preparation has been read, the shape of its rows.
type preparedText struct {
	name  string
	shape *rowShape
}

func (pc *pgPoolConn) pipelineState(keep int) *pipelineConn {
	if pc.pipeline == nil {
		st := &pipelineConn{pipe: newPgPipe(pc.conn.PgConn())}
		st.prepared, _ = lru.NewWithEvict(keep, func(_ string, p *preparedText) {
			st.evicted = append(st.evicted, p.name)
		})
		pc.pipeline = st
	}
	return pc.pipeline
}

// sentStmt is what was sent for one statement of a batch.
type sentStmt struct {
	s *combinedStmt
	// prep is the prepared text it runs; prepares is set when this batch
	// prepares it.
	prep     *preparedText
	prepares bool
	// encodeErr is set when its execution could not be encoded: nothing
	// was sent for it but, maybe, its preparation.
	encodeErr error
}

// sendPipelined sends batch on pc and reads every result, in chunks of
// about pipeChunk bytes at most (but one statement). An error it returns
// ends the statements without a result and closes the connection.
func sendPipelined(ctx context.Context, pc *pgPoolConn, keep int, batch []*combinedStmt) (err error) {
	st := pc.pipelineState(keep)
	pp := st.pipe
	defer pp.unwatch(pp.watch(ctx))
	// inStep is set when the batch ends between chunks, every reply read:
	// the connection is then in step with the server and stays pooled.
	inStep := false
	defer func() {
		clear(st.sent)
		if err != nil && !inStep || pp.leftInTransaction {
			pp.buf = pp.buf[:0]
			closePgConn(pc.conn) // out of step with the server, or in a transaction: not pooled again
		}
	}()
	st.sent = slices.Grow(st.sent[:0], len(batch))[:len(batch)]
	for start := 0; start < len(batch); {
		if err := ctx.Err(); err != nil {
			// Every caller gave up: the rest is not sent.
			inStep = true
			return statementError(&pipeWriteError{err: err})
		}
		closes := st.evicted
		st.evicted = nil
		end, err := encodeChunk(pc.conn.TypeMap(), st, closes, batch, start)
		if err != nil {
			return statementError(err)
		}
		if err := pp.flush(); err != nil {
			return statementError(err)
		}
		for _, ss := range st.sent[start:end] {
			if ss.encodeErr == nil && ss.s.onSent != nil {
				ss.s.onSent()
			}
		}
		if err := readChunk(pc.conn.TypeMap(), st, len(closes), st.sent[start:end]); err != nil {
			return statementError(err)
		}
		start = end
	}
	return nil
}

// encodeChunk encodes the closing of the statements named in closes and
// the statements of batch from start on, up to pipeChunk bytes (one at
// least), and says where the chunk ends.
func encodeChunk(m *pgtype.Map, st *pipelineConn, closes []string, batch []*combinedStmt, start int) (end int, err error) {
	pp := st.pipe
	for _, name := range closes {
		if err := pp.appendClose(name); err != nil {
			return 0, err
		}
	}
	var eqb pgx.ExtendedQueryBuilder
	for end = start; end < len(batch); end++ {
		s := batch[end]
		ss := &st.sent[end]
		*ss = sentStmt{s: s}
		if err := eqb.Build(m, nil, s.args); err != nil {
			ss.encodeErr = fmt.Errorf("postgres: encode arguments: %w", err)
			continue
		}
		size := len(s.sql) + 64
		for _, v := range eqb.ParamValues {
			size += len(v) + 6
		}
		if end > start && len(pp.buf)+size > pipeChunk {
			break
		}
		prep, ok := st.prepared.Get(s.sql)
		if !ok {
			st.next++
			prep = &preparedText{name: "dpproxy_c" + strconv.Itoa(st.next)}
			if err := pp.appendPrepare(prep.name, s.sql); err != nil {
				st.next--
				ss.encodeErr = fmt.Errorf("postgres: encode statement: %w", err)
				continue
			}
			st.prepared.Add(s.sql, prep)
			ss.prepares = true
		}
		ss.prep = prep
		if err := pp.appendExecute(prep.name, eqb.ParamValues, eqb.ParamFormats); err != nil {
			ss.encodeErr = fmt.Errorf("postgres: encode arguments: %w", err)
		}
	}
	return end, nil
}

// readChunk reads the replies to closes closings and to the statements
// sent, setting and answering each statement's result.
func readChunk(m *pgtype.Map, st *pipelineConn, closes int, sent []sentStmt) error {
	pp := st.pipe
	for range closes {
		if err := pp.readClose(); err != nil {
			return err
		}
	}
	last := time.Now()
	for i := range sent {
		ss := &sent[i]
		s, prep := ss.s, ss.prep
		if ss.prepares {
			pgErr, err := pp.readPrepare(prep, m)
			if err != nil {
				return err
			}
			if pgErr != nil {
				// The statement did not prepare; its execution fails
				// for that reason alone. Nothing is on the server to close.
				st.prepared.Remove(s.sql)
				st.evicted = slices.DeleteFunc(st.evicted, func(n string) bool { return n == prep.name })
				s.err = statementError(pgErr)
			}
		}
		if ss.encodeErr != nil {
			s.err = ss.encodeErr
			s.answer()
			continue
		}
		rows, stmtErr, err := pp.readExecution(s.ctx, prep, m, s.wire)
		if err != nil {
			return err
		}
		if stmtErr != nil && planChanged(stmtErr) {
			st.prepared.Remove(s.sql) // closed in the next batch
		}
		switch {
		case s.err != nil:
		case stmtErr != nil:
			s.err = statementError(stmtErr)
		default:
			s.res = rows
		}
		now := time.Now()
		s.took, last = now.Sub(last), now
		s.answer()
		if pp.leftInTransaction {
			// What follows would run inside it: the batch ends here.
			return errLeftInTransaction
		}
	}
	return nil
}

var errLeftInTransaction = errors.New("postgres: pipeline: a statement left a transaction open")
