package directio

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// enabled is SetEnabled's switch.
var enabled atomic.Bool

func init() { enabled.Store(true) }

// SetEnabled turns wrapping on (the default) or off for the sockets
// wrapped from now on (config: listen.direct_io).
func SetEnabled(on bool) { enabled.Store(on) }

// maxDirect is the largest read or write made directly: the time a raw
// call holds its processor grows with the bytes it copies, so larger
// transfers take the scheduler-aware path.
const maxDirect = 64 << 10

// directIOConn is a socket whose reads and writes are raw system calls
// made inside the poller's RawConn callbacks (see Wrap).
type directIOConn struct {
	net.Conn
	rc syscall.RawConn

	// lastEpoch is the last epoch in which the socket made a call (see
	// activity).
	lastEpoch atomic.Uint64

	// The fields below are used only by the goroutine holding readMu
	// (writeMu), and by the callback it passes to rc.Read (rc.Write).
	readMu  sync.Mutex
	readBuf []byte
	readN   int
	readErr error
	readFn  func(fd uintptr) bool

	writeMu  sync.Mutex
	writeBuf []byte
	writeErr error
	writeFn  func(fd uintptr) bool
}

// Wrap returns nc with its reads and writes of at most 64 KiB made as
// raw system calls inside the poller's callbacks (see the package doc).
// Deadlines, Close and the other methods behave as nc's own. A connection
// that is not a TCP or Unix stream socket is returned unchanged.
func Wrap(nc net.Conn) net.Conn {
	if !enabled.Load() {
		return nc
	}
	var sc syscall.Conn
	switch nc := nc.(type) {
	case *net.TCPConn:
		sc = nc
	case *net.UnixConn:
		if nc.LocalAddr().Network() != "unix" { // unixgram, unixpacket: messages, not a stream
			return nc
		}
		sc = nc
	default:
		return nc
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	c := &directIOConn{Conn: nc, rc: rc}
	c.readFn = c.readOnce
	c.writeFn = c.writeSome
	return c
}

// NetConn returns the socket Wrap was given (as tls.Conn's NetConn does).
func (c *directIOConn) NetConn() net.Conn { return c.Conn }

// SyscallConn is the socket's own, for callers that check it (a driver's
// liveness probe).
func (c *directIOConn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// CloseWrite shuts down the writing side of the socket, as the TCP and
// Unix sockets' own method does.
func (c *directIOConn) CloseWrite() error {
	return c.Conn.(interface{ CloseWrite() error }).CloseWrite()
}

func (c *directIOConn) Read(p []byte) (int, error) {
	if len(p) == 0 || len(p) > maxDirect {
		return c.Conn.Read(p)
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	c.readBuf, c.readN, c.readErr = p, 0, nil
	err := c.rc.Read(c.readFn)
	c.readBuf = nil
	switch {
	case err != nil:
		return 0, err
	case c.readErr != nil:
		return 0, c.opError("read", c.readErr)
	case c.readN == 0:
		return 0, io.EOF
	}
	return c.readN, nil
}

// readOnce makes one read; false asks the poller to wait for data.
func (c *directIOConn) readOnce(fd uintptr) bool {
	raw := decide(&c.lastEpoch)
	for {
		n, errno := readFD(fd, c.readBuf, raw)
		switch errno {
		case 0:
			c.readN = n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			c.readErr = os.NewSyscallError("read", errno)
			return true
		}
	}
}

func (c *directIOConn) Write(p []byte) (int, error) {
	if len(p) == 0 || len(p) > maxDirect {
		return c.Conn.Write(p)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.writeBuf, c.writeErr = p, nil
	err := c.rc.Write(c.writeFn)
	written := len(p) - len(c.writeBuf)
	c.writeBuf = nil
	switch {
	case err != nil:
		return written, err
	case c.writeErr != nil:
		return written, c.opError("write", c.writeErr)
	}
	return written, nil
}

// writeSome writes what the socket takes; false asks the poller to wait
// for room for the rest.
func (c *directIOConn) writeSome(fd uintptr) bool {
	raw := decide(&c.lastEpoch)
	for len(c.writeBuf) > 0 {
		n, errno := writeFD(fd, c.writeBuf, raw)
		switch errno {
		case 0:
			c.writeBuf = c.writeBuf[n:]
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			c.writeErr = os.NewSyscallError("write", errno)
			return true
		}
	}
	return true
}

// readFD and writeFD are read(2) and write(2), raw or ordinary system
// calls; p is not empty.
func readFD(fd uintptr, p []byte, raw bool) (int, syscall.Errno) {
	if raw {
		return rawRead(fd, p)
	}
	return errnoOf(syscall.Read(int(fd), p))
}

func writeFD(fd uintptr, p []byte, raw bool) (int, syscall.Errno) {
	if raw {
		return rawWrite(fd, p)
	}
	return errnoOf(syscall.Write(int(fd), p))
}

func errnoOf(n int, err error) (int, syscall.Errno) {
	if err != nil {
		return 0, err.(syscall.Errno)
	}
	return n, 0
}

// opError is err as net.Conn's own methods report it.
func (c *directIOConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
