package directio

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// socketPair returns two ends of a real connection on network ("tcp" or
// "unix"), both wrapped.
func socketPair(t testing.TB, network string) (a, b net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	dialed, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	other := <-accepted
	if other == nil {
		t.Fatal("accept failed")
	}
	a, b = Wrap(dialed), Wrap(other)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// bothCallKinds runs test with raw calls and with ordinary ones: which
// one a call is depends on the process's load (activity), and a test
// alone in its process would only ever see the ordinary kind.
func bothCallKinds(t *testing.T, test func(t *testing.T)) {
	for _, kind := range []struct {
		name string
		raw  bool
	}{{"raw", true}, {"ordinary", false}} {
		t.Run(kind.name, func(t *testing.T) {
			defer func(d func(*atomic.Uint64) bool) { decide = d }(decide)
			decide = func(*atomic.Uint64) bool { return kind.raw }
			test(t)
		})
	}
}

func TestWrapWrapsSocketsOnly(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		a, _ := socketPair(t, network)
		if _, ok := a.(*directIOConn); !ok {
			t.Errorf("%s: Wrap returned %T, want the direct wrapper", network, a)
		}
		if _, ok := a.(syscall.Conn); !ok {
			t.Errorf("%s: the wrapped socket lost SyscallConn (drivers probe liveness with it)", network)
		}
	}
	p, q := net.Pipe()
	defer p.Close()
	defer q.Close()
	if got := Wrap(p); got != p {
		t.Errorf("Wrap(net.Pipe) = %T, want the pipe unchanged", got)
	}
	dgram, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "d"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer dgram.Close()
	if got := Wrap(dgram); got != net.Conn(dgram) {
		t.Errorf("Wrap(unixgram) = %T, want the datagram socket unchanged (an empty datagram is not an end)", got)
	}
}

// TestTransfers sends streams whose writes are small, at the direct
// limit, above it, and many more than the socket buffers hold before the
// reader starts (so writes meet EAGAIN and wait in the poller); every byte
// must arrive, in order.
func TestTransfers(t *testing.T) { bothCallKinds(t, testTransfers) }

func testTransfers(t *testing.T) {
	cases := []struct {
		name      string
		writeSize int
		writes    int
		readSize  int
	}{
		{"one byte", 1, 1, 4096},
		{"small messages", 37, 500, 4096},
		{"at the direct limit", maxDirect, 8, maxDirect},
		{"above the direct limit", maxDirect + 1, 8, 3 * maxDirect},
		{"buffers fill before the reader starts", 32 << 10, 512, 1000},
	}
	for _, network := range []string{"tcp", "unix"} {
		for _, tc := range cases {
			t.Run(network+"/"+tc.name, func(t *testing.T) {
				a, b := socketPair(t, network)
				want := make([]byte, tc.writeSize*tc.writes)
				rand.Read(want)
				writeErr := make(chan error, 1)
				go func() {
					defer a.Close() // the reader sees the end, also after a failed write
					for i := range tc.writes {
						chunk := want[i*tc.writeSize : (i+1)*tc.writeSize]
						n, err := a.Write(chunk)
						if err == nil && n != len(chunk) {
							err = io.ErrShortWrite
						}
						if err != nil {
							writeErr <- err
							return
						}
					}
					writeErr <- nil
				}()
				if tc.writes > 100 && tc.writeSize > 1<<10 {
					time.Sleep(50 * time.Millisecond) // let the writer fill the buffers
				}
				b.SetReadDeadline(time.Now().Add(20 * time.Second))
				var got bytes.Buffer
				buf := make([]byte, tc.readSize)
				for {
					n, err := b.Read(buf)
					got.Write(buf[:n])
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatalf("read after %d bytes: %v", got.Len(), err)
					}
				}
				if err := <-writeErr; err != nil {
					t.Fatalf("write: %v", err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Fatalf("received %d bytes that differ from the %d sent", got.Len(), len(want))
				}
			})
		}
	}
}

func TestReadDeadline(t *testing.T) { bothCallKinds(t, testReadDeadline) }

func testReadDeadline(t *testing.T) {
	a, _ := socketPair(t, "tcp")
	a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := a.Read(make([]byte, 16))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past its deadline: %v is not a net.Error timeout", err)
	}
}

func TestWriteDeadline(t *testing.T) { bothCallKinds(t, testWriteDeadline) }

func testWriteDeadline(t *testing.T) {
	a, _ := socketPair(t, "tcp")
	a.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	chunk := make([]byte, 32<<10)
	var err error
	for range 100_000 { // nobody reads: the buffers fill and the write waits
		if _, err = a.Write(chunk); err != nil {
			break
		}
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
}

func TestCloseUnblocksRead(t *testing.T) { bothCallKinds(t, testCloseUnblocksRead) }

func testCloseUnblocksRead(t *testing.T) {
	a, _ := socketPair(t, "tcp")
	done := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 16))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	a.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read on a closed socket: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock a waiting read")
	}
}

// reset closes c so that its peer sees a reset, not a clean end.
func reset(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.(interface{ NetConn() net.Conn }).NetConn().(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestPeerResetIsAnError: a reset reaches the reader and the writer as
// net.Conn reports it, a *net.OpError over an *os.SyscallError.
func TestPeerResetIsAnError(t *testing.T) { bothCallKinds(t, testPeerResetIsAnError) }

func testPeerResetIsAnError(t *testing.T) {
	cases := []struct {
		op string
		do func(c net.Conn) error
	}{
		{"read", func(c net.Conn) error {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := c.Read(make([]byte, 16))
			return err
		}},
		{"write", func(c net.Conn) error {
			var err error
			for range 100 {
				if _, err = c.Write([]byte("x")); err != nil {
					return err
				}
				time.Sleep(time.Millisecond)
			}
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.op, func(t *testing.T) {
			a, b := socketPair(t, "tcp")
			reset(t, b)
			time.Sleep(10 * time.Millisecond)
			err := tc.do(a)
			if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("%s on a reset socket: %v, want ECONNRESET or EPIPE", tc.op, err)
			}
			var op *net.OpError
			if !errors.As(err, &op) || op.Op != tc.op {
				t.Fatalf("%s error %v is not a net.OpError for %s", tc.op, err, tc.op)
			}
			var se *os.SyscallError
			if !errors.As(err, &se) {
				t.Fatalf("%s error %v does not carry an *os.SyscallError", tc.op, err)
			}
		})
	}
}

// TestCloseUnblocksWrite: a write waiting for room in full buffers ends
// with net.ErrClosed when the socket is closed.
func TestCloseUnblocksWrite(t *testing.T) { bothCallKinds(t, testCloseUnblocksWrite) }

func testCloseUnblocksWrite(t *testing.T) {
	a, _ := socketPair(t, "tcp")
	done := make(chan error, 1)
	go func() {
		chunk := make([]byte, 32<<10)
		for {
			if _, err := a.Write(chunk); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // the buffers fill; the write waits
	a.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write on a closed socket: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock a waiting write")
	}
}

// TestWrittenCountsWhatWasSent: writes that end at their deadline part
// way through report exactly the bytes the peer then receives.
func TestWrittenCountsWhatWasSent(t *testing.T) { bothCallKinds(t, testWrittenCountsWhatWasSent) }

func testWrittenCountsWhatWasSent(t *testing.T) {
	a, b := socketPair(t, "tcp")
	a.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	chunk := make([]byte, maxDirect)
	var sent int
	var err error
	for range 100_000 {
		var n int
		n, err = a.Write(chunk)
		sent += n
		if err != nil {
			break
		}
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write past its deadline: %v", err)
	}
	a.Close()
	b.SetReadDeadline(time.Now().Add(20 * time.Second))
	received, err := io.Copy(io.Discard, b)
	if err != nil {
		t.Fatal(err)
	}
	if int(received) != sent {
		t.Fatalf("writes reported %d bytes sent; the peer received %d", sent, received)
	}
}

// TestWriteOrdersBeforeRead: what a goroutine did before writing is
// visible to the goroutine that reads what it wrote, as with net.Conn
// (under -race a raw call would not tell the detector so, and this test
// would report a race).
func TestWriteOrdersBeforeRead(t *testing.T) { bothCallKinds(t, testWriteOrdersBeforeRead) }

func testWriteOrdersBeforeRead(t *testing.T) {
	a, b := socketPair(t, "tcp")
	var handedOver int
	go func() {
		handedOver = 42
		a.Write([]byte{1})
	}()
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(b, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if handedOver != 42 {
		t.Fatalf("read before the write's effects: %d", handedOver)
	}
}

func TestZeroLengthCallsOnAClosedSocket(t *testing.T) {
	bothCallKinds(t, testZeroLengthCallsOnAClosedSocket)
}

func testZeroLengthCallsOnAClosedSocket(t *testing.T) {
	a, _ := socketPair(t, "tcp")
	a.Close()
	if _, err := a.Read(nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read(nil) on a closed socket: %v, want net.ErrClosed as net.Conn", err)
	}
	if _, err := a.Write(nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write(nil) on a closed socket: %v, want net.ErrClosed as net.Conn", err)
	}
}

// TestConcurrentReadAndWrite: one goroutine reads while another writes,
// as a connection's reader and its canceller do (run with -race).
func TestConcurrentReadAndWrite(t *testing.T) { bothCallKinds(t, testConcurrentReadAndWrite) }

func testConcurrentReadAndWrite(t *testing.T) {
	a, b := socketPair(t, "tcp")
	const rounds = 2000
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // echo
		defer wg.Done()
		buf := make([]byte, 8)
		for range rounds {
			if _, err := io.ReadFull(b, buf); err != nil {
				t.Error(err)
				return
			}
			if _, err := b.Write(buf); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, 8)
		for i := range rounds {
			if _, err := io.ReadFull(a, buf); err != nil {
				t.Error(err)
				return
			}
			if buf[0] != byte(i) {
				t.Errorf("round %d echoed %d", i, buf[0])
				return
			}
		}
	}()
	for i := range rounds {
		if _, err := a.Write([]byte{byte(i), 1, 2, 3, 4, 5, 6, 7}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// BenchmarkPingPong is a request and its answer over loopback TCP, with
// the standard socket and with the direct one.
func BenchmarkPingPong(b *testing.B) {
	for _, wrap := range []struct {
		name string
		fn   func(net.Conn) net.Conn
	}{{"net", func(c net.Conn) net.Conn { return c.(*directIOConn).NetConn() }}, {"direct", func(c net.Conn) net.Conn { return c }}} {
		b.Run(wrap.name, func(b *testing.B) {
			x, y := socketPair(b, "tcp")
			x, y = wrap.fn(x), wrap.fn(y)
			go func() {
				buf := make([]byte, 64)
				for {
					if _, err := io.ReadFull(y, buf); err != nil {
						return
					}
					if _, err := y.Write(buf); err != nil {
						return
					}
				}
			}()
			msg := make([]byte, 64)
			for b.Loop() {
				if _, err := x.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(x, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestSetEnabled(t *testing.T) {
	SetEnabled(false)
	defer SetEnabled(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := Wrap(nc); got != nc {
		t.Fatalf("Wrap with direct I/O off = %T, want the socket unchanged", got)
	}
	SetEnabled(true)
	if _, ok := Wrap(nc).(*directIOConn); !ok {
		t.Fatal("Wrap with direct I/O on left the socket unwrapped")
	}
}
