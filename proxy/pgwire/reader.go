package pgwire

import (
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
