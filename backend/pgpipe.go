package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// The extended protocol as combined batches speak it (pgcombine.go), on a
// pooled connection's socket: a batch's messages are encoded into one
// reused buffer and written at once, and the replies are read with the
// connection's own frontend, so that nothing pgx's reader may hold is
// lost. pgconn.Pipeline does the same through a queue of expected replies,
// a result reader per statement and a context watch per batch, about ten
// allocations a statement; a batch of Parse/Describe and Bind/Execute,
// each followed by its Sync, needs none of that. pgx's connection stays
// idle throughout: every Sync's replies are read up to their ReadyForQuery
// before the batch ends, or the connection is closed.

// pipeChunk bounds the bytes of a batch written before their replies are
// read (a statement larger than that goes alone). The server may block
// writing replies nobody reads yet; what is written meanwhile must then
// fit in the sockets' buffers, or both sides would wait for each other.
const pipeChunk = 32 << 10

// pgPipe writes and reads one connection's combined batches.
type pgPipe struct {
	conn *pgconn.PgConn
	// cancel cancels what runs on the server; cancelOnServer, what watch
	// calls when a batch's context ends, starts that and tells unwatch
	// on fired once it has.
	cancel         *pgconn.CancelRequestContextWatcherHandler
	cancelOnServer func()
	fired          chan struct{}
	buf            []byte
	// leftInTransaction is set when a Sync's ReadyForQuery reported a
	// transaction still open: the connection is not to be pooled again.
	leftInTransaction bool

	// The messages, reused.
	parse    pgproto3.Parse
	describe pgproto3.Describe
	bind     pgproto3.Bind
	execute  pgproto3.Execute
	sync     pgproto3.Sync
	close    pgproto3.Close
}

func newPgPipe(conn *pgconn.PgConn) *pgPipe {
	// As the connection's own statements: a batch whose callers all gave
	// up is canceled on the server, and the socket's deadline set after
	// cleanupTimeout in case the server does not answer.
	pp := &pgPipe{
		conn:   conn,
		cancel: &pgconn.CancelRequestContextWatcherHandler{Conn: conn, DeadlineDelay: cleanupTimeout},
		fired:  make(chan struct{}, 1),
	}
	pp.cancelOnServer = func() {
		pp.cancel.HandleCancel(context.Background())
		pp.fired <- struct{}{}
	}
	return pp
}

// watch cancels the batch on the server when ctx ends, until unwatch is
// given the function it returns (pgconn's ContextWatcher, without its
// allocations per watch).
func (pp *pgPipe) watch(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, pp.cancelOnServer)
}

// unwatch ends watch, waiting for a cancel under way to finish starting
// and undoing its deadline.
func (pp *pgPipe) unwatch(stop func() bool) {
	if !stop() {
		<-pp.fired
		pp.cancel.HandleUnwatchAfterCancel()
	}
}

// appendClose adds the closing of prepared statement name and its Sync.
func (pp *pgPipe) appendClose(name string) error {
	pp.close = pgproto3.Close{ObjectType: 'S', Name: name}
	return pp.append(&pp.close, &pp.sync)
}

// appendPrepare adds the preparation of sql as name, the statement's
// description and their Sync.
func (pp *pgPipe) appendPrepare(name, sql string) error {
	pp.parse = pgproto3.Parse{Name: name, Query: sql}
	pp.describe = pgproto3.Describe{ObjectType: 'S', Name: name}
	return pp.append(&pp.parse, &pp.describe, &pp.sync)
}

// appendExecute adds the execution of prepared statement name with the
// parameters given (every result column in text form) and its Sync.
func (pp *pgPipe) appendExecute(name string, values [][]byte, formats []int16) error {
	pp.bind = pgproto3.Bind{PreparedStatement: name, ParameterFormatCodes: formats, Parameters: values}
	pp.execute = pgproto3.Execute{}
	return pp.append(&pp.bind, &pp.execute, &pp.sync)
}

// append encodes msgs after what the buffer holds, all of them or none.
func (pp *pgPipe) append(msgs ...pgproto3.FrontendMessage) error {
	n := len(pp.buf)
	for _, msg := range msgs {
		var err error
		if pp.buf, err = msg.Encode(pp.buf); err != nil {
			pp.buf = pp.buf[:n]
			return err
		}
	}
	return nil
}

// maxRetainedPipeBuf bounds the buffer a connection keeps between
// batches: a larger one, grown for a statement's large parameters, goes.
const maxRetainedPipeBuf = 256 << 10

// flush writes what the buffer holds, and lets go of the statements'
// texts and parameters the reused messages point to.
func (pp *pgPipe) flush() error {
	n, err := pp.conn.Conn().Write(pp.buf)
	pp.buf = pp.buf[:0]
	if cap(pp.buf) > maxRetainedPipeBuf {
		pp.buf = nil
	}
	pp.parse, pp.describe, pp.bind, pp.close = pgproto3.Parse{}, pgproto3.Describe{}, pgproto3.Bind{}, pgproto3.Close{}
	if err != nil {
		return &pipeWriteError{err: err, sent: n > 0}
	}
	return nil
}

// pipeWriteError is a failed write; when sent is false nothing the server
// could act on reached it, and the statements may run elsewhere.
type pipeWriteError struct {
	err  error
	sent bool
}

func (e *pipeWriteError) Error() string     { return "write: " + e.err.Error() }
func (e *pipeWriteError) Unwrap() error     { return e.err }
func (e *pipeWriteError) SafeToRetry() bool { return !e.sent }

// untilReady reads one Sync's replies up to its ReadyForQuery, handing
// each one but errors and asynchronous messages to on. The server's error
// for what the Sync ended is stmtErr; any other error (on's included)
// leaves the connection unusable.
func (pp *pgPipe) untilReady(on func(pgproto3.BackendMessage) error) (stmtErr *pgconn.PgError, err error) {
	fe := pp.conn.Frontend()
	for {
		msg, err := fe.Receive()
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		switch msg := msg.(type) {
		case *pgproto3.ReadyForQuery:
			if msg.TxStatus != 'I' {
				pp.leftInTransaction = true
			}
			return stmtErr, nil
		case *pgproto3.ErrorResponse:
			stmtErr = pgconn.ErrorResponseToPgError(msg)
		case *pgproto3.NoticeResponse, *pgproto3.ParameterStatus, *pgproto3.NotificationResponse:
		default:
			if stmtErr != nil {
				return nil, unexpectedReply(msg)
			}
			if err := on(msg); err != nil {
				return nil, err
			}
		}
	}
}

// readClose reads the replies to appendClose. The server's error changes
// nothing (a statement that never prepared is not there to close).
func (pp *pgPipe) readClose() error {
	_, err := pp.untilReady(func(msg pgproto3.BackendMessage) error {
		if _, ok := msg.(*pgproto3.CloseComplete); !ok {
			return unexpectedReply(msg)
		}
		return nil
	})
	return err
}

// readPrepare reads the replies to appendPrepare, giving prep the shape
// of its rows (a statement without rows has one without columns).
func (pp *pgPipe) readPrepare(prep *preparedText, m *pgtype.Map) (*pgconn.PgError, error) {
	var fds []pgconn.FieldDescription
	pgErr, err := pp.untilReady(func(msg pgproto3.BackendMessage) error {
		switch msg := msg.(type) {
		case *pgproto3.ParseComplete, *pgproto3.ParameterDescription, *pgproto3.NoData:
		case *pgproto3.RowDescription:
			fds = fieldDescriptions(msg)
		default:
			return unexpectedReply(msg)
		}
		return nil
	})
	if err != nil || pgErr != nil {
		return pgErr, err
	}
	// Described without a result format, every column is in text form.
	if prep.shape, err = newRowShape(fds, m); err != nil {
		return nil, err
	}
	return nil, nil
}

// readExecution reads the replies to appendExecute of prep, its rows as
// readRows would build them. stmtErr is the statement's own failure (the
// server's, or a result over the ResultLimit, read to its end and
// dropped); err leaves the connection unusable.
func (pp *pgPipe) readExecution(ctx context.Context, prep *preparedText, m *pgtype.Map, wire bool) (rows *Rows, stmtErr, err error) {
	var b rowsBuilder
	var begun bool
	var rowsErr error
	pgErr, err := pp.untilReady(func(msg pgproto3.BackendMessage) error {
		switch msg := msg.(type) {
		case *pgproto3.BindComplete:
			if prep.shape == nil {
				return errors.New("postgres: pipeline: an execution's rows before its statement's description")
			}
			b.init(ctx, prep.shape, wire)
			begun = true
		case *pgproto3.DataRow:
			switch {
			case !begun:
				return unexpectedReply(msg)
			case rowsErr == nil:
				rowsErr = b.add(msg.Values)
			}
		case *pgproto3.CommandComplete, *pgproto3.EmptyQueryResponse:
		default:
			return unexpectedReply(msg)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, nil, err
	case pgErr != nil:
		return nil, pgErr, nil
	case rowsErr != nil:
		return nil, rowsErr, nil
	case !begun:
		return nil, nil, errors.New("postgres: pipeline: an execution ended without its BindComplete")
	}
	return b.result(), nil, nil
}

// fieldDescriptions copies a RowDescription's fields, valid only until the
// next message is read.
func fieldDescriptions(rd *pgproto3.RowDescription) []pgconn.FieldDescription {
	fds := make([]pgconn.FieldDescription, len(rd.Fields))
	for i, f := range rd.Fields {
		fds[i] = pgconn.FieldDescription{
			Name:                 string(f.Name),
			TableOID:             f.TableOID,
			TableAttributeNumber: f.TableAttributeNumber,
			DataTypeOID:          f.DataTypeOID,
			DataTypeSize:         f.DataTypeSize,
			TypeModifier:         f.TypeModifier,
			Format:               f.Format,
		}
	}
	return fds
}

func unexpectedReply(msg pgproto3.BackendMessage) error {
	return fmt.Errorf("postgres: pipeline: unexpected %T", msg)
}
