package pgwire

import (
	"fmt"

	"github.com/jackc/pgproto3/v2"
)

// limitedReader is the pgproto3.ChunkReader the Backend reads through. It
// refuses any read longer than max before the underlying chunk reader
// allocates a buffer for it: pgproto3 v2 trusts the client's length word,
// so without this a 4-byte header could make it allocate 4 GiB. It also
// remembers the last chunk read, so that a header refused by the Backend
// (unknown message type) can be reported.
type limitedReader struct {
	cr   pgproto3.ChunkReader
	max  int
	last []byte // result of the last successful Next
	err  error  // error of the last Next, nil if it succeeded
}

func (r *limitedReader) Next(n int) ([]byte, error) {
	if n > r.max {
		r.last, r.err = nil, &tooLargeError{size: n, max: r.max}
		return nil, r.err
	}
	r.last, r.err = r.cr.Next(n)
	return r.last, r.err
}

// tooLargeError is a message whose declared length exceeds the limit.
type tooLargeError struct{ size, max int }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("message body of %d bytes exceeds the limit of %d bytes", e.size, e.max)
}
