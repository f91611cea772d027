package backend

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQL's side of combining (combine.go). The MySQL protocol has no
// pipeline mode, but a server reads one command after another from its
// socket: commands written back to back are answered in order. A batch
// here is COM_QUERY commands written in one write on one pooled
// connection, their results read in order from the connection's socket
// (go-sql-driver cannot send a command before the previous result is
// read; the connection is borrowed from it, idle, through sql.Conn.Raw,
// and left as idle as it was found). Each statement is its own, in the
// session's autocommit mode, as when sent alone. Parameters are written
// into the text as literals (interpolateMySQL): what the server gets is
// the text protocol's query and what comes back its text rows, which for
// a MySQL client's text protocol are forwarded as they are.
//
// A statement is combined only where its text and its result can be
// handled here: its parameters have a literal (interpolateMySQL), and its
// result has no date or time column (their text would have to be parsed
// as the driver parses it); a statement whose result turns out to have
// one runs again alone, and its text is not combined again. Connections
// the statements may leave in a state of their own (a statement that
// failed or returned no result set) are closed, as Query closes them.

// mysqlCombinedMax bounds the text of a combined statement, and of the
// commands written at once (see sendPipelined); a longer one runs alone.
const mysqlCombinedMax = 16 << 10

// mysqlSeen is what MySQL remembers of a public-table text: whether it
// must run alone for good (it cannot be combined), its combining record
// (admitted, slow combined runs: combineRecord), and its result columns
// when it last ran alone. A combined statement's columns are given those
// (matchColumns): a column of an expression with a parameter marker is
// named after the text, "LENGTH(?)", where the combined statement's is
// named after its literal, and an integer parameter is a BIGINT where
// its literal may be an INT.
type mysqlSeen struct {
	alone bool
	rec   combineRecord
	cols  []Column
}

// errRunAlone tells the caller to run its statement alone, and not to try
// combining it again.
var errRunAlone = errors.New("mysql: the statement cannot be combined")

// setPipelineLanes sets how many combined batches run at once; 0 turns
// combining off. Connections over TLS or with compression, and character
// sets in which a backslash can end a character, are never combined.
func (m *MySQL) setPipelineLanes(lanes int) {
	m.combiner = nil
	m.closeLanes()
	if m.pipelinable && lanes > 0 {
		m.lanes = make(chan laneConn, lanes)
		m.combiner = newCombiner(lanes, m.sendBatch)
	}
}

// A lane keeps its connection from one batch to the next instead of
// taking one from the pool for each: the pool's checkout (a liveness
// check on the socket, a system call, and database/sql's bookkeeping)
// cost about 4 % of dpproxy's CPU in workload 9. A kept connection is
// one whose last batch left its session as it was; it goes back to the
// pool (and its limits on age) after laneConnMaxAge. One the server has
// closed meanwhile fails its next batch, whose statements then run
// alone. The connections kept count as in use in the pool's figures.

// laneConnMaxAge is how long a lane keeps a connection.
const laneConnMaxAge = time.Minute

type laneConn struct {
	conn  *sql.Conn
	since time.Time
	// unions tells whether its batches may answer statements of one
	// shape with a UNION ALL (unionsAllowed).
	unions bool
}

// takeLane returns an idle lane's connection, or one from the pool.
func (m *MySQL) takeLane(ctx context.Context) (laneConn, error) {
	select {
	case lc := <-m.lanes:
		return lc, nil
	default:
	}
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return laneConn{}, fmt.Errorf("%w: mysql %s: %w", ErrUnavailable, m.desc, err)
	}
	return laneConn{conn: conn, since: time.Now(), unions: unionsAllowed(ctx, conn)}, nil
}

// keepLane keeps lc for the next batch, or gives it back to the pool.
func (m *MySQL) keepLane(lc laneConn) {
	if !m.closed.Load() && time.Since(lc.since) < laneConnMaxAge {
		select {
		case m.lanes <- lc:
			return
		default:
		}
	}
	_ = lc.conn.Close()
}

// closeLanes gives the lanes' connections back to the pool.
func (m *MySQL) closeLanes() {
	for m.lanes != nil {
		select {
		case lc := <-m.lanes:
			_ = lc.conn.Close()
		default:
			return
		}
	}
}

// mysqlPipelinable reports whether cfg's connections can be combined: a
// plain socket (no TLS, no compression) in a character set where escaping
// a string literal with backslashes is exact.
func mysqlPipelinable(cfg *mysql.Config) bool {
	if cfg.TLS != nil || (cfg.TLSConfig != "" && cfg.TLSConfig != "false") {
		return false
	}
	for k := range cfg.Params {
		// Sent as SET statements: the session's character set would be
		// the DSN's, unchecked.
		if k = strings.ToLower(k); strings.HasPrefix(k, "character_set") || strings.HasPrefix(k, "collation") || k == "names" {
			return false
		}
	}
	for _, kv := range strings.Split(strings.SplitN(cfg.FormatDSN()+"?", "?", 2)[1], "&") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "compress":
			if v != "false" {
				return false
			}
		case "charset":
			for _, cs := range strings.Split(v, ",") {
				if !backslashSafeCharset(cs) {
					return false
				}
			}
		}
	}
	if cfg.Collation != "" {
		cs, _, _ := strings.Cut(cfg.Collation, "_")
		return backslashSafeCharset(cs)
	}
	return true
}

// backslashSafeCharset reports a character set no multibyte character of
// which has a backslash byte in it.
func backslashSafeCharset(cs string) bool {
	switch strings.ToLower(cs) {
	case "utf8mb4", "utf8", "utf8mb3", "latin1", "ascii":
		return true
	}
	return false
}

// queryPublic runs a public-table statement: combined with others where
// it can be (see above), alone otherwise; read reads a result run alone.
func (m *MySQL) queryPublic(ctx context.Context, read mysqlRowsReader, sql string, args []any, wire bool) (*Rows, error) {
	if c := m.combiner; c != nil {
		if last, ok := m.seen.Get(sql); ok && !last.alone && c.combines(last.rec) {
			text, ok := interpolateMySQL(sql, mysqlArgs(args))
			if !ok || len(text) > mysqlCombinedMax-5 {
				m.seen.Add(sql, mysqlSeen{alone: true})
			} else {
				// The arguments go along only to say the text has them
				// (see readMySQLResult).
				s := newCombinedStmt(ctx, text, args, wire)
				if st := statementFrom(ctx); st.shape != "" {
					key, lookup := lookupKey(st.lookup, args)
					switch {
					case lookup && last.cols != nil && !m.noLookup.Contains(st.lookup.Prefix):
						s.shape, s.cols, s.lookup, s.key = st.shape, last.cols, st.lookup.Prefix, key
					case unionableColumns(last.cols) && !m.noUnion.Contains(st.shape):
						s.shape, s.cols = st.shape, last.cols
					}
				}
				res, took, err := c.runStmt(s)
				if took >= c.leaveAt {
					// Runs alone until readmitted; the record as it is
					// now (a run alone may have marked it alone for good
					// or set its columns meanwhile: combineRecord).
					cur, _ := m.seen.Peek(sql)
					if rec, changed := struck(cur.rec, last.rec); changed {
						cur.rec = rec
						m.seen.Add(sql, cur)
					}
				}
				switch {
				case err == nil && matchColumns(res, last.cols):
					return res, nil
				case err == nil:
					// Not the columns of its last run alone: run it alone
					// from now on.
					m.seen.Add(sql, mysqlSeen{alone: true})
				case errors.Is(err, errRunAlone):
					m.seen.Add(sql, mysqlSeen{alone: true})
				case errors.Is(err, errUnionFailed) && s.lookup != "":
					// Its shape may still be answered by a UNION ALL.
					m.noLookup.Add(s.lookup, struct{}{}) // runs alone this time
				case errors.Is(err, errUnionFailed):
					m.noUnion.Add(s.shape, struct{}{}) // runs alone this time
				case errors.Is(err, errUnionRetry): // runs alone this time
				case errors.Is(err, errCombinerBusy):
				default:
					return nil, err
				}
			}
		}
	}
	start := time.Now()
	res, err := m.query(ctx, read, sql, args)
	if prev, ok := m.seen.Peek(sql); err == nil && (!ok || !prev.alone) {
		seen := mysqlSeen{rec: prev.rec, cols: slices.Clone(res.Columns)}
		if c := m.combiner; c != nil {
			c.ranAlone(&seen.rec, time.Since(start), true)
		}
		m.seen.Add(sql, seen)
	}
	return res, err
}

// matchColumns gives the columns of a combined result what they were
// when the statement last ran alone (alone): the names that came from a
// parameter marker, and the integer type of an integer column (the
// values are the same int64s, their wire text the same digits). It
// reports false, changing nothing, when the columns differ otherwise
// (the table changed since, or a literal's type is not its
// parameter's): the statement then runs alone.
func matchColumns(res *Rows, alone []Column) bool {
	if len(res.Columns) != len(alone) {
		return false
	}
	for i, a := range alone {
		if c := res.Columns[i]; c.Type != a.Type && !(c.Type.Integer() && a.Type.Integer()) {
			return false
		}
	}
	copied := false // a union's branches share their columns: copy to change
	for i, a := range alone {
		c := res.Columns[i]
		named := strings.Contains(a.Name, "?")
		if c.Type == a.Type && (!named || c.Name == a.Name) {
			continue
		}
		if !copied {
			res.Columns, copied = slices.Clone(res.Columns), true
		}
		res.Columns[i].Type = a.Type
		if named {
			res.Columns[i].Name = a.Name
		}
	}
	return true
}

// sendBatch runs batch on one pooled connection, its commands written
// back to back (a batchSender).
func (m *MySQL) sendBatch(ctx context.Context, batch []*combinedStmt) error {
	lc, err := m.takeLane(ctx)
	if err != nil {
		return err
	}
	// Whatever happens to the batch, a statement left without a result
	// runs alone (they only read public tables).
	defer failAll(batch, errCombinerBusy)
	err = lc.conn.Raw(func(dc any) error {
		sc, ok := dc.(*stmtCachingConn)
		if !ok || sc.socket == nil {
			return errors.New("mysql: the connection's socket is unknown") // back to the pool
		}
		cmds := mysqlCommands(batch, lc.unions)
		keep, err := sc.sendPipelined(ctx, cmds)
		for _, cmd := range cmds {
			if cmd.sql == "" {
				continue
			}
			count := &m.unioned
			if cmd.keys != nil {
				count = &m.lookups
			}
			for _, s := range cmd.stmts {
				if s.res != nil { // set before its caller was answered
					count.Add(1)
				}
			}
		}
		if err != nil {
			// The connection is lost or out of step.
			slog.DebugContext(ctx, "backend: mysql: combined batch failed", "err", err, "statements", len(batch))
			_ = sc.socket.Close()
			if ctx.Err() != nil {
				failAll(batch, err) // every caller has gone
			}
			return driver.ErrBadConn
		}
		if !keep {
			return driver.ErrBadConn // Raw drops the connection
		}
		return nil
	})
	if err == nil {
		m.keepLane(lc)
	} else {
		_ = lc.conn.Close() // dropped already when Raw said so
	}
	return nil
}

// sendPipelined sends a batch's commands (mysqlCommands) as COM_QUERY
// commands, as many at a time as fit in mysqlCombinedMax bytes in one
// write, and reads their results in order. It reports whether the session is as it was
// (the server returned a result set for each); an error is the
// connection's, after which it cannot be used.
//
// A write waits for nothing the server sends: the commands of one write
// fit in the sockets' buffers, so the server need not read them while it
// writes a large result that this side is not yet reading.
func (c *stmtCachingConn) sendPipelined(ctx context.Context, cmds []mysqlCommand) (keep bool, err error) {
	socket := c.socket
	// The driver's own read and write deadlines, if the DSN sets them,
	// are for its statements; the batch ends with its callers.
	if err := socket.SetDeadline(time.Time{}); err != nil {
		return false, err
	}
	stop := context.AfterFunc(ctx, func() {
		_ = socket.SetDeadline(time.Unix(1, 0))
		_ = socket.Close()
	})
	defer func() {
		if !stop() {
			// The batch ended as the last result came in: the socket is
			// closed, or about to be.
			keep = false
		}
	}()
	if c.pipeReader == nil {
		c.pipeReader = &mysqlPacketReader{r: bufio.NewReaderSize(socket, 16<<10)}
	}
	r := c.pipeReader
	keep = true
	var out []byte
	for len(cmds) > 0 {
		out = out[:0]
		n := 0
		for n < len(cmds) && (n == 0 || len(out)+5+len(cmds[n].text()) <= mysqlCombinedMax) {
			text := cmds[n].text()
			size := 1 + len(text) // at most mysqlCombinedMax: one packet
			out = append(out, byte(size), byte(size>>8), byte(size>>16), 0, mysqlComQuery)
			out = append(out, text...)
			n++
		}
		if _, err := socket.Write(out); err != nil {
			return false, err
		}
		last := time.Now()
		for i := range cmds[:n] {
			cmd := &cmds[i]
			var ok bool
			var err error
			if cmd.sql != "" {
				ok, err = readMySQLUnionResult(r, cmd)
			} else {
				ok, err = readMySQLResult(r, cmd.stmts[0])
			}
			if err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("mysql: batch ended: %w", ctx.Err())
				}
				return false, err
			}
			keep = keep && ok
			now := time.Now()
			for _, s := range cmd.stmts {
				// A union's time is its branches' together.
				s.took = now.Sub(last) / time.Duration(len(cmd.stmts))
				s.answer()
			}
			last = now
		}
		cmds = cmds[n:]
	}
	return keep, nil
}

const mysqlComQuery = 0x03

// mysqlPacketReader reads MySQL packets from a connection's socket.
type mysqlPacketReader struct {
	r       *bufio.Reader
	payload []byte
	// seq is the sequence id the next packet must have: 1 for the first
	// packet of a command's response (start), then counting up.
	seq byte
	// header is the packet header being read (a field: a local would
	// escape to the heap through io.ReadFull).
	header [4]byte
}

// start expects the response to a new command.
func (p *mysqlPacketReader) start() { p.seq = 1 }

// next returns the next packet's payload, the parts of one longer than a
// packet joined. It is valid until the next call.
func (p *mysqlPacketReader) next() ([]byte, error) {
	p.payload = p.payload[:0]
	for {
		header := &p.header
		if _, err := io.ReadFull(p.r, header[:]); err != nil {
			return nil, err
		}
		if header[3] != p.seq {
			return nil, fmt.Errorf("mysql: packet %d where %d was due: out of step", header[3], p.seq)
		}
		p.seq++
		n := int(header[0]) | int(header[1])<<8 | int(header[2])<<16
		start := len(p.payload)
		p.payload = slices.Grow(p.payload, n)[:start+n]
		if _, err := io.ReadFull(p.r, p.payload[start:]); err != nil {
			return nil, err
		}
		if n < 0xffffff {
			if len(p.payload) == 0 {
				return nil, errors.New("mysql: empty packet")
			}
			return p.payload, nil
		}
	}
}
