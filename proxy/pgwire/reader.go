package pgwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgproto3/v2"
)

// limitedReader is the pgproto3.ChunkReader the Backend reads through. It
// refuses any read longer than max before the underlying chunk reader
// allocates a buffer for it: pgproto3 v2 trusts the client's length word,
// so without this a 4-byte header could make it allocate 4 GiB. It also
// remembers the last chunk read, so that a header refused by the Backend
// (unknown message type) can be reported, and counts what it hands out
// against what was read from the connection, so that data buffered ahead
// of an SSLRequest's answer can be detected.
type limitedReader struct {
	cr       pgproto3.ChunkReader
	src      *countingReader
	max      int
	consumed int64
	last     []byte // result of the last successful Next
	err      error  // error of the last Next, nil if it succeeded
}

func newLimitedReader(r io.Reader, limit int) *limitedReader {
	src := &countingReader{r: r}
	return &limitedReader{cr: pgproto3.NewChunkReader(src), src: src, max: limit}
}

func (r *limitedReader) Next(n int) ([]byte, error) {
	if n > r.max {
		r.last, r.err = nil, &tooLargeError{size: n, max: r.max}
		return nil, r.err
	}
	r.last, r.err = r.cr.Next(n)
	if r.err == nil {
		r.consumed += int64(n)
	}
	return r.last, r.err
}

// buffered is the number of bytes read from the connection but not yet
// handed out.
func (r *limitedReader) buffered() int64 {
	return r.src.n - r.consumed
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// tooLargeError is a message whose declared length exceeds the limit.
type tooLargeError struct{ size, max int }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("message body of %d bytes exceeds the limit of %d bytes", e.size, e.max)
}

// messageReader reads an authenticated connection's messages as
// pgproto3's Backend.Receive does, each into a message it reuses, but
// decodes Parse itself: the Backend's decoder copies the statement's name
// and text twice each and grows its parameter types one by one, six
// allocations or more for a message that drivers in exec mode (pgx's,
// pgbench -M extended) send before every execution, mostly with the text
// of the one before. Here the name is copied only when not empty, the
// text only when it differs from the last Parse's, and the parameter types
// go in a slice the reader keeps (valid, like the message, until the next
// receive).
type messageReader struct {
	rd *limitedReader

	bind         pgproto3.Bind
	close        pgproto3.Close
	describe     pgproto3.Describe
	execute      pgproto3.Execute
	functionCall pgproto3.FunctionCall
	copyFail     pgproto3.CopyFail
	copyData     pgproto3.CopyData
	copyDone     pgproto3.CopyDone
	flush        pgproto3.Flush
	parse        pgproto3.Parse
	password     pgproto3.PasswordMessage
	query        pgproto3.Query
	sync         pgproto3.Sync
	terminate    pgproto3.Terminate

	lastQuery string   // the text of the last Parse
	oids      []uint32 // the parameter types of the last Parse
}

// receive reads the next message. A message whose body was read but does
// not decode comes back with the decoding error; a header refused (unknown
// type, bad length) or a failed read comes back with no message.
func (r *messageReader) receive() (pgproto3.FrontendMessage, error) {
	header, err := r.rd.Next(5)
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	typ := header[0]
	bodyLen := int(binary.BigEndian.Uint32(header[1:])) - 4
	if bodyLen < 0 {
		return nil, errors.New("invalid message with negative body length received")
	}
	var msg pgproto3.FrontendMessage
	switch typ {
	case 'B':
		msg = &r.bind
	case 'C':
		msg = &r.close
	case 'D':
		msg = &r.describe
	case 'E':
		msg = &r.execute
	case 'F':
		msg = &r.functionCall
	case 'f':
		msg = &r.copyFail
	case 'd':
		msg = &r.copyData
	case 'c':
		msg = &r.copyDone
	case 'H':
		msg = &r.flush
	case 'P':
		msg = &r.parse
	case 'p':
		msg = &r.password // no authentication is under way
	case 'Q':
		msg = &r.query
	case 'S':
		msg = &r.sync
	case 'X':
		msg = &r.terminate
	default:
		return nil, fmt.Errorf("unknown message type: %c", typ)
	}
	body, err := r.rd.Next(bodyLen)
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	if typ == 'P' {
		return msg, r.decodeParse(body)
	}
	return msg, msg.Decode(body)
}

var errBadParse = errors.New("invalid Parse message format")

// decodeParse decodes a Parse message's body into r.parse.
func (r *messageReader) decodeParse(body []byte) error {
	r.parse = pgproto3.Parse{}
	name, rest, ok := bytes.Cut(body, []byte{0})
	if !ok {
		return errBadParse
	}
	query, rest, ok := bytes.Cut(rest, []byte{0})
	if !ok || len(rest) < 2 {
		return errBadParse
	}
	n := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if len(rest) < 4*n {
		return errBadParse
	}
	if len(name) > 0 {
		r.parse.Name = string(name)
	}
	if string(query) != r.lastQuery {
		r.lastQuery = string(query)
	}
	r.parse.Query = r.lastQuery
	r.oids = r.oids[:0]
	for i := range n {
		r.oids = append(r.oids, binary.BigEndian.Uint32(rest[4*i:]))
	}
	if n > 0 {
		r.parse.ParameterOIDs = r.oids
	}
	return nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
