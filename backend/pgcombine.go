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
	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL's side of combining (combine.go): a batch goes on one pooled
// connection in pipeline mode, each statement with its own Sync (its own
// implicit transaction, as when sent alone, so one statement's error
// touches no other), flushed once. A combined text is prepared on the
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
// the statements it prepared, by text, and the names of those evicted,
// to close in its next batch.
type pipelineConn struct {
	prepared *lru.Cache[string, *preparedText]
	evicted  []string
	next     int
}

// preparedText is a text prepared on a connection: its statement's name
// and, once its preparation has been read, the statement's description.
type preparedText struct {
	name string
	desc *pgconn.StatementDescription
}

func (pc *pgPoolConn) pipelineState(keep int) *pipelineConn {
	if pc.pipeline == nil {
		st := &pipelineConn{}
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
	// prepared is the text this batch prepares for it (nil when none).
	prepared *preparedText
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
		prep, ok := st.prepared.Get(s.sql)
		if !ok {
			st.next++
			prep = &preparedText{name: "dpproxy_c" + strconv.Itoa(st.next)}
			st.prepared.Add(s.sql, prep)
			sent[i].prepared = prep
			pipe.SendPrepare(prep.name, s.sql, nil)
			pipe.SendPipelineSync()
		}
		if prep.desc != nil {
			pipe.SendQueryStatement(prep.desc, eqb.ParamValues, eqb.ParamFormats, nil)
		} else {
			pipe.SendQueryPrepared(prep.name, eqb.ParamValues, eqb.ParamFormats, nil)
		}
		pipe.SendPipelineSync()
	}
	if err := pipe.Flush(); err != nil {
		return statementError(err)
	}
	for i := range sent {
		if sent[i].encodeErr == nil && sent[i].s.onSent != nil {
			sent[i].s.onSent()
		}
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
			s.answer()
			continue
		}
		if prep := ss.prepared; prep != nil {
			res, err := pipe.GetResults()
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
				st.evicted = slices.DeleteFunc(st.evicted, func(n string) bool { return n == prep.name })
				s.err = statementError(err)
			} else if desc, ok := res.(*pgconn.StatementDescription); ok {
				desc.Name, desc.SQL = prep.name, s.sql
				prep.desc = desc
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
			rows, err = readResultReader(s.ctx, rr, m, s.wire)
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
		s.answer()
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
