package backend

import (
	"bufio"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
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

// mysqlCombinedMax bounds the text of a combined statement; a longer one
// runs alone.
const mysqlCombinedMax = 64 << 10

// mysqlSeen is what MySQL remembers of a public-table text: how long its
// last run took, whether it must run alone, and its result columns when
// it last ran alone. A combined statement's columns are given those
// (matchColumns): a column of an expression with a parameter marker is
// named after the text, "LENGTH(?)", where the combined statement's is
// named after its literal, and an integer argument is a BIGINT where its
// literal may be an INT.
type mysqlSeen struct {
	took  time.Duration
	alone bool
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
	if m.pipelinable {
		m.combiner = newCombiner(lanes, m.sendBatch)
	}
}

// mysqlPipelinable reports whether cfg's connections can be combined: a
// plain socket (no TLS, no compression) in a character set where escaping
// a string literal with backslashes is exact.
func mysqlPipelinable(cfg *mysql.Config) bool {
	if cfg.TLS != nil || (cfg.TLSConfig != "" && cfg.TLSConfig != "false") {
		return false
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
		if last, ok := m.seen.Get(sql); ok && !last.alone && last.took < c.shorterThan {
			text, ok := interpolateMySQL(sql, mysqlArgs(args))
			if !ok || len(text) > mysqlCombinedMax {
				m.seen.Add(sql, mysqlSeen{alone: true})
			} else {
				res, took, err := c.run(ctx, text, nil, wire)
				if took >= c.leaveAt {
					m.seen.Add(sql, mysqlSeen{took: took, cols: last.cols}) // runs alone from now on
				}
				switch {
				case err == nil && matchColumns(res, last.cols):
					return res, nil
				case err == nil:
					// Not the columns of its last run alone: run it alone.
				case errors.Is(err, errRunAlone):
					m.seen.Add(sql, mysqlSeen{alone: true})
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
		m.seen.Add(sql, mysqlSeen{took: time.Since(start), cols: slices.Clone(res.Columns)})
	}
	return res, err
}

// matchColumns gives the columns of a combined result what they were
// when the statement last ran alone (alone): the names that came from a
// parameter marker, and the integer type of an integer column (the
// values are the same int64s, their wire text the same digits). It
// reports false, changing nothing, when the columns differ otherwise
// (the table changed since): the statement then runs alone.
func matchColumns(res *Rows, alone []Column) bool {
	if len(res.Columns) != len(alone) {
		return false
	}
	for i, a := range alone {
		if c := res.Columns[i]; c.Type != a.Type && !(isMySQLInt(c.Type) && isMySQLInt(a.Type)) {
			return false
		}
	}
	for i, a := range alone {
		res.Columns[i].Type = a.Type
		if strings.Contains(a.Name, "?") {
			res.Columns[i].Name = a.Name
		}
	}
	return true
}

// isMySQLInt reports the types integer columns are decoded as.
func isMySQLInt(t sqltypes.Type) bool {
	return t == sqltypes.Int2 || t == sqltypes.Int4 || t == sqltypes.Int8
}

// sendBatch runs batch on one pooled connection, its commands written
// back to back (a batchSender).
func (m *MySQL) sendBatch(ctx context.Context, batch []*combinedStmt) error {
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("%w: mysql %s: %w", ErrUnavailable, m.desc, err)
	}
	defer conn.Close() // back to the pool, or dropped when Raw said so
	_ = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stmtCachingConn)
		if !ok || sc.socket == nil {
			failAll(batch, errCombinerBusy)
			return nil
		}
		keep, err := sc.sendPipelined(ctx, batch)
		if err != nil {
			// The connection is lost or out of step: every statement
			// without a result runs alone (they only read public tables).
			slog.DebugContext(ctx, "backend: mysql: combined batch failed", "err", err, "statements", len(batch))
			_ = sc.socket.Close()
			if ctx.Err() != nil {
				failAll(batch, err) // every caller has gone
			}
			failAll(batch, errCombinerBusy)
			return driver.ErrBadConn
		}
		if !keep {
			return driver.ErrBadConn // Raw drops the connection
		}
		return nil
	})
	return nil
}

// sendPipelined writes every statement of batch as a COM_QUERY command in
// one write, then reads their results in order. It reports whether the
// session is as it was (no statement failed or returned no result set);
// an error is the connection's, after which it cannot be used.
func (c *stmtCachingConn) sendPipelined(ctx context.Context, batch []*combinedStmt) (keep bool, err error) {
	socket := c.socket
	stop := context.AfterFunc(ctx, func() {
		_ = socket.SetDeadline(time.Unix(1, 0))
		_ = socket.Close()
	})
	defer stop()

	size := 0
	for _, s := range batch {
		size += 5 + len(s.sql)
	}
	out := make([]byte, 0, size)
	for _, s := range batch {
		n := 1 + len(s.sql) // under mysqlCombinedMax, one packet
		out = append(out, byte(n), byte(n>>8), byte(n>>16), 0, mysqlComQuery)
		out = append(out, s.sql...)
	}
	if _, err := socket.Write(out); err != nil {
		return false, err
	}
	if c.pipeReader == nil {
		c.pipeReader = &mysqlPacketReader{r: bufio.NewReaderSize(socket, 16<<10)}
	}
	r := c.pipeReader
	keep = true
	last := time.Now()
	for _, s := range batch {
		ok, err := readMySQLResult(r, s)
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("mysql: batch ended: %w", ctx.Err())
			}
			return false, err
		}
		keep = keep && ok
		now := time.Now()
		s.took, last = now.Sub(last), now
	}
	return keep, nil
}

const mysqlComQuery = 0x03

// mysqlPacketReader reads MySQL packets from a connection's socket.
type mysqlPacketReader struct {
	r       *bufio.Reader
	payload []byte
}

// next returns the next packet's payload, the parts of one longer than a
// packet joined. It is valid until the next call.
func (p *mysqlPacketReader) next() ([]byte, error) {
	p.payload = p.payload[:0]
	for {
		var header [4]byte
		if _, err := io.ReadFull(p.r, header[:]); err != nil {
			return nil, err
		}
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
