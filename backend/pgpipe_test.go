package backend

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// pipeBatch runs stmts as one combined batch, with ctx as the batch's
// context, on a connection of p's pool, and returns the batch's own
// error, each statement's answer set. The connection goes back to the
// pool.
func pipeBatch(t *testing.T, ctx context.Context, p *Postgres, stmts ...*combinedStmt) error {
	t.Helper()
	pc, err := p.pool.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer p.pool.release(pc)
	return sendPipelined(ctx, pc, p.keepPrepared, stmts)
}

// TestPipeChunks: a batch larger than pipeChunk goes in chunks, each
// written once its predecessor's replies are read, so that a statement
// with a large result ahead of large parameters cannot leave the server
// waiting to write while dpproxy waits to write too: every statement is
// answered, in order, and the connection stays in the pool.
func TestPipeChunks(t *testing.T) {
	p := openPostgresT(t, pgDSN(t), 1)
	// Without chunks the batch waits for the server, which waits for it:
	// the deadline, far above the batch's 0.1 s, ends that wait.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	const big = 4 << 20 // a result larger than the sockets' buffers
	stmts := []*combinedStmt{newCombinedStmt(ctx, `SELECT repeat('r', $1::int)`, []any{int64(big)}, true)}
	param := strings.Repeat("p", 256<<10)
	for range 24 { // 6 MiB of parameters after it
		stmts = append(stmts, newCombinedStmt(ctx, `SELECT length($1::text)`, []any{param}, true))
	}
	if err := pipeBatch(t, ctx, p, stmts...); err != nil {
		t.Fatalf("the batch: %v", err)
	}
	if stmts[0].err != nil {
		t.Fatalf("the large result: %v", stmts[0].err)
	}
	if got := dataRowTexts(t, stmts[0].res.PostgresText[0])[0]; len(got) != big {
		t.Errorf("the large result: %d bytes, want %d", len(got), big)
	}
	for i, s := range stmts[1:] {
		if s.err != nil || len(s.res.PostgresText) != 1 {
			t.Fatalf("statement %d: %v, %+v", i+1, s.err, s.res)
		}
		if got := dataRowTexts(t, s.res.PostgresText[0])[0]; got != "262144" {
			t.Errorf("statement %d: %q", i+1, got)
		}
	}
	if n := p.pool.idleCount(); n != 1 {
		t.Errorf("%d idle connections after the batch, want 1", n)
	}

	// Where the chunks end: as many statements as fit in pipeChunk, one
	// at least however large.
	pc, err := p.pool.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.pool.release(pc)
	st := pc.pipelineState(p.keepPrepared)
	small := make([]*combinedStmt, 100)
	for i := range small {
		small[i] = newCombinedStmt(ctx, `SELECT length($1::text)`, []any{strings.Repeat("s", 1000)}, true)
	}
	for _, tc := range []struct {
		name        string
		batch       []*combinedStmt
		start       int
		least, most int // where the chunk may end
	}{
		{"small statements", small, 0, 25, 31},
		{"the rest of them", small, 96, 100, 100},
		{"a large one alone", stmts, 1, 2, 2},
	} {
		st.sent = make([]sentStmt, len(tc.batch))
		end, err := encodeChunk(pc.conn.TypeMap(), st, nil, tc.batch, tc.start)
		if err != nil || end < tc.least || end > tc.most {
			t.Errorf("%s: the chunk from %d ends at %d (%v), want %d to %d", tc.name, tc.start, end, err, tc.least, tc.most)
		}
		if len(st.pipe.buf) > pipeChunk && end-tc.start > 1 {
			t.Errorf("%s: %d bytes for %d statements", tc.name, len(st.pipe.buf), end-tc.start)
		}
		st.pipe.buf = st.pipe.buf[:0]
	}
	// Nothing was sent: the connection cannot be pooled as it is.
	closePgConn(pc.conn)
}

// TestPipeStatementErrors: a statement whose arguments cannot be encoded,
// one that fails on the server and one that never prepares each get their
// own error; the statements around them their answers; the connection
// stays pooled.
func TestPipeStatementErrors(t *testing.T) {
	p := openPostgresT(t, pgDSN(t), 1)
	ctx := context.Background()
	stmts := []*combinedStmt{
		newCombinedStmt(ctx, `SELECT $1::int8 + 1`, []any{int64(1)}, true),
		newCombinedStmt(ctx, `SELECT $1::int8 + 1`, []any{make(chan int)}, true),
		newCombinedStmt(ctx, `SELECT 1 / $1::int`, []any{int64(0)}, true),
		newCombinedStmt(ctx, `SELECT nothing FROM no_such_table_for_pipe`, nil, true),
		newCombinedStmt(ctx, `SELECT $1::int8 + 1`, []any{int64(2)}, true),
	}
	if err := pipeBatch(t, ctx, p, stmts...); err != nil {
		t.Fatalf("the batch: %v", err)
	}
	var pe *pgconn.PgError
	for i, want := range []string{"2", "encode", "22012", "42P01", "3"} {
		s := stmts[i]
		switch {
		case len(want) == 1:
			if s.err != nil || dataRowTexts(t, s.res.PostgresText[0])[0] != want {
				t.Errorf("statement %d: %v, %+v, want %s", i, s.err, s.res, want)
			}
		case want == "encode":
			if s.err == nil || !strings.Contains(s.err.Error(), "encode arguments") {
				t.Errorf("statement %d: %v, want an encoding error", i, s.err)
			}
		default:
			if !errors.As(s.err, &pe) || pe.Code != want {
				t.Errorf("statement %d: %v, want %s", i, s.err, want)
			}
		}
	}
	if n := p.pool.idleCount(); n != 1 {
		t.Errorf("%d idle connections after the batch, want 1", n)
	}
	pc := p.pool.idle[0]
	if _, ok := pc.pipeline.prepared.Peek(`SELECT nothing FROM no_such_table_for_pipe`); ok || pc.pipeline.prepared.Len() != 2 {
		t.Errorf("prepared after the batch: %v", pc.pipeline.prepared.Keys())
	}
}

// TestPipeConnectionNotPooled: a batch that leaves a transaction open, or
// whose connection is lost, closes the connection instead of pooling it;
// the next batch runs on a new one.
func TestPipeConnectionNotPooled(t *testing.T) {
	p := openPostgresT(t, pgDSN(t), 1)
	ctx := context.Background()

	// The batch ends at the statement that left a transaction open: what
	// follows it would run inside that transaction.
	begin := newCombinedStmt(ctx, `BEGIN`, nil, true)
	next := newCombinedStmt(ctx, `SELECT 1`, nil, true)
	err := pipeBatch(t, ctx, p, begin, next)
	if !errors.Is(err, errLeftInTransaction) || errors.Is(err, ErrUnavailable) || begin.err != nil || next.res != nil {
		t.Fatalf("BEGIN then SELECT 1: the batch's error %v, BEGIN's %v, the next statement's result %+v", err, begin.err, next.res)
	}
	if n := p.pool.idleCount(); n != 0 {
		t.Errorf("%d idle connections after a batch left a transaction open, want 0", n)
	}

	// A batch whose callers have all gone is not sent: nothing reached the
	// server, and the connection stays pooled.
	gone, cancelGone := context.WithCancel(ctx)
	cancelGone()
	unsent := newCombinedStmt(ctx, `SELECT 1`, nil, true)
	if err := pipeBatch(t, gone, p, unsent); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("a batch whose context ended: %v, want unavailable (context canceled)", err)
	}
	if n := p.pool.idleCount(); n != 1 {
		t.Errorf("%d idle connections after a batch not sent, want 1", n)
	}

	// The server ends the connection while its batch runs.
	pid := make(chan uint32, 1)
	lost := newCombinedStmt(ctx, `SELECT pg_sleep(10)::text`, nil, true)
	lost.onSent = func() {}
	done := make(chan error, 1)
	go func() {
		pc, err := p.pool.acquire(ctx)
		if err != nil {
			done <- err
			return
		}
		pid <- pc.conn.PgConn().PID()
		err = sendPipelined(ctx, pc, p.keepPrepared, []*combinedStmt{lost})
		p.pool.release(pc)
		done <- err
	}()
	killer := openPostgresT(t, pgDSN(t), 1)
	target := <-pid
	time.Sleep(200 * time.Millisecond)
	if _, err := killer.Query(ctx, `SELECT pg_terminate_backend($1)`, int64(target)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil && lost.err == nil {
			t.Errorf("a batch whose connection was ended: no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a batch whose connection was ended still runs after 5 s")
	}
	if n := p.pool.idleCount(); n != 0 {
		t.Errorf("%d idle connections after a lost one, want 0", n)
	}
	after := newCombinedStmt(ctx, `SELECT 7`, nil, true)
	if err := pipeBatch(t, ctx, p, after); err != nil || after.err != nil {
		t.Fatalf("the next batch: %v, %v", err, after.err)
	}
}
